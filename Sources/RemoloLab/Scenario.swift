import Foundation
import RemoloPlayout
import RemoloInput
import RemoloTrace

/// Wi-Fi delivery of the sender's datagrams, per scenario of the field notes
/// (../shared/notes/field.md, "Wi-Fi delivery of small periodic UDP"). The
/// notes give round-trip figures; one-way figures are half the RTT excess
/// over the minimum, as the notes say. Everything is in true time on the
/// receiver's clock, microseconds. Delivery is in order (802.11 keeps order
/// within a traffic class): a held datagram holds the ones behind it, and a
/// queue that releases delivers its datagrams back to back (`clumpGapUs`
/// apart).
public enum Scenario: String, Sendable, CaseIterable {
    case s1 = "S1", s2 = "S2", s3 = "S3", s4 = "S4", s5 = "S5", s6 = "S6", s7 = "S7"

    public var title: String {
        switch self {
        case .s1: return "quiet home 5 GHz"
        case .s2: return "office with spikes"
        case .s3: return "poor home, two APs"
        case .s4: return "busy campus"
        case .s5: return "peer-to-peer link stalls"
        case .s6: return "power save wake-up"
        case .s7: return "clock drift and step"
        }
    }

    /// Accepts "S3", "s3" or "3".
    public init?(name: String) {
        let n = name.uppercased()
        if let s = Scenario(rawValue: n) { self = s } else if let s = Scenario(rawValue: "S" + n) { self = s } else { return nil }
    }

    /// The stall scenarios (delivery held for longer than the design note's 60 ms
    /// delay cap): office spikes, campus contention, peer-to-peer stalls,
    /// power-save wake-ups.
    public var hasStalls: Bool { self == .s2 || self == .s4 || self == .s5 || self == .s6 }

    static let clumpGapUs = 20.0

    /// A delivery model: smallest delay, per-datagram excess, holds (the
    /// link delivers nothing in [start, end) and releases at end), optional
    /// slotted delivery, optional power save, bursty loss.
    struct Link: Sendable {
        var dminUs: Double
        var excess: @Sendable (inout LabRandom) -> Double
        var holds: [(start: Double, end: Double, loseFirst: Bool)] = []
        /// Slotted delivery (netem `slot`): deliveries only at slot
        /// boundaries, gaps uniform in this range.
        var slotGapUs: ClosedRange<Double>?
        /// Power save: after this much silence the station dozes and a frame
        /// waits for the next beacon.
        var dozeAfterUs: Double?
        var beaconUs: Double = 102_400
        /// Gilbert-Elliott loss: P(good -> bad), P(bad -> good); all lost
        /// while bad.
        var lossEnter = 0.0
        var lossLeave = 1.0
    }

    /// Holds as a renewal process over [t0, t1): gaps between starts and
    /// durations drawn by the closures.
    static func holds(_ rng: inout LabRandom, from t0: Double, to t1: Double, first: Double,
                      gap: (inout LabRandom) -> Double, dur: (inout LabRandom) -> Double,
                      loseFirst: Bool = false) -> [(start: Double, end: Double, loseFirst: Bool)] {
        var out: [(start: Double, end: Double, loseFirst: Bool)] = []
        var t = t0 + first
        while t < t1 {
            let d = dur(&rng)
            out.append((t, t + d, loseFirst))
            t += d + gap(&rng)
        }
        return out
    }

    /// S1's delivery, the quiet base of S5-S7 too: RTT min 1.96, avg 2.5,
    /// p95 3.0, max 4.4 ms -> one-way min 0.98 ms, excess mean 0.27, p95
    /// 0.52, max 1.22 ms: uniform 0..0.54 ms, and 0.5% of datagrams
    /// 0.54..1.22 ms.
    static func quietExcess(_ r: inout LabRandom) -> Double {
        r.chance(0.005) ? r.uniform(540, 1220) : r.uniform(0, 540)
    }

