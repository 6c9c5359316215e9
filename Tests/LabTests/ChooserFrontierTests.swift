import Foundation
import Testing
@testable import RemoloLab

/// The delay chooser alone (no floor under it) against the fixed-delay
/// frontier, run for real: the lab's `chooser` and `window` (the default
/// before it) policies on S2 and S7 (seeds 1-5, the page's runs), each
/// judged against the `fixed:0..40` sweep of the same runs, and the
/// verdicts docs/smoothness.md states for them ("The chooser against the
/// frontier") must be these. S2 is where the two rules differ
/// most (office spikes: the window's quantile jumps after each one, the
/// chooser counts a queue once); S7 steps the sender's clock.
@Suite struct ChooserFrontierTests {
    static let sweep: [Policy] = stride(from: 0, through: 40, by: 5).map { .fixed(ms: $0) }

    @Test(arguments: [Scenario.s2, .s7])
    func verdictsAreThePages(_ sc: Scenario) throws {
        let rows = Lab.simulate(scenarios: [sc], policies: [.window, .chooser] + Self.sweep, seeds: 5)
        let fixed = rows.filter { $0.policy.hasPrefix("fixed:") }
        let page = try FigureTests.text("docs/smoothness.md")
        let start = try #require(page.range(of: "### The chooser against the frontier"), "no chooser section")
        let table = page[start.upperBound...].split(separator: "\n").drop { !$0.hasPrefix("| scenario |") }.prefix { $0.hasPrefix("|") }
        for policy in ["window", "chooser"] {
            let r = try #require(rows.first { $0.policy == policy })
            let f = FrontierReport(row: r, sweep: fixed)
            let line = try #require(table.first { $0.hasPrefix("| \(sc.rawValue) | \(policy) |") }, "no row for \(sc.rawValue) \(policy)")
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(cells[2] == String(format: "%.2f / %.3f", r.scores.latencyMsP95, r.scores.jitterRatio), "\(line)")
            let verdict = f.pageVerdict
            #expect(cells[3] == verdict, "\(line): the run gives \(verdict)")
        }
        // What the chooser is for: never dominated here.
        let c = try #require(rows.first { $0.policy == "chooser" })
        #expect(FrontierReport(row: c, sweep: fixed).dominatedBy == nil, "\(sc.rawValue): the chooser is dominated")
    }
}
