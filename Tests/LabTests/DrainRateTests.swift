import Foundation
import Testing
@testable import RemoloPlayout
@testable import RemoloLab

/// The drain rate against the display (docs/drain-rate.md): what auto picks,
/// and what the lab measures for it.
@Suite struct DrainRateTests {
    struct RuleCase: CustomTestStringConvertible, Sendable {
        let n: Int
        let displays: [(nominal: Int, exact: Double, vrr: Bool)]
        let hz: Double
        let says: String
        var testDescription: String {
            "\(n): " + (displays.isEmpty ? "none" : displays.map { DrainRate.format($0.exact) }.joined(separator: "+"))
                + " Hz -> \(DrainRate.format(hz))"
        }
    }

    static func d(_ n: Int, _ exact: Double? = nil, vrr: Bool = false) -> (nominal: Int, exact: Double, vrr: Bool) {
        (n, exact ?? Double(n), vrr)
    }

    static let ruleCases: [RuleCase] = [
        RuleCase(n: 1, displays: [d(60)], hz: 480, says: "8 x 60 Hz"),
        RuleCase(n: 2, displays: [d(120)], hz: 480, says: "4 x 120 Hz"),
        RuleCase(n: 3, displays: [d(144)], hz: 576, says: "4 x 144 Hz"),
        RuleCase(n: 4, displays: [d(165)], hz: 495, says: "3 x 165 Hz"),
        RuleCase(n: 5, displays: [d(240)], hz: 480, says: "2 x 240 Hz"),
        RuleCase(n: 6, displays: [d(360)], hz: 720, says: "2 x 360 Hz"),
        // The mode's exact rate, not its rounded one.
        RuleCase(n: 7, displays: [d(144, 143.856)], hz: 575.424, says: "4 x 143.86 Hz"),
        RuleCase(n: 8, displays: [d(60, 59.94)], hz: 479.52, says: "8 x 59.94 Hz"),
        RuleCase(n: 9, displays: [d(90)], hz: 540, says: "6 x 90 Hz"),
        RuleCase(n: 10, displays: [d(500)], hz: 500, says: "1 x 500 Hz"),
        // Several displays: a common multiple where there is one under the cap...
        RuleCase(n: 11, displays: [d(60), d(144)], hz: 720, says: "12 ticks a frame"),
        RuleCase(n: 12, displays: [d(120), d(144)], hz: 720, says: "5 ticks a frame"),
        RuleCase(n: 13, displays: [d(144), d(144)], hz: 576, says: "every display at 144 Hz"),
        // ... else the least worst wobble.
        RuleCase(n: 14, displays: [d(144), d(165)], hz: 990, says: "wobble 0.048"),
        RuleCase(n: 15, displays: [d(165), d(240)], hz: 960, says: "wobble 0.066"),
        RuleCase(n: 16, displays: [d(165), d(360)], hz: 720, says: "wobble 0.110"),
        // Variable refresh: the mode's multiple, and a note.
        RuleCase(n: 17, displays: [d(144, vrr: true)], hz: 576, says: "variable refresh is on"),
        // Nothing to match.
        RuleCase(n: 18, displays: [], hz: 480, says: "no connected display; 480 Hz kept"),
        RuleCase(n: 19, displays: [d(0, 0)], hz: 480, says: "no display reports a usable refresh rate"),
    ]

    @Test("auto's choice", arguments: ruleCases)
    func rule(_ c: RuleCase) {
        let modes = c.displays.enumerated().map { i, m in
            DisplayMode(connector: "card0-DP-\(i + 1)", width: 2560, height: 1440, refreshHz: m.exact,
                        nominalHz: m.nominal, inUse: true, vrrCapable: m.vrr, vrrEnabled: m.vrr)
        }
        let choice = DrainRule.auto(modes)
        #expect(abs(choice.rate.hz - c.hz) < 1e-6, "\(choice.line)")
        #expect(choice.line.contains(c.says), "\(choice.line)")
        #expect(choice.line.hasPrefix("drain \(DrainRate.format(c.hz)) Hz (auto: "), "\(choice.line)")
    }

    @Test func rateBoundsAndPeriod() {
        #expect(DrainRate(hz: 119.9) == nil && DrainRate(hz: 2000.1) == nil && DrainRate(hz: .nan) == nil)
        #expect(DrainRate(hz: 120)?.tickNanoseconds == 8_333_333)
        #expect(DrainRate(hz: 2000)?.tickNanoseconds == 500_000)
        #expect(DrainRate.default.tickNanoseconds == 2_083_333)
        #expect(DrainRate(hz: 576)?.tickNanoseconds == 1_736_111)
    }

