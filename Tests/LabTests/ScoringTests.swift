import Testing
@testable import RemoloPlayout
@testable import RemoloLab
import RemoloTrace
@testable import RemoloSession
import RemoloSystem

/// Hand-made frames whose M2-M5 scores are worked out by hand.
struct ScoringCase: Sendable, CustomTestStringConvertible {
    let id: Int
    let what: String
    let cursorX: [Double]
    let idealX: [Double]
    let starvedPct: Double
    let jitterRatio: Double
    let jitterP99: Double
    let stutterMean: Double
    let maxError: Double
    let maxJump: Double
    var testDescription: String { "\(id): \(what)" }
}

let scoringCases: [ScoringCase] = [
    // 1. The cursor is the ideal path: nothing to report; each frame moves
    //    exactly |dP| (jump ratio 1).
    ScoringCase(id: 1, what: "perfect", cursorX: [0, 2, 4, 6, 8], idealX: [0, 2, 4, 6, 8],
                starvedPct: 0, jitterRatio: 0, jitterP99: 0, stutterMean: 0, maxError: 0, maxJump: 1),
    // 2. A constant 3 px offset: e never changes, so no jitter; max error 3.
    ScoringCase(id: 2, what: "constant offset", cursorX: [3, 5, 7, 9, 11], idealX: [0, 2, 4, 6, 8],
                starvedPct: 0, jitterRatio: 0, jitterP99: 0, stutterMean: 0, maxError: 3, maxJump: 1),
    // 3. Freeze for two frames, then catch up in one: dP = 2 on 9 frames;
    //    dC = 2,2,0,0,6,2,2,2,2; e = 0,0,0,-2,-4,0,...; J = 0,0,2,2,4,0,0,0,0.
    //    Starved: frames 3, 4 (2 of 9 = 22.2%); bad: 3, 4 and 5 (6 > 2*2+1):
    //    one partial window of 9 frames, 33.3%. RMS ratio sqrt(24/36);
    //    p99 of J over 9 active frames = the 9th smallest = 4; max jump 6/2.
    ScoringCase(id: 3, what: "freeze and catch-up", cursorX: [0, 2, 4, 4, 4, 10, 12, 14, 16, 18],
                idealX: [0, 2, 4, 6, 8, 10, 12, 14, 16, 18],
                starvedPct: 200.0 / 9, jitterRatio: (24.0 / 36).squareRoot(), jitterP99: 4,
                stutterMean: 300.0 / 9, maxError: 4, maxJump: 3),
    // 4. Sub-pixel ideal motion (0.5 px/frame) that the cursor does not show:
    //    no frame is moving (|dP| < 1), none jumps (0 <= 2*0.5+1); J = 0.5 each.
    //    Ratio 1, p99 0.5, max error 2 (last frame), max jump 0.
    ScoringCase(id: 4, what: "sub-pixel, unshown", cursorX: [0, 0, 0, 0, 0], idealX: [0, 0.5, 1, 1.5, 2],
                starvedPct: 0, jitterRatio: 1, jitterP99: 0.5, stutterMean: 0, maxError: 2, maxJump: 0),
    // 5. A jump without freeze: the cursor moves 10 px where the ideal moves 2:
    //    frame 2 bad (10 > 5), J = 8 then 8 back... cursor 0,2,12,6,8 vs 0,2,4,6,8:
    //    dC 2,10,6,2 (frame 3: 6 > 5 bad too); e 0,0,8,0,0; J 0,8,8,0.
    //    Ratio sqrt(128/16); 2 bad of 4 = 50%; p99 8; max error 8; jump 10/2.
    ScoringCase(id: 5, what: "overshoot", cursorX: [0, 2, 12, 6, 8], idealX: [0, 2, 4, 6, 8],
                starvedPct: 0, jitterRatio: (128.0 / 16).squareRoot(), jitterP99: 8, stutterMean: 50,
                maxError: 8, maxJump: 5),
]

