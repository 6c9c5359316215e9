import Foundation
import RemoloPlayout
import RemoloTrace
internal import RemoloPlayoutCore

/// The ideal path P: through the positions the sender sent (motion the
/// receiver cannot have left out), on the receiver's clock (at r(s_i)). A packet's motion
/// happened during the sender's last frame before its timestamp, so P holds
/// still until E_i - f and moves linearly to the new position at E_i, with f
/// the frame interval (or the time since the previous datagram, if shorter).
/// After a pause the first packet's motion is therefore one frame long, not
/// spread over the pause.
public struct IdealPath: Sendable {
    var t: [Double] = []
    var x: [LabVec] = []

    /// `included`: which records' motion the path holds (nil: those that
    /// arrived).
    public init(records: [TraceRecord], emit: [Double], frameUs: Double, included: [Bool]? = nil) {
        var pos = LabVec.zero
        var prevE = -Double.infinity
        t.append(-Double.infinity); x.append(.zero)
        for (i, r) in records.enumerated() {
            let e = emit[i]
            defer { prevE = max(prevE, e) }
            guard r.isMovement, included?[i] ?? (r.arriveUs != nil) else { continue }
            let d = Self.delta(r)
            let start = max(e - frameUs, prevE, t.last!)
            if start > t.last! { t.append(start); x.append(pos) }
            pos += d
            if e > t.last! { t.append(e); x.append(pos) } else { x[x.count - 1] = pos }
        }
    }

    /// A record's motion as a LabVec, in pixels / hi-res units.
    static func delta(_ r: TraceRecord) -> LabVec {
        let a = Double(r.dx) / 256, b = Double(r.dy) / 256
        return r.kind == .motion ? LabVec(a, b, 0, 0) : LabVec(0, 0, a, b)
    }

    public func at(_ time: Double) -> LabVec {
        // Last index with t <= time.
        var lo = 0, hi = t.count - 1
        if time >= t[hi] { return x[hi] }
        while lo + 1 < hi {
            let mid = (lo + hi) / 2
            if t[mid] <= time { lo = mid } else { hi = mid }
        }
        if lo == 0 { return x[0] }       // before any motion
        let f = (time - t[lo]) / (t[hi] - t[lo])
        return x[lo] + (x[hi] - x[lo]) * f
    }
}

/// The field notes' oracle: it knows every arrival. Its playout delay at
/// (true) send time x is D*(x) = max(0, max_i(l_i - rate |x - E_i|)) with
/// l_i = a_i - r(s_i) - d_min over the datagrams that carry input; at
/// receiver time t it shows the ideal path at sigma, where
/// sigma + d_min + D*(sigma) = t (monotone for rate < 1), so playback only
/// stretches (by at most `rate`) and never jumps.
public struct Oracle: Sendable {
    let rate: Double
    let dmin: Double
    var e: [Double] = []
    var pre: [Double] = []   // max over i <= k of l_i + rate E_i
    var suf: [Double] = []   // max over i >= k of l_i - rate E_i
    var lmax = 0.0

    public init(rate: Double, records: [TraceRecord], emit: [Double], dminUs: Double) {
        self.rate = rate; self.dmin = dminUs
        var pts: [(Double, Double)] = []
        for (i, r) in records.enumerated() where r.kind != .heartbeat {
            guard let a = r.arriveUs else { continue }
            pts.append((emit[i], Double(a) - emit[i] - dminUs))
        }
        pts.sort { $0.0 < $1.0 }
        e = pts.map(\.0)
        lmax = max(0, pts.map(\.1).max() ?? 0)
        pre = []; pre.reserveCapacity(pts.count)
        var m = -Double.infinity
        for p in pts { m = max(m, p.1 + rate * p.0); pre.append(m) }
        suf = [Double](repeating: -.infinity, count: pts.count)
        m = -.infinity
        for k in stride(from: pts.count - 1, through: 0, by: -1) { m = max(m, pts[k].1 - rate * pts[k].0); suf[k] = m }
    }

