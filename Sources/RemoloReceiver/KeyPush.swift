// What became of key changes pushed into the receive loop.

internal import RemoloCore
internal import RemoloPlayoutCore
import RemoloPlayout

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
