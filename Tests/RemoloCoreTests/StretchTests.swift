import Glibc
import RemoloPlayoutCore
import Testing

/// The time-stretched schedule (slew_permille, catchup_permille) in virtual
/// time: a sender at 120 Hz moving 10 px per packet (2.5 px per 480 Hz
/// tick when steady), arrivals disturbed per case. Whatever the network
/// does, no tick shows more than the catch-up speed allows (`limit`), all
/// motion comes out exactly, and the
/// design note's policy on the same arrivals is shown to jump (where it does)
/// so that each case tests the mechanism, not the input.
@Suite struct StretchTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        /// Arrival of packet k (sent at k * 8333 us), receiver clock.
        let arrival: @Sendable (Int) -> UInt64
        /// Whether the design note's policy jumps (> 5 px in a tick) here.
        let seedJumps: Bool
        /// The most one tick may show: the steady 2.5 px at the catch-up
        /// speed (x 1.5) plus a pixel of rounding; where one packet is late
        /// among on-time ones, its own frame at the catch-up speed plays on
        /// top of the steady stream (2.5 + 3.75 + 1).
        var limit: Int32 = 5
        var testDescription: String { "\(id): \(name)" }
    }

    static let frame: UInt64 = 8_333
    static let base: UInt64 = 1_000_000

    static let cases: [Case] = [
        Case(id: 1, name: "steady 2 ms transit", arrival: { k in base + UInt64(k) * frame + 2_000 }, seedJumps: false),
        Case(id: 2, name: "one packet held 100 ms, the rest on time", arrival: { k in
            base + UInt64(k) * frame + 2_000 + (k == 200 ? 100_000 : 0) }, seedJumps: true, limit: 7),
        Case(id: 3, name: "a 100 ms hold, then the queue in one clump", arrival: { k in
            let t = base + UInt64(k) * frame + 2_000
            let holdEnd = base + 200 * frame + 102_000
            return k >= 200 && t < holdEnd ? holdEnd : t }, seedJumps: true),
        Case(id: 4, name: "transit steps from 2 to 30 ms and back", arrival: { k in
            base + UInt64(k) * frame + ((300..<600).contains(k) ? 30_000 : 2_000) }, seedJumps: true),
        Case(id: 5, name: "new fastest trip: transit drops from 12 to 2 ms", arrival: { k in
            base + UInt64(k) * frame + (k < 300 ? 12_000 : 2_000) }, seedJumps: true),
        Case(id: 6, name: "a hold every 0.5 s (peer-to-peer stalls)", arrival: { k in
            let t = base + UInt64(k) * frame + 2_000
            let phase = (t - base) % 500_000
            return phase < 90_000 ? t - phase + 90_000 : t }, seedJumps: true),
    ]

    static func run(_ c: Case, _ cfg: playout_config, count: Int = 900) -> (worst: Int32, got: Int64, at: UInt64) {
        let p = CorePlayout(cfg)
        var arrivals = (0..<count).map { (c.arrival($0), $0) }
        arrivals.sort { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }
        var next = 0, got: Int64 = 0, worst: Int32 = 0, at: UInt64 = 0
        var t = base
        while next < arrivals.count || t < arrivals.last!.0 + 1_000_000 {
            while next < arrivals.count && arrivals[next].0 <= t {
                let (rx, k) = arrivals[next]
                p.push(rx: rx, tx: 5_000_000 + UInt64(k) * frame, a: 10 * 256, b: 0)
                next += 1
            }
            let o = p.tick(t)
            got += Int64(o.dx)
            if abs(o.dx) > worst { worst = abs(o.dx); at = t }
            t += tickUs
        }
        return (worst, got + Int64(p.p.pointee.acc.0) / 256, at)
    }

    @Test(arguments: cases)
    func table(_ c: Case) {
        var cfg = seedConfig()
        playout_config_default(&cfg)
        let (worst, got, at) = Self.run(c, cfg)
        #expect(got == 900 * 10, "conservation")
        #expect(worst <= c.limit, "a tick at \(at) showed \(worst) px: faster than the catch-up allows")
        let seed = Self.run(c, seedConfig())
        #expect(seed.got == 900 * 10)
        #expect((seed.worst > 5) == c.seedJumps, "the design note's policy: worst tick \(seed.worst) px")
    }

    /// Config by name, generated from the one field list; the broken rule
    /// comes back as text.
    @Test func configByName() {
        var c = seedConfig()
        #expect(playout_config_set(&c, "slew_permille", 250) == 0 && c.slew_permille == 250)
        #expect(playout_config_set(&c, "no_such_field", 1) == -ENOENT)
        #expect(playout_config_set(&c, "window", -1) == -ERANGE)
        #expect(playout_config_set(&c, "window", Int64(UInt32.max) + 1) == -ERANGE)
        var n: UInt32 = 0
        while playout_config_field(n) != nil { n += 1 }
        #expect(Int(n) == Int(PLAYOUT_CONFIG_FIELD_COUNT))
        #expect(MemoryLayout<playout_config>.size == Int(n) * 4)
        c.slew_permille = 1001
        #expect(String(cString: playout_config_problem(&c)!) == "slew_permille and catchup_permille must be at most 1000")
    }
}

