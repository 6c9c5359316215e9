// Why a key change was refused, as the playout's key queue says it.

internal import RemoloPlayoutCore

/// Why the receiver refused a key change. Raw values are the control
/// protocol's refused reasons (the `refused` message); each refusal leaves
/// the session's keys as they were, so none can leave a key held.
public enum LoopKeyRefusal: UInt8, CaseIterable, Sendable {
    /// A code the Remolo keyboard does not have (`KeyboardDevice.hasKey`).
    case unknownKey = 3
    /// A release of a key the session does not hold.
    case notHeld = 4
    /// A press while the session's key queue is full (or its overflow
    /// releases are still to play).
    case flood = 5
    /// A press of a key the session already holds.
    case alreadyHeld = 9

    /// The name in `--stats-json` ("keys": {...}).
    public var name: String {
        switch self {
        case .unknownKey: "unknown_key"
        case .notHeld: "not_held"
        case .flood: "flood"
        case .alreadyHeld: "already_held"
        }
    }

    /// The core's reason (enum playout_key_refusal).
    package var core: UInt32 {
        switch self {
        case .alreadyHeld: UInt32(PLAYOUT_KEY_REFUSED_HELD.rawValue)
        case .notHeld: UInt32(PLAYOUT_KEY_REFUSED_NOT_HELD.rawValue)
        case .unknownKey: UInt32(PLAYOUT_KEY_REFUSED_UNKNOWN.rawValue)
        case .flood: UInt32(PLAYOUT_KEY_REFUSED_FLOOD.rawValue)
        }
    }
}