    func link(_ rng: inout LabRandom, from t0: Double, to t1: Double) -> Link {
        switch self {
        case .s1:
            // No loss figure for a quiet home: none.
            return Link(dminUs: 980, excess: Self.quietExcess)
        case .s2:
            // Office: median RTT 4 ms, p95 < 8, p99 51 ms. Minimum RTT taken
            // as 2 ms -> one-way 1 ms; excess log-normal, median 1 ms, p95
            // 3 ms (sigma ln 3 / 1.645). The p99 of ~25 ms one-way: short
            // queues of 25-50 ms, one every 2 s on average (~1.5% of
            // datagrams held). 18 spikes > 100 ms in 10 min (one per 33 s):
            // a 100-130 ms queue (at 120 Hz, ~13 datagrams) whose first
            // datagram is lost and the rest flushed as a clump. Loss 0.12%.
            var l = Link(dminUs: 1000, excess: { $0.lognormal(median: 1000, sigma: 0.668) })
            l.holds = Self.holds(&rng, from: t0, to: t1, first: rng.exponential(mean: 2e6),
                                 gap: { $0.exponential(mean: 2e6) }, dur: { $0.uniform(25_000, 50_000) })
            l.holds += Self.holds(&rng, from: t0, to: t1, first: rng.uniform(0, 33.3e6),
                                  gap: { $0.uniform(16.7e6, 50e6) }, dur: { $0.uniform(100_000, 130_000) },
                                  loseFirst: true)
            l.lossEnter = 0.0006; l.lossLeave = 0.5   // stationary 0.12%, bursts of ~2
            return l
        case .s3:
            // Poor home, two APs: RTT p95 13.9 ms -> one-way excess p95 ~6 ms,
            // from slotted delivery (netem `slot 800us 10ms`-like clumps; gaps
            // 0.8-6 ms fit the p95) over a log-normal base (median 0.8 ms).
            // Spikes to 90 ms RTT -> holds up to 44 ms, one per 5 s.
            // 1.6% loss, bursty: Gilbert-Elliott 0.004 / 0.25 (stationary
            // 1.57%, mean burst 4).
            var l = Link(dminUs: 1000, excess: { $0.lognormal(median: 800, sigma: 0.6) })
            l.slotGapUs = 800...6000
            l.holds = Self.holds(&rng, from: t0, to: t1, first: rng.exponential(mean: 5e6),
                                 gap: { $0.exponential(mean: 5e6) }, dur: { $0.uniform(20_000, 44_000) })
            l.lossEnter = 0.004; l.lossLeave = 0.25
            return l
        case .s4:
            // Busy campus: Wi-Fi hop p90 ~20 ms, p99 ~250 ms (round trip) ->
            // one-way excess p90 ~10 ms: log-normal median 2 ms, sigma 1.256
            // (capped at 80 ms; in-order delivery turns the slow ones into
            // clumps); p99 ~125 ms: contention holds of 150-300 ms, one per
            // 10 s (~1% of datagrams wait > 125 ms). AP scans stall ~100 ms
            // every 120 s, at a random phase. No loss figure: none.
            var l = Link(dminUs: 1500, excess: { min($0.lognormal(median: 2000, sigma: 1.256), 80_000) })
            l.holds = Self.holds(&rng, from: t0, to: t1, first: rng.exponential(mean: 10e6),
                                 gap: { $0.exponential(mean: 10e6) }, dur: { $0.uniform(150_000, 300_000) })
            l.holds += Self.holds(&rng, from: t0, to: t1, first: rng.uniform(0, 120e6),
                                  gap: { _ in 120e6 - 100_000 }, dur: { _ in 100_000 })
            l.holds.sort { $0.start < $1.start }
            return l
        case .s5:
            // Apple peer-to-peer link active: ~90 ms stalls about twice a
            // second, drained as a clump: holds of 80-100 ms, starts 450-550 ms
            // apart, over the quiet base.
            var l = Link(dminUs: 980, excess: Self.quietExcess)
            l.holds = Self.holds(&rng, from: t0, to: t1, first: rng.uniform(0, 500_000),
                                 gap: { $0.uniform(450_000, 550_000) - 90_000 }, dur: { $0.uniform(80_000, 100_000) })
            return l
        case .s6:
            // Power save: after idle, frames are held until the next beacon
            // (102.4 ms), and 100 ms pings keep the radio awake. The sender
            // sends heartbeats every 100 ms while on screen (design note, part 3), so
            // the radio dozes only while the trackpad is away; a doze timeout
            // of 150 ms (above the heartbeat period, as the notes imply) over
            // the quiet base.
            var l = Link(dminUs: 980, excess: Self.quietExcess)
            l.dozeAfterUs = 150_000
            return l
        case .s7:
            // Clocks: drift 13-16 ppm measured, 500 ppm the worst bound (used
            // here), and a sender clock step (applied by the clock map, see
            // `LabRun.generate`). Quiet base delivery.
            return Link(dminUs: 980, excess: Self.quietExcess)
        }
    }

    /// Arrival time (receiver clock) of each datagram sent at true time
    /// `emit[i]`, or nil when lost.
    func deliver(emit: [Double], rng: inout LabRandom) -> (arrivals: [Double?], dminUs: Double) {
        guard let first = emit.first, let last = emit.last else { return ([], 0) }
        var d = LinkDelivery(scenario: self, rng: rng, from: first - 1e6, to: last + 1e6)
        let out = emit.map { d.deliver(emitUs: $0) }
        rng = d.rng
        return (out, d.link.dminUs)
    }
}

/// A scenario's link, one datagram at a time, in sending order: the batch
/// simulator and the UDP relay share it.
public struct LinkDelivery: Sendable {
    let link: Scenario.Link
    var rng: LabRandom
    /// Loss and slot boundaries draw from streams of their own, so which
    /// datagrams are lost depends only on their order, not on timing.
    var lossRng: LabRandom
    var slotRng: LabRandom
    var prev = -Double.infinity
    var prevEmit = -Double.infinity
    var bad = false
    var holdIdx = 0
    var lostFirstOf = -1
    var slotAt: Double
    let beaconPhase: Double
    var count = 0

