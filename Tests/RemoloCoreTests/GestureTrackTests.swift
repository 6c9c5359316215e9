import RemoloPlayoutCore
import Testing

/// The gesture track (gesture.c) inside the playout, in virtual time: a
/// gesture's absolute states played on the session's clock and spread over
/// their frames like motion, fingers down from its first state to one tick
/// after its last, an end that never leaves a finger down (the last state,
/// the control channel's end, a new gesture, the receiver's timeout, a
/// flush), and an ended gesture that stays ended.
@Suite struct GestureTrackTests {
    static let t0: UInt64 = 1_000_000
    static let frame: UInt64 = 8_333

    /// One thing arriving at rx.
    enum Step: Sendable {
        /// A state: id, type, fingers, offset (um), scale (Q16), angle (urad), last.
        case state(rx: UInt64, tx: UInt64, id: UInt8, type: UInt8 = 1, fingers: UInt8 = 3, x: Int32, y: Int32 = 0,
                   scale: Int32 = 65536, angle: Int32 = 0, last: Bool = false)
        /// The control channel's gesture end.
        case end(rx: UInt64, tx: UInt64, id: UInt8)
        /// Motion, to check the two tracks keep out of each other's way.
        case motion(rx: UInt64, tx: UInt64, dx: Int32)
        /// The session ends (playout_flush) at rx.
        case flush(rx: UInt64)

        var rx: UInt64 {
            switch self {
            case let .state(rx, _, _, _, _, _, _, _, _, _), let .end(rx, _, _), let .motion(rx, _, _),
                 let .flush(rx): rx
            }
        }
    }

    /// What one tick showed.
    struct Shown: Equatable, CustomStringConvertible {
        var fingers: UInt8, x: Int32, y: Int32, scale: Int32, angle: Int32
        var description: String { "\(fingers)f(\(x),\(y) s\(scale) a\(angle))" }
    }

    struct Run {
        var shown: [Shown] = []     // every tick
        var changed: [Int] = []     // ticks whose touch_changed was set
        var idle: [Bool] = []
        var stats = playout_stats()
        var timedOut: [Int] = []
        var dx: Int64 = 0
        var at: [UInt64] = []       // each tick's time
        func tick(at time: UInt64) -> Int { at.firstIndex { $0 >= time }! }
    }

    static func run(_ steps: [Step], ticks: Int = 300) -> Run {
        var cfg = seedConfig()
        playout_config_default(&cfg)
        let p = CorePlayout(cfg)
        var pending = steps[...]
        var t = steps.first!.rx
        var r = Run()
        for i in 0..<ticks {
            while let s = pending.first, s.rx <= t {
                pending = pending.dropFirst()
                switch s {
                case let .state(rx, tx, id, type, fingers, x, y, scale, angle, last):
                    var pkt = playout_pkt()
                    pkt.tx_us = tx; pkt.kind = UInt8(PLAYOUT_KIND_GESTURE.rawValue); pkt.a = x; pkt.b = y
                    pkt.g = playout_gesture(scale_q16: scale, angle_urad: angle, id: id, type: type, fingers: fingers,
                                            flags: last ? UInt8(PLAYOUT_GESTURE_FLAG_LAST) : 0)
                    playout_push(p.p, rx, &pkt)
                case let .end(rx, tx, id):
                    var pkt = playout_pkt()
                    pkt.tx_us = tx; pkt.kind = UInt8(PLAYOUT_KIND_GESTURE.rawValue)
                    pkt.g.id = id; pkt.g.type = UInt8(PLAYOUT_GESTURE_END.rawValue)
                    playout_push(p.p, rx, &pkt)
                case let .motion(rx, tx, dx): p.push(rx: rx, tx: tx, a: dx)
                case let .flush(rx): playout_flush(p.p, rx)
                }
            }
            let o = p.tick(t)
            r.shown.append(Shown(fingers: o.touch.fingers, x: o.touch.x_um, y: o.touch.y_um,
                                 scale: o.touch.scale_q16, angle: o.touch.angle_urad))
            if o.touch_changed { r.changed.append(i) }
            if o.touch_timed_out { r.timedOut.append(i) }
            r.idle.append(o.idle)
            r.at.append(t)
            r.dx += Int64(o.dx)
            t += tickUs
        }
        r.stats = p.p.pointee.stats
        return r
    }

    /// A swipe of n states, one a frame, x growing by step um each; the
    /// last flagged last (or not, when lastFlag is false).
    static func swipe(id: UInt8 = 7, fingers: UInt8 = 3, n: Int = 12, step: Int32 = 1_000, from: UInt64 = t0,
                      lastFlag: Bool = true, skip: Set<Int> = []) -> [Step] {
        (1...n).filter { !skip.contains($0) }.map { i in
            let tx = from + UInt64(i) * frame
            return .state(rx: tx + 3_000, tx: tx, id: id, fingers: fingers, x: Int32(i) * step,
                          last: lastFlag && i == n)
        }
    }