    /// D*(x), microseconds.
    public func delay(at x: Double) -> Double {
        if rate == 0 { return lmax }
        guard !e.isEmpty else { return 0 }
        // First index with e >= x.
        var lo = 0, hi = e.count
        while lo < hi { let mid = (lo + hi) / 2; if e[mid] < x { lo = mid + 1 } else { hi = mid } }
        var d = 0.0
        if lo > 0 { d = max(d, pre[lo - 1] - rate * x) }
        if lo < e.count { d = max(d, suf[lo] + rate * x) }
        return d
    }

    /// The send time shown at receiver time t.
    public func sigma(at t: Double) -> Double {
        var lo = t - dmin - lmax - 1, hi = t - dmin
        for _ in 0..<40 {
            let mid = (lo + hi) / 2
            if mid + dmin + delay(at: mid) <= t { lo = mid } else { hi = mid }
        }
        return lo
    }
}


/// What one policy did on one trace.
public struct PolicyRun: Sendable {
    public var lambdasUs: [Double] = []
    /// The emission time r(s_i) of each lambda's packet (receiver clock).
    public var lambdaEmitUs: [Double] = []
    public var late = 0
    public var arrivedMovement = 0
    /// Cursor at each vsync of each phase (`LabCase.vsyncs`), sub-pixel:
    /// the whole pixels emitted plus the Q8 remainder the core carries, so
    /// that scores measure timing rather than the whole-pixel rounding every
    /// policy shares.
    public var cursors: [[LabVec]] = []
    /// Phase 0's.
    public var cursor: [LabVec] {
        get { cursors.first ?? [] }
        set { if cursors.isEmpty { cursors = [newValue] } else { cursors[0] = newValue } }
    }
    /// Datagrams the receiver refused as late (the strict counter).
    public var refused = 0
    /// What the session leaves for the sender's next one (policies with
    /// `recallPermille`).
    public var recall: DelayRecall?
    /// Added latency of the lost movement datagrams whose motion the
    /// receiver recovered (redundancy): when their share of the recovered
    /// segment was played, - r(s_i) - d_min.
    public var recoveredLambdasUs: [Double] = []
}

/// A trace prepared for scoring: emission times, the ideal path, vsyncs.
public struct LabCase: Sendable {
    public let trace: Trace
    public let clock: TraceClock
    public let emit: [Double]
    public let ideal: IdealPath
    /// The vsyncs of each phase: phase k's start at the first drain tick +
    /// (k + 1/2) / phases of a frame.
    public let vsyncs: [[Double]]
    /// Phase 0's vsyncs.
    public var vsync: [Double] { vsyncs.first ?? [] }
    public var phases: Int { vsyncs.count }
    /// When the display refreshes (the vsyncs).
    public let display: LabDisplay
    /// The drain's rate: the core is ticked every 1/drainHz s.
    public let drainHz: Double
    /// The sender and receiver agreed on the redundancy feature: every
    /// datagram carries the session's running totals, and the receiver
    /// plays the motion of lost ones (remolo_wire.h).
    public let redundancy: Bool
    /// The ideal path holds every motion the sender sent, lost datagrams'
    /// included, whatever the receiver can know (`--full-path`): a
    /// receiver without redundancy is then charged for the motion it
    /// never shows, as the eye sees it.
    public let fullPath: Bool
    /// The display's (highest) rate, rounded.
    public var displayHz: Int { Int(display.maxHz.rounded()) }
    /// Arrived datagrams in arrival order (index into records).
    let order: [Int]
    /// Which arrived datagrams the receiver opens: a datagram sent before
    /// one that arrived earlier is refused (the strict counter, README
    /// "Pointer datagrams").
    let accepted: [Bool]
    /// Strokes: for each, the time its cursor travel is read (the vsync
    /// index in phase 0, the last before the next stroke could show) and
    /// the finger's position at its end (every motion sent).
    let strokes: [(vsync: Int, finger: LabVec)]

    /// Vsync phases a run is scored at (docs/smoothness.md).
    public static let defaultPhases = 16
    /// Motion separated by at least this much stillness (sender clock)
    /// makes two strokes.
    public static let strokeGapUs = 200_000.0

    /// A case on a fixed-rate display with the default 480 Hz drain.
    public init(trace: Trace, displayHz: Int, phases: Int = LabCase.defaultPhases) {
        self.init(trace: trace, display: .fixed(hz: Double(displayHz)), phases: phases)
    }

