import Testing
@testable import RemoloPlayout
@testable import RemoloLab
import RemoloTrace

/// TCP's delivery of a link's datagrams (`TCPHeadOfLine`), in virtual time:
/// sendings 10 ms apart, a 1 ms link, RTT 10 ms, RTO 200 ms.
struct TCPCase: Sendable, CustomTestStringConvertible {
    let id: Int
    let what: String
    let emit: [Double]
    /// The link's delivery as datagrams; nil = lost.
    let arrivals: [Double?]
    let delivered: [Double]
    var testDescription: String { "\(id): \(what)" }
}

let tcpModel = TCPHeadOfLine(rttUs: 10_000, rtoUs: 200_000)

let tcpCases: [TCPCase] = [
    // 1. Nothing lost, in order: TCP delivers when the datagrams would.
    TCPCase(id: 1, what: "no loss", emit: [0, 10_000, 20_000, 30_000],
            arrivals: [1_000, 11_000, 21_000, 31_000], delivered: [1_000, 11_000, 21_000, 31_000]),
    // 2. Nothing lost, the link reorders 1 and 2: the stream hands 2 over
    //    only after 1.
    TCPCase(id: 2, what: "in order", emit: [0, 10_000, 20_000, 30_000],
            arrivals: [1_000, 15_000, 12_000, 31_000], delivered: [1_000, 15_000, 15_000, 31_000]),
    // 3. 1 lost; 2, 3, 4 arrive at 21, 31, 41 ms: the third duplicate ACK
    //    (from 4) gets the retransmission in at 41 + RTT = 51 ms, and 2-4
    //    wait for it: a clump at 51 ms.
    TCPCase(id: 3, what: "fast retransmit holds the later ones", emit: [0, 10_000, 20_000, 30_000, 40_000, 50_000],
            arrivals: [1_000, nil, 21_000, 31_000, 41_000, 51_000],
            delivered: [1_000, 51_000, 51_000, 51_000, 51_000, 51_000]),
    // 4. 1 lost near the end: one later segment, no third duplicate ACK;
    //    the RTO: 10 + 200 + RTT/2 = 215 ms.
    TCPCase(id: 4, what: "tail loss waits for the RTO", emit: [0, 10_000, 20_000],
            arrivals: [1_000, nil, 21_000], delivered: [1_000, 215_000, 215_000]),
    // 5. 1 lost before a pause: the next three segments come after the RTO
    //    fired (215 ms); they are not held.
    TCPCase(id: 5, what: "RTO before the duplicate ACKs", emit: [0, 10_000, 300_000, 310_000, 320_000],
            arrivals: [1_000, nil, 301_000, 311_000, 321_000],
            delivered: [1_000, 215_000, 301_000, 311_000, 321_000]),
    // 6. 1 and 2 lost: both retransmitted on the third duplicate ACK (5
    //    arrives at 51 ms), at 61 ms; everything up to 6 waits.
    TCPCase(id: 6, what: "a burst of two", emit: [0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000],
            arrivals: [1_000, nil, nil, 31_000, 41_000, 51_000, 61_000],
            delivered: [1_000, 61_000, 61_000, 61_000, 61_000, 61_000, 61_000]),
    // 7. The first datagram lost: nothing at all until its retransmission.
    TCPCase(id: 7, what: "first lost", emit: [0, 10_000, 20_000, 30_000],
            arrivals: [nil, 11_000, 21_000, 31_000], delivered: [41_000, 41_000, 41_000, 41_000]),
]

@Test(arguments: tcpCases)
func tcpDelivery(_ c: TCPCase) {
    let d = tcpModel.deliver(emit: c.emit, arrivals: c.arrivals)
    #expect(d == c.delivered, "\(d)")
    // Every case: the count is conserved, nothing is lost, the stream
    // delivers in order, no datagram comes sooner than over UDP, and after
    // a loss nothing is delivered before the retransmission.
    #expect(d.count == c.emit.count)
    #expect(zip(d, d.dropFirst()).allSatisfy { $0 <= $1 }, "out of order: \(d)")
    for (i, a) in c.arrivals.enumerated() {
        if let a { #expect(d[i] >= a, "datagram \(i) sooner than its arrival") }
        if a == nil { #expect(d[i...].allSatisfy { $0 >= d[i] }, "a datagram after lost \(i) passed it") }
    }
}

struct RTTCase: Sendable, CustomTestStringConvertible {
    let id: Int
    let what: String
    let oneWayUs: [Double]
    let rttUs: Double
    let rtoUs: Double
    var testDescription: String { "\(id): \(what)" }
}

/// The round trip and RTO a link implies (RFC 6298's estimators at rest).
let rttCases: [RTTCase] = [
    // 1. A steady 1 ms link: SRTT 2 ms, RTTVAR 0, RTO at its 200 ms floor.
    RTTCase(id: 1, what: "steady", oneWayUs: [1_000, 1_000, 1_000, 1_000], rttUs: 2_000, rtoUs: 200_000),
    // 2. 10 or 50 ms one way: mean 30, mean deviation 20 -> SRTT 60 ms,
    //    RTTVAR 40 ms, RTO 60 + 160 = 220 ms, above the floor.
    RTTCase(id: 2, what: "variable", oneWayUs: [10_000, 50_000, 10_000, 50_000], rttUs: 60_000, rtoUs: 220_000),
]

@Test(arguments: rttCases)
func tcpRoundTripFromTheLink(_ c: RTTCase) {
    let emit = c.oneWayUs.indices.map { Double($0) * 10_000 }
    let arrivals: [Double?] = zip(emit, c.oneWayUs).map { $0 + $1 } + [nil]
    let m = TCPHeadOfLine(emit: emit + [1e6], arrivals: arrivals)
    #expect(abs(m.rttUs - c.rttUs) < 1e-6, "rtt \(m.rttUs)")
    #expect(abs(m.rtoUs - c.rtoUs) < 1e-6, "rto \(m.rtoUs)")
}

/// A scenario over TCP: S3 (1.6% bursty loss) loses nothing, keeps every
/// row and its order; S1 (no loss) scores exactly as over UDP.
@Test func scenarioOverTCP() {
    let udp = LabRun.generate(scenario: .s3, seed: 1, durationS: 10)
    let tcp = udp.overTCP()

    #expect(udp.records.contains { $0.arriveUs == nil }, "S3 seed 1 should lose some datagrams")
    #expect(tcp.records.count == udp.records.count)
    #expect(tcp.records.allSatisfy { $0.arriveUs != nil })
    let a = tcp.records.map { $0.arriveUs! }
    #expect(zip(a, a.dropFirst()).allSatisfy { $0 <= $1 })
    for (u, t) in zip(udp.records, tcp.records) {
        #expect(u.sendUs == t.sendUs && u.kind == t.kind && u.dx == t.dx && u.dy == t.dy)
        if let ua = u.arriveUs { #expect(t.arriveUs! + 1 >= ua) }
    }
    let s1udp = Lab.simulate(scenarios: [.s1], policies: [.default], seeds: 1, displayHz: 120, durationS: 10)
    let s1tcp = Lab.simulate(scenarios: [.s1], policies: [.default], seeds: 1, displayHz: 120, durationS: 10, transport: .tcp)
    #expect(s1udp[0].scores == s1tcp[0].scores)
}
