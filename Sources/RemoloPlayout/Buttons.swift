// Mouse buttons: the one place the Swift side turns button names into
// Linux BTN_* codes, taken from <linux/input-event-codes.h> (through the
// core's remolo_ptrdev.h) rather than written out again.
internal import RemoloPlayoutCore
import RemoloSession
import RemoloTypes

extension MouseButton {
    /// The Linux `BTN_*` code the pointer device writes for this button.
    public var evdevCode: UInt16 {
        switch self {
        case .left: UInt16(BTN_LEFT)
        case .right: UInt16(BTN_RIGHT)
        case .middle: UInt16(BTN_MIDDLE)
        case .side: UInt16(BTN_SIDE)
        case .extra: UInt16(BTN_EXTRA)
        }
    }

    /// The control channel's button for a Linux `BTN_*` code; nil for one it
    /// has no number for. BTN_BACK and BTN_FORWARD (other mice's thumb
    /// buttons) travel as side and extra.
    public init?(evdevCode code: UInt16) {
        switch Int32(code) {
        case BTN_LEFT: self = .left
        case BTN_RIGHT: self = .right
        case BTN_MIDDLE: self = .middle
        case BTN_SIDE, BTN_BACK: self = .side
        case BTN_EXTRA, BTN_FORWARD: self = .extra
        default: return nil
        }
    }

    /// The same for the sender core's button.
    package init?(_ b: Button) { self.init(evdevCode: b.rawValue) }
}

/// The button codes a pointer frame and a button datagram may carry:
/// BTN_LEFT ... BTN_TASK, the range the core accepts (remolo_playout.h).
public enum EvdevButton {
    public static let codes = UInt16(BTN_LEFT)...UInt16(BTN_TASK)

    /// Traces number buttons 1 (BTN_LEFT) to 8 (BTN_TASK); a number outside
    /// is clamped into that range.
    public static func code(traceNumber n: Int32) -> UInt16 {
        codes.lowerBound + UInt16(max(0, min(Int32(codes.count) - 1, n - 1)))
    }

    /// The trace's number for a code, nil outside BTN_LEFT ... BTN_TASK.
    public static func traceNumber(code: Int32) -> Int32? {
        guard code >= Int32(codes.lowerBound), code <= Int32(codes.upperBound) else { return nil }
        return code - Int32(codes.lowerBound) + 1
    }
}
