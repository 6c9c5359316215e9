/// The design note's pointer curve (part 1): slow movements stay precise,
/// fast flicks travel further.
///
///     speed  = distance / dt                      (points per second)
///     boost  = 1 + acceleration * min(max(speed - 120, 0) / 450, 3.5)
///     output = delta * pointerSpeed * boost       (pixels)
///
/// Below 120 pt/s (about 19 mm/s) the gain is `pointerSpeed`; it grows
/// linearly until 1695 pt/s (120 + 3.5 * 450), where the boost stops at
/// `1 + 3.5 * acceleration`.
public struct AccelerationCurve: Equatable, Sendable {
    /// Speeds up to this one get no boost, points per second.
    public static let thresholdPointsPerSecond: Double = 120
    /// Each this many points per second above the threshold add one
    /// `acceleration` to the boost.
    public static let rampPointsPerSecond: Double = 450
    /// The boost's ramp stops after this many steps.
    public static let maxRampSteps: Double = 3.5

    /// Pixels per point at low speed.
    public var pointerSpeed: Double
    /// How much faster fast movement goes; 0 turns the curve off.
    public var acceleration: Double

    public static let pointerSpeedRange: ClosedRange<Double> = 0.05...20
    public static let accelerationRange: ClosedRange<Double> = 0...10

    /// Defaults: one pixel per point, the note's curve at full strength.
    public init(pointerSpeed: Double = 1, acceleration: Double = 1) throws(InputConfigError) {
        guard pointerSpeed.isFinite, Self.pointerSpeedRange.contains(pointerSpeed) else {
            throw InputConfigError("pointer speed \(pointerSpeed) is outside \(Self.pointerSpeedRange.lowerBound)-\(Self.pointerSpeedRange.upperBound); 1 is one pixel per point")
        }
        guard acceleration.isFinite, Self.accelerationRange.contains(acceleration) else {
            throw InputConfigError("acceleration \(acceleration) is outside 0-\(Self.accelerationRange.upperBound); 0 turns the curve off, 1 is the default")
        }
        self.pointerSpeed = pointerSpeed
        self.acceleration = acceleration
    }

    /// The curve without acceleration: a mouse's default, since the
    /// compositor or the game applies its own.
    public static func flat(pointerSpeed: Double = 1) throws(InputConfigError) -> AccelerationCurve {
        try AccelerationCurve(pointerSpeed: pointerSpeed, acceleration: 0)
    }

    /// The boost at this speed (1 when slow).
    @inlinable
    public func boost(speedPointsPerSecond speed: Double) -> Double {
        let steps = min(max(speed - Self.thresholdPointsPerSecond, 0) / Self.rampPointsPerSecond, Self.maxRampSteps)
        return 1 + acceleration * steps
    }

    /// Pixels per point at this speed.
    @inlinable
    public func gain(speedPointsPerSecond speed: Double) -> Double {
        pointerSpeed * boost(speedPointsPerSecond: speed)
    }
}

/// A movement in pixels (or another unit the caller names), x right, y down.
public struct Displacement: Equatable, Sendable {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) { self.x = x; self.y = y }
    public static let zero = Displacement(x: 0, y: 0)
}

/// Applies the curve to one sample at a time, each at the speed of its own
/// distance over its own interval: coalesced 240 Hz touches, a 1000 Hz
/// mouse and a 60 Hz trackpad all get the same gain for the same finger
/// speed, whatever the sampling.
public struct PointerAccelerator: Equatable, Sendable {
    public var curve: AccelerationCurve

    /// Intervals shorter than this count as this long: two samples with the
    /// same time stamp (a coalescing artefact) must not read as infinite
    /// speed. 100 us is above the noise and below any real device's period
    /// (an 8 kHz mouse reports every 125 us).
    public static let minimumIntervalUs: UInt64 = 100

    public init(curve: AccelerationCurve) { self.curve = curve }

    /// Pixels for a sample of `dxPoints, dyPoints` that took `intervalUs`
    /// since the previous sample of the same finger or device. An interval
    /// of 0 means there was no previous sample (a fresh touch): its speed is
    /// unknown and it gets the gain of a slow movement.
    @inlinable
    public func accelerate(dxPoints: Double, dyPoints: Double, intervalUs: UInt64) -> Displacement {
        let speed: Double
        if intervalUs == 0 {
            speed = 0
        } else {
            let distance = (dxPoints * dxPoints + dyPoints * dyPoints).squareRoot()
            let seconds = Double(max(intervalUs, Self.minimumIntervalUs)) / 1_000_000
            speed = distance / seconds
        }
        let g = curve.gain(speedPointsPerSecond: speed)
        return Displacement(x: dxPoints * g, y: dyPoints * g)
    }
}
