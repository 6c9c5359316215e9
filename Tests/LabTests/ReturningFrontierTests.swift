import Foundation
import Testing
@testable import RemoloLab

/// A returning sender against the fixed-delay frontier, run for real: the
/// default on S4 and S5 (seeds 1-5), where a first session is
/// dominated at every phase (docs/smoothness.md), as a sender's sessions 21
/// to 25 on the same network (`--returning 20`): the memory of the earlier
/// ones holds the delay past the 95th percentile's knee. The sweep is every
/// 5 ms, and every 1 ms from 55 to 95 ms, where the knees of both lie: no
/// pinned delay may beat it at every phase. (The same verdicts over every
/// scenario and a 1 ms sweep: RESULTS.md, round 11.)
@Suite struct ReturningFrontierTests {
    static let sweep: [Policy] = Array(Set(stride(from: 0, through: 100, by: 5)).union(55...95)).sorted().map { .fixed(ms: $0) }

    @Test(arguments: [Scenario.s4, .s5])
    func aReturningSenderIsNotBeatenByAPinnedDelay(_ sc: Scenario) throws {
        let rows = Lab.simulate(scenarios: [sc], policies: [.default] + Self.sweep, seeds: 5, returning: 20)
        let fixed = rows.filter { $0.policy.hasPrefix("fixed:") }
        let r = try #require(rows.first { $0.policy == "default" })
        let f = FrontierReport(row: r, sweep: fixed)
        #expect(!f.dominatedAtEveryPhase, "\(sc.rawValue): \(f.text)")
        // And the memory is what did it: the same runs as first sessions
        // are beaten at every phase (the pinned delays' runs are the same).
        let c = try #require(Lab.simulate(scenarios: [sc], policies: [.default], seeds: 5).first)
        #expect(FrontierReport(row: c, sweep: fixed).dominatedAtEveryPhase, "\(sc.rawValue) cold")
    }
}
