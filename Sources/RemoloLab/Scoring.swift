import Foundation
import RemoloPlayout
import RemoloTrace

/// A position with every axis the receiver moves: pointer x, y (pixels) and
/// wheel horizontal, vertical (hi-res units, 1/120 notch). Gestures never
/// move the pointer and the wheel at once, so one Euclidean norm serves both.
public typealias LabVec = SIMD4<Double>

@inline(__always) func norm(_ v: LabVec) -> Double { ((v * v).sum()).squareRoot() }

/// M1-M5 of the field notes (../shared/notes/field.md, "How to score a
/// playout policy"), pooled over runs (seeds), the frame scores (M2's
/// starved%, M3, M4, M5) at several vsync phases (docs/smoothness.md):
///
/// - M1 added latency: lambda_i = (time packet i's motion is fully applied)
///   - r(s_i) - d_min over the movement packets that arrived; p50 and p95,
///   nearest rank. With the redundancy feature, the same of the lost ones
///   whose motion was recovered, apart (recovered p50, p95).
/// - M2 late%: movement packets that arrived after their slot, of those that
///   arrived. starved%: moving frames with |dC| < 0.25 |dP|, of the moving
///   frames; a frame is moving when the ideal path moves at least 1 px (a
///   whole-pixel cursor cannot show less). lost%: datagrams lost, of those
///   sent.
/// - M3 visual jitter: e_k = C(tau_k) - P(tau_k - d_min - median lambda) on
///   the receiver's clock, J_k = |e_k - e_(k-1)|; RMS(J) / RMS(|dP|) over
///   every frame (still frames included: they add J^2 where the cursor
///   moves while the path does not, and nothing to |dP|), and the p99 of J
///   over the active frames (ideal or cursor moving, or J > 0).
/// - M4 stutter: a bad frame is starved or has |dC| > 2 |dP| + 1 px; the
///   bad-frame percentage of each 64-frame window (consecutive windows of
///   each run, those with an active frame), mean and max.
/// - M5 worst case: max |e_k| and max over frames of |dC| / max(|dP|, 1 px).
/// - Lost motion: at the end of each stroke (motion followed by at least
///   `strokeGapUs` without any), how far the cursor's travel over the
///   stroke falls short of the finger's (every motion the sender sent, lost
///   datagrams' included); mean and max px per stroke.
///
/// Phases: the display's vsyncs are not locked to the drain's ticks, and
/// one phase of them can score a playout well or badly by luck (a policy
/// whose ticks land just before the vsyncs shows each tick a frame early).
/// Each run is sampled at P phases, the vsyncs of phase k at the first
/// drain tick + (k + 1/2) / P of a frame (never on a tick). The frame
/// scores of each phase pool the runs at that phase; starved%, M3 and M4
/// are the mean over the phases, with the smallest and largest phase's
/// jitter ratio and stutter mean beside them (the spread); M5 is the
/// worst phase's.
///
/// P is the ideal path through the positions the sender sent, less the
/// motion of lost datagrams that the receiver cannot recover (without the
/// redundancy capability: every lost one; there is no retransmission; lost%
/// reports it), so that e_k measures timing only.
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
    /// The spread over the vsync phases: the smallest and largest phase's
    /// jitter ratio and stutter mean.
    public var jitterRatioMin = 0.0
    public var jitterRatioMax = 0.0
    public var stutterPctMeanMin = 0.0
    public var stutterPctMeanMax = 0.0
    /// Vsync phases scored.
    public var phases = 0
    /// Redundancy: the lost movement datagrams whose motion was recovered,
    /// and their added latency (when their share of it was shown), p50 and
    /// p95. Not in M1, which counts the datagrams that arrived.
    public var recovered = 0
    public var recoveredMsP50 = 0.0
    public var recoveredMsP95 = 0.0
    /// Lost motion: strokes scored, and px short at their ends (mean, max).
    public var strokes = 0
    public var shortPxMean = 0.0
    public var shortPxMax = 0.0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case latencyMsP50, latencyMsP95, latePct, starvedPct, lostPct, jitterRatio, jitterPxP99
        case stutterPctMean, stutterPctMax, maxErrorPx, maxJumpRatio
        case jitterRatioMin, jitterRatioMax, stutterPctMeanMin, stutterPctMeanMax, phases
        case recovered, recoveredMsP50, recoveredMsP95
        case strokes, shortPxMean, shortPxMax
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
        try put(jitterRatioMin, .jitterRatioMin); try put(jitterRatioMax, .jitterRatioMax)
        try put(stutterPctMeanMin, .stutterPctMeanMin); try put(stutterPctMeanMax, .stutterPctMeanMax)
        try c.encode(phases, forKey: .phases); try c.encode(strokes, forKey: .strokes)
        try c.encode(recovered, forKey: .recovered)
        try put(recoveredMsP50, .recoveredMsP50); try put(recoveredMsP95, .recoveredMsP95)
        try put(shortPxMean, .shortPxMean); try put(shortPxMax, .shortPxMax)
    }
}

