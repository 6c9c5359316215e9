import Foundation
import Testing
@testable import RemoloPlayout
@testable import RemoloLab
import RemoloTrace
@testable import RemoloSession
import RemoloSystem

@Test(arguments: [
    (1, Int32(0), "0"), (2, 256, "1"), (3, -128, "-0.5"), (4, 1, "0.00390625"),
    (5, 385, "1.50390625"), (6, -257, "-1.00390625"), (7, 255, "0.99609375"),
])
func q8Decimals(_ c: (Int, Int32, String)) throws {
    #expect(Trace.formatQ8(c.1) == c.2, "case \(c.0)")
    // And back: round(v * 256).
    let t = try Trace.parse("send_us,arrive_us,kind,dx,dy\n1,2,move,\(c.2),0\n")
    #expect(t.records[0].dx == c.1, "case \(c.0)")
}

@Test func generatedTraceRoundTrips() throws {
    for sc in [Scenario.s3, .s7] {
        let t = LabRun.generate(scenario: sc, seed: 4, durationS: 8)
        let back = try Trace.parse(t.csv())
        #expect(back.records == t.records)
        #expect(back.clock == t.clock)
        #expect(back.frameUs == t.frameUs)
    }
}

@Test func wireValuesAndKinds() throws {
    let text = """
    # a hand-written trace
    send_us,arrive_us,kind,dx,dy
    1000,5000,move,1.5,-0.25
    2000,,scroll,0,3.7
    3000,7000,button,1,1
    4000,8000,heartbeat,,
    """
    let t = try Trace.parse(text)
    #expect(t.records.count == 4)
    #expect(t.records[0] == TraceRecord(sendUs: 1000, arriveUs: 5000, kind: .motion, dx: 384, dy: -64))
    #expect(t.records[1].arriveUs == nil)
    #expect(t.records[1].dy == 947)   // round(3.7 * 256) = round(947.2)
    #expect(t.records[1].packet.a == 947 && t.records[1].packet.b == 0)  // core scroll: (vertical, horizontal)
    #expect(t.records[2].packet.code == 0x110 && t.records[2].packet.down)
    #expect(t.clock == nil)
}

struct BadTrace: Sendable {
    let id: Int
    let text: String
    let line: Int
    let column: Int
}

@Test(arguments: [
    BadTrace(id: 1, text: "1,2,move,0,0\n", line: 1, column: 0),                       // no header
    BadTrace(id: 2, text: "send_us,arrive_us,kind,dx,dy\n1,2,move,abc,0\n", line: 2, column: 4),
    BadTrace(id: 3, text: "# c\nsend_us,arrive_us,kind,dx,dy\n\n1,2,walk,0,0\n", line: 4, column: 3),
    BadTrace(id: 4, text: "send_us,arrive_us,kind,dx,dy\n1,2,move\n", line: 2, column: 4),
    BadTrace(id: 5, text: "send_us,arrive_us,kind,dx,dy\n-5,2,move,0,0\n", line: 2, column: 1),
    BadTrace(id: 6, text: "send_us,arrive_us,kind,dx,dy\n1,soon,move,0,0\n", line: 2, column: 2),
    BadTrace(id: 7, text: "send_us,arrive_us,kind,dx,dy\n1,2,button,9,1\n", line: 2, column: 4),
])
func malformedTraces(_ c: BadTrace) {
    do {
        _ = try Trace.parse(c.text)
        Issue.record("case \(c.id) parsed")
    } catch let e as Trace.ParseError {
        #expect(e.line == c.line && e.column == c.column, "case \(c.id): \(e)")
        #expect(e.description.hasPrefix("line \(c.line)"), "case \(c.id)")
    } catch {
        Issue.record("case \(c.id): \(error)")
    }
}

@Test func clockFromLowerEnvelope() {
    // Transit = 1.2 s offset + 40 ppm drift + a jitter >= 0 that is 0 on a
    // tenth of the packets: the envelope finds the line.
    var rng = LabRandom(seed: 9)
    var recs: [TraceRecord] = []
    let s0: UInt64 = 3_000_000_000
    for i in 0..<2000 {
        let s = s0 + UInt64(i) * 8333
        let jitter = i % 10 == 0 ? 0 : rng.uniform(0, 4000)
        let a = Double(s) + 1_200_000 + 40e-6 * Double(s - s0) + jitter
        recs.append(TraceRecord(sendUs: s, arriveUs: UInt64(a.rounded()), kind: .motion, dx: 256))
    }
    let c = TraceClock.estimate(recs)
    let e = c.emissionTimes(recs)
    for i in stride(from: 0, to: 2000, by: 97) {
        let truth = Double(recs[i].sendUs) + 1_200_000 + 40e-6 * Double(recs[i].sendUs - s0)
        #expect(abs(e[i] - truth) < 2, "row \(i): \(e[i] - truth)")
    }
    #expect(abs(c.segments[0].ppm - 40) < 1)
    #expect(!c.isTruth && c.dminUs == 0)
}

/// `Trace.gapsLost`: a movement datagram sent two or more frames after the
/// previous movement datagram is split into one frame's share each, all but
/// the last lost; nothing else moves, and the motion sent is the same.
@Test func gapsLostSplitsFoldedMotion() {
    func mv(_ s: UInt64, _ dx: Int32) -> TraceRecord { TraceRecord(sendUs: s, arriveUs: s + 3000, kind: .motion, dx: dx, dy: -dx) }
    let recs = [
        mv(0, 256), mv(10_000, 256), mv(20_000, 256),
        mv(60_000, 1025),                                   // 1. 40 ms: 4 frames, 3 of them lost
        mv(75_000, 256),                                    // 2. 15 ms: one frame, late
        TraceRecord(sendUs: 175_000, arriveUs: 178_000, kind: .heartbeat),
        mv(375_000, 256),                                   // 3. after a heartbeat: a pause, not a loss
        mv(2_375_000, 256),                                 // 4. 2 s: a sender that went away
    ]
    let t = Trace(records: recs, frameUs: 10_000).gapsLost
    #expect(t.records.count == recs.count + 3)
    let lost = t.records.filter { $0.arriveUs == nil }
    #expect(lost.map(\.sendUs) == [30_000, 40_000, 50_000])
    #expect(lost.allSatisfy { $0.dx == 256 && $0.dy == -256 && $0.kind == .motion })
    let kept = t.records.first { $0.sendUs == 60_000 }!
    #expect(kept.dx == 257 && kept.dy == -257 && kept.arriveUs == 63_000)
    let sentAfter: Int = t.records.reduce(0) { $0 + Int($1.dx) }
    let sentBefore: Int = recs.reduce(0) { $0 + Int($1.dx) }
    #expect(sentAfter == sentBefore)
    // What arrived arrives as it did; only the split datagram's motion shrank.
    let arrived = t.records.filter { $0.arriveUs != nil }
    #expect(arrived.map(\.sendUs) == recs.map(\.sendUs) && arrived.map(\.arriveUs) == recs.map(\.arriveUs))
    #expect(zip(arrived, recs).filter { $0.dx != $1.dx }.map { $0.0.sendUs } == [60_000])
}
