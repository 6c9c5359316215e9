import Foundation
import RemoloTrace

/// What a trace's long delays look like to a receiver that only knows the
/// past: how many there are, how long, whether anything announces them, and
/// whether one says that another is near. A causal delay helps against an
/// event only by what it holds at the event's onset; if nothing announces
/// events and one does not make the next likelier, what it holds there is
/// what it holds in quiet time, and a pinned delay is the same trade
/// (docs/smoothness.md, "The default judged again").
///
/// Lateness here is a datagram's arrival behind its emission plus the
/// smallest one-way delay (the trace's clock map, its truth or the
/// estimate): its lateness at no delay. Every arrived datagram counts,
/// heartbeats too (they cross the same link).
public struct LatenessEvents: Sendable, Equatable {
    public struct Event: Sendable, Equatable {
        /// Send times (sender clock) of its first and last datagram later
        /// than the threshold.
        public var startUs: UInt64
        public var endUs: UInt64
        /// Its latest datagram's lateness.
        public var peakUs: Double
        /// Where it shows, on the receiver's clock: from 100 ms before its
        /// first late datagram was sent to 1 s after its last arrived.
        public var fromUs: Double = 0
        public var toUs: Double = 0
        /// How many of its datagrams were later than the threshold.
        public var late: Int
        /// The longest stretch, within `lookaround` of it, between two
        /// movement datagrams that arrived, sent one after the other: what
        /// the link lost of a moving finger's stream.
        public var gapUs: UInt64
    }

    public struct Settings: Sendable, Equatable {
        /// A datagram later than this is part of an event.
        public var thresholdUs: Double = 50_000
        /// Late datagrams sent closer together than this are one event.
        public var mergeUs: UInt64 = 1_000_000
        /// The stretch before an event that could announce it, and every
        /// quiet stretch it is compared with.
        public var lookbackUs: UInt64 = 2_000_000
        /// The lookback ends this long before the event's first late
        /// datagram: the few datagrams just before it that are already
        /// late are its onset, not a warning (their lateness arrives when
        /// the event has begun).
        public var onsetUs: UInt64 = 50_000
        /// A datagram later than this in a lookback is a warning.
        public var warningUs: Double = 15_000
        /// Where an event's send gap is looked for: this far before its
        /// first and after its last late datagram.
        public var lookaroundUs: UInt64 = 500_000
        /// "The next event soon": within this of the end of one.
        public var followUs: UInt64 = 5_000_000
        /// Quiet stretches are taken every this much.
        public var stepUs: UInt64 = 100_000
        public init() {}
    }

    public var settings: Settings
    public var events: [Event]
    /// Sender-clock span of the arrived datagrams, s.
    public var seconds: Double
    /// The share of events (all but the last) followed by another within
    /// `followUs` of their end.
    public var followedShare: Double
    /// The same share if events came at random at the trace's rate
    /// (Poisson): 1 - exp(-rate * follow).
    public var followedIfRandom: Double
    /// The share of events whose lookback (quiet: no event in it) held a
    /// datagram later than `warningUs`, and how many lookbacks were quiet.
    public var warnedShare: Double
    public var warnedCount: Int
    /// The same share over every quiet lookback-long stretch of the trace.
    public var quietShare: Double

    public var medianPeakUs: Double {
        let p = events.map(\.peakUs).sorted()
        return p.isEmpty ? 0 : p[p.count / 2]
    }

    /// The events with one late datagram: a link that lost what it sent for
    /// a while and delivered one datagram late at the end, not a queue.
    public var singleLate: Int { events.filter { $0.late == 1 }.count }

    /// How long the holds' windows (`Event.fromUs..toUs`) last together, s.
    public var windowSeconds: Double {
        var total = 0.0, end = -Double.infinity
        for e in events.sorted(by: { $0.fromUs < $1.fromUs }) {
            let from = max(e.fromUs, end)
            if e.toUs > from { total += e.toUs - from }
            end = max(end, e.toUs)
        }
        return total / 1e6
    }

    public var medianGapUs: UInt64 {
        let g = events.map(\.gapUs).sorted()
        return g.isEmpty ? 0 : g[g.count / 2]
    }

