import Foundation
import Remolo
import RemoloTrace

/// A position with every axis the receiver moves: pointer x, y (pixels) and
/// wheel horizontal, vertical (hi-res units, 1/120 notch). Gestures never
/// move the pointer and the wheel at once, so one Euclidean norm serves both.
public typealias LabVec = SIMD4<Double>

@inline(__always) func norm(_ v: LabVec) -> Double { ((v * v).sum()).squareRoot() }

/// M1-M5 of the field notes (../shared/notes/field.md, "How to score a
/// playout policy"), pooled over runs (seeds):
///
/// - M1 added latency: lambda_i = (time packet i's motion is fully applied)
///   - r(s_i) - d_min over the movement packets that arrived; p50 and p95,
///   nearest rank.
/// - M2 late%: movement packets that arrived after their slot, of those that
///   arrived. starved%: moving frames with |dC| < 0.25 |dP|, of the moving
///   frames; a frame is moving when the ideal path moves at least 1 px (a
///   whole-pixel cursor cannot show less). lost%: datagrams lost, of those
///   sent.
/// - M3 visual jitter: e_k = C(tau_k) - P(tau_k - d_min - median lambda) on
///   the receiver's clock, J_k = |e_k - e_(k-1)|; RMS(J) / RMS(|dP|) over all
///   frames, and the p99 of J over the active frames (ideal or cursor
///   moving, or J > 0).
/// - M4 stutter: a bad frame is starved or has |dC| > 2 |dP| + 1 px; the
///   bad-frame percentage of each 64-frame window (consecutive windows of
///   each run, those with an active frame), mean and max.
/// - M5 worst case: max |e_k| and max over frames of |dC| / max(|dP|, 1 px).
///
/// P is the ideal path through the positions the sender sent, less the
/// motion of lost datagrams (no policy can show it: there is no
/// retransmission; lost% reports it), so that e_k measures timing only.
public struct Scores: Sendable, Equatable, Codable {
    public var latencyMsP50 = 0.0
    public var latencyMsP95 = 0.0
    public var latePct = 0.0
    public var starvedPct = 0.0
    public var lostPct = 0.0
    public var jitterRatio = 0.0
    public var jitterPxP99 = 0.0
    public var stutterPctMean = 0.0
    public var stutterPctMax = 0.0
    public var maxErrorPx = 0.0
    public var maxJumpRatio = 0.0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case latencyMsP50, latencyMsP95, latePct, starvedPct, lostPct, jitterRatio, jitterPxP99
        case stutterPctMean, stutterPctMax, maxErrorPx, maxJumpRatio
    }

    /// A score that could not be computed (no frame, no packet) is null,
    /// not a number JSON cannot hold.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        func put(_ v: Double, _ k: CodingKeys) throws { try c.encode(v.isFinite ? v : nil, forKey: k) }
        try put(latencyMsP50, .latencyMsP50); try put(latencyMsP95, .latencyMsP95); try put(latePct, .latePct)
        try put(starvedPct, .starvedPct); try put(lostPct, .lostPct); try put(jitterRatio, .jitterRatio)
        try put(jitterPxP99, .jitterPxP99); try put(stutterPctMean, .stutterPctMean)
        try put(stutterPctMax, .stutterPctMax); try put(maxErrorPx, .maxErrorPx); try put(maxJumpRatio, .maxJumpRatio)
    }
}

public struct ScoreAccumulator: Sendable {
    public var lambdasUs: [Double] = []
    public var late = 0
    public var arrived = 0
    public var lost = 0
    public var sent = 0
    var sumJ2 = 0.0
    var sumDP2 = 0.0
    var activeJ: [Double] = []
    var moving = 0
    var starved = 0
    var windows: [Double] = []
    var maxError = 0.0
    var maxJump = 0.0

    public static let windowFrames = 64

    public init() {}

    /// Nearest-rank quantile: the ceil(q n)-th smallest.
    public static func quantile(_ v: [Double], _ q: Double) -> Double {
        guard !v.isEmpty else { return 0 }
        let s = v.sorted()
        let rank = max(1, Int((q * Double(s.count)).rounded(.up)))
        return s[min(rank, s.count) - 1]
    }

    public static func median(_ v: [Double]) -> Double { quantile(v, 0.5) }

    /// Packet-level counts of one run.
    public mutating func addPackets(lambdasUs: [Double], late: Int, arrived: Int, lost: Int, sent: Int) {
        self.lambdasUs += lambdasUs
        self.late += late; self.arrived += arrived; self.lost += lost; self.sent += sent
    }

    /// The frames of one run: the cursor C and the shifted ideal P at each
    /// vsync, in order.
    public mutating func addFrames(cursor c: [LabVec], ideal p: [LabVec]) {
        precondition(c.count == p.count, "one ideal sample per frame")
        guard c.count >= 2 else { return }
        var windowBad = 0, windowActive = false, windowLen = 0
        for k in 1..<c.count {
            let dC = norm(c[k] - c[k - 1]), dP = norm(p[k] - p[k - 1])
            let j = norm((c[k] - p[k]) - (c[k - 1] - p[k - 1]))
            let e = norm(c[k] - p[k])
            sumJ2 += j * j
            sumDP2 += dP * dP
            let active = dP > 0 || dC > 0 || j > 0
            if active { activeJ.append(j) }
            var bad = false
            if dP >= 1 {
                moving += 1
                if dC < 0.25 * dP { starved += 1; bad = true }
            }
            if dC > 2 * dP + 1 { bad = true }
            maxError = max(maxError, e)
            maxJump = max(maxJump, dC / max(dP, 1))
            if bad { windowBad += 1 }
            if active { windowActive = true }
            windowLen += 1
            if windowLen == Self.windowFrames {
                if windowActive { windows.append(100 * Double(windowBad) / Double(Self.windowFrames)) }
                windowBad = 0; windowActive = false; windowLen = 0
            }
        }
        // A last, partial window counts over its own length.
        if windowLen > 0 && windowActive { windows.append(100 * Double(windowBad) / Double(windowLen)) }
        maxError = max(maxError, norm(c[0] - p[0]))
    }

    public var scores: Scores {
        var s = Scores()
        s.latencyMsP50 = Self.quantile(lambdasUs, 0.5) / 1000
        s.latencyMsP95 = Self.quantile(lambdasUs, 0.95) / 1000
        s.latePct = arrived > 0 ? 100 * Double(late) / Double(arrived) : 0
        s.starvedPct = moving > 0 ? 100 * Double(starved) / Double(moving) : 0
        s.lostPct = sent > 0 ? 100 * Double(lost) / Double(sent) : 0
        s.jitterRatio = sumDP2 > 0 ? (sumJ2 / sumDP2).squareRoot() : 0
        s.jitterPxP99 = Self.quantile(activeJ, 0.99)
        s.stutterPctMean = windows.isEmpty ? 0 : windows.reduce(0, +) / Double(windows.count)
        s.stutterPctMax = windows.max() ?? 0
        s.maxErrorPx = maxError
        s.maxJumpRatio = maxJump
        return s
    }
}