@Test(arguments: scoringCases)
func frameScores(_ c: ScoringCase) {
    var acc = ScoreAccumulator()
    acc.addFrames(cursor: c.cursorX.map { LabVec($0, 0, 0, 0) }, ideal: c.idealX.map { LabVec($0, 0, 0, 0) })
    let s = acc.scores
    #expect(abs(s.starvedPct - c.starvedPct) < 1e-9, "case \(c.id) starved \(s.starvedPct)")
    #expect(abs(s.jitterRatio - c.jitterRatio) < 1e-9, "case \(c.id) jitter \(s.jitterRatio)")
    #expect(abs(s.jitterPxP99 - c.jitterP99) < 1e-9, "case \(c.id) p99 \(s.jitterPxP99)")
    #expect(abs(s.stutterPctMean - c.stutterMean) < 1e-9, "case \(c.id) stutter \(s.stutterPctMean)")
    #expect(abs(s.maxErrorPx - c.maxError) < 1e-9, "case \(c.id) max error \(s.maxErrorPx)")
    #expect(abs(s.maxJumpRatio - c.maxJump) < 1e-9, "case \(c.id) max jump \(s.maxJumpRatio)")
}

@Test func sixtyFourFrameWindows() {
    // 130 frames moving 2 px; the cursor freezes on frames 10 and 100.
    // Windows: frames 1-64 (1 bad... frame 10 starved, frame 11 catches up
    // 4 px: 4 <= 2*2+1, fine) = 1/64; 65-128 (frame 100 starved) = 1/64;
    // 129 (partial, 1 frame, fine) = 0. Mean 2/64/3*100, max 1/64*100.
    let ideal = (0...129).map { Double($0) * 2 }
    var cursor = ideal
    cursor[10] = cursor[9]
    cursor[100] = cursor[99]
    var acc = ScoreAccumulator()
    acc.addFrames(cursor: cursor.map { LabVec($0, 0, 0, 0) }, ideal: ideal.map { LabVec($0, 0, 0, 0) })
    let s = acc.scores
    #expect(abs(s.stutterPctMax - 100.0 / 64) < 1e-9)
    #expect(abs(s.stutterPctMean - 200.0 / 64 / 3) < 1e-9)
    #expect(abs(s.starvedPct - 200.0 / 129) < 1e-9)
}

struct LatencyCase: Sendable {
    let id: Int
    let lambdasMs: [Double]
    let p50: Double
    let p95: Double
}

@Test(arguments: [
    // 1. 1..20 ms: nearest rank, ceil(0.5*20) = 10th, ceil(0.95*20) = 19th.
    LatencyCase(id: 1, lambdasMs: (1...20).map(Double.init), p50: 10, p95: 19),
    // 2. One value.
    LatencyCase(id: 2, lambdasMs: [7], p50: 7, p95: 7),
    // 3. Unsorted, 3 values: 2nd and 3rd smallest.
    LatencyCase(id: 3, lambdasMs: [30, 10, 20], p50: 20, p95: 30),
])
func latencyQuantiles(_ c: LatencyCase) {
    var acc = ScoreAccumulator()
    acc.addPackets(lambdasUs: c.lambdasMs.map { $0 * 1000 }, late: 1, arrived: 4, lost: 1, sent: 5)
    #expect(acc.scores.latencyMsP50 == c.p50, "case \(c.id)")
    #expect(acc.scores.latencyMsP95 == c.p95, "case \(c.id)")
    #expect(acc.scores.latePct == 25, "case \(c.id)")
    #expect(acc.scores.lostPct == 20, "case \(c.id)")
}

/// The ideal path's shift follows the policy's local latency no faster than
/// 0.1 s a second (LabCase.shiftRate). Hand-made runs over one trace: 120 Hz,
/// 2 px a frame for 2 s, a pause, 2 px a frame for 2 s, a perfect network.
/// The cursor is the ideal path itself, shown L(t) later.
struct ShiftCase: Sendable, CustomTestStringConvertible {
    let id: Int
    let what: String
    let pauseUs: Double
    /// The receiver time (from the trace's start) at which L goes from 10 to
    /// 40 ms, at once.
    let stepAtUs: Double
    let jitterBelow: Double
    let jitterAbove: Double
    /// The latency of the first stroke's last packet (a held datagram),
    /// 0: like the others.
    var lastHeldUs: Double = 0
    var testDescription: String { "\(id). \(what)" }
}