    public init(trace: Trace, settings: Settings = Settings()) {
        self.settings = settings
        let clock = trace.effectiveClock
        let emit = clock.emissionTimes(trace.records)
        var send: [UInt64] = []
        var late: [Double] = []
        var moving: [Bool] = []
        var emitted: [Double] = [], arrived: [Double] = []
        for (i, r) in trace.records.enumerated() {
            guard let a = r.arriveUs else { continue }
            send.append(r.sendUs)
            emitted.append(emit[i]); arrived.append(Double(a))
            late.append(Double(a) - emit[i] - clock.dminUs)
            moving.append(r.isMovement)
        }
        // Recorded traces are in send order; a generated one may not be.
        let order = send.indices.sorted { send[$0] < send[$1] }
        let sends = order.map { send[$0] }
        let lates = order.map { late[$0] }
        let moves = order.map { moving[$0] }
        let emits = order.map { emitted[$0] }, arrives = order.map { arrived[$0] }

        var ev: [Event] = []
        for (k, (s, l)) in zip(sends, lates).enumerated() where l > settings.thresholdUs {
            if let last = ev.last, s - last.endUs < settings.mergeUs {
                ev[ev.count - 1].endUs = s
                ev[ev.count - 1].peakUs = max(last.peakUs, l)
                ev[ev.count - 1].late += 1
                ev[ev.count - 1].toUs = max(last.toUs, arrives[k] + 1e6)
            } else {
                ev.append(Event(startUs: s, endUs: s, peakUs: l, fromUs: emits[k] - 1e5, toUs: arrives[k] + 1e6,
                                late: 1, gapUs: 0))
            }
        }
        for k in ev.indices {
            let from = ev[k].startUs > settings.lookaroundUs ? ev[k].startUs - settings.lookaroundUs : 0
            let to = ev[k].endUs + settings.lookaroundUs
            var i = 0
            while i < sends.count && sends[i] < from { i += 1 }
            while i + 1 < sends.count && sends[i] < to {
                // Between two movement datagrams: a still finger's
                // heartbeats are 100 ms apart by design.
                if moves[i] && moves[i + 1] { ev[k].gapUs = max(ev[k].gapUs, sends[i + 1] - sends[i]) }
                i += 1
            }
        }
        events = ev
        seconds = sends.count > 1 ? Double(sends[sends.count - 1] - sends[0]) / 1e6 : 0

        var followed = 0
        for k in ev.indices.dropLast() where ev[k + 1].startUs - ev[k].endUs < settings.followUs { followed += 1 }
        followedShare = ev.count > 1 ? Double(followed) / Double(ev.count - 1) : 0
        let rate = seconds > 0 ? Double(ev.count) / seconds : 0
        followedIfRandom = 1 - exp(-rate * Double(settings.followUs) / 1e6)

        // The latest datagram sent in [from, to): binary search, then a scan.
        func latest(_ from: UInt64, _ to: UInt64) -> Double {
            var lo = 0, hi = sends.count
            while lo < hi { let m = (lo + hi) / 2; if sends[m] < from { lo = m + 1 } else { hi = m } }
            var worst = 0.0
            var k = lo
            while k < sends.count && sends[k] < to { worst = max(worst, lates[k]); k += 1 }
            return worst
        }
        var warned = 0, quiet = 0
        for e in ev {
            guard e.startUs >= settings.lookbackUs + settings.onsetUs else { continue }
            let to = e.startUs - settings.onsetUs
            let w = latest(to - settings.lookbackUs, to)
            guard w <= settings.thresholdUs else { continue }  // the previous event's tail
            quiet += 1
            if w > settings.warningUs { warned += 1 }
        }
        warnedCount = quiet
        warnedShare = quiet > 0 ? Double(warned) / Double(quiet) : 0

        var stretches = 0, warnedStretches = 0
        if let first = sends.first, let last = sends.last {
            var t = first + settings.lookbackUs
            while t <= last {
                let w = latest(t - settings.lookbackUs, t)
                if w <= settings.thresholdUs {
                    stretches += 1
                    if w > settings.warningUs { warnedStretches += 1 }
                }
                t += settings.stepUs
            }
        }
        quietShare = stretches > 0 ? Double(warnedStretches) / Double(stretches) : 0
    }

