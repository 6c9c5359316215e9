import Foundation
import RemoloPlayout
import RemoloTrace

/// How the sender's datagrams travel: as UDP datagrams (what `remolo send`
/// does; a lost one is gone), or as one TCP stream (what the phone page's
/// WebSocket does; nothing is lost, but a lost segment holds back every
/// later one until it is retransmitted: head-of-line blocking).
/// `redundant` is UDP with the redundancy feature agreed (feature bit 1):
/// every datagram carries the session's running totals and the receiver
/// plays the motion of the datagrams lost before one it opens.
public enum LabTransport: String, Sendable, CaseIterable {
    case udp, redundant, tcp

    /// A comma list of `udp`, `redundant`, `tcp`; `both` is udp,tcp and
    /// `all` udp,redundant,tcp.
    public static func parse(_ s: String) throws(LabError) -> [LabTransport] {
        if s == "both" { return [.udp, .tcp] }
        if s == "all" { return [.udp, .redundant, .tcp] }
        var out: [LabTransport] = []
        for part in s.split(separator: ",") {
            guard let t = LabTransport(rawValue: String(part)) else {
                throw LabError("unknown transport '\(part)': valid are udp, redundant, tcp (a comma list), both or all")
            }
            if !out.contains(t) { out.append(t) }
        }
        guard !out.isEmpty else { throw LabError("--transport: name one, e.g. udp,redundant") }
        return out
    }
}

/// TCP's delivery of a link's datagrams, one segment each (TCP_NODELAY, as
/// a WebSocket message per datagram), from the same link's timing and
/// losses:
///
/// - A segment the link delivers arrives when the datagram would have.
/// - A segment the link loses is retransmitted, once, and the
///   retransmission is not lost. Which happens first (Linux):
///   - fast retransmit (RFC 5681, 3.2): the third later segment to arrive
///     makes the third duplicate ACK; it reaches the sender half a round
///     trip later, the retransmission the receiver another half: arrival =
///     that segment's arrival + RTT. At 120 datagrams/s that is about 25 ms
///     + RTT after the loss;
///   - the retransmission timeout (RFC 6298): RTO = SRTT + 4 RTTVAR, at
///     least 200 ms (Linux's TCP_RTO_MIN; RFC 6298 says 1 s), from the
///     lost segment's sending: arrival = sending + RTO + RTT/2. This is
///     what a loss costs when fewer than three segments follow it (the end
///     of a gesture, a pause with a heartbeat every 100 ms).
/// - The stream delivers in order: a segment reaches the application no
///   earlier than every segment sent before it (the held ones then come
///   as a clump, at once).
///
/// Not modelled: a lost retransmission (it would wait for the RTO, doubled),
/// RACK-TLP (RFC 8985: a probe after ~2 SRTT may recover a tail loss
/// sooner than the RTO), congestion control (120 segments of ~70 bytes a
/// second never fill a window) and Nagle coalescing (the page's socket
/// sends each message at once). So the costs here are what plain TCP
/// recovery adds, not a worst case.
public struct TCPHeadOfLine: Sendable, Equatable {
    /// Round-trip time, microseconds.
    public var rttUs: Double
    /// Retransmission timeout, microseconds.
    public var rtoUs: Double

    public static let dupAckThreshold = 3
    public static let rtoMinUs = 200_000.0

    public init(rttUs: Double, rtoUs: Double) {
        self.rttUs = rttUs; self.rtoUs = rtoUs
    }

    /// The round trip of a link from its own one-way delays (arrival -
    /// emission of the datagrams it delivered; the ACKs take the same
    /// path back): SRTT = 2 x their mean, RTTVAR = 2 x their mean
    /// deviation (the steady state of RFC 6298's estimators), RTO =
    /// max(200 ms, SRTT + 4 RTTVAR).
    public init(emit: [Double], arrivals: [Double?]) {
        let oneWay = zip(emit, arrivals).compactMap { e, a in a.map { $0 - e } }
        let mean = oneWay.isEmpty ? 0 : oneWay.reduce(0, +) / Double(oneWay.count)
        let dev = oneWay.isEmpty ? 0 : oneWay.reduce(0) { $0 + abs($1 - mean) } / Double(oneWay.count)
        let srtt = 2 * mean, rttvar = 2 * dev
        self.init(rttUs: srtt, rtoUs: max(Self.rtoMinUs, srtt + 4 * rttvar))
    }

    /// When each datagram reaches the application over TCP, given when it
    /// was sent (`emit`, true time) and when the link delivers it as a
    /// datagram (`arrivals`, nil = lost). Every datagram is delivered; the
    /// times never decrease.
    public func deliver(emit: [Double], arrivals: [Double?]) -> [Double] {
        precondition(emit.count == arrivals.count, "one arrival (or nil) per sending")
        // Arrival times of the delivered segments, in sending order, for
        // "the third later segment to arrive".
        let arrivedIdx = arrivals.indices.filter { arrivals[$0] != nil }
        var out = [Double](repeating: 0, count: emit.count)
        var prev = -Double.infinity
        var k = 0   // first index into arrivedIdx after i
        for i in emit.indices {
            while k < arrivedIdx.count && arrivedIdx[k] <= i { k += 1 }
            var t: Double
            if let a = arrivals[i] {
                t = a
            } else {
                let rto = emit[i] + rtoUs + rttUs / 2
                t = rto
                // The duplicate ACKs come from later segments as they
                // arrive; the third earliest of them triggers.
                var first = [Double](repeating: .infinity, count: Self.dupAckThreshold)
                for j in arrivedIdx[k...] {
                    let a = arrivals[j]!
                    // Beyond the RTO no later arrival matters.
                    if a > rto { continue }
                    if a < first[first.count - 1] { first[first.count - 1] = a; first.sort() }
                }
                t = min(rto, first[Self.dupAckThreshold - 1] + rttUs)
            }
            t = max(t, prev)
            out[i] = t
            prev = t
        }
        return out
    }
}

extension Trace {
    /// The same sendings over TCP (`TCPHeadOfLine`, round trip from this
    /// trace's own delays): every row arrives, in order. The clock map is
    /// the trace's (truth, or the estimate).
    public func overTCP() -> Trace {
        let c = effectiveClock
        let emit = c.emissionTimes(records)
        let arrivals = records.map { r in r.arriveUs.map { Double($0) } }
        let model = TCPHeadOfLine(emit: emit, arrivals: arrivals)
        let delivered = model.deliver(emit: emit, arrivals: arrivals)
        var t = self
        t.clock = c
        for i in t.records.indices { t.records[i].arriveUs = UInt64(delivered[i].rounded()) }
        t.notes.append(String(format: "over TCP: rtt %.2f ms, rto %.0f ms (remolo simulate --transport tcp)",
                              model.rttUs / 1000, model.rtoUs / 1000))
        return t
    }
}
