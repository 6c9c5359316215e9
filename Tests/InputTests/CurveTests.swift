import Foundation
import Testing
import RemoloTestSupport
import RemoloInput


@Suite("Acceleration curve (design note, part 1)")
struct CurveTests {
    struct GainCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var speedPointsPerSecond: Double
        var pointerSpeed: Double
        var acceleration: Double
        var gain: Double
        var testDescription: String { "\(id). \(speedPointsPerSecond) pt/s, speed \(pointerSpeed), accel \(acceleration) -> \(gain)" }
    }

    static let gains: [GainCase] = [
        .init(id: 1, speedPointsPerSecond: 0, pointerSpeed: 1, acceleration: 1, gain: 1),
        .init(id: 2, speedPointsPerSecond: 60, pointerSpeed: 1, acceleration: 1, gain: 1),
        .init(id: 3, speedPointsPerSecond: 120, pointerSpeed: 1, acceleration: 1, gain: 1),
        .init(id: 4, speedPointsPerSecond: 165, pointerSpeed: 1, acceleration: 1, gain: 1.1),
        .init(id: 5, speedPointsPerSecond: 570, pointerSpeed: 1, acceleration: 1, gain: 2),
        .init(id: 6, speedPointsPerSecond: 1020, pointerSpeed: 1, acceleration: 1, gain: 3),
        .init(id: 7, speedPointsPerSecond: 1695, pointerSpeed: 1, acceleration: 1, gain: 4.5),
        .init(id: 8, speedPointsPerSecond: 1696, pointerSpeed: 1, acceleration: 1, gain: 4.5),
        .init(id: 9, speedPointsPerSecond: 10_000, pointerSpeed: 1, acceleration: 1, gain: 4.5),
        .init(id: 10, speedPointsPerSecond: 570, pointerSpeed: 1, acceleration: 0.5, gain: 1.5),
        .init(id: 11, speedPointsPerSecond: 570, pointerSpeed: 2, acceleration: 1, gain: 4),
        .init(id: 12, speedPointsPerSecond: 570, pointerSpeed: 2, acceleration: 0, gain: 2),
        .init(id: 13, speedPointsPerSecond: 10_000, pointerSpeed: 0.5, acceleration: 2, gain: 4),
    ]

    @Test(arguments: gains)
    func gainAtSpeed(_ c: GainCase) throws {
        let curve = try AccelerationCurve(pointerSpeed: c.pointerSpeed, acceleration: c.acceleration)
        #expect(abs(curve.gain(speedPointsPerSecond: c.speedPointsPerSecond) - c.gain) < 1e-12)
    }

    struct SampleCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var dxPoints: Double
        var dyPoints: Double
        var intervalUs: UInt64
        var out: (Double, Double)
        var testDescription: String { "\(id). (\(dxPoints), \(dyPoints)) in \(intervalUs) us" }
    }

    /// The speed is the sample's own distance over its own interval.
    static let samples: [SampleCase] = [
        // 3-4-5: 5 pt in 10 ms = 500 pt/s, boost 1 + 380/450.
        .init(id: 1, dxPoints: 3, dyPoints: 4, intervalUs: 10_000, out: (3 * (1 + 380.0 / 450), 4 * (1 + 380.0 / 450))),
        // 1 pt in 8333 us = 120 pt/s: no boost.
        .init(id: 2, dxPoints: 1, dyPoints: 0, intervalUs: 8_334, out: (1, 0)),
        // A first sample (no interval known): slow.
        .init(id: 3, dxPoints: 10, dyPoints: -10, intervalUs: 0, out: (10, -10)),
        // Same time stamp twice: read as 100 us, not infinitely fast: 0.05 pt / 100 us = 500 pt/s.
        .init(id: 4, dxPoints: 0.05, dyPoints: 0, intervalUs: 1, out: (0.05 * (1 + 380.0 / 450), 0)),
        // Fast: 20 pt in 4 ms = 5000 pt/s: the boost's ceiling.
        .init(id: 5, dxPoints: 0, dyPoints: 20, intervalUs: 4_000, out: (0, 90)),
    ]

    @Test(arguments: samples)
    func sampleAcceleration(_ c: SampleCase) throws {
        let a = PointerAccelerator(curve: try AccelerationCurve())
        let d = a.accelerate(dxPoints: c.dxPoints, dyPoints: c.dyPoints, intervalUs: c.intervalUs)
        #expect(abs(d.x - c.out.0) < 1e-9 && abs(d.y - c.out.1) < 1e-9, "\(d)")
    }

    @Test func pointIsOneHundredSixtiethOfAnInch() {
        #expect(abs(InputUnits.points(millimetres: 25.4) - 160) < 1e-12)
        #expect(abs(InputUnits.millimetresPerPoint - 0.15875) < 1e-15)
    }

    /// A mouse moves 1:1 unless asked; a touchpad gets the curve.
    @Test func mouseIsFlatByDefault() throws {
        var core = try InputCore(config: InputConfig(), startUs: 0)
        core.mouseMotion(dx: 0, dy: 0, atUs: 0)
        core.mouseMotion(dx: 40, dy: 0, atUs: 8_000)      // 5000 counts/s
        #expect(core.endFrame().motion == Q8Delta(40 * 256, 0))

        var config = InputConfig()
        config.accelerateMouse = true
        var accel = try InputCore(config: config, startUs: 0)
        accel.mouseMotion(dx: 0, dy: 0, atUs: 0)
        accel.mouseMotion(dx: 40, dy: 0, atUs: 8_000)
        #expect(accel.endFrame().motion == Q8Delta(Int32(40 * 4.5 * 256), 0))
    }

    struct BadSetting: CustomTestStringConvertible, Sendable {
        var id: Int
        var pointerSpeed: Double
        var acceleration: Double
        var says: String
        var testDescription: String { "\(id). speed \(pointerSpeed), accel \(acceleration)" }
    }

    @Test(arguments: [
        BadSetting(id: 1, pointerSpeed: 0, acceleration: 1, says: "pointer speed"),
        BadSetting(id: 2, pointerSpeed: .nan, acceleration: 1, says: "pointer speed"),
        BadSetting(id: 3, pointerSpeed: 1, acceleration: -1, says: "acceleration"),
        BadSetting(id: 4, pointerSpeed: 1, acceleration: .infinity, says: "acceleration"),
    ])
    func badSettingsSayWhatToChange(_ c: BadSetting) {
        #expect {
            _ = try AccelerationCurve(pointerSpeed: c.pointerSpeed, acceleration: c.acceleration)
        } throws: { ($0 as? InputConfigError)?.message.contains(c.says) == true }
    }

    /// The module's own e^x agrees with the platform's to a few ulp over
    /// the range momentum uses (a glide is over long before e^-50).
    @Test func exponentialMatchesThePlatform() {
        var rng = SplitMix64(seed: 9)
        for _ in 0..<100_000 {
            let x = Double.random(in: -50...1, using: &rng)
            let want = Foundation.exp(x)
            #expect(abs(exponential(x) - want) <= 4 * want.ulp, "x = \(x)")
        }
    }

    @Test func exponentialMatchesKnownValues() {
        #expect(exponential(0) == 1)
        #expect(abs(exponential(1) - 2.718_281_828_459_045) < 1e-15)
        #expect(abs(exponential(-2.995_732_273_553_991) - 0.05) < 1e-16)
        #expect(abs(exponential(-20) - 2.061_153_622_438_558e-9) < 1e-23)
        #expect(exponential(-800) == 0)
    }
}