    /// The lab's table cases: S1 (seeds 1-3, 30 s, as docs/drain-rate.md),
    /// S2 and S7 (seed 1, 10 s). Auto is never worse than 480 Hz, and on S1
    /// within twice its own score on a 120 Hz display.
    struct LabCaseRow: CustomTestStringConvertible, Sendable {
        let n: Int
        let displayHz: Double
        let autoHz: Double
        var testDescription: String { "\(n): \(Int(displayHz)) Hz display, auto \(Int(autoHz)) Hz" }
    }

    static let labCases: [LabCaseRow] = [
        LabCaseRow(n: 1, displayHz: 60, autoHz: 480),
        LabCaseRow(n: 2, displayHz: 120, autoHz: 480),
        LabCaseRow(n: 3, displayHz: 144, autoHz: 576),
        LabCaseRow(n: 4, displayHz: 165, autoHz: 495),
        LabCaseRow(n: 5, displayHz: 240, autoHz: 480),
        LabCaseRow(n: 6, displayHz: 360, autoHz: 720),
    ]

    static func s1(_ display: LabDisplay, _ drain: LabDrain) -> Double {
        Lab.simulate(scenarios: [.s1], policies: [.default], seeds: 3, display: display, drain: drain)[0].scores.jitterRatio
    }

    /// Auto at 120 Hz (480 Hz): what every display is held to on S1.
    static let s1At120 = s1(.fixed(hz: 120), .auto)

    @Test("lab: auto against 480 Hz", arguments: labCases)
    func labAutoAgainst480(_ c: LabCaseRow) {
        let display = LabDisplay.fixed(hz: c.displayHz)
        #expect(LabDrain.auto.hz(for: display) == c.autoHz)
        let auto = Self.s1(display, .auto)
        let fixed = c.autoHz == 480 ? auto : Self.s1(display, .default)
        #expect(auto <= fixed, "S1: auto \(auto), 480 Hz \(fixed)")
        #expect(auto <= 2 * Self.s1At120, "S1: auto \(auto), at 120 Hz \(Self.s1At120)")
        guard c.autoHz != 480 else { return }
        for sc in [Scenario.s2, .s7] {
            func j(_ drain: LabDrain) -> Double {
                Lab.simulate(scenarios: [sc], policies: [.default], seeds: 1, display: display, drain: drain,
                             durationS: 10)[0].scores.jitterRatio
            }
            let a = j(.auto), f = j(.default)
            #expect(a <= f, "\(sc.rawValue): auto \(a), 480 Hz \(f)")
        }
    }

    /// The wobble formula auto ranks drains by, against the lab (S1, seed 1,
    /// 10 s: its network adds about 0.01).
    @Test("the wobble formula against the lab", arguments: [
        (480.0, 144.0), (990, 144), (576, 165), (1000, 60), (825, 120), (660, 360), (720, 144),
    ])
    func wobbleMatchesLab(_ c: (drain: Double, display: Double)) {
        let lab = Lab.simulate(scenarios: [.s1], policies: [.default], seeds: 1, display: .fixed(hz: c.display),
                               drain: .hz(c.drain), durationS: 10)[0].scores.jitterRatio
        let w = DrainRule.wobble(drainHz: c.drain, displayHz: c.display)
        #expect(abs(lab - w) <= 0.015, "drain \(c.drain) on \(c.display) Hz: lab \(lab), formula \(w)")
    }

    /// Variable refresh under a game: no drain divides it, and the jitter
    /// falls as the drain rises.
    @Test func variableRefreshFallsWithTheDrain() {
        func j(_ hz: Double) -> Double {
            Lab.simulate(scenarios: [.s1], policies: [.default], seeds: 1, display: .vrrGame(minHz: 48, maxHz: 144),
                         drain: .hz(hz), durationS: 10)[0].scores.jitterRatio
        }
        let a = j(480), b = j(1000)
        #expect(b < a * 0.7 && a < 0.1, "480 Hz \(a), 1000 Hz \(b)")
    }

    @Test func displayAndDrainParse() throws {
        #expect(try LabDisplay.parse("144") == .fixed(hz: 144))
        #expect(try LabDisplay.parse("48-144") == .vrrGame(minHz: 48, maxHz: 144))
        #expect(try LabDisplay.parse("cursor:165") == .vrrCursor(maxHz: 165))
        #expect(throws: LabDisplayError.self) { try LabDisplay.parse("1000") }
        #expect(throws: LabDisplayError.self) { try LabDisplay.parse("144-48") }
        #expect(try LabDrain.parse("auto:60+144").hz(for: .fixed(hz: 60)) == 720)
        #expect(throws: LabDisplayError.self) { try LabDrain.parse("90") }
    }
}
