// The sender's keyboard: agreeing with the receiver that it takes keys
// (hello, docs/protocol.md, "Extensions and the keyboard"), then keys and text
// over the control channel, stamped with the sender clock like buttons.
import Foundation
import RemoloSession

/// Opens sessions to one receiver and says hello on each, unless the
/// receiver turned out to speak only the base protocol: then it reconnects
/// once without hello and never says hello to it again.
final class HelloNegotiator: @unchecked Sendable {
    // @unchecked: used by the one thread that drives its Sender.
    let wanted: ControlFeatures
    private(set) var olderReceiver = false
    /// The receiver's answer on the latest session (nil: no hello said).
    private(set) var answer: ControlHello?
    private let log: (String) -> Void
    /// Said once a run, not on every reconnection.
    private var saidNoRedundancy = false
    private var saidNoGestures = false

    init(wanted: ControlFeatures, log: @escaping (String) -> Void) {
        self.wanted = wanted
        self.log = log
    }

    /// A confirmed session, with hello said where it may be.
    func open(_ connect: () throws -> ControlChannel) throws -> ControlChannel {
        answer = nil
        let ch = try connect()
        guard !wanted.isEmpty, !olderReceiver else { return ch }
        return try negotiate(ch, connect)
    }

    /// Says hello on an already open session (the first one of a pairing).
    func negotiate(_ ch: ControlChannel, _ connect: () throws -> ControlChannel) throws -> ControlChannel {
        switch try ch.hello(wanted) {
        case .answered(let h):
            answer = h
            if wanted.contains(.keyboard) && !h.features.contains(.keyboard) {
                log("the receiver does not take keys from this sender: \(h.keyboard); pointer only")
            }
            if wanted.contains(.redundancy) && !h.features.contains(.redundancy) && !saidNoRedundancy {
                saidNoRedundancy = true
                log("the receiver does not take redundant datagrams: the motion of a lost one is lost")
            }
            if wanted.contains(.gestures) && !h.features.contains(.gestures) && !saidNoGestures {
                saidNoGestures = true
                log("the receiver does not take gestures (`--no-gestures` there, or no /dev/uinput): "
                    + "three- and four-finger swipes and pinches are not sent")
            }
            return ch
        case .olderPeer:
            olderReceiver = true
            log(wanted.contains(.keyboard)
                ? "the receiver does not take keys (an older version); pointer only"
                : "the receiver is an older version: datagrams without redundancy")
            return try connect()
        }
    }

    var keyboardGranted: Bool { answer?.features.contains(.keyboard) == true }
    var redundancyGranted: Bool { answer?.features.contains(.redundancy) == true }
    var gesturesGranted: Bool { answer?.features.contains(.gestures) == true }
}

/// The sender's key state (kept in Sender).
struct SenderKeys {
    var negotiator: HelloNegotiator?
    var sequence: UInt32 = 0
    /// Keys the source holds down (pressed again on a new session).
    var held: [UInt16] = []
    var sent: UInt64 = 0
    var texts: UInt64 = 0
    var refused: UInt64 = 0
}

extension Sender {
    /// Whether the receiver takes keys from this sender on this session.
    public var keyboardGranted: Bool { keys.negotiator?.keyboardGranted == true }

    /// Whether this session's datagrams carry the running totals (the
    /// receiver granted the redundancy feature): a lost datagram's motion
    /// is then played by the receiver from the next one's.
    public var redundancyGranted: Bool { keys.negotiator?.redundancyGranted == true }

    /// Whether the receiver takes gestures on this session (it granted
    /// feature bit 3): gesture states and ends may then be sent.
    public var gesturesGranted: Bool { keys.negotiator?.gesturesGranted == true }

    /// The receiver's answer to hello on this session, if one was said.
    public var receiverHello: ControlHello? { keys.negotiator?.answer }

    /// A key press or release (evdev KEY_* code), stamped `at` (us). Sent
    /// only when the receiver granted the keyboard; returns whether it went.
    @discardableResult
    public func key(_ code: UInt16, down: Bool, at timeUs: UInt64) throws -> Bool {
        if down { if !keys.held.contains(code) { keys.held.append(code) } } else { keys.held.removeAll { $0 == code } }
        guard isConnected else { return false }
        return try sendKey(code, down: down, at: timeUs)
    }

    private func sendKey(_ code: UInt16, down: Bool, at timeUs: UInt64) throws -> Bool {
        guard keyboardGranted else { return false }
        try channel.send(.key(KeyEvent(code: code, isDown: down, senderTimeNs: timeUs * 1000, sequence: keys.sequence)))
        keys.sequence &+= 1
        keys.sent += 1
        return true
    }

    /// Text the receiver types in its own layout, in pieces of at most
    /// `TextInput.maxBytes`. Returns whether it went.
    @discardableResult
    public func type(_ text: String, at timeUs: UInt64) throws -> Bool {
        guard keyboardGranted, isConnected, !text.isEmpty else { return false }
        for piece in TextInput.chunks(text) {
            try channel.send(.text(TextInput(piece, senderTimeNs: timeUs * 1000, sequence: keys.sequence)))
            keys.sequence &+= 1
            keys.texts += 1
        }
        return true
    }

    /// Releases every key the source holds (letting go): the receiver
    /// releases them at once, in order after what was sent before.
    public func releaseKeys(at timeUs: UInt64) throws {
        for code in keys.held { try key(code, down: false, at: timeUs) }
    }

    /// Keys the source holds, pressed again on a new session.
    func pressHeldKeys(at timeUs: UInt64) throws {
        for code in keys.held { _ = try sendKey(code, down: true, at: timeUs) }
    }

    /// A refused message from the receiver: said once per message.
    func refused(_ r: KeyRefused) {
        keys.refused += 1
        log("the receiver refused key/text #\(r.sequence): \(r.reason)\(r.count > 1 ? " (\(r.count))" : "")")
    }
}
