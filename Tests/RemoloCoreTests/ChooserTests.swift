import RemoloPlayoutCore
import Testing
import RemoloTestSupport

/// The delay chooser (chooser.c) in virtual time: movement packets at
/// 120 Hz, each with its lateness over its zero-delay slot, fed straight to
/// the chooser with the lab's `chooser` weights (stall_weight 30, memory
/// 2^10 packets, hysteresis 5%). The expectations follow from its cost
/// (delay + catch-up latency + 30 x stall per packet), worked out in each
/// case's comment, not from a run.
@Suite struct ChooserTests {
    static let frameUs: UInt64 = 8_333

    static func config() -> playout_config {
        var c = playout_config()
        playout_config_default(&c)
        // The chooser alone: no floor under its pick (FloorTests has it).
        c.stall_weight = REMOLO_STALL_WEIGHT
        c.choose_floor = 0
        c.delay_max_us = REMOLO_CHOOSER_DELAY_MAX_US
        return c
    }

    /// A deterministic spread in [0, 1): the tests' "random" jitter.
    static func spread(_ i: Int) -> Double {
        var x = UInt64(truncatingIfNeeded: i) &* 0x9E37_79B9_7F4A_7C15
        x ^= x >> 29; x = x &* 0xBF58_476D_1CE4_E5B9; x ^= x >> 32
        return Double(x % 10_000) / 10_000
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let packets: Int
        let lateness: @Sendable (Int) -> UInt64
        /// From this packet on the pick stays in `settled`.
        let settledFrom: Int
        let settled: ClosedRange<UInt32>
        /// From `beforeFrom` to before `beforeUntil` the pick is in `before`
        /// (nil: not checked).
        var beforeFrom: Int = 0
        var beforeUntil: Int = 0
        var before: ClosedRange<UInt32>? = nil
        var testDescription: String { "\(id): \(name)" }
    }

    static let cases: [Case] = [
        // Every candidate at or above 3 ms is never late and costs its
        // delay; below it every packet stalls by the difference, at 30x.
        Case(id: 1, name: "a constant 3 ms lateness settles on 3 ms within a second",
             packets: 1_200, lateness: { _ in 3_000 }, settledFrom: 120, settled: 3_000...3_000),
        Case(id: 2, name: "a network that is never late settles on 0",
             packets: 600, lateness: { _ in 0 }, settledFrom: 1, settled: 0...0),
        // Lateness uniform in [0, 20 ms): a delay d leaves (20 - d)^2 / 40 ms
        // of stall per packet at most, so the least cost is near
        // 20 - 20/30 ms: the 20 ms candidate, or the next below.
        Case(id: 3, name: "a step up in jitter raises the delay within 2 s",
             packets: 2_400, lateness: { i in i < 1_200 ? 2_000 : 2_000 + UInt64(spread(i) * 18_000) },
             settledFrom: 1_440, settled: 16_000...25_000, beforeUntil: 1_200, before: 2_000...2_000),
        // Back to a constant 2 ms: the memory of the noisy part decays by
        // 2^-10 a packet while every packet now costs 18 ms more at 20 ms
        // than at 2 ms. The noisy part's stall at 2 ms is at most (20 - 2)^2
        // / 40 = 8.1 ms a packet, 243 ms of cost, against 18 ms more at
        // 20 ms: the sums cross after at most ln(243 / 18) * 1024 = 2670
        // packets, 22 s.
        Case(id: 4, name: "a step down lowers the delay, within the memory's decay (at most 22 s)",
             packets: 8_000, lateness: { i in i < 2_400 ? 2_000 + UInt64(spread(i) * 18_000) : 2_000 },
             settledFrom: 2_400 + 2_700, settled: 2_000...2_000, beforeFrom: 1_200, beforeUntil: 2_400, before: 13_000...25_000),
        // One packet 200 ms late: it stalls 198 ms once (30 x 198 ms = 6 s
        // of cost), covering it would cost 198 ms on each of ~1024 packets.
        Case(id: 5, name: "one outlier does not move it",
             packets: 1_200, lateness: { i in i == 600 ? 200_000 : 2_000 }, settledFrom: 120, settled: 2_000...2_000),
        // Every 10th packet 20 ms late, the others 1 ms: covering costs
        // 10 x 19 ms per 10 packets, not covering a 19 ms stall at 30x.
        Case(id: 6, name: "a periodic spike is learned within 2 s",
             packets: 2_400, lateness: { i in i % 10 == 5 ? 20_000 : 1_000 }, settledFrom: 240, settled: 20_000...20_000),
        // Spikes too rare to pay for: every 400th packet 20 ms late costs
        // 19 ms x 30 per 400 packets, covering it 19 ms x 400.
        Case(id: 7, name: "a rare spike is left to the catch-up",
             packets: 2_400, lateness: { i in i % 400 == 5 ? 20_000 : 1_000 }, settledFrom: 120, settled: 1_000...1_000),
    ]

