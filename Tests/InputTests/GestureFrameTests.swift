@testable import RemoloInput
import Testing

/// The sender's gesture states (GestureFrames.swift): absolute since the
/// gesture began, one a frame while it changes and one every 100 ms while
/// it is still, the last flagged and followed by its end, new ids in turn,
/// clamped to the wire's bounds; and the Framer carries them in its frames.
@Suite struct GestureFrameTests {
    static let f: UInt64 = 8_333

    /// 1. A swipe: states sum the updates; one a frame while moving; none
    ///    while still until 100 ms have passed; then the last and its end.
    @Test func swipeStatesRenewAndEnd() {
        var g = GestureFramer()
        g.begin(kind: .swipe, fingers: 3)
        g.update(dxMm: 1.5, dyMm: -0.25, scale: 1, angle: 0)
        var out = g.frame(atUs: 1 * Self.f)
        #expect(out.states == [GestureState(id: 0, kind: .swipe, fingers: 3, xUm: 1_500, yUm: -250)] && out.ends.isEmpty)
        g.update(dxMm: 1, dyMm: 0, scale: 1, angle: 0)
        out = g.frame(atUs: 2 * Self.f)
        #expect(out.states.map(\.xUm) == [2_500])
        // Still: nothing until 100 ms after the last state.
        var t = 3 * Self.f
        while t < 2 * Self.f + GestureFramer.renewUs {
            #expect(g.frame(atUs: t).states.isEmpty, "at \(t)")
            t += Self.f
        }
        #expect(g.frame(atUs: t).states.map(\.xUm) == [2_500], "renewed at \(t)")
        g.end()
        out = g.frame(atUs: t + Self.f)
        #expect(out.states == [GestureState(id: 0, kind: .swipe, fingers: 3, xUm: 2_500, yUm: -250, isLast: true)])
        #expect(out.ends == [GestureEnd(id: 0, timeUs: t + Self.f)])
        #expect(g.frame(atUs: t + 2 * Self.f) == ([], []), "nothing after the end")
    }

    /// 2. A pinch keeps its scale and angle in the wire's units; a swipe's
    ///    are 1 and 0 whatever it is given.
    @Test func pinchUnitsAndSwipeNeutrals() {
        var g = GestureFramer()
        g.begin(kind: .pinch, fingers: 2)
        g.update(dxMm: 0, dyMm: 0, scale: 1.5, angle: -.pi / 4)
        let s = g.frame(atUs: Self.f).states[0]
        #expect(s.scaleQ16 == 98_304 && s.angleUrad == -785_398 && s.kind == .pinch && s.id == 0)
        g.begin(kind: .swipe, fingers: 4)
        g.update(dxMm: 1, dyMm: 0, scale: 2, angle: 1)
        let out = g.frame(atUs: 2 * Self.f)
        #expect(out.states.count == 2 && out.states[0].isLast && out.states[0].id == 0 && out.ends.map(\.id) == [0])
        #expect(out.states[1].id == 1 && out.states[1].scaleQ16 == 65_536 && out.states[1].angleUrad == 0)
    }

    /// 3. Past the wire's bounds: clamped, never refused by the receiver.
    @Test func boundsAreKept() {
        var g = GestureFramer()
        g.begin(kind: .pinch, fingers: 2)
        g.update(dxMm: 900, dyMm: -900, scale: 100, angle: 30)
        let s = g.frame(atUs: Self.f).states[0]
        #expect(s.xUm == 500_000 && s.yUm == -500_000 && s.scaleQ16 == 4_194_304 && s.angleUrad == 25_132_741)
        g.update(dxMm: 0, dyMm: 0, scale: 0, angle: .nan)
        #expect(g.frame(atUs: 2 * Self.f).states.isEmpty, "a NaN update is dropped whole")
        g.update(dxMm: 0, dyMm: 0, scale: 0, angle: 0)
        #expect(g.frame(atUs: 3 * Self.f).states[0].scaleQ16 == 1_024)
    }

    /// 4. Ids go up by one a gesture and wrap at 256.
    @Test func idsWrap() {
        var g = GestureFramer()
        var ids: [UInt8] = []
        for i in 0..<258 {
            g.begin(kind: .swipe, fingers: 3)
            g.end()
            ids += g.frame(atUs: UInt64(i + 1) * Self.f).ends.map(\.id)
        }
        #expect(ids.count == 258 && ids[255] == 255 && ids[256] == 0 && ids[257] == 1)
    }

    /// 5. Through InputCore and the Framer: a three-finger swipe from the
    ///    touchpad rules comes out as frames with states, the last flagged,
    ///    and no pointer motion; a state counts as the frame's datagram for
    ///    the heartbeat.
    @Test func framerCarriesTheRulesGestures() throws {
        var framer = Framer(clock: try FrameClock(startUs: 0))
        framer.isSessionOpen = true
        framer.gestures.begin(kind: .swipe, fingers: 3)
        framer.gestures.update(dxMm: 2, dyMm: 0, scale: 1, angle: 0)
        let a = framer.endFrame()
        #expect(a.gestures.count == 1 && !a.isHeartbeat && a.motion.isZero && !a.isEmpty)
        framer.gestures.end()
        let b = framer.endFrame()
        #expect(b.gestures.map(\.isLast) == [true] && b.gestureEnds.count == 1 && !b.isHeartbeat)
        _ = framer.releaseAll(atUs: b.timeUs)
        #expect(framer.endFrame().gestures.isEmpty)
    }

    /// 6. releaseAll (the device went away) ends an open gesture at the next frame.
    @Test func releaseAllEndsTheGesture() throws {
        var framer = Framer(clock: try FrameClock(startUs: 0))
        framer.gestures.begin(kind: .pinch, fingers: 2)
        _ = framer.endFrame()
        _ = framer.releaseAll(atUs: 10_000)
        let f = framer.endFrame()
        #expect(f.gestures.map(\.isLast) == [true] && f.gestureEnds.map(\.id) == [0])
    }
}