let shiftCases: [ShiftCase] = [
    // 1. The delay grows while the finger is still: nothing on screen
    //    moves. A median over +-0.5 s flips from 10 to 40 ms where the
    //    window's majority does, here in the pause, where the path is
    //    still: the shift steps at once, nothing is charged.
    ShiftCase(id: 1, what: "delay steps in a pause", pauseUs: 300_000, stepAtUs: 2_150_000,
              jitterBelow: 0.001, jitterAbove: -1),
    // 2. The delay steps mid-stroke: the cursor freezes for 30 ms, which
    //    is jitter whatever the shift does.
    ShiftCase(id: 2, what: "delay steps while moving", pauseUs: 300_000, stepAtUs: 3_300_000,
              jitterBelow: 1, jitterAbove: 0.1),
    // 3. R1 at 347.0 s: a stroke's last datagram was held 0.56 s; once the
    //    window around a still frame holds it alone, the median is 0.56 s
    //    and the shift jumped for one frame into the middle of the stroke
    //    (34 px there and back: 9% of the default's J^2 on R1; here 0.6 s).
    //    Ramped, the path it shows is still.
    ShiftCase(id: 3, what: "one held datagram alone in the window", pauseUs: 1_500_000, stepAtUs: 1e12,
              jitterBelow: 0.001, jitterAbove: -1, lastHeldUs: 600_000),
]

@Test(arguments: shiftCases)
func shiftFollowsLatencySmoothly(_ c: ShiftCase) {
    let frame = 1e6 / 120, t0 = 1_000_000.0
    var recs: [TraceRecord] = []
    var s = t0
    for stroke in 0..<2 {
        for _ in 0..<240 {
            recs.append(TraceRecord(sendUs: UInt64(s), arriveUs: UInt64(s) + 1000, kind: .motion, dx: 512, dy: 0))
            s += frame
        }
        if stroke == 0 { s += c.pauseUs }
    }
    let lab = LabCase(trace: Trace(records: recs, frameUs: frame), displayHz: 120)
    let dmin = lab.clock.dminUs
    func latency(_ t: Double) -> Double { t - t0 < c.stepAtUs ? 10_000 : 40_000 }
    var run = PolicyRun()
    run.cursors = lab.vsyncs.map { v in v.map { lab.ideal.at($0 - dmin - latency($0)) } }
    for e in lab.emit {
        // Shown at r with r - L(r) = e + dmin: the later latency once
        // e + dmin + 40 ms is past the step.
        var l = latency(e + dmin + 40_000) == 40_000 ? 40_000.0 : 10_000.0
        if c.lastHeldUs > 0 && run.lambdasUs.count == 239 { l = c.lastHeldUs }
        run.lambdasUs.append(l); run.lambdaEmitUs.append(e)
        run.arrivedMovement += 1
    }
    var acc = ScoreAccumulator()
    lab.score(run, into: &acc)
    let j = acc.scores.jitterRatio
    #expect(j < c.jitterBelow, "case \(c.id): jitter \(j)")
    #expect(j > c.jitterAbove, "case \(c.id): jitter \(j)")
}

/// The phase rule (docs/smoothness.md): frame scores are the mean over the
/// vsync phases, with the smallest and largest phase's beside them. A
/// playout that scores the same at every phase scores exactly that, with
/// no spread: each hand-made case above, added at 8 phases.
@Test(arguments: scoringCases)
func samePhaseScoresAverageToThemselves(_ c: ScoringCase) {
    let cur = c.cursorX.map { LabVec($0, 0, 0, 0) }, ide = c.idealX.map { LabVec($0, 0, 0, 0) }
    var one = ScoreAccumulator(), eight = ScoreAccumulator()
    one.addFrames(cursor: cur, ideal: ide)
    for p in 0..<8 { eight.addFrames(cursor: cur, ideal: ide, phase: p) }
    let a = one.scores, b = eight.scores
    #expect(a.phases == 1 && b.phases == 8, "case \(c.id)")
    for (x, y, what) in [(a.jitterRatio, b.jitterRatio, "jitter"), (a.starvedPct, b.starvedPct, "starved"),
                         (a.jitterPxP99, b.jitterPxP99, "p99"), (a.stutterPctMean, b.stutterPctMean, "stutter"),
                         (a.stutterPctMax, b.stutterPctMax, "stutter max"), (a.maxErrorPx, b.maxErrorPx, "max error"),
                         (a.maxJumpRatio, b.maxJumpRatio, "max jump")] {
        #expect(abs(x - y) < 1e-12, "case \(c.id) \(what): one phase \(x), eight \(y)")
    }
    #expect(b.jitterRatioMin == b.jitterRatioMax && abs(b.jitterRatioMax - a.jitterRatio) < 1e-12, "case \(c.id): no spread")
    #expect(b.stutterPctMeanMin == b.stutterPctMeanMax && abs(b.stutterPctMeanMax - a.stutterPctMean) < 1e-12, "case \(c.id)")
}

