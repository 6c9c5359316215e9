import Foundation
import RemoloTrace
import Testing
@testable import RemoloLab

/// The real traces as Remolo's sender would have sent them (R1 and R2 read
/// `--gaps-lost`), run for real: the default against every pinned delay
/// that could beat it, and against its perfect-network floor. Each must
/// give what docs/smoothness.md states: the row and verdict of "Against the
/// fixed-delay frontier", and the floor and ratio of "The default judged
/// again". A pinned delay longer than the default's p95 + 0.5 ms cannot beat
/// it (every frame it shows carries that delay), so the sweep stops there.
/// The traces are ../shared/traces/real beside the checkout, as in CI.
@Suite struct TraceFrontierTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The cells of the row of `name` in the table after `section`.
    static func cells(_ page: String, section: String, name: String) throws -> [String] {
        let start = try #require(page.range(of: section), "no section \(section)")
        let table = page[start.upperBound...].split(separator: "\n").drop { !$0.hasPrefix("| trace |") }.prefix { $0.hasPrefix("|") }
        let line = try #require(table.first { $0.hasPrefix("| \(name) | ") }, "no row \(name) under \(section)")
        return line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    static func pair(_ s: Scores) -> String { String(format: "%.2f / %.3f", s.latencyMsP95, s.jitterRatio) }

    /// A real trace from ../shared/traces/real beside the checkout, as CI
    /// has it; nil (and a failed expectation) where it is missing.
    static func realTrace(_ file: String) throws -> Trace? {
        let path = root + "/../shared/traces/real/" + file
        #expect(FileManager.default.fileExists(atPath: path),
                "\(path) is missing: these tests read the shared traces beside the checkout (../shared), as CI has them")
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try Trace.read(from: path)
    }

    @Test(arguments: [("R1-good-wifi.csv", "R1 gaps-lost"), ("R2-bad-wifi.csv", "R2 gaps-lost")])
    func theDefaultOnARealTrace(_ file: String, _ name: String) throws {
        guard let trace = try Self.realTrace(file)?.gapsLost else { return }
        let d = try #require(Lab.replay(trace: trace, name: name, policies: [.default]).first)
        let floor = try #require(Lab.replay(trace: trace, name: name, policies: [.default], perfectNetwork: true).first)
        let f = FrontierReport(row: d, sweep: Lab.replay(trace: trace, name: name, policies: FrontierReport.pins(couldBeat: d)))
        #expect(!f.dominatedAtEveryPhase, "\(f.text)")

        let page = try String(contentsOfFile: Self.root + "/docs/smoothness.md", encoding: .utf8)
        let row = try Self.cells(page, section: "### Against the fixed-delay frontier", name: name)
        #expect(row[1] == Self.pair(d.scores), "\(name): the page says \(row[1]), the run gives \(f.text)")
        let verdict = f.pageVerdict
        #expect(row[3] == verdict, "\(name): the page says \(row[3]), the run gives \(verdict)")

        let judged = try Self.cells(page, section: "## The default judged again", name: name)
        #expect(judged[1] == Self.pair(floor.scores), "\(name) floor: the page says \(judged[1])")
        #expect(judged[2] == Self.pair(d.scores), "\(name) default: the page says \(judged[2])")
        let ratio = String(format: "**%.2fx**", d.scores.jitterRatio / floor.scores.jitterRatio)
        #expect(judged[3] == ratio, "\(name) ratio: the page says \(judged[3]), the run gives \(ratio)")
    }
}