    /// One paragraph for the CLI.
    public var summary: String {
        let s = settings
        func pct(_ v: Double) -> String { String(format: "%.0f%%", v * 100) }
        return String(format: "%d events (datagrams later than %.0f ms at no delay, merged within %.1f s) in %.0f s; peak median %.0f ms, smallest %.0f ms\n",
                      events.count, s.thresholdUs / 1000, Double(s.mergeUs) / 1e6, seconds, medianPeakUs / 1000,
                      (events.map(\.peakUs).min() ?? 0) / 1000)
            + "\(singleLate) of them one late datagram; "
            + String(format: "the longest send gap around one, median %.0f ms; their windows (100 ms before to 1 s after) %.0f s\n",
                     Double(medianGapUs) / 1000, windowSeconds)
            + String(format: "followed by another within %.0f s: ", Double(s.followUs) / 1e6)
            + "\(pct(followedShare)) of them; at random at the same rate: \(pct(followedIfRandom))\n"
            + String(format: "a datagram later than %.0f ms in the %.0f s before (up to %.0f ms before the first late one): ",
                     s.warningUs / 1000, Double(s.lookbackUs) / 1e6, Double(s.onsetUs) / 1000)
            + "\(pct(warnedShare)) of \(warnedCount) events; in any quiet \(String(format: "%.0f", Double(s.lookbackUs) / 1e6)) s: \(pct(quietShare))\n"
    }
}

/// How much of a policy's squared frame error (M3's J^2, every vsync phase)
/// falls where a trace's holds show and how much between them.
public struct HoldJitter: Sendable {
    public var policy: String
    /// J^2 in each hold's window (`LatenessEvents.Event.fromUs..toUs`), in
    /// the holds' order; a frame in two windows counts in the first.
    public var perHold: [Double]
    public var outside: Double
    /// The sum of |dP|^2 over the same frames: the jitter ratio's
    /// denominator (every phase).
    public var dP2: Double
    /// The run's p95 added latency, ms (M1).
    public var latencyMsP95: Double

    public var inHolds: Double { perHold.reduce(0, +) }
    /// sqrt(J^2 / |dP|^2) pooled over the phases: the jitter ratio within
    /// rounding of the phases' mean.
    public var jitter: Double { dP2 > 0 ? ((inHolds + outside) / dP2).squareRoot() : 0 }
}

extension LabCase {
    public func holdJitter(_ policy: Policy, holds: LatenessEvents) -> HoldJitter {
        let r = run(policy)
        let scored = Array(vsyncs.indices.prefix(r.cursors.count))
        var out = HoldJitter(policy: policy.name, perHold: [Double](repeating: 0, count: holds.events.count), outside: 0, dP2: 0,
                             latencyMsP95: ScoreAccumulator.quantile(r.lambdasUs, 0.95) / 1000)
        for (p, ideal) in zip(scored, shiftedIdeals(r, phases: scored)) {
            let c = r.cursors[p], t = vsyncs[p]
            guard c.count >= 2 else { continue }
            var h = 0
            for k in 1..<c.count {
                let j = norm((c[k] - ideal[k]) - (c[k - 1] - ideal[k - 1]))
                let dP = norm(ideal[k] - ideal[k - 1])
                out.dP2 += dP * dP
                while h < holds.events.count && holds.events[h].toUs < t[k] { h += 1 }
                if h < holds.events.count && holds.events[h].fromUs <= t[k] {
                    out.perHold[h] += j * j
                } else {
                    out.outside += j * j
                }
            }
        }
        return out
    }
}

/// The most a receiver could make of knowing when every hold comes: in the
/// holds it plays as the best of the policies run does there, between them
/// as the best of those no slower than the first (p95 at most its + 0.5 ms,
/// the frontier's slack) does, and switching costs nothing. No causal
/// receiver knows that much, and none holds a long delay through the holds
/// without paying for it in its 95th percentile, so a jitter this bound
/// does not reach at the first policy's latency no causal receiver reaches.
public struct HoldBound: Sendable {
    public var inHolds: HoldJitter
    public var between: HoldJitter
    /// sqrt((J^2 in holds of the one + J^2 between of the other) / the
    /// first policy's |dP|^2).
    public var jitter: Double

    public init?(_ runs: [HoldJitter]) {
        guard let first = runs.first, first.dP2 > 0 else { return nil }
        guard let a = runs.min(by: { $0.inHolds < $1.inHolds }) else { return nil }
        let fast = runs.filter { $0.latencyMsP95 <= first.latencyMsP95 + FrontierReport.latencySlackMs }
        guard let b = fast.min(by: { $0.outside < $1.outside }) else { return nil }
        inHolds = a; between = b
        jitter = ((a.inHolds + b.outside) / first.dP2).squareRoot()
    }
}