    static func downTicks(_ r: Run) -> [Int] { r.shown.indices.filter { r.shown[$0].fingers != 0 } }

    /// 1. A three-finger swipe: fingers down from the first state's slot,
    ///    x never goes back, every state's offset is reached (the last
    ///    exactly), and the fingers lift one tick after it shows.
    @Test func swipePlaysSmoothlyAndLiftsAfterItsLastState() {
        let r = Self.run(Self.swipe())
        let down = Self.downTicks(r)
        #expect(!down.isEmpty)
        #expect(down == Array(down.first!...down.last!), "fingers stay down without a gap")
        let xs = down.map { r.shown[$0].x }
        #expect(zip(xs, xs.dropFirst()).allSatisfy { $0 <= $1 }, "x never goes back: \(xs)")
        #expect(xs.last == 12_000)
        #expect(down.allSatisfy { r.shown[$0].fingers == 3 && r.shown[$0].scale == 65536 })
        // Spread over frames: more distinct positions than states, and no
        // step larger than one state's (a frame's) motion.
        #expect(Set(xs).count > 12)
        #expect(zip(xs, xs.dropFirst()).allSatisfy { $1 - $0 <= 1_000 }, "\(xs)")
        // The lift: the tick after 12000 first shows.
        let first12 = down.first { r.shown[$0].x == 12_000 }!
        #expect(down.last == first12, "the final position shows for one tick, then the lift")
        #expect(r.shown[first12 + 1].fingers == 0)
        #expect(r.stats.gestures == 1 && r.stats.gesture_states == 12 && r.stats.gesture_refused == 0)
        // Idle only after the lift.
        #expect(!r.idle[down.last!])
    }

    /// 2. The last state lost: the control channel's end lifts the fingers
    ///    where the gesture's last queued state ends.
    @Test func controlChannelEndLiftsWhenTheLastStateIsLost() {
        let end = Self.t0 + 12 * Self.frame
        let steps = Self.swipe(lastFlag: false, skip: [12]) + [.end(rx: end + 5_000, tx: end, id: 7)]
        let r = Self.run(steps)
        let down = Self.downTicks(r)
        #expect(r.shown[down.last!].x == 11_000)
        #expect(r.shown[down.last! + 1].fingers == 0)
        #expect(r.stats.gestures == 1)
    }

    /// 3. A state lost mid-gesture: the next one carries the whole offset
    ///    (absolute states), so the gesture still ends where it was sent.
    @Test func aLostStateCostsAStepNotADrift() {
        let r = Self.run(Self.swipe(skip: [4, 5, 6]))
        let xs = Self.downTicks(r).map { r.shown[$0].x }
        #expect(xs.last == 12_000)
        #expect(zip(xs, xs.dropFirst()).allSatisfy { $0 <= $1 })
    }

    /// 4. A new id while one is open: the old gesture ends and the new one
    ///    begins from rest in the same frame (four fingers now).
    @Test func aNewIdEndsTheOpenGestureAndBeginsFromRest() {
        let second = Self.t0 + 6 * Self.frame
        let steps = Self.swipe(n: 5, lastFlag: false) +
            Self.swipe(id: 8, fingers: 4, n: 5, step: -500, from: second)
        let r = Self.run(steps)
        let four = Self.downTicks(r).filter { r.shown[$0].fingers == 4 }
        #expect(!four.isEmpty)
        let firstFour = four.first!
        #expect(r.shown[firstFour - 1].fingers == 3, "no tick without fingers in between")
        #expect(r.shown[firstFour].x <= 0 && r.shown[firstFour].x > -500, "begins from rest: \(r.shown[firstFour])")
        #expect(r.shown[four.last!].x == -2_500)
        #expect(r.shown[four.last! + 1].fingers == 0)
        #expect(r.stats.gestures == 2)
    }

    /// 5. The control channel's end overtook the states (TCP passes UDP):
    ///    the gesture is over, its states are refused, nothing shows.
    @Test func statesAfterTheirEndAreRefused() {
        let steps: [Step] = [.end(rx: Self.t0, tx: Self.t0 + 5 * Self.frame, id: 7)] +
            Self.swipe(n: 5, from: Self.t0)
        let r = Self.run(steps)
        #expect(Self.downTicks(r).isEmpty)
        #expect(r.stats.gesture_refused == 5 && r.stats.gestures == 0)
    }

