import Foundation
import RemoloPlayout
import RemoloInput
import RemoloTrace

/// The lab's random numbers: xoshiro256** seeded through SplitMix64, so a
/// seed gives the same run on every machine and every Swift version (the
/// standard library's generator is neither seedable nor stable).
public struct LabRandom: Sendable {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    public init(seed: UInt64) {
        var x = seed
        func splitmix() -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s = (splitmix(), splitmix(), splitmix(), splitmix())
    }

    /// An independent stream for one part of a run (network, gestures...),
    /// so that adding draws in one part leaves the others unchanged.
    public init(seed: UInt64, stream: UInt64) {
        self.init(seed: seed &* 0x2545_F491_4F6C_DD1D ^ (stream &+ 0x632B_E59B_D9B4_E019))
    }

    private static func rotl(_ v: UInt64, _ k: UInt64) -> UInt64 { (v << k) | (v >> (64 - k)) }

    public mutating func next() -> UInt64 {
        let result = Self.rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0; s.3 ^= s.1; s.1 ^= s.2; s.0 ^= s.3
        s.2 ^= t
        s.3 = Self.rotl(s.3, 45)
        return result
    }

    /// Uniform in [0, 1), 53 bits.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    public mutating func uniform(_ lo: Double, _ hi: Double) -> Double { lo + (hi - lo) * unit() }

    public mutating func chance(_ p: Double) -> Bool { unit() < p }

    /// Standard normal (Box-Muller; one draw per call keeps streams simple).
    public mutating func normal() -> Double {
        let u1 = max(unit(), 0x1.0p-60), u2 = unit()
        return (-2 * Foundation.log(u1)).squareRoot() * Foundation.cos(2 * Double.pi * u2)
    }

    /// Log-normal with the given median and log-space sigma.
    public mutating func lognormal(median: Double, sigma: Double) -> Double {
        median * Foundation.exp(sigma * normal())
    }

    public mutating func exponential(mean: Double) -> Double {
        -mean * Foundation.log(1 - unit())
    }

    public mutating func sign() -> Double { next() & 1 == 0 ? 1 : -1 }
}
