// The units every rule in this module speaks, in one place.
//
// The module is plain Swift: no platform library, no clock, no I/O. Every
// time comes in as an argument (microseconds on the sender's clock), so the
// same rules run on a phone, in a browser port, or in a test in virtual time.

/// Unit conversions shared by the acceleration curve, the frames and the
/// touchpad.
public enum InputUnits {
    /// A point is 1/160 inch (0.15875 mm). The design note's curve (part 1)
    /// was tuned on a phone in UIKit points, which are 1/163 inch on most
    /// iPhones; Android's density-independent pixel is exactly 1/160 inch.
    /// Taking 1/160 keeps the curve's 120 pt/s and 450 pt/s meaning the same
    /// finger speed (within 2%) on a phone and on a touchpad measured in mm.
    public static let pointsPerInch: Double = 160
    public static let millimetresPerInch: Double = 25.4
    /// 0.15875 mm per point.
    public static let millimetresPerPoint: Double = millimetresPerInch / pointsPerInch
    /// About 6.3 points per millimetre.
    public static let pointsPerMillimetre: Double = pointsPerInch / millimetresPerInch

    /// Datagram deltas are Q8 fixed point: 256 units per pixel, or per
    /// hi-res wheel unit (docs/protocol.md).
    public static let q8PerUnit: Double = 256
    /// Hi-res wheel units per notch (`REL_WHEEL_HI_RES`).
    public static let wheelUnitsPerNotch: Double = 120

    /// Converts millimetres on a touch surface to points.
    @inlinable
    public static func points(millimetres: Double) -> Double { millimetres * pointsPerMillimetre }
}

/// A setting out of range; the message names the setting, the range and a
/// value that works.
public struct InputConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
    public init(_ message: String) { self.message = message }
}

/// e^x for the momentum decay, in plain Swift (the standard library has no
/// elementary functions and this module links no platform library). Range
/// reduction to |r| <= ln 2 / 2 with ln 2 split in two (Cody and Waite: the
/// high part has trailing zero bits, so k * high is exact) and a 14-term
/// series: within a few ulp of the platform's `exp` (InputTests checks).
@inlinable
public func exponential(_ x: Double) -> Double {
    if x.isNaN { return x }
    if x < -745 { return 0 }
    if x > 709 { return .infinity }
    let ln2 = 0.693_147_180_559_945_3
    let ln2High = 6.931_471_803_691_238_164_90e-01
    let ln2Low = 1.908_214_929_270_587_700_02e-10
    let k = (x / ln2).rounded()
    let r = (x - k * ln2High) - k * ln2Low
    var term = 1.0
    var sum = 1.0
    for i in 1...14 {
        term *= r / Double(i)
        sum += term
    }
    return Double(sign: .plus, exponent: Int(k), significand: sum)
}