/// Phases that differ: the mean, the smallest and the largest (M3), the
/// worst phase's M5.
@Test func phasesAverageWithTheirSpread() {
    var acc = ScoreAccumulator()
    // Phase 0: perfect; phase 1: case 3's freeze and catch-up.
    let c3 = scoringCases[2]
    acc.addFrames(cursor: c3.idealX.map { LabVec($0, 0, 0, 0) }, ideal: c3.idealX.map { LabVec($0, 0, 0, 0) }, phase: 0)
    acc.addFrames(cursor: c3.cursorX.map { LabVec($0, 0, 0, 0) }, ideal: c3.idealX.map { LabVec($0, 0, 0, 0) }, phase: 1)
    let s = acc.scores
    #expect(abs(s.jitterRatio - c3.jitterRatio / 2) < 1e-12)
    #expect(s.jitterRatioMin == 0 && abs(s.jitterRatioMax - c3.jitterRatio) < 1e-12)
    #expect(abs(s.stutterPctMean - c3.stutterMean / 2) < 1e-12)
    #expect(abs(s.maxErrorPx - c3.maxError) < 1e-12 && abs(s.maxJumpRatio - c3.maxJump) < 1e-12)
}

/// Constant-latency playouts score their floor at every phase.
struct PhaseFloorCase: Sendable, CustomTestStringConvertible {
    let id: Int
    let what: String
    let scenario: Scenario
    let policy: Policy
    /// How far any phase's jitter may lie from the same phase on a perfect
    /// network (the floor).
    let tolerance: Double
    var testDescription: String { "\(id). \(what)" }
}

let phaseFloorCases: [PhaseFloorCase] = [
    // 1. The oracle without stretch plays the path at one constant delay
    //    (the largest lateness): no jitter at any phase, on a perfect
    //    network or not.
    PhaseFloorCase(id: 1, what: "oracle:0 on S1", scenario: .s1, policy: .oracle(rate: 0), tolerance: 1e-9),
    // 2. The same on the office link's spikes: one larger constant.
    PhaseFloorCase(id: 2, what: "oracle:0 on S2", scenario: .s2, policy: .oracle(rate: 0), tolerance: 1e-9),
    // 3. The core with its delay pinned above every lateness of S1: each
    //    packet plays where a perfect network puts it, but for the clock
    //    offset's estimate (a few hundred us).
    PhaseFloorCase(id: 3, what: "fixed:40 on S1", scenario: .s1, policy: .fixed(ms: 40), tolerance: 0.01),
]

@Test(arguments: phaseFloorCases)
func constantLatencyScoresItsFloorAtEveryPhase(_ c: PhaseFloorCase) {
    let t = LabRun.generate(scenario: c.scenario, seed: 1, durationS: 6)
    func phases(_ trace: Trace) -> [Double] {
        let lab = LabCase(trace: trace, display: .fixed(hz: 120), phases: 8)
        var acc = ScoreAccumulator()
        lab.score(lab.run(c.policy), into: &acc)
        return acc.phases.map(\.jitterRatio)
    }
    let real = phases(t), floor = phases(t.perfectNetwork)
    #expect(real.count == 8 && floor.count == 8)
    for (k, (r, f)) in zip(real, floor).enumerated() {
        #expect(abs(r - f) <= c.tolerance, "case \(c.id), phase \(k): \(r) against the floor's \(f)")
    }
}

/// Phase k's vsyncs start (k + 1/2)/N of a frame after the first drain
/// tick, one frame apart, and none falls on a tick.
@Test(arguments: [4, 8, 16])
func vsyncPhasesAvoidTheTicks(_ n: Int) {
    let t = LabRun.generate(scenario: .s1, seed: 2, durationS: 2)
    let lab = LabCase(trace: t, display: .fixed(hz: 120), phases: n)
    #expect(lab.phases == n)
    let t0 = Double(t.records.compactMap(\.arriveUs).min()!), frame = 1e6 / 120, tick = 1e6 / 480
    for (k, v) in lab.vsyncs.enumerated() {
        #expect(abs(v[0] - t0 - (Double(k) + 0.5) / Double(n) * frame) < 1e-6, "phase \(k)")
        for x in v.prefix(600) {
            let r = (x - t0).truncatingRemainder(dividingBy: tick)
            #expect(min(r, tick - r) >= 1, "phase \(k): a vsync \(r) us from a tick")
        }
    }
}
