import RemoloPlayout
import RemoloLab
import RemoloTrace
import RemoloSession
import RemoloSystem
import RemoloPlayoutCore
import Testing
import RemoloTestSupport

/// Hostile or broken senders: defined behaviour, no overflow (the suite
/// runs under UBSan in CI), and no multi-screen jump from one packet. The
/// bound: one packet moves at most REMOLO_MAX_MOTION_Q8 (1024 px) per axis
/// and scrolls at most 10 notches; what it claims beyond is clamped.
@Suite struct HostileTimeTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        /// (sender time, dx in Q8) for packet k; arrivals are every 8.3 ms.
        let packet: @Sendable (Int) -> (UInt64, Int32)
        let count: Int
        var testDescription: String { "\(id): \(name)" }
    }

    static let cases: [Case] = [
        Case(id: 1, name: "sender time runs backwards", packet: { k in (10_000_000_000 - UInt64(k) * 8_333, 256) }, count: 500),
        Case(id: 2, name: "sender time jumps hours ahead every 50 packets", packet: { k in
            (UInt64(k) * 8_333 + (k % 50 == 49 ? 5 * 3_600_000_000 : 0), 512) }, count: 500),
        Case(id: 3, name: "duplicate timestamps", packet: { _ in (42, 300) }, count: 500),
        Case(id: 4, name: "deltas of INT32_MAX", packet: { k in (UInt64(k) * 8_333, Int32.max) }, count: 50),
        Case(id: 5, name: "deltas of INT32_MIN", packet: { k in (UInt64(k) * 8_333, Int32.min) }, count: 50),
        Case(id: 6, name: "sender time alternates 0 and UInt64.max", packet: { k in (k % 2 == 0 ? 0 : .max, -700) }, count: 500),
        Case(id: 7, name: "sender time random over all of u64", packet: { k in
            var r = SplitMix64(seed: UInt64(k)); return (r.next(), Int32(truncatingIfNeeded: r.next())) }, count: 2_000),
        Case(id: 8, name: "sender time one step back 5 s mid-stream", packet: { k in
            (k < 100 ? UInt64(k) * 8_333 : UInt64(k) * 8_333 &- 5_000_000, 256) }, count: 300),
        // Arrivals are 1 000 000 + 8 333 k: these hold the sample
        // (arrival - sender time) at the ends of int64 for the whole run.
        Case(id: 9, name: "sample held at INT64_MAX", packet: { k in
            (1_000_000 &+ UInt64(k) * 8_333 &- UInt64(Int64.max), 256) }, count: 300),
        Case(id: 10, name: "sample held at INT64_MIN", packet: { k in
            (1_000_000 &+ UInt64(k) * 8_333 &+ (1 << 63), 256) }, count: 300),
        Case(id: 11, name: "sample alternates between the ends of int64", packet: { k in
            (1_000_000 &+ UInt64(k) * 8_333 &+ (k % 2 == 0 ? (1 << 63) : 1), -256) }, count: 300),
    ]

    /// Both the design note's policy and the default (which adds the windowed
    /// minimum and the learned frame) must hold.
    @Test(arguments: cases, ["seed", "default"])
    func table(_ c: Case, _ policy: String) {
        var cfg = seedConfig()
        if policy == "default" { playout_config_default(&cfg) }
        let p = CorePlayout(cfg)
        let bound = Int64(REMOLO_MAX_MOTION_Q8)
        var want: Int64 = 0, got: Int64 = 0
        var rx: UInt64 = 1_000_000
        var t = rx
        var worstTick: Int64 = 0
        for k in 0..<c.count {
            let (tx, dx) = c.packet(k)
            p.push(rx: rx, tx: tx, a: dx, b: 0)
            want += min(max(Int64(dx), -bound), bound)
            while t < rx + 8_333 {
                let o = p.tick(t)
                got += Int64(o.dx)
                worstTick = max(worstTick, abs(Int64(o.dx)))
                t += tickUs
            }
            rx += 8_333
        }
        for _ in 0..<2_000 { let o = p.tick(t); got += Int64(o.dx); worstTick = max(worstTick, abs(Int64(o.dx))); t += tickUs }
        #expect(p.queued == 0, "case \(c.id): drained")
        #expect(got * 256 + p.p.pointee.acc.0 == want, "case \(c.id): clamped motion conserved")
        // A clumped replay may overlap a few segments, but no tick comes
        // near a screen: each packet spreads over >= 1 ms, at most 3 ms of
        // packets overlap per 2 ms tick in these streams.
        #expect(worstTick <= 3 * 1024, "case \(c.id): worst tick \(worstTick) px")
        #expect(p.p.pointee.delay.delay_us <= cfg.delay_max_us && p.p.pointee.delay.delay_us >= cfg.delay_min_us)
    }

    /// A single INT32_MAX packet moves exactly the bound, and not at once.
    @Test func singleHugePacket() {
        let p = CorePlayout()
        p.push(rx: 1_000_000, tx: 0, kind: PLAYOUT_KIND_HEARTBEAT)
        p.push(rx: 1_008_333, tx: 8_333, a: .max, b: .min)
        var x = 0, y = 0, biggest = 0
        var t: UInt64 = 1_000_000
        for _ in 0..<100 { let o = p.tick(t); x += Int(o.dx); y += Int(o.dy); biggest = max(biggest, abs(Int(o.dx))); t += tickUs }
        #expect(x == 1024 && y == -1024)
        #expect(biggest < 1024, "spread over several ticks")
        #expect(p.p.pointee.stats.clamped == 2)
    }

    /// Huge scroll deltas: at most 10 notches per packet.
    @Test func hugeScroll() {
        let p = CorePlayout()
        p.push(rx: 1_000_000, tx: 0, kind: PLAYOUT_KIND_SCROLL, a: .min, b: .max)
        var v = 0, h = 0, notches = 0
        var t: UInt64 = 1_000_000
        for _ in 0..<100 { let o = p.tick(t); v += Int(o.wheel_hires); h += Int(o.hwheel_hires); notches += Int(o.wheel); t += tickUs }
        #expect(v == -1200 && h == 1200 && notches == -10)
    }

    /// Receiver time an hour ahead, then back: the drain clock holds and
    /// nothing is lost. (Times compare modulo 2^64, as signed differences:
    /// the clocks involved are microseconds since boot.)
    @Test func receiverTimeJumps() {
        let p = CorePlayout()
        p.push(rx: 1_000_000, tx: 0, a: 10 * 256)
        let far: UInt64 = 1_000_000 + 3_600_000_000
        #expect(p.tick(far).dx == 10)
        let back = p.tick(5)
        #expect(back.dx == 0 && back.idle)
        p.push(rx: 2_000_000, tx: 1_000_000, a: 256)
        var total = 0
        for i in 0..<100 { total += Int(p.tick(far + UInt64(i)).dx) }
        #expect(total == 1, "motion is not lost when the clock stands still")
    }

    /// Unknown kinds and button codes are refused and counted. (Kind 5 is
    /// the playout's key: KeyQueueTests refuse its unknown codes; kind 6 a
    /// gesture: GestureTrackTests.)
    @Test(arguments: [(1, UInt8(0), UInt16(0)), (2, UInt8(7), UInt16(0)), (3, UInt8(255), UInt16(0)), (4, UInt8(3), UInt16(0x10f)), (5, UInt8(3), UInt16(0x118)), (6, UInt8(3), UInt16(0xffff))])
    func rejects(_ id: Int, _ kind: UInt8, _ code: UInt16) {
        let p = CorePlayout()
        var pkt = playout_pkt(tx_us: 1, a: 1, b: 1, code: code, kind: kind, down: 1, lost_n: 0, lost: (0, 0, 0, 0), g: playout_gesture())
        #expect(playout_push(p.p, 1, &pkt) == Int32(PLAYOUT_PUSH_REJECTED.rawValue), "case \(id)")
        #expect(p.p.pointee.stats.rejected == 1 && p.p.pointee.stats.packets == 0, "case \(id)")
    }

    /// Config values the core cannot honour are refused.
    @Test(arguments: 1...8)
    func badConfig(_ id: Int) {
        var c = seedConfig()
        switch id {
        case 1: c.window = 0
        case 2: c.window = REMOLO_WINDOW_MAX + 1
        case 3: c.delay_min_us = 70_000
        case 4: c.delay_start_us = 1_000
        case 5: c.seg_max_us = 2_000_000
        case 6: c.quantile_permille = 1001
        case 7: c.late_min_us = 20_000
        default: c.gap_reset_us = UInt32.max
        }
        #expect(playout_config_check(&c) == -22, "case \(id)")
        #expect(playout_config_problem(&c) != nil, "case \(id): says which rule")
        var cfg = PlayoutConfig.default
        cfg.window = 0
        #expect(throws: PlayoutError.self) { try Playout(config: cfg) }
        let p = UnsafeMutablePointer<playout>.allocate(capacity: 1)
        defer { p.deallocate() }
        #expect(playout_init(p, &c) == -22, "case \(id)")
    }
}
