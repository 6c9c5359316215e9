import Foundation
import RemoloTrace
import Testing
@testable import RemoloLab

/// The chooser's floor (`floored`, docs/playout.md, "The floor under the
/// chooser") against the fixed-delay frontier, run for real: S1-S7 (seeds
/// 1-5, the page's runs) and R1 and R2 read `--gaps-lost`, each judged
/// against every pinned delay that could beat it (one longer than its p95 +
/// 0.5 ms cannot), and the rows of docs/smoothness.md, "The chooser's floor
/// against the frontier", must be these. What it is for: beaten at every
/// phase nowhere the default is not, and not beaten at all on R1 or R2
/// (the default is on R2, within the phases' spread).
@Suite struct FlooredFrontierTests {
    static func report(_ row: LabRow, _ sweep: (([Policy]) -> [LabRow])) -> FrontierReport {
        FrontierReport(row: row, sweep: sweep(FrontierReport.pins(couldBeat: row)))
    }

    static func row(_ name: String) throws -> [String] {
        let page = try FigureTests.text("docs/smoothness.md")
        let start = try #require(page.range(of: "### The chooser's floor against the frontier"), "no floor section")
        let table = page[start.upperBound...].split(separator: "\n").drop { !$0.hasPrefix("| scenario |") }.prefix { $0.hasPrefix("|") }
        let line = try #require(table.first { $0.hasPrefix("| \(name) | floored |") }, "no row for \(name)")
        return line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    @Test(arguments: Scenario.allCases)
    func scenarioRowIsThePages(_ sc: Scenario) throws {
        let fr = try #require(Lab.simulate(scenarios: [sc], policies: [.floored], seeds: 5).first)
        let f = Self.report(fr) { Lab.simulate(scenarios: [sc], policies: $0, seeds: 5) }
        let cells = try Self.row(sc.rawValue)
        #expect(cells[2] == TraceFrontierTests.pair(fr.scores), "\(sc.rawValue): the page says \(cells[2]), the run gives \(f.text)")
        #expect(cells[3] == f.pageVerdict, "\(sc.rawValue): the page says \(cells[3]), the run gives \(f.pageVerdict)")
        // Where the default is beaten at every phase (docs/smoothness.md,
        // "Against the fixed-delay frontier": S2, S4, S5), so may this be;
        // nowhere else.
        if ![Scenario.s2, .s4, .s5].contains(sc) {
            #expect(!f.dominatedAtEveryPhase, "\(sc.rawValue): beaten at every phase where the default is not: \(f.text)")
        }
    }

    @Test(arguments: [("R1-good-wifi.csv", "R1 gaps-lost"), ("R2-bad-wifi.csv", "R2 gaps-lost")])
    func realTraceRowIsThePages(_ file: String, _ name: String) throws {
        guard let trace = try TraceFrontierTests.realTrace(file)?.gapsLost else { return }
        let r = try #require(Lab.replay(trace: trace, name: name, policies: [.floored]).first)
        let f = Self.report(r) { Lab.replay(trace: trace, name: name, policies: $0) }
        let cells = try Self.row(name)
        #expect(cells[2] == TraceFrontierTests.pair(r.scores), "\(name): the page says \(cells[2]), the run gives \(f.text)")
        #expect(cells[3] == f.pageVerdict, "\(name): the page says \(cells[3]), the run gives \(f.pageVerdict)")
        #expect(f.dominatedBy == nil, "\(name): \(f.text)")
    }
}
