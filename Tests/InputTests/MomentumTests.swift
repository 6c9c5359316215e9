import Testing
import RemoloInput

@Suite("Scroll momentum (design note, part 6)")
struct MomentumTests {
    /// tau = 1 s / ln 20: 95% of the speed gone after one second.
    @Test func timeConstant() {
        let m = ScrollMomentum(vertical: 1000, horizontal: -500, startUs: 2_000_000)
        let v = m.speed(atUs: 3_000_000)
        #expect(abs(v.vertical / 1000 - 0.05) < 1e-12)
        #expect(abs(v.horizontal / -500 - 0.05) < 1e-12)
        #expect(abs(ScrollMomentum.timeConstantUs - 333_808) < 1)
        // The whole glide travels v0 * tau.
        let d = m.distance(fromUs: 0, toUs: 60_000_000)
        #expect(abs(d.vertical - 1000 * ScrollMomentum.timeConstantUs / 1e6) < 1e-6)
    }

    struct DecayCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var rateHz: Int
        var speedUnitsPerSecond: Double
        var testDescription: String { "\(id). \(rateHz) Hz, \(speedUnitsPerSecond) units/s" }
    }

    /// Measured from the frames themselves: the speed in the frame around
    /// one second after the lift is 5% +- 3% of the speed at the lift, and
    /// the glide stops by itself.
    @Test(arguments: [
        DecayCase(id: 1, rateHz: 120, speedUnitsPerSecond: 2_400),
        DecayCase(id: 2, rateHz: 60, speedUnitsPerSecond: 1_200),
        DecayCase(id: 3, rateHz: 1000, speedUnitsPerSecond: -3_000),
        DecayCase(id: 4, rateHz: 144, speedUnitsPerSecond: 600),
    ])
    func ninetyFivePercentGoneAfterOneSecond(_ c: DecayCase) throws {
        var f = Framer(clock: try FrameClock(rateHz: c.rateHz, startUs: 0))
        let start = f.clock.frameTimeUs(0)
        f.startMomentum(ScrollMomentum(vertical: c.speedUnitsPerSecond, horizontal: 0, startUs: start))
        var first: Double?
        var atOneSecond: Double?
        var total = 0.0
        var stoppedAt: UInt64?
        while f.nextFrameUs <= 10_000_000 {
            let a = f.clock.lastUs
            let fr = f.endFrame()
            let speed = Double(fr.scroll.a) / 256 / (Double(fr.timeUs - a) / 1e6)
            total += Double(fr.scroll.a) / 256
            if first == nil { first = speed }
            if a < start + 1_000_000 && fr.timeUs >= start + 1_000_000 { atOneSecond = speed }
            if stoppedAt == nil && f.momentum == nil { stoppedAt = fr.timeUs }
        }
        let v0 = try #require(first), v1 = try #require(atOneSecond)
        // The first frame's mean speed is a little under v0.
        #expect(abs(v0 / c.speedUnitsPerSecond - 1) < 0.05)
        let gone = 1 - v1 / c.speedUnitsPerSecond
        #expect(abs(gone - 0.95) <= 0.03, "gone \(gone)")
        // It stops by itself, below the stop speed, without losing more than
        // the stop speed's tail.
        let stop = try #require(stoppedAt)
        #expect(stop < 5_000_000)
        let travel = c.speedUnitsPerSecond * ScrollMomentum.timeConstantUs / 1e6
        #expect(abs(total - travel) <= ScrollMomentum.stopUnitsPerSecond * ScrollMomentum.timeConstantUs / 1e6 + 1.0 / 256)
    }

    static func padCore(natural: Bool = true) throws -> InputCore {
        var config = InputConfig(touchpad: TouchpadConfig(geometry: try TouchpadGeometry(widthMm: 100, heightMm: 60)))
        config.naturalScrolling = natural
        return try InputCore(config: config, startUs: 0)
    }

    /// Two fingers move down at 100 mm/s for 100 ms and lift: scrolling goes on
    /// after the lift, decays, and is cancelled the frame a finger touches.
    static func flick(_ core: inout InputCore) -> (frames: [Frame], liftUs: UInt64) {
        var frames: [Frame] = []
        func touch(_ slot: Int32, _ x: Double, _ y: Double, _ t: UInt64, _ down: Bool = true) {
            core.contact(ContactSample(slot: slot, xMm: x, yMm: y, isTouching: down, timeUs: t))
        }
        touch(0, 40, 10, 0); touch(1, 60, 10, 0)
        for k in 1...20 {
            let t = UInt64(k) * 5_000
            touch(0, 40, 10 + 0.5 * Double(k), t); touch(1, 60, 10 + 0.5 * Double(k), t)
            while core.nextFrameUs <= t { frames.append(core.endFrame()) }
        }
        touch(0, 40, 20, 100_000, false); touch(1, 60, 20, 100_000, false)
        return (frames, 100_000)
    }

    @Test func flickGlidesAndDecays() throws {
        var core = try Self.padCore()
        var (frames, lift) = Self.flick(&core)
        while core.nextFrameUs <= 3_000_000 { frames.append(core.endFrame()) }
        let during = frames.filter { $0.timeUs <= lift }.reduce(0) { $0 + Int64($1.scroll.a) }
        let after = frames.filter { $0.timeUs > lift }
        let glided = after.reduce(0) { $0 + Int64($1.scroll.a) }
        // Natural scrolling: fingers moving down scroll up (positive).
        #expect(during > 0)
        #expect(glided > 0)
        // 100 mm/s = 2520 units/s; the glide travels about v * tau.
        let v = 100 * InputUnits.pointsPerMillimetre * InputConfig.wheelUnitsPerPoint
        #expect(abs(Double(glided) / 256 - v * ScrollMomentum.timeConstantUs / 1e6) < 0.05 * v * ScrollMomentum.timeConstantUs / 1e6)
        // No heartbeat needed while gliding, and it does stop.
        #expect(after.last?.scroll == .zero)
        #expect(core.framer.momentum == nil)
    }

    @Test func traditionalScrollingReverses() throws {
        var core = try Self.padCore(natural: false)
        var (frames, _) = Self.flick(&core)
        while core.nextFrameUs <= 1_000_000 { frames.append(core.endFrame()) }
        #expect(frames.reduce(0) { $0 + Int64($1.scroll.a) } < 0)
    }

    struct CancelCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var touchAfterLiftUs: UInt64
        var restingThumb: Bool
        var testDescription: String { "\(id). touch \(touchAfterLiftUs) us after the lift\(restingThumb ? " (in the button area)" : "")" }
    }

    /// A new touch stops the glide at once: what it travelled up to the
    /// touch is sent, nothing after.
    @Test(arguments: [
        CancelCase(id: 1, touchAfterLiftUs: 1, restingThumb: false),
        CancelCase(id: 2, touchAfterLiftUs: 150_000, restingThumb: false),
        CancelCase(id: 3, touchAfterLiftUs: 300_000, restingThumb: true),
    ])
    func newTouchCancels(_ c: CancelCase) throws {
        var core = try Self.padCore()
        var (frames, lift) = Self.flick(&core)
        let touchUs = lift + c.touchAfterLiftUs
        while core.nextFrameUs < touchUs { frames.append(core.endFrame()) }
        core.contact(ContactSample(slot: 0, xMm: 50, yMm: c.restingThumb ? 58 : 30, isTouching: true, timeUs: touchUs))
        #expect(core.framer.momentum == nil)
        var later: [Frame] = []
        while core.nextFrameUs <= touchUs + 1_000_000 { later.append(core.endFrame()) }
        // The frame holding the touch carries the glide up to it; then nothing.
        #expect(later.dropFirst().allSatisfy { $0.scroll == .zero })
        let glided = (frames + later).filter { $0.timeUs > lift }.reduce(0.0) { $0 + Double($1.scroll.a) / 256 }
        let v = 100 * InputUnits.pointsPerMillimetre * InputConfig.wheelUnitsPerPoint
        let m = ScrollMomentum(vertical: v, horizontal: 0, startUs: lift)
        let expected = m.distance(fromUs: lift, toUs: touchUs).vertical
        #expect(abs(glided - expected) < 0.02 * v * 0.05 + 1, "\(glided) vs \(expected)")
    }
}