    /// `seed` draws a variable-refresh display's frame times.
    public init(trace: Trace, display: LabDisplay, drainHz: Double = DrainRate.default.hz, seed: UInt64 = 1,
                phases: Int = LabCase.defaultPhases, redundancy: Bool = false, fullPath: Bool = false) {
        precondition(phases >= 1, "at least one vsync phase")
        self.trace = trace
        self.display = display
        self.drainHz = drainHz
        self.redundancy = redundancy
        self.fullPath = fullPath
        clock = trace.effectiveClock
        emit = clock.emissionTimes(trace.records)
        let recs = trace.records
        let arrived = recs.indices.filter { recs[$0].arriveUs != nil }
        order = arrived.sorted {
            let a = recs[$0].arriveUs!, b = recs[$1].arriveUs!
            return a < b || (a == b && $0 < $1)
        }
        var acc = [Bool](repeating: false, count: recs.count)
        var newest = -1
        for i in order where i > newest { acc[i] = true; newest = i }
        accepted = acc
        // The motion the receiver can show: what it opened, and with
        // redundancy whatever was sent before a datagram it opened.
        var included = acc
        if fullPath {
            included = [Bool](repeating: true, count: recs.count)
        } else if redundancy, let last = acc.lastIndex(of: true) {
            for i in 0...last { included[i] = true }
        }
        ideal = IdealPath(records: recs, emit: emit, frameUs: trace.effectiveFrameUs, included: included)
        var v: [[Double]] = []
        if let f = order.first, let l = order.last {
            let start = Double(recs[f].arriveUs!), end = Double(recs[l].arriveUs!) + 1e6
            // Phase k at the first tick + (k + 1/2) / phases of a frame: a
            // display does not know the drain timer's phase. Never on a
            // tick itself for 4, 8, 16... phases and 4 ticks a frame (or
            // any odd number): a vsync on the very microsecond of a tick
            // would show that tick or not by the rounding of either grid
            // (on R1, R2, whose first arrival is a multiple of the vsync
            // period, that flipped every third frame).
            let frame = 1e6 / display.maxHz
            for k in 0..<phases {
                v.append(display.refreshes(start: start + (Double(k) + 0.5) / Double(phases) * frame, end: end,
                                           drainHz: drainHz, seed: seed))
            }
        } else {
            v = [[Double]](repeating: [], count: phases)
        }
        vsyncs = v
        // Strokes, in sending order; each read just before the next one's
        // first datagram could show (its emission + d_min), the last at
        // the last vsync.
        var st: [(Int, LabVec)] = []
        var finger = LabVec.zero, lastMove = -Double.infinity, open = false
        let v0 = v.first ?? []
        func vsyncBefore(_ t: Double) -> Int {
            var lo = 0, hi = v0.count
            while lo < hi { let m = (lo + hi) / 2; if v0[m] < t { lo = m + 1 } else { hi = m } }
            return lo - 1
        }
        for (i, r) in recs.enumerated() where r.isMovement {
            let s = Double(r.sendUs)
            if open && s - lastMove >= Self.strokeGapUs {
                st.append((vsyncBefore(emit[i] + clock.dminUs), finger))
            }
            finger += IdealPath.delta(r)
            lastMove = s; open = true
        }
        if open && !v0.isEmpty { st.append((v0.count - 1, finger)) }
        strokes = st.filter { $0.0 >= 0 }.map { (vsync: $0.0, finger: $0.1) }
    }

    /// Runs a policy: through the core, or the oracle. `recall`: the
    /// memory of the sender's earlier sessions the session starts from (a
    /// policy with `recallPermille`); the run's `recall` is what it leaves.
    public func run(_ policy: Policy, recall: DelayRecall? = nil) -> PolicyRun {
        if case .oracle(let rate) = policy { return runOracle(rate) }
        return runCore(policy.config!, recall: recall)
    }