/// A step of the sender's clock (keep_max_us) in virtual time: 120 Hz,
/// 10 px a packet, 2 ms transit throughout, the sender's timestamps jump by
/// `step` from packet 300 on. How far behind its arrival a packet's motion
/// is shown (`lag`), over a range of packets after the step.
@Suite struct ClockStepTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let step: Int64
        let keepMax: UInt32
        let packets: Range<Int>
        let lag: ClosedRange<UInt64>     // every packet's, in us
        var testDescription: String { "\(id): \(name)" }
    }

    static let frame: UInt64 = 8_333
    static let base: UInt64 = 1_000_000

    static let cases: [Case] = [
        Case(id: 1, name: "forward 200 ms, re-anchored: caught up within half a second",
             step: 200_000, keepMax: 128_000, packets: 360..<600, lag: 0...30_000),
        Case(id: 2, name: "forward 200 ms, place kept (keep_max_us 0): held while the slew works it off",
             step: 200_000, keepMax: 0, packets: 310..<400, lag: 100_000...250_000),
        Case(id: 3, name: "forward 100 ms, below keep_max_us: kept, slewed",
             step: 100_000, keepMax: 128_000, packets: 305..<330, lag: 60_000...150_000),
        Case(id: 4, name: "back 200 ms, re-anchored once the offset rises",
             step: -200_000, keepMax: 128_000, packets: 500..<700, lag: 0...30_000),
    ]

    @Test(arguments: cases)
    func table(_ c: Case) {
        var cfg = seedConfig()
        playout_config_default(&cfg)
        cfg.keep_max_us = c.keepMax
        #expect(playout_config_check(&cfg) == 0)
        let p = CorePlayout(cfg)
        let count = 800
        var shownAt = [UInt64](repeating: 0, count: count)
        var next = 0, shown: Int64 = 0
        var t = Self.base
        while next < count || t < Self.base + UInt64(count) * Self.frame + 2_000_000 {
            while next < count && Self.base + UInt64(next) * Self.frame + 2_000 <= t {
                let tx = UInt64(Int64(5_000_000 + UInt64(next) * Self.frame) + (next >= 300 ? c.step : 0))
                p.push(rx: Self.base + UInt64(next) * Self.frame + 2_000, tx: tx, a: 10 * 256, b: 0)
                next += 1
            }
            shown += Int64(p.tick(t).dx)
            // Packet k's motion is out once 10 (k + 1) px are, less a pixel of rounding.
            var k = Int((shown + 1) / 10) - 1
            while k >= 0 && k < count && shownAt[k] == 0 { shownAt[k] = t; k -= 1 }
            t += tickUs
        }
        #expect(shown + Int64(p.p.pointee.acc.0) / 256 == Int64(count) * 10, "case \(c.id): conservation")
        for k in c.packets {
            let lag = shownAt[k] - (Self.base + UInt64(k) * Self.frame + 2_000)
            if !c.lag.contains(lag) {
                Issue.record("case \(c.id): packet \(k) shown \(lag) us after its arrival, want \(c.lag)")
                return
            }
        }
    }
}
