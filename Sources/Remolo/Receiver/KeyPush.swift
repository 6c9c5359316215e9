// What became of key changes pushed into the receive loop.

internal import RemoloCore

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
    var core: UInt32 {
        switch self {
        case .alreadyHeld: UInt32(PLAYOUT_KEY_REFUSED_HELD.rawValue)
        case .notHeld: UInt32(PLAYOUT_KEY_REFUSED_NOT_HELD.rawValue)
        case .unknownKey: UInt32(PLAYOUT_KEY_REFUSED_UNKNOWN.rawValue)
        case .flood: UInt32(PLAYOUT_KEY_REFUSED_FLOOD.rawValue)
        }
    }
}

/// What the loop did with pushed key changes.
public struct KeyPushResult: Sendable, Equatable {
    /// Changes taken into the session's playout (queued to play at their
    /// sender time; a release that found the queue full plays after it).
    public var accepted: Int = 0
    /// Changes refused, by reason; a reason with none is absent.
    public var refused: [LoopKeyRefusal: Int] = [:]

    public init(accepted: Int = 0, refused: [LoopKeyRefusal: Int] = [:]) {
        self.accepted = accepted
        self.refused = refused
    }

    /// Every change was taken.
    public var allAccepted: Bool { refused.isEmpty }
    public subscript(reason: LoopKeyRefusal) -> Int { refused[reason] ?? 0 }

    /// Adds one key command's result (remolo_rx.h: refusals packed by
    /// reason) for `count` changes.
    mutating func add(commandResult r: Int32, count: Int) {
        var no = 0
        for reason in LoopKeyRefusal.allCases {
            let n = Int(rx_keys_refused(r, reason.core))
            if n > 0 { refused[reason, default: 0] += n }
            no += n
        }
        accepted += count - no
    }
}