    /// The frames the core would write through `policy` (not the oracle),
    /// one per drain tick that moves a whole pixel, as the receiver's loop
    /// writes them: its prediction of the pointer's output.
    ///
    /// `ticksUs`: when the drain ticks run (ascending, receiver clock; a
    /// real timer's wake-ups), nil for the ideal grid at `drainHz`. A tick
    /// integrates up to its own time, as the receiver's does, so a late
    /// tick shows the same motion, later. `stampsUs`: the time each of
    /// those ticks' frames is stamped with (when it reached the device,
    /// after the tick read the clock); nil: the tick's own time.
    public func predictFrames(_ policy: Policy, ticksUs: [UInt64]? = nil, stampsUs: [Double]? = nil) -> [OutputFrame] {
        guard let config = policy.config else { return [] }
        var frames: [OutputFrame] = []
        var j = 0
        _ = runCore(config, ticksUs: ticksUs) { t, f in
            let stamp = stampsUs.map { j < $0.count ? $0[j] : Double(t) } ?? Double(t)
            j += 1
            if f.dx != 0 || f.dy != 0 { frames.append(OutputFrame(tUs: stamp, dx: f.dx, dy: f.dy)) }
        }
        return frames
    }

    func runOracle(_ rate: Double) -> PolicyRun {
        let o = Oracle(rate: rate, records: trace.records, emit: emit, dminUs: clock.dminUs)
        var out = PolicyRun()
        for (i, r) in trace.records.enumerated() where r.isMovement && r.arriveUs != nil {
            out.lambdasUs.append(o.delay(at: emit[i]))
            out.lambdaEmitUs.append(emit[i])
            out.arrivedMovement += 1
        }
        out.cursors = vsyncs.map { v in v.map { ideal.at(o.sigma(at: $0)) } }
        return out
    }

    func runCore(_ config: PlayoutConfig, ticksUs: [UInt64]? = nil, recall: DelayRecall? = nil,
                 onTick: ((UInt64, PointerFrame) -> Void)? = nil) -> PolicyRun {
        var out = PolicyRun()
        guard let first = order.first, let last = order.last, let pl = try? Playout(config: config) else { return out }
        if let r = recall { pl.load(recall: r) }
        let recs = trace.records
        let t0 = recs[first].arriveUs!
        let end = recs[last].arriveUs! + 1_000_000
        let tickHz = drainHz
        @inline(__always) func tickTime(_ j: Int) -> UInt64 { t0 + UInt64((Double(j) * 1e6 / tickHz).rounded()) }
        /// The first tick at or after `at` (strictly after when `strict`).
        func firstTick(_ at: UInt64, strict: Bool) -> UInt64 {
            if at < t0 || (!strict && at == t0) { return strict && at == t0 ? tickTime(1) : t0 }
            var j = Int((Double(at - t0) * tickHz / 1e6).rounded(.down))
            while tickTime(j) < at || (strict && tickTime(j) == at) { j += 1 }
            return tickTime(j)
        }
        out.cursors = vsyncs.map { v in
            var c: [LabVec] = []
            c.reserveCapacity(v.count)
            return c
        }
        var pos = LabVec.zero, whole = LabVec.zero
        var next = 0, j = 0, newest = -1
        var vs = [Int](repeating: 0, count: vsyncs.count)
        func sampled() -> Bool { zip(vs, vsyncs).allSatisfy { $0 >= $1.count } }
        while true {
            var now = tickTime(j)
            if let given = ticksUs {
                guard j < given.count else { break }
                now = given[j]
            }
            if now > end && sampled() { break }
            // The vsyncs before this tick show the state after the previous one.
            for p in vsyncs.indices {
                while vs[p] < vsyncs[p].count && vsyncs[p][vs[p]] < Double(now) { out.cursors[p].append(pos); vs[p] += 1 }
            }
            while next < order.count, recs[order[next]].arriveUs! <= now {
                let i = order[next]; next += 1
                let r = recs[i]
                // The strict counter: sent before one already opened.
                guard accepted[i] else { out.refused += 1; continue }
                var pkt = r.packet
                // Redundancy: the running totals give the skipped
                // datagrams' motion (wire.c computes it from the totals;
                // here, the same sums from the trace).
                var recoveredRecs: [Int] = []
                if redundancy && i > newest + 1 {
                    var lost = SIMD4<Int32>.zero
                    for k in (newest + 1)..<i where recs[k].isMovement {
                        let d = recs[k].packet
                        if recs[k].kind == .motion { lost &+= SIMD4(d.a, d.b, 0, 0) } else { lost &+= SIMD4(0, 0, d.a, d.b) }
                        recoveredRecs.append(k)
                    }
                    pkt.lostDatagrams = UInt32(i - newest - 1)
                    pkt.recovered = lost
                }
                newest = i
                let res = pl.push(pkt, arrivalUs: r.arriveUs!)
                // Recovered motion: record k of m is fully played its
                // share of the way through the segment that plays them.
                if !recoveredRecs.isEmpty {
                    let span = pl.lostSpanUs
                    for (q, k) in recoveredRecs.enumerated() {
                        let at = Double(span.start) + Double(q + 1) / Double(recoveredRecs.count) * Double(span.end &- span.start)
                        let done = firstTick(UInt64(at.rounded(.up)), strict: false)
                        out.recoveredLambdasUs.append(Double(done) - emit[k] - clock.dminUs)
                    }
                }
                guard r.isMovement else { continue }
                out.arrivedMovement += 1
                if res == .late { out.late += 1 }
                // The core says when this packet's motion is fully due.
                let done = firstTick(pl.lastDueUs, strict: pl.lastDueStrict)
                out.lambdasUs.append(Double(done) - emit[i] - clock.dminUs)
                out.lambdaEmitUs.append(emit[i])
            }
            let f = pl.tick(nowUs: now)
            onTick?(now, f)
            whole += LabVec(Double(f.dx), Double(f.dy), Double(f.hwheelHiRes), Double(f.wheelHiRes))
            let rem = pl.remainders
            pos = whole + LabVec(Double(rem.0), Double(rem.1), Double(rem.3), Double(rem.2)) / 256
            j += 1
        }
        if config.recallPermille != 0 { out.recall = pl.recall }
        return out
    }