/// The frame scores of one vsync phase, pooled over runs.
public struct FrameAccumulator: Sendable {
    var sumJ2 = 0.0
    var sumDP2 = 0.0
    var activeJ: [Double] = []
    var moving = 0
    var starved = 0
    var windows: [Double] = []
    var maxError = 0.0
    var maxJump = 0.0

    public init() {}

    /// The frames of one run: the cursor C and the shifted ideal P at each
    /// vsync, in order.
    public mutating func add(cursor c: [LabVec], ideal p: [LabVec]) {
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
            if windowLen == ScoreAccumulator.windowFrames {
                if windowActive { windows.append(100 * Double(windowBad) / Double(ScoreAccumulator.windowFrames)) }
                windowBad = 0; windowActive = false; windowLen = 0
            }
        }
        // A last, partial window counts over its own length.
        if windowLen > 0 && windowActive { windows.append(100 * Double(windowBad) / Double(windowLen)) }
        maxError = max(maxError, norm(c[0] - p[0]))
    }

    var starvedPct: Double { moving > 0 ? 100 * Double(starved) / Double(moving) : 0 }
    var jitterRatio: Double { sumDP2 > 0 ? (sumJ2 / sumDP2).squareRoot() : 0 }
    var jitterPxP99: Double { ScoreAccumulator.quantile(activeJ, 0.99) }
    var stutterPctMean: Double { windows.isEmpty ? 0 : windows.reduce(0, +) / Double(windows.count) }
    var stutterPctMax: Double { windows.max() ?? 0 }
}

public struct ScoreAccumulator: Sendable {
    public var lambdasUs: [Double] = []
    public var late = 0
    public var arrived = 0
    public var lost = 0
    public var sent = 0
    /// One frame accumulator per vsync phase.
    var phases: [FrameAccumulator] = []
    /// Px short at the end of each stroke.
    var shortPx: [Double] = []
    /// Added latency of recovered datagrams' motion (redundancy).
    public var recoveredLambdasUs: [Double] = []

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

    /// The frames of one run at vsync phase `phase`: the cursor C and the
    /// shifted ideal P at each vsync, in order.
    public mutating func addFrames(cursor c: [LabVec], ideal p: [LabVec], phase: Int = 0) {
        while phases.count <= phase { phases.append(FrameAccumulator()) }
        phases[phase].add(cursor: c, ideal: p)
    }

    /// How far the cursor fell short of the finger at the end of each
    /// stroke of one run, px.
    public mutating func addStrokes(shortPx: [Double]) { self.shortPx += shortPx }

    public var scores: Scores {
        var s = Scores()
        s.latencyMsP50 = Self.quantile(lambdasUs, 0.5) / 1000
        s.latencyMsP95 = Self.quantile(lambdasUs, 0.95) / 1000
        s.latePct = arrived > 0 ? 100 * Double(late) / Double(arrived) : 0
        s.lostPct = sent > 0 ? 100 * Double(lost) / Double(sent) : 0
        s.phases = phases.count
        if !phases.isEmpty {
            func mean(_ f: (FrameAccumulator) -> Double) -> Double { phases.map(f).reduce(0, +) / Double(phases.count) }
            s.starvedPct = mean(\.starvedPct)
            s.jitterRatio = mean(\.jitterRatio)
            s.jitterPxP99 = mean(\.jitterPxP99)
            s.stutterPctMean = mean(\.stutterPctMean)
            s.stutterPctMax = mean(\.stutterPctMax)
            s.maxErrorPx = phases.map(\.maxError).max()!
            s.maxJumpRatio = phases.map(\.maxJump).max()!
            s.jitterRatioMin = phases.map(\.jitterRatio).min()!
            s.jitterRatioMax = phases.map(\.jitterRatio).max()!
            s.stutterPctMeanMin = phases.map(\.stutterPctMean).min()!
            s.stutterPctMeanMax = phases.map(\.stutterPctMean).max()!
        }
        s.recovered = recoveredLambdasUs.count
        s.recoveredMsP50 = Self.quantile(recoveredLambdasUs, 0.5) / 1000
        s.recoveredMsP95 = Self.quantile(recoveredLambdasUs, 0.95) / 1000
        s.strokes = shortPx.count
        s.shortPxMean = shortPx.isEmpty ? 0 : shortPx.reduce(0, +) / Double(shortPx.count)
        s.shortPxMax = shortPx.max() ?? 0
        return s
    }
}
