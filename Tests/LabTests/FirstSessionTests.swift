import Foundation
import Testing
@testable import RemoloLab

/// What the pins that beat a first session on S4 and S5 hold, run for real
/// (seeds 1-5, the page's runs), and the numbers docs/playout.md ("What the
/// pins there hold") states for them must be these: the 95th percentile of
/// latency is flat over a range of pins, and S5's range runs past the
/// design note's 60 ms clamp, so `fixed:60` (the clamp held from the first
/// packet) is itself beaten at every phase by `fixed:65`.
@Suite struct FirstSessionTests {
    /// The page with its lines joined: a sentence may wrap anywhere.
    static func page() throws -> String {
        try FigureTests.text("docs/playout.md").split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    @Test func s5PastTheClamp() throws {
        let rows = Lab.simulate(scenarios: [.s5], policies: [60, 65, 70, 75].map { .fixed(ms: $0) }, seeds: 5)
        let page = try Self.page()
        let at60 = try #require(rows.first { $0.policy == "fixed:60" })
        let at65 = try #require(rows.first { $0.policy == "fixed:65" })
        let p95 = rows.map(\.scores.latencyMsP95)
        let range = String(format: "S5: %.2f-%.2f ms from `fixed:60` to `fixed:75`", p95.min()!, p95.max()!)
        #expect(page.contains(range), "playout.md does not state \(range)")
        #expect(p95.max()! - p95.min()! <= FrontierReport.latencySlackMs, "S5's p95 is not flat over fixed:60-75: \(p95)")
        #expect(page.contains("`fixed:60`, \(TraceFrontierTests.pair(at60.scores))"), "playout.md's fixed:60 is not \(TraceFrontierTests.pair(at60.scores))")
        #expect(page.contains("(\(TraceFrontierTests.pair(at65.scores))"), "playout.md's fixed:65 is not \(TraceFrontierTests.pair(at65.scores))")
        let f = FrontierReport(row: at60, sweep: [at65])
        #expect(f.dominatedBy == "fixed:65" && f.dominatedAtEveryPhase, "fixed:60 on S5: \(f.pageVerdict)")
    }

    @Test func s4Flat() throws {
        let rows = Lab.simulate(scenarios: [.s4], policies: [25, 30, 35].map { .fixed(ms: $0) }, seeds: 5)
        let page = try Self.page()
        let p95 = rows.map(\.scores.latencyMsP95)
        #expect(Set(p95.map { String(format: "%.2f", $0) }).count == 1, "S4's p95 over fixed:25-35: \(p95)")
        let stated = String(format: "S4: %.2f ms from `fixed:25` to `fixed:35`", p95[0])
        #expect(page.contains(stated), "playout.md does not state \(stated)")
    }
}
