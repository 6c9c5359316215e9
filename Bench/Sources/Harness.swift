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
struct BenchCase {
    let name: String
    let run: (BenchSettings) -> [BenchResult]
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
