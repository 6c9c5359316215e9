import Foundation
import RemoloTrace
import Testing
@testable import RemoloLab

/// `LatenessEvents`: what a trace's long delays look like to a receiver that
/// only knows the past (docs/smoothness.md, "What a causal receiver knows of
/// the events"). Numbered cases on made-up traces, then the real traces
/// against the page's table.
@Suite struct TraceEventsTests {
    /// A datagram every 10 ms for `seconds`, 5 ms in flight plus the
    /// lateness `extra` gives it (by send time from the start, us).
    /// Datagrams sent in `lost` (from the start, us) are not in it.
    static func trace(seconds: Int, _ extra: [UInt64: Double], lost: Range<UInt64>? = nil) -> Trace {
        let s0: UInt64 = 1_000_000_000
        var recs: [TraceRecord] = []
        for k in 0..<(seconds * 100) {
            let t = UInt64(k) * 10_000
            if let l = lost, l.contains(t) { continue }
            let late = extra[t] ?? 0
            recs.append(TraceRecord(sendUs: s0 + t, arriveUs: s0 + t + 5_000 + UInt64(late), kind: .motion, dx: 256))
        }
        return Trace(records: recs)
    }

    struct Case: Sendable, CustomStringConvertible {
        var n: Int
        var what: String
        var extra: [UInt64: Double]
        var events: Int
        var peaksMs: [Double]
        var followed: Double
        var warned: Double
        var warnedCount: Int
        var description: String { "\(n): \(what)" }
    }

    static let cases: [Case] = [
        Case(n: 1, what: "a steady link has no event", extra: [:], events: 0, peaksMs: [], followed: 0, warned: 0, warnedCount: 0),
        Case(n: 2, what: "late datagrams 0.5 s apart are one event, its peak the latest",
             extra: [10_000_000: 80_000, 10_500_000: 120_000], events: 1, peaksMs: [120], followed: 0, warned: 0, warnedCount: 1),
        Case(n: 3, what: "a datagram at the threshold is not late",
             extra: [10_000_000: 50_000], events: 0, peaksMs: [], followed: 0, warned: 0, warnedCount: 0),
        Case(n: 4, what: "events 1.5 s apart: the first is followed within 5 s, the lookback of the second holds the first and is not counted",
             extra: [10_000_000: 200_000, 11_500_000: 100_000], events: 2, peaksMs: [200, 100], followed: 1, warned: 0, warnedCount: 1),
        Case(n: 5, what: "events 6 s apart are not followed within 5 s",
             extra: [10_000_000: 200_000, 16_000_000: 100_000], events: 2, peaksMs: [200, 100], followed: 0, warned: 0, warnedCount: 2),
        Case(n: 6, what: "a 20 ms datagram 1 s before an event warns of it",
             extra: [9_000_000: 20_000, 10_000_000: 200_000], events: 1, peaksMs: [200], followed: 0, warned: 1, warnedCount: 1),
        Case(n: 7, what: "a 40 ms datagram 30 ms before an event is its onset, not a warning",
             extra: [9_970_000: 40_000, 10_000_000: 200_000], events: 1, peaksMs: [200], followed: 0, warned: 0, warnedCount: 1),
        Case(n: 8, what: "a 20 ms datagram 3 s before an event is outside its 2 s lookback",
             extra: [7_000_000: 20_000, 10_000_000: 200_000], events: 1, peaksMs: [200], followed: 0, warned: 0, warnedCount: 1),
    ]

    @Test(arguments: cases)
    func events(_ c: Case) {
        let e = LatenessEvents(trace: Self.trace(seconds: 30, c.extra))
        #expect(e.events.count == c.events, "case \(c.n)")
        #expect(e.events.map { ($0.peakUs / 1000).rounded() } == c.peaksMs, "case \(c.n)")
        #expect(e.followedShare == c.followed, "case \(c.n)")
        #expect(e.warnedShare == c.warned, "case \(c.n)")
        #expect(e.warnedCount == c.warnedCount, "case \(c.n)")
        #expect(abs(e.seconds - 29.99) < 1e-9, "case \(c.n)")
    }

    /// A loss burst with one datagram held through it (R1's holds): one
    /// late datagram, the send gap the burst's length; a queue that holds
    /// three datagrams and loses none: three late ones, no gap beyond a
    /// frame.
    @Test func lossBurstAndQueue() {
        let burst = LatenessEvents(trace: Self.trace(seconds: 30, [10_000_000: 300_000], lost: 10_010_000..<10_300_000))
        #expect(burst.events.count == 1 && burst.singleLate == 1)
        #expect(burst.medianGapUs == 300_000, "\(burst.medianGapUs)")
        let queue = LatenessEvents(trace: Self.trace(seconds: 30, [10_000_000: 90_000, 10_010_000: 80_000, 10_020_000: 70_000]))
        #expect(queue.events.count == 1 && queue.singleLate == 0 && queue.events[0].late == 3)
        #expect(queue.medianGapUs == 10_000, "\(queue.medianGapUs)")
    }

