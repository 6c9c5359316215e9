import RemoloCore
import Testing
import RemoloTestSupport

/// The long memory of lateness (hist_samples, lathist.c): 0.5 ms buckets,
/// halved when full, and the delay D minimising D + late_cost_us *
/// P(lateness > D) over the bucket edges.
@Suite struct LatHistTests {
    static func config(samples: UInt32 = 4_096, cost: UInt32, prior: UInt32 = 0) -> playout_config {
        var c = playout_config()
        playout_config_default(&c)
        c.hist_samples = samples
        c.late_cost_us = cost
        c.hist_prior = prior
        c.quantile_permille = 0
        c.delay_margin_us = 1_000
        c.delay_min_us = 2_000
        c.delay_start_us = 2_000
        c.delay_max_us = 75_000
        return c
    }

    struct BestCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let samples: [(lateness: UInt64, count: Int)]
        let cost: UInt32
        let cap: UInt32
        let best: UInt32
        var hold: UInt32 = 0
        var testDescription: String { "\(id): \(name)" }
    }

    /// Costs are per packet: cost(D) * total = D * total + late_cost * late.
    static let bestCases: [BestCase] = [
        BestCase(id: 1, name: "empty: 0", samples: [], cost: 1_000_000, cap: 60_000, best: 0),
        BestCase(id: 2, name: "all on time: one bucket",
                 samples: [(0, 100)], cost: 1_000_000, cap: 60_000, best: 500),
        BestCase(id: 3, name: "10% at 30 ms, a late packet costs 1 s: covered",
                 // D = 0.5 ms: 50_000 + 10 * 1e6; D = 30.5 ms: 3_050_000.
                 samples: [(0, 90), (30_000, 10)], cost: 1_000_000, cap: 60_000, best: 30_500),
        BestCase(id: 4, name: "10% at 30 ms, a late packet costs 200 ms: left to the catch-up",
                 // D = 0.5 ms: 50_000 + 2_000_000 < 3_050_000.
                 samples: [(0, 90), (30_000, 10)], cost: 200_000, cap: 60_000, best: 500),
        BestCase(id: 5, name: "the cap below the late ones: the smallest delay",
                 samples: [(0, 90), (30_000, 10)], cost: 1_000_000, cap: 20_000, best: 500),
        BestCase(id: 6, name: "beyond the last bucket: never covered",
                 samples: [(0, 50), (200_000, 50)], cost: 60_000_000, cap: 200_000, best: 500),
        BestCase(id: 7, name: "recurring stalls (1% per 5 ms up to 90 ms), 600 ms a late packet: all covered",
                 // Covering 5 ms more costs 500_000 and saves 600_000.
                 samples: [(0, 82)] + (0..<18).map { (UInt64(2_500 + 5_000 * $0), 1) },
                 cost: 600_000, cap: 100_000, best: 88_000),
        BestCase(id: 8, name: "the same at 400 ms a late packet: only the first",
                 // 3 ms: 300_000 + 17 * 400_000 = 7_100_000, the least.
                 samples: [(0, 82)] + (0..<18).map { (UInt64(2_500 + 5_000 * $0), 1) },
                 cost: 400_000, cap: 100_000, best: 3_000),
        BestCase(id: 9, name: "a tie goes to the smaller delay",
                 // 500 * 100 + 20_000 * 50 == 10_500 * 100.
                 samples: [(0, 50), (10_000, 50)], cost: 20_000, cap: 60_000, best: 500),
        BestCase(id: 10, name: "lateness inside a bucket: covered by its upper edge",
                 samples: [(0, 50), (10_499, 50)], cost: 1_000_000, cap: 60_000, best: 10_500),
        BestCase(id: 11, name: "10% 1 ms late, 20 ms each in full: covered",
                 // 0.5 ms: 50_000 + 200_000 > 1.5 ms: 150_000.
                 samples: [(0, 90), (1_000, 10)], cost: 20_000, cap: 60_000, best: 1_500),
        BestCase(id: 12, name: "the same, a late packet costing its hold out of 8 ms: not covered",
                 // Times 16 buckets: 0.5 ms: 800_000 + 20_000 * (10 + 10) < 1.5 ms: 2_400_000.
                 samples: [(0, 90), (1_000, 10)], cost: 20_000, cap: 60_000, best: 500, hold: 8_000),
        BestCase(id: 13, name: "a hold of 8 ms: 20% 30 ms late at 1 s each, covered as in full",
                 samples: [(0, 80), (30_000, 20)], cost: 1_000_000, cap: 60_000, best: 30_500, hold: 8_000),
        BestCase(id: 14, name: "a hold of 8 ms: the open last bucket stays late past its edge",
                 samples: [(0, 50), (200_000, 50)], cost: 60_000_000, cap: 200_000, best: 500, hold: 8_000),
    ]

    @Test(arguments: bestCases)
    func best(_ c: BestCase) {
        var cfg = Self.config(cost: c.cost)
        cfg.late_hold_us = c.hold
        var h = lathist()
        lathist_init(&h, 0)
        for (l, n) in c.samples { for _ in 0..<n { lathist_add(&h, &cfg, l) } }
        #expect(lathist_best(&h, &cfg, c.cap) == c.best, "case \(c.id)")
    }

    /// Halving: at 2 * hist_samples every bucket halves (rounding down).
    @Test func halvesWhenFull() {
        var cfg = Self.config(samples: 4, cost: 1_000_000)
        var h = lathist()
        lathist_init(&h, 0)
        for _ in 0..<7 { lathist_add(&h, &cfg, 0) }
        #expect(h.total == 7)
        lathist_add(&h, &cfg, 0)
        #expect(h.total == 4 && h.count.0 == 4)
        for _ in 0..<3 { lathist_add(&h, &cfg, 30_000) }
        lathist_add(&h, &cfg, 30_000)   // 8 again: 4 -> 2, 4 -> 2
        #expect(h.total == 4 && h.count.0 == 2)
        #expect(lathist_best(&h, &cfg, 60_000) == 30_500)
    }

    struct RebaseCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let by: UInt64
        let best: UInt32
        var testDescription: String { "\(id): rebase by \(by) us" }
    }

    static let rebaseCases: [RebaseCase] = [
        RebaseCase(id: 1, by: 0, best: 30_500),
        RebaseCase(id: 2, by: 10_000, best: 20_500),
        RebaseCase(id: 3, by: 10_200, best: 20_500),   // to the nearest bucket
        RebaseCase(id: 4, by: 10_300, best: 20_000),
        RebaseCase(id: 5, by: 40_000, best: 500),      // all into bucket 0
        RebaseCase(id: 6, by: 10_000_000, best: 500),
    ]

    /// The offset rose: every sample shifts down by as much.
    @Test(arguments: rebaseCases)
    func rebase(_ c: RebaseCase) {
        var cfg = Self.config(cost: 1_000_000)
        var h = lathist()
        lathist_init(&h, 0)
        for _ in 0..<100 { lathist_add(&h, &cfg, 30_000) }
        lathist_rebase(&h, c.by)
        #expect(h.total == 100, "case \(c.id): nothing lost")
        #expect(lathist_best(&h, &cfg, 60_000) == c.best, "case \(c.id)")
    }

    struct DelayCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let prior: UInt32
        let cost: UInt32
        let latenesses: [UInt64]
        let delay: UInt32       // after the last lateness
        var testDescription: String { "\(id): \(name)" }
    }

    /// Through delay_update: the memory is weighed every 16 packets (the
    /// 1st, 17th, ...), target = best + 1 ms margin, clamped to 2..75 ms.
    static let delayCases: [DelayCase] = [
        DelayCase(id: 1, name: "quiet: the floor", prior: 0, cost: 700_000,
                  latenesses: Array(repeating: 300, count: 40), delay: 2_000),
        DelayCase(id: 2, name: "16 late packets: not weighed yet", prior: 240, cost: 1_000_000,
                  latenesses: Array(repeating: 30_000, count: 16), delay: 2_000),
        DelayCase(id: 3, name: "17 late at 30 ms over a prior of 240 on time, 1 s each: covered",
                  // 0.5 ms: 128_500 + 17e6 > 30.5 ms: 7_838_500.
                  prior: 240, cost: 1_000_000,
                  latenesses: Array(repeating: 30_000, count: 17), delay: 31_500),
        DelayCase(id: 4, name: "the same at 400 ms each: the prior outweighs them",
                  // 128_500 + 6_800_000 < 7_838_500.
                  prior: 240, cost: 400_000,
                  latenesses: Array(repeating: 30_000, count: 17), delay: 2_000),
        DelayCase(id: 5, name: "no prior: the first late packet is the whole memory",
                  prior: 0, cost: 400_000, latenesses: [30_000], delay: 31_500),
        DelayCase(id: 6, name: "beyond the cap: no delay under it covers the packet, the floor",
                  prior: 0, cost: 1_000_000, latenesses: [100_000], delay: 2_000),
    ]

    @Test(arguments: delayCases)
    func delay(_ c: DelayCase) {
        var cfg = Self.config(cost: c.cost, prior: c.prior)
        #expect(playout_config_check(&cfg) == 0)
        var d = delay_est()
        delay_init(&d, &cfg)
        var got: UInt32 = 0
        for l in c.latenesses { got = delay_update(&d, &cfg, l) }
        #expect(got == c.delay, "case \(c.id)")
    }

    /// With a quantile set, the window's quantile floors the memory's
    /// choice: a network that turns bad is followed within the window.
    @Test func windowQuantileFloors() {
        var cfg = Self.config(cost: 400_000, prior: 240)
        cfg.quantile_permille = 850
        var d = delay_est()
        delay_init(&d, &cfg)
        var got: UInt32 = 0
        // 20% of the packets 40 ms late: the window's 85th percentile.
        for i in 0..<100 { got = delay_update(&d, &cfg, i % 5 == 0 ? 40_000 : 0) }
        #expect(got == 41_000)
        #expect(d.hist_best_us == 500)
    }

    struct ConfigCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let samples: UInt32, cost: UInt32, prior: UInt32
        let valid: Bool
        var testDescription: String { "\(id)" }
    }

    static let configCases: [ConfigCase] = [
        ConfigCase(id: 1, samples: 0, cost: 0, prior: 0, valid: true),
        ConfigCase(id: 2, samples: UInt32(REMOLO_LATHIST_SAMPLES_MAX), cost: UInt32(REMOLO_LATE_COST_MAX_US),
                   prior: 2 * UInt32(REMOLO_LATHIST_SAMPLES_MAX), valid: true),
        ConfigCase(id: 3, samples: UInt32(REMOLO_LATHIST_SAMPLES_MAX) + 1, cost: 0, prior: 0, valid: false),
        ConfigCase(id: 4, samples: 100, cost: UInt32(REMOLO_LATE_COST_MAX_US) + 1, prior: 0, valid: false),
        ConfigCase(id: 5, samples: 100, cost: 0, prior: 201, valid: false),
    ]

    @Test(arguments: configCases)
    func configBounds(_ c: ConfigCase) {
        var cfg = Self.config(samples: c.samples, cost: c.cost, prior: c.prior)
        #expect((playout_config_check(&cfg) == 0) == c.valid, "case \(c.id)")
    }

    /// The worst sums stay inside 64 bits: the largest memory, every
    /// packet in the open last bucket but one, the largest cost.
    @Test func largestSumsDoNotWrap() {
        var cfg = Self.config(samples: UInt32(REMOLO_LATHIST_SAMPLES_MAX), cost: UInt32(REMOLO_LATE_COST_MAX_US))
        var h = lathist()
        lathist_init(&h, 0)
        h.count.255 = 2 * UInt32(REMOLO_LATHIST_SAMPLES_MAX) - 2
        h.count.254 = 1
        h.total = 2 * UInt64(REMOLO_LATHIST_SAMPLES_MAX) - 1
        // Covering bucket 254 (127.5 ms for four million packets) is not
        // worth one late packet's 67 s: the smallest delay.
        #expect(lathist_best(&h, &cfg, 127_500) == 500)
        h.count.255 = 0
        h.total = 1
        #expect(lathist_best(&h, &cfg, 127_500) == 127_500)
    }
}