    /// The link of `scenario` over true times [from, to) (holds are drawn
    /// for that span), microseconds.
    public init(scenario: Scenario, seed: UInt64, from: Double, to: Double) {
        self.init(scenario: scenario, rng: LabRandom(seed: seed, stream: 7), from: from, to: to)
    }

    init(scenario: Scenario, rng: LabRandom, from: Double, to: Double) {
        var r = rng
        link = scenario.link(&r, from: from, to: to)
        slotAt = from
        beaconPhase = r.uniform(0, link.beaconUs)
        lossRng = LabRandom(seed: r.next())
        slotRng = LabRandom(seed: r.next())
        self.rng = r
    }

    /// The smallest one-way delay of this link.
    public var dminUs: Double { link.dminUs }

    /// When a datagram sent at `e` arrives, or nil when it is lost.
    public mutating func deliver(emitUs e: Double) -> Double? {
        bad = bad ? !lossRng.chance(link.lossLeave) : lossRng.chance(link.lossEnter)
        var t = e + link.dminUs + link.excess(&rng)
        // Power save: the first frame after a doze waits for a beacon.
        if let doze = link.dozeAfterUs, count > 0, e - prevEmit > doze {
            let k = ((e - beaconPhase) / link.beaconUs).rounded(.up)
            t = max(t, beaconPhase + k * link.beaconUs + link.dminUs)
        }
        count += 1
        prevEmit = e
        while holdIdx < link.holds.count && link.holds[holdIdx].end <= t { holdIdx += 1 }
        var lose = bad
        if holdIdx < link.holds.count, link.holds[holdIdx].start <= t {
            let h = link.holds[holdIdx]
            if h.loseFirst && lostFirstOf != holdIdx { lostFirstOf = holdIdx; lose = true }
            t = h.end
        }
        if let g = link.slotGapUs {
            while slotAt < t { slotAt += slotRng.uniform(g.lowerBound, g.upperBound) }
            t = slotAt
        }
        t = max(t, prev + Scenario.clumpGapUs)
        // A lost datagram still occupied the queue.
        prev = t
        return lose ? nil : t
    }
}

/// One generated run: the sender's script through a scenario's link, as a
/// trace with its truth.
public enum LabRun {
    /// The receiver's clock starts far from the sender's: an unknown offset.
    static let senderEpochUs: UInt64 = 7_000_000_000
    static let receiverEpochUs: Double = 1_500_000_000

    public static func generate(scenario: Scenario, seed: UInt64, senderHz: Int = 120,
                                durationS: Double = 30) -> Trace {
        let script = GestureScript(seed: seed, senderHz: senderHz, durationS: durationS)
        var rng = LabRandom(seed: seed, stream: 100 + UInt64(scenario.rawValue.last!.asciiValue!))
        // Drift: 13-16 ppm measured between two Wi-Fi hosts, either sign;
        // S7 takes the 500 ppm bound. S7 steps the sender's clock once, by
        // 150-400 ms (NTP steps beyond 128 ms), either way, mid-run.
        let ppm = scenario == .s7 ? 500 * rng.sign() : rng.uniform(13, 16) * rng.sign()
        var stepRow = -1
        var stepUs: Int64 = 0
        if scenario == .s7 {
            let at = UInt64(Double(script.events.last?.tUs ?? 0) * rng.uniform(0.4, 0.6))
            stepRow = script.events.firstIndex { $0.tUs >= at } ?? -1
            stepUs = Int64(rng.uniform(150_000, 400_000) * rng.sign())
        }
        let s0 = Double(senderEpochUs)
        // E = R0 + t * (1 + ppm e-6), with s = S0 + t (+ step after the step).
        let seg0 = TraceClock.Segment(fromRow: 0, offsetUs: receiverEpochUs - s0 - ppm * 1e-6 * s0, ppm: ppm)
        var segments = [seg0]
        if stepRow > 0 {
            let x = Double(stepUs)
            segments.append(.init(fromRow: stepRow, offsetUs: receiverEpochUs - s0 - x - ppm * 1e-6 * (s0 + x), ppm: ppm))
        }
        var records: [TraceRecord] = script.events.enumerated().map { i, ev in
            let s = UInt64(Int64(senderEpochUs + ev.tUs) + (stepRow >= 0 && i >= stepRow ? stepUs : 0))
            return TraceRecord(sendUs: s, arriveUs: nil, kind: ev.kind, dx: ev.dx, dy: ev.dy)
        }
        var clock = TraceClock(segments: segments, dminUs: 0)
        let emit = clock.emissionTimes(records)
        let (arrivals, dmin) = scenario.deliver(emit: emit, rng: &rng)
        clock.dminUs = dmin
        for i in records.indices { records[i].arriveUs = arrivals[i].map { UInt64($0.rounded()) } }
        return Trace(records: records, clock: clock, frameUs: script.frameUs,
                     notes: ["scenario \(scenario.rawValue) (\(scenario.title)) seed \(seed) sender \(senderHz) Hz"])
    }
}
