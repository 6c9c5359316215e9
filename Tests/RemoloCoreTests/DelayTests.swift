import RemoloPlayoutCore
import Testing
import RemoloTestSupport

/// Delay: p95 of the last 240 latenesses + 3 ms, clamped to 6..60 ms, from
/// 12 ms; grows at once, shrinks by 1% of itself per packet.
@Suite struct DelayTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let latenesses: [UInt64]
        let delays: [UInt32]   // expected delay after each lateness
        var testDescription: String { "\(id): \(name)" }
    }

    static let cases: [Case] = [
        Case(id: 1, name: "starts at 12 ms, target clamps to 6 ms, shrinks 1%",
             latenesses: [0, 0, 0], delays: [11_880, 11_762, 11_645]),
        Case(id: 2, name: "grows at once to p95 + 3 ms",
             latenesses: [0, 20_000], delays: [11_880, 23_000]),
        Case(id: 3, name: "clamped at 60 ms",
             latenesses: [100_000], delays: [60_000]),
        Case(id: 4, name: "lateness beyond the cap is held at the cap, delay at 60 ms",
             latenesses: [UInt64.max], delays: [60_000]),
        Case(id: 5, name: "shrinks toward a lower target, never below it",
             latenesses: [40_000] + Array(repeating: 4_000, count: 19) + [4_000],
             // Up to 19 values the nearest rank ceil(0.95 n) is the largest
             // (40 ms); from 20 values on it is the 19th: 4 ms, target 7 ms.
             delays: [43_000] + (1...18).map { _ in 43_000 } + [42_570, 42_145]),
        Case(id: 6, name: "exactly at the lower clamp",
             latenesses: [3_000], delays: [11_880]),
    ]

    @Test(arguments: cases)
    func table(_ c: Case) {
        var cfg = seedConfig()
        var d = delay_est()
        delay_init(&d, &cfg)
        #expect(d.delay_us == 12_000, "case \(c.id): start")
        for (i, l) in c.latenesses.enumerated() {
            let got = delay_update(&d, &cfg, l)
            #expect(got == c.delays[i], "case \(c.id) packet \(i)")
        }
    }

    /// A long run at a constant target: 1% per packet, geometric.
    @Test func shrinkIsOnePercentPerPacket() {
        var cfg = seedConfig()
        var d = delay_est()
        delay_init(&d, &cfg)
        _ = delay_update(&d, &cfg, 57_000)       // 60 ms
        var expected: UInt32 = 60_000
        for _ in 0..<239 { _ = delay_update(&d, &cfg, 57_000) }
        for _ in 0..<240 { _ = delay_update(&d, &cfg, 0) }
        // Now the window holds only zeros: target = 6 ms.
        #expect(d.target_us == 6_000)
        var seen: [UInt32] = []
        for _ in 0..<300 {
            let before = d.delay_us
            let after = delay_update(&d, &cfg, 0)
            expected = max(6_000, before - before / 100)
            #expect(after == expected)
            seen.append(after)
        }
        #expect(seen.last == 6_000)
    }

    /// The quantile equals a brute-force sort of the last 240 values, for
    /// random data with many repeats and wide spreads: at every step while
    /// the window fills and for a while after, then at every 13th step
    /// (sorting costs; the sanitizer runs are slow).
    @Test(arguments: [(1, UInt64(1_000)), (2, UInt64(60_000)), (3, UInt64(20_000_000)), (4, UInt64(3))])
    func quantileMatchesSort(_ id: Int, _ spread: UInt64) {
        var cfg = seedConfig()
        var d = delay_est()
        delay_init(&d, &cfg)
        var rng = SplitMix64(seed: UInt64(100 + id))
        var history: [UInt32] = []
        for i in 0..<5_000 {
            let l = rng.next() % spread
            _ = delay_update(&d, &cfg, l)
            history.append(UInt32(min(l, UInt64(REMOLO_LATENESS_CAP_US))))
            if i > 600 && i % 13 != 0 { continue }
            let window = history.suffix(240).sorted()
            let rank = (950 * window.count + 999) / 1000
            let want = window[max(rank, 1) - 1]
            let got = delay_quantile(&d, &cfg)
            if got != want {
                Issue.record("case \(id) step \(i): quantile \(got), sort says \(want)")
                return
            }
            // Target follows from it exactly.
            let target = min(max(UInt64(want) + 3_000, 6_000), 60_000)
            #expect(UInt64(d.target_us) == target)
        }
    }

    /// Other window sizes and quantiles (the config overrides).
    @Test(arguments: [(1, UInt32(1), UInt32(950)), (2, UInt32(256), UInt32(500)), (3, UInt32(17), UInt32(1000)), (4, UInt32(100), UInt32(0))])
    func quantileOtherConfigs(_ id: Int, _ window: UInt32, _ permille: UInt32) {
        var cfg = seedConfig()
        cfg.window = window
        cfg.quantile_permille = permille
        #expect(playout_config_check(&cfg) == 0)
        var d = delay_est()
        delay_init(&d, &cfg)
        var rng = SplitMix64(seed: UInt64(200 + id))
        var history: [UInt32] = []
        for i in 0..<2_000 {
            let l = rng.next() % 50_000
            _ = delay_update(&d, &cfg, l)
            history.append(UInt32(l))
            if i > 600 && i % 13 != 0 { continue }
            let w = history.suffix(Int(window)).sorted()
            let rank = max((Int(permille) * w.count + 999) / 1000, 1)
            #expect(delay_quantile(&d, &cfg) == w[rank - 1], "case \(id)")
        }
    }
}
