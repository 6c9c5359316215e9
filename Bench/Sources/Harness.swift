import Foundation

/// One reported figure.
struct BenchResult {
    let name: String
    let value: Double
    let unit: String
}

/// How hard to measure: `--quick` is a smoke run (few repetitions, no
/// meaningful numbers), the default takes a few seconds per case.
struct BenchSettings {
    var quick = false
    /// Repetitions whose median is reported.
    var repetitions: Int { quick ? 3 : 9 }
    /// Scales inner iteration counts down in quick mode.
    func iterations(_ full: Int) -> Int { quick ? max(1, full / 100) : full }
}

/// A named benchmark; `run` returns its results (one or more names).
/// `reports` lists result names that do not contain `name`, so that
/// `--filter` finds the case by them too.
struct BenchCase {
    let name: String
    var reports: [String] = []
    let run: (BenchSettings) -> [BenchResult]

    init(name: String, reports: [String] = [], run: @escaping (BenchSettings) -> [BenchResult]) {
        self.name = name
        self.reports = reports
        self.run = run
    }

    func matches(_ filter: String) -> Bool { name.contains(filter) || reports.contains { $0.contains(filter) } }
}

/// Nearest-rank quantile of exact samples (NaN when there are none).
func quantile(_ xs: [Double], _ q: Double) -> Double {
    let s = xs.sorted()
    if s.isEmpty { return .nan }
    return s[min(s.count - 1, max(0, Int((q * Double(s.count)).rounded(.up)) - 1))]
}

/// SplitMix64: Bench's seeded generator, so every run paces its senders alike.
struct BenchRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Says on stderr why a figure is NaN this run.
func benchNote(_ s: String) {
    FileHandle.standardError.write(Data("bench: \(s)\n".utf8))
}

@inline(never)
func blackHole<T>(_ x: T) { withExtendedLifetime(x) {} }

func monotonicNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    if s.isEmpty { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// Median over `settings.repetitions` of the time per iteration, in ns.
/// `body(n)` must perform n iterations; `setup` runs untimed before each.
func medianNsPerIteration(_ settings: BenchSettings, iterations: Int,
                          setup: () -> Void = {}, _ body: (Int) -> Void) -> Double {
    let n = settings.iterations(iterations)
    var samples: [Double] = []
    body(max(1, n / 10)) // warm-up
    for _ in 0..<settings.repetitions {
        setup()
        let t0 = monotonicNs()
        body(n)
        let t1 = monotonicNs()
        samples.append(Double(t1 - t0) / Double(n))
    }
    return median(samples)
}
