import Testing
import RemoloTestSupport
import RemoloInput
import RemoloTypes

@Suite("Frames: clock, conservation, heartbeats (design note, parts 2-3)")
struct FrameTests {
    struct RateCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var rateHz: Int
        var valid: Bool
        var testDescription: String { "\(id). \(rateHz) Hz" }
    }

    @Test(arguments: [
        RateCase(id: 1, rateHz: 59, valid: false),
        RateCase(id: 2, rateHz: 60, valid: true),
        RateCase(id: 3, rateHz: 120, valid: true),
        RateCase(id: 4, rateHz: 144, valid: true),
        RateCase(id: 5, rateHz: 1000, valid: true),
        RateCase(id: 6, rateHz: 1001, valid: false),
        RateCase(id: 7, rateHz: 0, valid: false),
    ])
    func frameRateIsValidated(_ c: RateCase) {
        if c.valid {
            #expect(throws: Never.self) { _ = try FrameClock(rateHz: c.rateHz, startUs: 0) }
        } else {
            #expect {
                _ = try FrameClock(rateHz: c.rateHz, startUs: 0)
            } throws: { e in
                let m = (e as? InputConfigError)?.message ?? ""
                return m.contains("\(c.rateHz) Hz") && m.contains("60-1000") && m.contains("e.g. 120")
            }
        }
    }

    struct StampCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var rateHz: Int
        var startUs: UInt64
        /// Frame index -> expected time.
        var times: [(UInt64, UInt64)]
        var testDescription: String { "\(id). \(rateHz) Hz from \(startUs)" }
    }

    @Test(arguments: [
        StampCase(id: 1, rateHz: 120, startUs: 0, times: [(1, 8_333), (2, 16_667), (3, 25_000), (12, 100_000), (120, 1_000_000), (121, 1_008_333)]),
        StampCase(id: 2, rateHz: 60, startUs: 5, times: [(1, 16_672), (6, 100_005), (60, 1_000_005)]),
        StampCase(id: 3, rateHz: 144, startUs: 1_000_000, times: [(1, 1_006_944), (144, 2_000_000), (1440, 11_000_000)]),
        StampCase(id: 4, rateHz: 1000, startUs: 7, times: [(1, 1_007), (100, 100_007)]),
    ])
    func framesAreStampedWithTheirOwnTime(_ c: StampCase) throws {
        let clock = try FrameClock(rateHz: c.rateHz, startUs: c.startUs)
        for (i, t) in c.times { #expect(clock.frameTimeUs(i) == t, "frame \(i)") }
        // Ending frames late changes nothing: each frame carries its due time.
        var f = Framer(clock: clock)
        let last = c.times.map(\.0).max() ?? 0
        var got: [UInt64: UInt64] = [:]
        for i in 1...last { got[i] = f.endFrame().timeUs }
        for (i, t) in c.times { #expect(got[i] == t) }
    }

    /// A sample belongs to the first frame at or after its time, even when
    /// it is added before an overdue frame is ended.
    @Test func samplesGoToTheFrameOfTheirTime() throws {
        var f = Framer(clock: try FrameClock(rateHz: 120, startUs: 0))
        f.addMotion(dxPixels: 1, dyPixels: 0, atUs: 8_333)      // frame 1, exactly at its time
        f.addMotion(dxPixels: 2, dyPixels: 0, atUs: 8_334)      // frame 2
        f.addMotion(dxPixels: 4, dyPixels: 0, atUs: 30_000)     // frame 4
        f.addButton(ButtonChange(.left, isDown: true, timeUs: 20_000))   // frame 3
        let frames = (1...4).map { _ in f.endFrame() }
        #expect(frames.map(\.motion.a) == [256, 512, 0, 1024])
        #expect(frames.map(\.buttons.count) == [0, 0, 1, 0])
        #expect(frames[2].buttons.first?.timeUs == 20_000)
    }

    struct ConservationCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var seed: UInt64
        var rateHz: Int
        var samples: Int
        var testDescription: String { "\(id). seed \(seed), \(rateHz) Hz, \(samples) samples" }
    }

    /// Random samples (fractions of a pixel to hundreds of pixels, both
    /// signs, random times, frames ended early and late): the frames add up
    /// to the samples to within one Q8 unit, on every axis.
    @Test(arguments: [
        ConservationCase(id: 1, seed: 1, rateHz: 120, samples: 20_000),
        ConservationCase(id: 2, seed: 2, rateHz: 60, samples: 20_000),
        ConservationCase(id: 3, seed: 3, rateHz: 144, samples: 20_000),
        ConservationCase(id: 4, seed: 4, rateHz: 1000, samples: 20_000),
        ConservationCase(id: 5, seed: 5, rateHz: 120, samples: 100_000),
    ])
    func framesSumToTheSamples(_ c: ConservationCase) throws {
        var rng = SplitMix64(seed: c.seed)
        var f = Framer(clock: try FrameClock(rateHz: c.rateHz, startUs: 1_000_000))
        var want = (mx: 0.0, my: 0.0, sv: 0.0, sh: 0.0)
        var got = (mx: Int64(0), my: Int64(0), sv: Int64(0), sh: Int64(0))
        var t: UInt64 = 1_000_000
        func take(_ fr: Frame) {
            got.mx += Int64(fr.motion.a); got.my += Int64(fr.motion.b)
            got.sv += Int64(fr.scroll.a); got.sh += Int64(fr.scroll.b)
        }
        for _ in 0..<c.samples {
            t += UInt64.random(in: 0...3_000, using: &rng)
            let scale = [0.01, 1, 30, 400][Int.random(in: 0...3, using: &rng)]
            let a = Double.random(in: -scale...scale, using: &rng)
            let b = Double.random(in: -scale...scale, using: &rng)
            if Bool.random(using: &rng) {
                f.addMotion(dxPixels: a, dyPixels: b, atUs: t)
                want.mx += a * 256; want.my += b * 256
            } else {
                f.addScroll(verticalUnits: a, horizontalUnits: b, atUs: t)
                want.sv += a * 256; want.sh += b * 256
            }
            // End the frames that are due, sometimes a little late.
            while f.nextFrameUs + UInt64.random(in: 0...2_000, using: &rng) <= t { take(f.endFrame()) }
        }
        while f.clock.lastUs < t { take(f.endFrame()) }
        #expect(abs(Double(got.mx) - want.mx) < 1, "motion x \(got.mx) vs \(want.mx)")
        #expect(abs(Double(got.my) - want.my) < 1, "motion y \(got.my) vs \(want.my)")
        #expect(abs(Double(got.sv) - want.sv) < 1, "scroll v \(got.sv) vs \(want.sv)")
        #expect(abs(Double(got.sh) - want.sh) < 1, "scroll h \(got.sh) vs \(want.sh)")
    }

    /// The same through the whole core: touchpad samples, accelerated one by
    /// one, summed into frames; the frames add up to the accelerated samples.
    @Test func touchpadMotionIsConserved() throws {
        var rng = SplitMix64(seed: 42)
        let pad = TouchpadConfig(geometry: try TouchpadGeometry(widthMm: 100, heightMm: 60))
        var core = try InputCore(config: InputConfig(touchpad: pad), startUs: 0)
        let accel = PointerAccelerator(curve: try AccelerationCurve())
        var want = (x: 0.0, y: 0.0)
        var got = (x: Int64(0), y: Int64(0))
        var t: UInt64 = 0
        var x = 50.0, y = 30.0
        core.contact(ContactSample(slot: 0, xMm: x, yMm: y, isTouching: true, timeUs: t))
        var moved = 0.0
        for _ in 0..<5_000 {
            let dt = UInt64.random(in: 2_000...12_000, using: &rng)
            t += dt
            let dx = Double.random(in: -1.5...1.5, using: &rng), dy = Double.random(in: -1...1, using: &rng)
            let nx = min(max(x + dx, 5), 95), ny = min(max(y + dy, 5), 50)
            core.contact(ContactSample(slot: 0, xMm: nx, yMm: ny, isTouching: true, timeUs: t))
            let d = accel.accelerate(dxPoints: InputUnits.points(millimetres: nx - x),
                                     dyPoints: InputUnits.points(millimetres: ny - y), intervalUs: dt)
            moved += abs(nx - x) + abs(ny - y)
            // Motion held while a tap was possible is sent, accelerated at
            // its own interval, once the touch has moved 3 mm.
            want.x += d.x * 256; want.y += d.y * 256
            x = nx; y = ny
            while core.nextFrameUs <= t {
                let f = core.endFrame()
                got.x += Int64(f.motion.a); got.y += Int64(f.motion.b)
            }
        }
        #expect(moved > 3)
        core.contact(ContactSample(slot: 0, xMm: x, yMm: y, isTouching: false, timeUs: t + 1))
        while core.nextFrameUs <= t + 20_000 {
            let f = core.endFrame()
            got.x += Int64(f.motion.a); got.y += Int64(f.motion.b)
        }
        #expect(abs(Double(got.x) - want.x) < 1, "\(got.x) vs \(want.x)")
        #expect(abs(Double(got.y) - want.y) < 1, "\(got.y) vs \(want.y)")
    }

    struct HeartbeatCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var rateHz: Int
        var testDescription: String { "\(id). \(rateHz) Hz" }
    }

    /// Still: one heartbeat every 100 ms exactly (when 100 ms is a whole
    /// number of frames), none while moving, the first 100 ms after the
    /// last movement; none with the session closed.
    @Test(arguments: [HeartbeatCase(id: 1, rateHz: 120), HeartbeatCase(id: 2, rateHz: 60),
                      HeartbeatCase(id: 3, rateHz: 1000), HeartbeatCase(id: 4, rateHz: 250)])
    func heartbeatCadence(_ c: HeartbeatCase) throws {
        #expect(Framer.heartbeatIntervalUs == 100_000)
        var f = Framer(clock: try FrameClock(rateHz: c.rateHz, startUs: 0))
        f.isSessionOpen = true
        var beats: [UInt64] = []
        var lastMoving: UInt64 = 0
        // 1 s still, 0.5 s moving, 1 s still.
        while f.nextFrameUs <= 2_500_000 {
            let t = f.nextFrameUs
            let moving = t > 1_000_000 && t <= 1_500_000
            if moving { f.addMotion(dxPixels: 1, dyPixels: 0, atUs: t) }
            let fr = f.endFrame()
            if fr.isHeartbeat { beats.append(fr.timeUs) }
            #expect(!(fr.isHeartbeat && moving), "heartbeat while moving at \(t)")
            #expect(!(fr.isHeartbeat && !fr.motion.isZero))
            if moving { lastMoving = t }
        }
        let first = beats.filter { $0 <= 1_000_000 }
        let second = beats.filter { $0 > 1_500_000 }
        #expect(first.first == f.clock.frameTimeUs(1))
        for (a, b) in zip(first, first.dropFirst()) { #expect(b - a == 100_000) }
        #expect(first.count == 10)
        #expect(second.first.map { $0 - lastMoving } == 100_000)
        for (a, b) in zip(second, second.dropFirst()) { #expect(b - a == 100_000) }
        #expect(second.count == 10)

        var closed = Framer(clock: try FrameClock(rateHz: c.rateHz, startUs: 0))
        while closed.nextFrameUs <= 1_000_000 { #expect(!closed.endFrame().isHeartbeat) }
    }

    /// At a rate where 100 ms is not a whole number of frames, heartbeats
    /// come at the first frame at least 100 ms after the last datagram.
    @Test func heartbeatAt144Hz() throws {
        var f = Framer(clock: try FrameClock(rateHz: 144, startUs: 0))
        f.isSessionOpen = true
        var beats: [UInt64] = []
        while f.nextFrameUs <= 2_000_000 {
            let fr = f.endFrame()
            if fr.isHeartbeat { beats.append(fr.timeUs) }
        }
        for (a, b) in zip(beats, beats.dropFirst()) {
            #expect(b - a >= 100_000 && b - a < 100_000 + 6_945)
        }
        #expect(beats.count >= 18)
    }

    /// A frame's worth beyond Int32 is not lost: it stays in the carry.
    @Test func hugeMotionSpillsIntoLaterFrames() throws {
        var f = Framer(clock: try FrameClock(rateHz: 120, startUs: 0))
        f.addMotion(dxPixels: 20_000_000, dyPixels: 0, atUs: 1)
        let a = f.endFrame().motion.a, b = f.endFrame().motion.a, c = f.endFrame().motion.a
        #expect(a == Int32.max)
        #expect(Int64(a) + Int64(b) + Int64(c) == 20_000_000 * 256)
    }
}
