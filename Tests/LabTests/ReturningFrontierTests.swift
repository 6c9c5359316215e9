import Foundation
import Testing
@testable import RemoloLab

/// A returning sender against the fixed-delay frontier, run for real: the
/// default on S4 and S5 (seeds 1-5), where a first session is
/// dominated at every phase (docs/smoothness.md), as a sender's sessions 21
/// to 25 on the same network (`--returning 20`): the memory of the earlier
/// ones holds the delay past the 95th percentile's knee. The sweep is every
/// 5 ms, and every 1 ms from 65 to 95 ms, where the knees of both lie: no
/// pinned delay may beat it at every phase. (The same verdicts over every
/// scenario and a 1 ms sweep: RESULTS.md, round 11.) And S4 on seeds it was
/// not tuned on, 6-15 (sessions 21-30), where the held delay kept from
/// session to session is what keeps it off the frontier's every-phase
/// verdict (REMOLO_RECALL_KEEP_SHIFT; RESULTS.md, round 15); 1 ms steps
/// from 70 to 90 ms there, where its knee lies. And at a 240 Hz sender,
/// where a memory that counted packets covered half the sessions (S4,
/// seeds 6-15) and a reading at a bin's lower edge sat one millisecond
/// short of the pin past the knee (S5, seeds 1-5): RESULTS.md, round 16.
@Suite struct ReturningFrontierTests {
    static func sweep(fine: ClosedRange<Int>) -> [Policy] {
        Array(Set(stride(from: 0, through: 100, by: 5)).union(fine)).sorted().map { .fixed(ms: $0) }
    }

    @Test(arguments: [(Scenario.s4, 1, 5, 65...95, 120), (.s5, 1, 5, 65...95, 120), (.s4, 6, 10, 70...90, 120),
                      (.s4, 6, 10, 75...90, 240), (.s5, 1, 5, 75...90, 240)])
    func aReturningSenderIsNotBeatenByAPinnedDelay(_ sc: Scenario, _ first: Int, _ seeds: Int, _ fine: ClosedRange<Int>,
                                                   _ senderHz: Int) throws {
        let name = "\(sc.rawValue) seeds \(first)-\(first + seeds - 1) at a \(senderHz) Hz sender"
        let rows = Lab.simulate(scenarios: [sc], policies: [.default] + Self.sweep(fine: fine), seeds: seeds, senderHz: senderHz,
                                firstSeed: first, returning: 20)
        let fixed = rows.filter { $0.policy.hasPrefix("fixed:") }
        let r = try #require(rows.first { $0.policy == "default" })
        let f = FrontierReport(row: r, sweep: fixed)
        #expect(!f.dominatedAtEveryPhase, "\(name): \(f.text)")
        // And the memory is what did it: the same runs as first sessions
        // are beaten at every phase (the pinned delays' runs are the same).
        let c = try #require(Lab.simulate(scenarios: [sc], policies: [.default], seeds: seeds, senderHz: senderHz,
                                          firstSeed: first).first)
        #expect(FrontierReport(row: c, sweep: fixed).dominatedAtEveryPhase, "\(name) cold")
    }

    /// The other scenarios as returning sessions (seeds 1-5, sessions
    /// 21-25, every 5 ms): their held delays are a few ms, and no pinned
    /// delay beats them at every phase either (docs/smoothness.md, "A
    /// returning sender against the frontier"). Pins to 30 ms: a pin's
    /// p95 is at least its delay, and theirs is under 16 ms, so no longer
    /// pin can dominate them.
    @Test(arguments: [Scenario.s1, .s2, .s3, .s6, .s7])
    func theQuieterScenariosToo(_ sc: Scenario) throws {
        let pins = stride(from: 0, through: 30, by: 5).map { Policy.fixed(ms: $0) }
        let rows = Lab.simulate(scenarios: [sc], policies: [.default] + pins, seeds: 5, returning: 20)
        let r = try #require(rows.first { $0.policy == "default" })
        #expect(r.scores.latencyMsP95 < 25, "\(sc.rawValue): p95 \(r.scores.latencyMsP95) ms, past what the pins reach")
        let f = FrontierReport(row: r, sweep: rows.filter { $0.policy.hasPrefix("fixed:") })
        #expect(!f.dominatedAtEveryPhase, "\(sc.rawValue) seeds 1-5: \(f.text)")
    }
}
