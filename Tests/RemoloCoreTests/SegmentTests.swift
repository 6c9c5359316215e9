import RemoloPlayoutCore
import Testing
import RemoloTestSupport

/// Segment queue: where each packet's motion lands on the receiver's clock.
@Suite struct SegmentTests {
    struct Pkt { let rx: UInt64; let tx: UInt64 }
    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let packets: [(rx: UInt64, tx: UInt64)]
        let result: playout_push_result
        /// Expected start of the last segment; nil = the slot tx + offset + delay.
        let start: UInt64?
        let dur: UInt32
        var testDescription: String { "\(id): \(name)" }
    }

    static let cases: [Case] = [
        Case(id: 1, name: "first packet: slot = tx + offset + delay, longest segment",
             packets: [(1_000_000, 0)], result: PLAYOUT_PUSH_ON_TIME, start: 1_011_880, dur: 50_000),
        Case(id: 2, name: "120 Hz: spread over the 8.3 ms since the previous packet",
             packets: [(1_000_000, 0), (1_009_000, 8_333)], result: PLAYOUT_PUSH_ON_TIME, start: nil, dur: 8_333),
        Case(id: 3, name: "80 ms since the previous packet: capped at 50 ms",
             packets: [(1_000_000, 0), (1_080_500, 80_000)], result: PLAYOUT_PUSH_ON_TIME, start: nil, dur: 50_000),
        Case(id: 4, name: "duplicate sender time: the 1 ms minimum",
             packets: [(1_000_000, 0), (1_001_000, 0)], result: PLAYOUT_PUSH_ON_TIME, start: nil, dur: 1_000),
        Case(id: 5, name: "sender time backwards: the 1 ms minimum",
             packets: [(1_000_000, 50_000), (1_001_000, 40_000)], result: PLAYOUT_PUSH_ON_TIME,
             start: nil, dur: 1_000),
        // The delay grows with the packet's own lateness first, so a packet
        // is late only past the 60 ms clamp or beyond the window's p95.
        Case(id: 6, name: "70 ms late after 30 ms: replayed from its arrival over 16 ms",
             packets: [(1_000_000, 0), (1_100_000, 30_000)], result: PLAYOUT_PUSH_LATE,
             start: 1_100_000, dur: 16_000),
        Case(id: 7, name: "late after a 2 ms interval: after what is queued, over 4 ms",
             packets: [(1_000_000, 0), (1_100_000, 30_000), (1_101_000, 32_000)], result: PLAYOUT_PUSH_LATE,
             start: 1_116_000, dur: 4_000),
        Case(id: 8, name: "late after 10 ms: its own pace",
             packets: [(1_000_000, 0), (1_100_000, 30_000), (1_150_000, 40_000)], result: PLAYOUT_PUSH_LATE,
             start: 1_150_000, dur: 10_000),
        Case(id: 9, name: "just on time: lateness equal to the delay is not late",
             packets: [(1_000_000, 0), (1_018_880, 8_000)], result: PLAYOUT_PUSH_ON_TIME, start: nil, dur: 8_000),
    ]

    @Test(arguments: cases)
    func table(_ c: Case) {
        let p = CorePlayout()
        var r: Int32 = -1
        for (rx, tx) in c.packets { r = p.push(rx: rx, tx: tx, a: 256, b: -256) }
        #expect(r == Int32(c.result.rawValue), "case \(c.id): result")
        let last = p.segment(p.queued - 1)
        let tx = c.packets.last!.tx
        let slot = tx &+ UInt64(bitPattern: p.offset) &+ UInt64(p.delay)
        #expect(last.start_us == (c.start ?? slot), "case \(c.id): start")
        #expect(last.dur_us == c.dur, "case \(c.id): duration")
        #expect(last.total.0 == 256 && last.total.1 == -256, "case \(c.id): motion kept")
    }

    /// Every on-time segment starts at tx + offset + delay, over random
    /// 120 Hz traffic with jitter.
    @Test func slotsFollowTheFormula() {
        let p = CorePlayout()
        var rng = SplitMix64(seed: 7)
        for k in 0..<5_000 {
            let tx = UInt64(k) * 8_333
            let rx = 5_000_000 + tx + rng.next() % 15_000
            let before = p.queued
            let r = p.push(rx: rx, tx: tx, a: 100)
            if r == Int32(PLAYOUT_PUSH_ON_TIME.rawValue) {
                let s = p.segment(before)
                #expect(s.start_us == tx &+ UInt64(bitPattern: p.offset) &+ UInt64(p.delay))
                #expect(s.start_us >= rx, "an on-time slot is never in the past")
            }
            _ = p.tick(rx)
        }
    }

    /// A full ring merges motion instead of losing it.
    @Test func overflowMerges() {
        let p = CorePlayout()
        var sum: Int64 = 0
        for k in 0..<300 {
            // All sent within 300 us, so nothing is due yet when pushed.
            p.push(rx: 1_000_000, tx: UInt64(k), a: Int32(k), b: 1)
            sum += Int64(k)
        }
        #expect(p.queued == REMOLO_SEGQ_CAP)
        #expect(p.p.pointee.stats.merged == UInt64(300 - Int(REMOLO_SEGQ_CAP)))
        var got: Int64 = 0, gotY: Int64 = 0
        var t: UInt64 = 1_000_000
        for _ in 0..<200 {
            t += tickUs
            let o = p.tick(t)
            got += Int64(o.dx); gotY += Int64(o.dy)
        }
        #expect(p.queued == 0)
        #expect(got * 256 + p.p.pointee.acc.0 == sum)
        #expect(gotY * 256 + p.p.pointee.acc.1 == 300)
    }

    /// A full ring of scroll segments cannot take motion: it is applied at
    /// the next tick (counted), never lost.
    @Test func overflowOfTheOtherKindIsForced() {
        let p = CorePlayout()
        for k in 0..<Int(REMOLO_SEGQ_CAP) {
            p.push(rx: 1_000_000, tx: UInt64(k), kind: PLAYOUT_KIND_SCROLL, a: 120 * 256)
        }
        let r = p.push(rx: 1_000_000, tx: 200, a: 5 * 256)
        #expect(r == Int32(PLAYOUT_PUSH_FORCED.rawValue))
        let o = p.tick(1_000_000)
        #expect(o.dx == 5)
        #expect(p.p.pointee.stats.forced == 1)
    }
}
