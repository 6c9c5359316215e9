/// A mouse button by its Linux `BTN_*` code: the number the button datagram
/// and the receiver's device use, kept as a plain number so no platform
/// header is needed to name it.
public struct Button: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let left = Button(rawValue: 0x110)
    public static let right = Button(rawValue: 0x111)
    public static let middle = Button(rawValue: 0x112)
    public static let side = Button(rawValue: 0x113)
    public static let extra = Button(rawValue: 0x114)

    public static func < (a: Button, b: Button) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .left: "left"
        case .right: "right"
        case .middle: "middle"
        case .side: "side"
        case .extra: "extra"
        default: "button 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// A press or release, stamped with the time of the input sample that caused
/// it, on the same clock as the motion, so the receiver plays it in step
/// with the movement around it.
public struct ButtonChange: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var button: Button
    public var isDown: Bool
    /// Sender clock, microseconds.
    public var timeUs: UInt64

    public init(_ button: Button, isDown: Bool, timeUs: UInt64) {
        self.button = button
        self.isDown = isDown
        self.timeUs = timeUs
    }

    public var description: String { "\(button) \(isDown ? "down" : "up") @\(timeUs)" }
}