    /// Half the window of the local latency the ideal path is shifted by.
    public static let localLatencyHalfWindowUs = 500_000.0

    /// The ideal path at each vsync, shifted by d_min plus the policy's own
    /// latency at the time: the median lambda of the packets emitted within
    /// 0.5 s either side (the whole run's median where none were).
    ///
    /// Why local, not the run's median (the field notes' M3): jitter is
    /// what the eye sees, the cursor's motion against the finger's, while
    /// latency is M1's to score. Against one run-wide shift, a cursor that
    /// follows the path perfectly but 20 ms later than the run's median for
    /// a few seconds (an adaptive delay after a bad spell) was charged
    /// |dP(t - 20 ms) - dP(t)| every frame of those seconds: the path's
    /// change of velocity over 20 ms, counted as jitter, though nothing
    /// jumped. A median over a second follows a delay that moves slowly and
    /// ignores a hold and its catch-up (fewer than half the packets of the
    /// second), which stay jitter. The same rule for every policy; a
    /// constant delay scores as before.
    func shiftedIdeal(_ run: PolicyRun, phase: Int = 0) -> [LabVec] {
        shiftedIdeals(run, phases: [phase])[0]
    }

    /// `shiftedIdeal` for several phases at once: the phases share their
    /// windows' medians (a window is the same set of packets whatever the
    /// phase that asks for it).
    func shiftedIdeals(_ run: PolicyRun, phases: [Int]) -> [[LabVec]] {
        let global = clock.dminUs + ScoreAccumulator.median(run.lambdasUs)
        guard run.lambdaEmitUs.count == run.lambdasUs.count, !run.lambdasUs.isEmpty else {
            return phases.map { vsyncs[$0].map { ideal.at($0 - global) } }
        }
        let order = run.lambdaEmitUs.indices.sorted { run.lambdaEmitUs[$0] < run.lambdaEmitUs[$1] }
        let e = order.map { run.lambdaEmitUs[$0] }, l = order.map { run.lambdasUs[$0] }
        let w = Self.localLatencyHalfWindowUs
        var medians: [Int: Double] = [:]
        return phases.map { phase in
            let vsync = vsyncs[phase]
            var out: [LabVec] = []
            out.reserveCapacity(vsync.count)
            var lo = 0, hi = 0
            var lastLo = -1, lastHi = -1, lastShift = global
            var shift = Double.nan, prevT = 0.0
            for t in vsync {
                // Packets emitted within w of the frame's own (unshifted) time
                // minus the run's latency: the ones shown around it.
                let c = t - global
                while lo < e.count && e[lo] < c - w { lo += 1 }
                while hi < e.count && e[hi] <= c + w { hi += 1 }
                if lo != lastLo || hi != lastHi {
                    if hi > lo {
                        let key = lo &* (e.count + 1) &+ hi
                        if let m = medians[key] {
                            lastShift = m
                        } else {
                            lastShift = clock.dminUs + ScoreAccumulator.median(Array(l[lo..<hi]))
                            medians[key] = lastShift
                        }
                    } else {
                        lastShift = global
                    }
                    lastLo = lo; lastHi = hi
                }
                // While the path moves, the shift follows that median no faster
                // than the oracle's stretch (field notes: rate 0.1). A median
                // steps where the window's majority flips, which can be the
                // middle of a stroke, and a stepping shift made the ideal path
                // jump by the step times its speed though the cursor only sped
                // up or slowed down (a delay that grew at a session's start
                // was charged one 44 px jump on S2). A cursor that does jump
                // meets a shift that ramps, and is charged for it. Where the
                // path is still between the two shifts (a pause), the step
                // shows nothing and is taken at once.
                if shift.isNaN || ideal.at(t - lastShift) == ideal.at(t - shift) {
                    shift = lastShift
                } else {
                    let room = Self.shiftRate * (t - prevT)
                    shift += min(max(lastShift - shift, -room), room)
                }
                prevT = t
                out.append(ideal.at(t - shift))
            }
            return out
        }
    }