    @Test(arguments: cases)
    func table(_ k: Case) {
        var cfg = Self.config()
        var c = chooser()
        chooser_init(&c, cfg.delay_start_us)
        for i in 0..<k.packets {
            let ref = 1_000_000 + UInt64(i) * Self.frameUs
            chooser_add(&c, &cfg, ref + k.lateness(i), ref, UInt32(Self.frameUs), i > 0)
            let d = chooser_delay_us(&c)
            if i + 1 >= k.settledFrom {
                #expect(k.settled.contains(d), "case \(k.id): after packet \(i) the delay is \(d) us, want \(k.settled)")
                if !k.settled.contains(d) { return }
            }
            if let b = k.before, i + 1 >= k.beforeFrom, i + 1 < k.beforeUntil {
                #expect(b.contains(d), "case \(k.id): after packet \(i) the delay is \(d) us, want \(b) still")
                if !b.contains(d) { return }
            }
        }
    }

    /// Candidates are ascending, start at 0 and end at the lab's clamp, and
    /// the chooser starts on the one nearest the configured start.
    @Test func candidatesAndStart() {
        var last: UInt32? = nil
        for k in 0..<REMOLO_CHOOSER_CANDIDATES {
            let d = chooser_candidate_us(k)
            if let l = last { #expect(d > l, "candidate \(k)") }
            last = d
        }
        #expect(chooser_candidate_us(0) == 0)
        #expect(last == REMOLO_CHOOSER_DELAY_MAX_US)
        var c = chooser()
        chooser_init(&c, 12_500)
        #expect(chooser_delay_us(&c) == 13_000)
        chooser_init(&c, 2_000)
        #expect(chooser_delay_us(&c) == 2_000)
    }

    /// Through the playout: the delay is the chooser's pick (clamped), and a
    /// step of the sender's clock re-anchors the schedule as it does with
    /// the window's rule (keep_max_us) instead of reading as lateness:
    /// the delay stays where the network put it.
    @Test func senderClockStepIsNotLateness() {
        let p = CorePlayout(Self.config())
        var tx: UInt64 = 5_000_000, rx: UInt64 = 9_000_000, i = 0
        // Transit alternates 0 and 3 ms over the fastest: the pick is 3 ms.
        func run(_ n: Int) {
            for _ in 0..<n {
                p.push(rx: rx + (i % 2 == 0 ? 0 : 3_000), tx: tx, a: 256)
                tx &+= Self.frameUs; rx += Self.frameUs; i += 1
            }
        }
        run(600)
        #expect(p.delay == 3_000)
        // The sender's clock jumps back 2 s (a step: past step_reset_us),
        // then back by 400 ms (less than a step, more than keep_max_us),
        // then forward by 400 ms: none of it is the network.
        for jump: Int64 in [-2_000_000, -400_000, 400_000] {
            tx = UInt64(Int64(tx) + jump)
            run(600)
            #expect(p.delay == 3_000, "600 packets after the sender's clock jumped \(jump) us: \(p.delay) us")
        }
        #expect(p.p.pointee.stats.clock_steps >= 1)
    }

    /// The chooser's clamp: a pick above delay_max_us is held at it.
    @Test func pickIsClamped() {
        var cfg = Self.config()
        cfg.delay_max_us = 10_000
        let p = CorePlayout(cfg)
        var tx: UInt64 = 1_000_000
        for i in 0..<600 {
            p.push(rx: tx + 40_000 + (i % 10 == 0 ? 30_000 : 0), tx: tx, a: 256)
            tx += Self.frameUs
        }
        #expect(p.delay == 10_000)
    }
}
