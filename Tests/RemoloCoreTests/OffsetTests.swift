import RemoloPlayoutCore
import Testing
import RemoloTestSupport

/// Clock offset: the creeping minimum of (arrival - sender time).
@Suite struct OffsetTests {
    struct Step: CustomStringConvertible {
        let rx: UInt64, tx: UInt64
        let event: offset_event
        let offset: Int64
        let lateness: UInt64
        var description: String { "rx \(rx) tx \(tx)" }
    }
    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let steps: [Step]
        var testDescription: String { "\(id): \(name)" }
    }

    static let cases: [Case] = [
        Case(id: 1, name: "first packet sets the offset", steps: [
            Step(rx: 1_000_000, tx: 400_000, event: OFFSET_EVENT_RESET, offset: 600_000, lateness: 0),
        ]),
        Case(id: 2, name: "a faster trip is a new minimum", steps: [
            Step(rx: 1_000_000, tx: 400_000, event: OFFSET_EVENT_RESET, offset: 600_000, lateness: 0),
            // 10 ms later on both clocks but 3 ms faster: creep 2000 ppm * 10 ms = 20 us first.
            Step(rx: 1_010_000, tx: 413_000, event: OFFSET_EVENT_MINIMUM, offset: 597_000, lateness: 0),
        ]),
        Case(id: 3, name: "a slower trip keeps the minimum (plus creep) and is late", steps: [
            Step(rx: 1_000_000, tx: 400_000, event: OFFSET_EVENT_RESET, offset: 600_000, lateness: 0),
            Step(rx: 1_015_000, tx: 410_000, event: OFFSET_EVENT_NONE, offset: 600_030, lateness: 4_970),
        ]),
        Case(id: 4, name: "creep: 2 ms per second between minima", steps: [
            Step(rx: 1_000_000, tx: 0, event: OFFSET_EVENT_RESET, offset: 1_000_000, lateness: 0),
            Step(rx: 1_500_000, tx: 400_000, event: OFFSET_EVENT_NONE, offset: 1_001_000, lateness: 99_000),
            Step(rx: 2_000_000, tx: 900_000, event: OFFSET_EVENT_NONE, offset: 1_002_000, lateness: 98_000),
        ]),
        Case(id: 5, name: "creep carries sub-microsecond remainders", steps: [
            Step(rx: 0, tx: 0, event: OFFSET_EVENT_RESET, offset: 0, lateness: 0),
            // 2000 ppm of 300 us is 0.6 us: nothing yet, then 1.2 -> 1, then 1.8 -> 1.
            Step(rx: 300, tx: 0, event: OFFSET_EVENT_NONE, offset: 0, lateness: 300),
            Step(rx: 600, tx: 0, event: OFFSET_EVENT_NONE, offset: 1, lateness: 599),
            Step(rx: 900, tx: 0, event: OFFSET_EVENT_NONE, offset: 1, lateness: 899),
        ]),
        Case(id: 6, name: "a long gap forgets the offset", steps: [
            Step(rx: 1_000_000, tx: 0, event: OFFSET_EVENT_RESET, offset: 1_000_000, lateness: 0),
            Step(rx: 3_000_001, tx: 1_000_000, event: OFFSET_EVENT_RESET, offset: 2_000_001, lateness: 0),
        ]),
        Case(id: 7, name: "a gap of exactly the limit does not reset", steps: [
            Step(rx: 1_000_000, tx: 0, event: OFFSET_EVENT_RESET, offset: 1_000_000, lateness: 0),
            Step(rx: 3_000_000, tx: 2_000_000, event: OFFSET_EVENT_MINIMUM, offset: 1_000_000, lateness: 0),
        ]),
        Case(id: 8, name: "sender clock stepped back 5 s: rebased", steps: [
            Step(rx: 10_000_000, tx: 10_000_000, event: OFFSET_EVENT_RESET, offset: 0, lateness: 0),
            Step(rx: 10_010_000, tx: 5_010_000, event: OFFSET_EVENT_STEP, offset: 5_000_000, lateness: 0),
        ]),
        Case(id: 9, name: "one packet hours ahead, then back: two rebases, no overflow", steps: [
            Step(rx: 10_000_000, tx: 10_000_000, event: OFFSET_EVENT_RESET, offset: 0, lateness: 0),
            Step(rx: 10_010_000, tx: 10_000_000 + 3 * 3_600_000_000, event: OFFSET_EVENT_MINIMUM,
                 offset: 10_000 - 3 * 3_600_000_000, lateness: 0),
            Step(rx: 10_020_000, tx: 10_010_000, event: OFFSET_EVENT_STEP, offset: 10_000, lateness: 0),
        ]),
        Case(id: 10, name: "sender time wraps past u64 max: plain modular difference", steps: [
            Step(rx: 5, tx: UInt64.max, event: OFFSET_EVENT_RESET, offset: 6, lateness: 0),
            Step(rx: 10, tx: 0, event: OFFSET_EVENT_NONE, offset: 6, lateness: 4),
            Step(rx: 20, tx: UInt64.max / 2, event: OFFSET_EVENT_MINIMUM,
                 offset: Int64(bitPattern: 20 &- UInt64.max / 2), lateness: 0),
        ]),
        Case(id: 11, name: "receiver time going backwards counts as no time", steps: [
            Step(rx: 1_000_000, tx: 0, event: OFFSET_EVENT_RESET, offset: 1_000_000, lateness: 0),
            Step(rx: 900_000, tx: 0, event: OFFSET_EVENT_MINIMUM, offset: 900_000, lateness: 0),
            // Creep counts from the latest forward time, 1 000 000: 0.9 s -> 1800 us.
            Step(rx: 1_900_000, tx: 500_000, event: OFFSET_EVENT_NONE, offset: 901_800, lateness: 498_200),
        ]),
    ]

    @Test(arguments: cases)
    func table(_ c: Case) {
        var cfg = seedConfig()
        var clock = offset_est()
        offset_init(&clock)
        for (i, s) in c.steps.enumerated() {
            var late: UInt64 = 0
            let ev = offset_update(&clock, &cfg, s.rx, s.tx, &late)
            #expect(ev == Int32(s.event.rawValue), "case \(c.id) step \(i): event")
            #expect(clock.offset_us == s.offset, "case \(c.id) step \(i): offset")
            #expect(late == s.lateness, "case \(c.id) step \(i): lateness")
        }
    }

    /// Drift of +/-500 ppm (the worst bound) with 0..2 ms jitter, 120 Hz for
    /// 60 s: the offset follows the true minimum and no packet looks more
    /// late than its jitter plus what creep adds between two minima.
    @Test(arguments: [(1, 500.0), (2, -500.0), (3, 15.0), (4, -15.0), (5, 0.0)])
    func drift(_ id: Int, _ ppm: Double) {
        var cfg = seedConfig()
        var clock = offset_est()
        offset_init(&clock)
        var rng = SplitMix64(seed: UInt64(id))
        let theta: Double = 7_000_000, dmin: Double = 1_500
        var worst: UInt64 = 0
        for k in 0..<(120 * 60) {
            let s = Double(k) * 8_333.333 + 1_000_000
            let jitter = Double(rng.next() % 2_000)
            let rx = UInt64(s * (1 + ppm * 1e-6) + theta + dmin + jitter)
            var late: UInt64 = 0
            _ = offset_update(&clock, &cfg, rx, UInt64(s), &late)
            if k > 240 { worst = max(worst, late) }
            // The offset never exceeds the true minimum trip by more than
            // what 2000 ppm adds in the time the jitter needs to hit ~0.
            let trueMin = s * ppm * 1e-6 + theta + dmin
            #expect(Double(clock.offset_us) <= trueMin + 2_000, "case \(id) packet \(k)")
            if k > 240 { #expect(Double(clock.offset_us) >= trueMin - 1, "case \(id) packet \(k)") }
        }
        #expect(worst < 4_000, "case \(id): worst lateness \(worst) us")
    }
}