    /// How fast the ideal path's shift may follow the local latency:
    /// 0.1 s a second, the field notes' oracle's stretch limit.
    public static let shiftRate = 0.1

    /// Scores one run of a policy into `acc`: its packets, its frames at
    /// every vsync phase, and how far each stroke ends short.
    public func score(_ run: PolicyRun, into acc: inout ScoreAccumulator) {
        let lost = trace.records.filter { $0.arriveUs == nil }.count
        acc.addPackets(lambdasUs: run.lambdasUs, late: run.late, arrived: run.arrivedMovement,
                       lost: lost, sent: trace.records.count)
        acc.recoveredLambdasUs += run.recoveredLambdasUs
        let scored = Array(vsyncs.indices.prefix(run.cursors.count))
        for (p, ideal) in zip(scored, shiftedIdeals(run, phases: scored)) {
            acc.addFrames(cursor: run.cursors[p], ideal: ideal, phase: p)
        }
        acc.addStrokes(shortPx: strokeShortfall(run.cursor))
    }

    /// How far the cursor's travel over each stroke falls short of the
    /// finger's (px; the distance between the two displacements), read at
    /// phase 0's last vsync before the next stroke could show.
    public func strokeShortfall(_ cursor: [LabVec]) -> [Double] {
        var out: [Double] = []
        var prevC = LabVec.zero, prevF = LabVec.zero
        for s in strokes where s.vsync < cursor.count {
            let c = cursor[s.vsync]
            out.append(norm((c - prevC) - (s.finger - prevF)))
            prevC = c; prevF = s.finger
        }
        return out
    }
}

/// One row of results: a scenario (or a trace) and a policy, over seeds.
public struct LabRow: Sendable, Encodable {
    public var scenario: String
    public var policy: String
    public var scores: Scores
    public init(scenario: String, policy: String, scores: Scores) {
        self.scenario = scenario; self.policy = policy; self.scores = scores
    }

    enum CodingKeys: String, CodingKey { case scenario, policy }

    /// One flat object: the scenario, the policy and every score.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(scenario, forKey: .scenario)
        try c.encode(policy, forKey: .policy)
        try scores.encode(to: encoder)
    }
}