    /// The quiet stretches: on a steady link none warns; with one 20 ms
    /// datagram, the 2-s stretches that hold it do (20 of the 280 taken
    /// every 100 ms that have no event).
    @Test func quietStretches() {
        #expect(LatenessEvents(trace: Self.trace(seconds: 30, [:])).quietShare == 0)
        let one = LatenessEvents(trace: Self.trace(seconds: 30, [15_000_000: 20_000]))
        #expect(abs(one.quietShare - 20.0 / 280.0) < 1e-9, "\(one.quietShare)")
        #expect(abs(one.followedIfRandom) < 1e-12)
    }

    /// The real traces hold the table of docs/smoothness.md.
    @Test(arguments: [("R1-good-wifi.csv", "R1"), ("R2-bad-wifi.csv", "R2")])
    func theRealTraces(_ file: String, _ name: String) throws {
        guard let trace = try TraceFrontierTests.realTrace(file) else { return }
        let e = LatenessEvents(trace: trace)
        let page = try String(contentsOfFile: TraceFrontierTests.root + "/docs/smoothness.md", encoding: .utf8)
        let row = try TraceFrontierTests.cells(page, section: "### What a causal receiver knows of the events", name: name)
        func pct(_ v: Double) -> String { String(format: "%.0f%%", v * 100) }
        let want = [
            "\(e.events.count) in \(Int(e.seconds.rounded())) s, windows \(Int(e.windowSeconds.rounded())) s",
            String(format: "%.0f / %.0f", e.medianPeakUs / 1000, (e.events.map(\.peakUs).min() ?? 0) / 1000),
            "\(e.singleLate) / " + String(format: "%.0f", Double(e.medianGapUs) / 1000),
            "\(pct(e.followedShare)) / \(pct(e.followedIfRandom))",
            "\(pct(e.warnedShare)) of \(e.warnedCount) / \(pct(e.quietShare))",
        ]
        #expect(row.count == 6 && Array(row[1...5]) == want, "\(name): the page says \(row.dropFirst()), the trace gives \(want)")
    }

    /// The rows of the table after `section` whose header starts `| trace | policy |`.
    static func rows(_ page: String, section: String) throws -> [[String]] {
        let start = try #require(page.range(of: section), "no section \(section)")
        return page[start.upperBound...].split(separator: "\n").drop { !$0.hasPrefix("| trace | policy |") }
            .prefix { $0.hasPrefix("|") }.dropFirst(2)
            .map { $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    /// Where each policy's frame error falls on the real traces read
    /// `--gaps-lost`, and the bound on what knowing the holds could buy: the
    /// page's second table. The longest pin no slower than the default is
    /// the one the bound takes between the holds: the next one is slower.
    @Test(arguments: [("R1-good-wifi.csv", "R1", [4, 5, 24, 100], 5), ("R2-bad-wifi.csv", "R2", [14, 15, 33, 85], 15)])
    func whereTheErrorFalls(_ file: String, _ name: String, _ pins: [Int], _ tooSlow: Int) throws {
        guard let trace = try TraceFrontierTests.realTrace(file)?.gapsLost else { return }
        let holds = LatenessEvents(trace: trace)
        let lab = LabCase(trace: trace, displayHz: 120)
        let runs = ([Policy.default, .window] + pins.map { Policy.fixed(ms: $0) }).map { lab.holdJitter($0, holds: holds) }
        let slow = try #require(runs.first { $0.policy == "fixed:\(tooSlow)" })
        #expect(slow.latencyMsP95 > runs[0].latencyMsP95 + FrontierReport.latencySlackMs, "\(slow.policy) is no slower than the default")
        let floor = try #require(Lab.replay(trace: trace, name: name, policies: [.default], perfectNetwork: true).first)
        let bound = try #require(HoldBound(runs))

        let page = try String(contentsOfFile: TraceFrontierTests.root + "/docs/smoothness.md", encoding: .utf8)
        let table = try Self.rows(page, section: "### What a causal receiver knows of the events").filter { $0.first == name }
        for r in runs where r.policy != slow.policy {
            let cell = r.policy.hasPrefix("fixed:") ? "`\(r.policy)`" : r.policy
            let want = [String(format: "%.2f", r.latencyMsP95), String(format: "%.1f", r.inHolds / 1000),
                        String(format: "%.1f", r.outside / 1000), String(format: "%.3f", r.jitter)]
            let row = try #require(table.first { $0.count == 6 && $0[1] == cell }, "no row \(name) \(cell)")
            #expect(Array(row[2...5]) == want, "\(name) \(cell): the page says \(row[2...5]), the run gives \(want)")
        }
        let row = try #require(table.first { $0.count == 6 && $0[1] == "knowing the holds" }, "no bound row for \(name)")
        let want = ["-", "`\(bound.inHolds.policy)`", "`\(bound.between.policy)`",
                    String(format: "%.4f = %.3fx", bound.jitter, bound.jitter / floor.scores.jitterRatio)]
        #expect(Array(row[2...5]) == want, "\(name) bound: the page says \(row[2...5]), the runs give \(want)")
    }
}