    /// 5b. The end overtook only the last state (sent together, the end
    ///     over TCP): while the end waits, the last state takes its place,
    ///     so the gesture still ends where it was sent, then lifts.
    @Test func anEndThatOvertookTheLastStateKeepsIt() {
        let lastTx = Self.t0 + 12 * Self.frame
        var steps = Self.swipe()
        let lastState = steps.removeLast()
        steps.append(.end(rx: lastTx + 2_000, tx: lastTx, id: 7))
        if case let .state(_, tx, id, type, fingers, x, y, scale, angle, _) = lastState {
            steps.append(.state(rx: lastTx + 4_000, tx: tx, id: id, type: type, fingers: fingers, x: x, y: y,
                                scale: scale, angle: angle, last: true))
        }
        let r = Self.run(steps)
        let down = Self.downTicks(r)
        #expect(r.shown[down.last!].x == 12_000, "ends at the last state: \(r.shown[down.last!])")
        #expect(r.shown[down.last! + 1].fingers == 0)
        #expect(r.stats.gesture_refused == 0 && r.stats.gestures == 1)
    }

    /// 6. A sender that never ends its gesture: the receiver lifts it
    ///    REMOLO_GESTURE_STALE_US after its last state arrived, not sooner,
    ///    and refuses its later states.
    @Test func anUnrenewedGestureTimesOut() throws {
        let stale = UInt64(REMOLO_GESTURE_STALE_US)
        let lastRx = Self.t0 + 5 * Self.frame + 3_000
        let late = lastRx + stale + 100_000
        let steps = Self.swipe(n: 5, lastFlag: false) +
            [.state(rx: late, tx: late - 3_000, id: 7, x: 9_000)]
        let r = Self.run(steps, ticks: 800)
        let down = Self.downTicks(r)
        let liftTick = down.last! + 1
        let liftAt = r.at[liftTick]
        #expect(liftAt >= lastRx + stale && liftAt < lastRx + stale + 2 * tickUs, "lifted at \(liftAt - lastRx) us")
        #expect(r.timedOut.count == 1)
        #expect(r.stats.gesture_timeouts == 1 && r.stats.gesture_refused == 1)
        #expect(r.shown[liftTick...].allSatisfy { $0.fingers == 0 })
    }

    /// 7. The session ends mid-gesture: the flush shows what was queued and
    ///    lifts in the same tick.
    @Test func aFlushLiftsAtOnce() {
        let cut = Self.t0 + 4 * Self.frame
        let r = Self.run(Self.swipe(lastFlag: false).filter { $0.rx < cut } + [.flush(rx: cut)])
        let flushTick = r.tick(at: cut)
        #expect(r.shown[flushTick].fingers == 0)
        #expect(r.shown[flushTick...].allSatisfy { $0.fingers == 0 })
        #expect(r.changed.contains(flushTick))
    }

    /// 8. A pinch: scale and angle move between states as the offset does.
    @Test func pinchScaleAndAngleAreSpread() {
        let steps: [Step] = (1...10).map { i in
            let tx = Self.t0 + UInt64(i) * Self.frame
            return .state(rx: tx + 2_000, tx: tx, id: 1, type: 2, fingers: 2, x: 0,
                          scale: 65536 + Int32(i) * 6553, angle: Int32(i) * 10_000, last: i == 10)
        }
        let r = Self.run(steps)
        let down = Self.downTicks(r)
        let scales = down.map { r.shown[$0].scale }
        #expect(zip(scales, scales.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(scales.last == Int32(65536 + 65530))
        #expect(r.shown[down.last!].angle == 100_000)
        #expect(Set(scales).count > 10, "spread between states")
        #expect(down.allSatisfy { r.shown[$0].fingers == 2 })
    }

    /// 9. More states at once than the ring holds (a held clump released):
    ///    they join the newest, the gesture still ends at its last state
    ///    and lifts.
    @Test func aFullRingJoinsTheNewestState() {
        let n = Int(REMOLO_GESTQ_CAP) * 2
        let clump = Self.t0 + UInt64(n) * Self.frame + 5_000
        let steps: [Step] = (1...n).map { i in
            let tx = Self.t0 + UInt64(i) * Self.frame
            return .state(rx: i < 3 ? tx + 3_000 : clump, tx: tx, id: 3, x: Int32(i) * 100, last: i == n)
        }
        let r = Self.run(steps, ticks: 600)
        let down = Self.downTicks(r)
        #expect(r.shown[down.last!].x == Int32(n) * 100)
        #expect(r.shown[down.last! + 1].fingers == 0)
        #expect(r.stats.gesture_refused == 0)
    }

    /// 10. Motion and a gesture in one session keep to their own tracks:
    ///     the motion's pixels all come out, the gesture ends and lifts.
    @Test func motionAndGestureKeepTheirOwnTracks() {
        let motion: [Step] = (1...6).map { i in
            let tx = Self.t0 + UInt64(i) * Self.frame
            return .motion(rx: tx + 3_000, tx: tx, dx: 256 * 10)
        }
        let later = Self.t0 + 8 * Self.frame
        let steps = (motion + Self.swipe(n: 6, from: later)).sorted { $0.rx < $1.rx }
        let r = Self.run(steps)
        #expect(r.dx == 60)
        let down = Self.downTicks(r)
        #expect(r.shown[down.last!].x == 6_000 && r.shown[down.last! + 1].fingers == 0)
        #expect(r.idle.last == true)
    }
}