public enum Lab {
    /// Every policy on every scenario, `seeds` runs each (seeds 1...N), in
    /// scenario then policy order, on a fixed `displayHz` display unless
    /// `display` says otherwise, drained at `drain`'s rate.
    public static func simulate(scenarios: [Scenario], policies: [Policy], seeds: Int, displayHz: Int = 120,
                                display: LabDisplay? = nil, drain: LabDrain = .default,
                                senderHz: Int = 120, durationS: Double = 30, firstSeed: Int = 1,
                                perfectNetwork: Bool = false, transport: LabTransport = .udp,
                                phases: Int = LabCase.defaultPhases, fullPath: Bool = false,
                                returning: Int = 0, historyScenario: Scenario? = nil) -> [LabRow] {
        let display = display ?? .fixed(hz: Double(displayHz))
        let drainHz = drain.hz(for: display)
        var rows: [LabRow] = []
        for sc in scenarios {
            var accs = [ScoreAccumulator](repeating: ScoreAccumulator(), count: policies.count)
            // A returning sender: each policy's memory, built over
            // `returning` earlier sessions (seeds returningSeed...) on the
            // history's network, then carried from each scored session to
            // the next, in seed order.
            var recalls = [DelayRecall?](repeating: nil, count: policies.count)
            for h in 0..<returning {
                let seed = UInt64(Self.returningSeed + h)
                let trace = LabRun.generate(scenario: historyScenario ?? sc, seed: seed, senderHz: senderHz, durationS: durationS)
                let c = LabCase(trace: trace, display: display, drainHz: drainHz, seed: seed, phases: 4)
                for (k, p) in policies.enumerated() where p.config?.recallPermille ?? 0 != 0 {
                    recalls[k] = c.run(p, recall: recalls[k]).recall
                }
            }
            for seed in firstSeed..<(firstSeed + max(1, seeds)) {
                var trace = LabRun.generate(scenario: sc, seed: UInt64(seed), senderHz: senderHz, durationS: durationS)
                if transport == .tcp { trace = trace.overTCP() }
                let c = LabCase(trace: perfectNetwork ? trace.perfectNetwork : trace, display: display,
                                drainHz: drainHz, seed: UInt64(seed), phases: phases,
                                redundancy: transport == .redundant, fullPath: fullPath)
                for (k, p) in policies.enumerated() {
                    let run = c.run(p, recall: returning > 0 ? recalls[k] : nil)
                    if returning > 0 { recalls[k] = run.recall }
                    c.score(run, into: &accs[k])
                }
            }
            for (k, p) in policies.enumerated() { rows.append(LabRow(scenario: sc.rawValue, policy: p.name, scores: accs[k].scores)) }
        }
        return rows
    }

    /// The first seed of a returning sender's earlier sessions: far from
    /// the scored ones (1...N), so that no scored run is also history.
    public static let returningSeed = 1000

    /// Every policy on one trace.
    public static func replay(trace: Trace, name: String, policies: [Policy], displayHz: Int = 120,
                              display: LabDisplay? = nil, drain: LabDrain = .default,
                              perfectNetwork: Bool = false, transport: LabTransport = .udp,
                              phases: Int = LabCase.defaultPhases, fullPath: Bool = false) -> [LabRow] {
        let t = transport == .tcp ? trace.overTCP() : trace
        let display = display ?? .fixed(hz: Double(displayHz))
        let c = LabCase(trace: perfectNetwork ? t.perfectNetwork : t, display: display, drainHz: drain.hz(for: display),
                        phases: phases, redundancy: transport == .redundant, fullPath: fullPath)
        return policies.map { p in
            var acc = ScoreAccumulator()
            c.score(c.run(p), into: &acc)
            return LabRow(scenario: name, policy: p.name, scores: acc.scores)
        }
    }
}

extension LabCase {
    /// Per-frame samples for debugging a policy: t, C, P(shifted).
    public func dump(_ policy: Policy) -> String {
        let r = run(policy)
        let shifted = shiftedIdeal(r)
        var s = "t,cx,cy,cw,cv,px,py,pw,pv\n"
        for (k, t) in vsync.enumerated() {
            let c = r.cursor[k], p = shifted[k]
            s += "\(Int(t)),\(c[0]),\(c[1]),\(c[2]),\(c[3]),\(p[0]),\(p[1]),\(p[2]),\(p[3])\n"
        }
        return s
    }
}
