// The control channel's extension messages: hello (what each side speaks)
// and the keyboard (key, text, refused). docs/protocol.md, "Extensions and
// the keyboard".
//
// Older peers treat an unknown message type as a protocol error, so none of
// these is ever sent to a peer that has not said it speaks it: a sender
// opens with hello, and only a receiver that answers with its own hello gets
// keys or text. A receiver sends hello and refused only to a sender that
// sent hello.

/// Features a side speaks, as a bit mask (hello's u32).
public struct ControlFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Key and text messages, and refused back.
    public static let keyboard = ControlFeatures(rawValue: 1 << 0)
    /// Pointer datagrams may carry the session's running totals (the
    /// 65-byte layout, remolo_wire.h), and the receiver plays the motion of
    /// lost ones from them.
    public static let redundancy = ControlFeatures(rawValue: 1 << 1)
    /// Pointer datagrams may ride a WebRTC data channel the sender signals
    /// in this session (channel offer, answer and path; ControlDataChannel.swift).
    /// Granted only by a receiver whose data-channel endpoint is running.
    public static let dataChannel = ControlFeatures(rawValue: 1 << 2)
    /// Gesture states in 65-byte datagrams of kind 6 and gesture end
    /// messages (docs/protocol.md, "Gestures (feature bit 3)"). Granted only
    /// by a receiver that can make its touchpad.
    public static let gestures = ControlFeatures(rawValue: 1 << 3)

    /// Everything this build speaks.
    public static let all: ControlFeatures = [.keyboard, .redundancy, .dataChannel, .gestures]
}

/// Whether the receiver takes keys from this sender (the receiver's hello).
public enum KeyboardStatus: Equatable, Sendable, CustomStringConvertible {
    case allowed
    /// `remolo receive --no-keyboard`.
    case off
    /// This sender is paired but may not type.
    case notAllowed
    /// The receiver has no keyboard device (no uinput, or it could not be made).
    case noDevice
    /// A value this build does not know (a newer receiver).
    case other(UInt8)

    public init(rawValue v: UInt8) {
        switch v {
        case 0: self = .allowed
        case 1: self = .off
        case 2: self = .notAllowed
        case 3: self = .noDevice
        default: self = .other(v)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .allowed: return 0
        case .off: return 1
        case .notAllowed: return 2
        case .noDevice: return 3
        case .other(let v): return v
        }
    }

    public var description: String {
        switch self {
        case .allowed: return "typing allowed"
        case .off: return "typing is off on the receiver (it runs with --no-keyboard)"
        case .notAllowed:
            return "this sender may not type there: on the receiver, `remolo peers allow-keyboard FINGERPRINT` (this sender's fingerprint, from `remolo identity`)"
        case .noDevice: return "the receiver has no keyboard device (no /dev/uinput there)"
        case .other(let v): return "the receiver does not take keys (status \(v))"
        }
    }
}

/// hello: the features a side speaks; from the receiver, those it takes
/// from this sender, with the keyboard's status.
public struct ControlHello: Equatable, Sendable {
    public var features: ControlFeatures
    public var keyboard: KeyboardStatus

    public init(features: ControlFeatures, keyboard: KeyboardStatus = .allowed) {
        self.features = features
        self.keyboard = keyboard
    }
}

/// A key press or release: an evdev `KEY_*` code, played at its sender
/// time on the session's playout clock. Key and text messages share one
/// sequence (the previous one's plus one).
public struct KeyEvent: Equatable, Sendable {
    public var code: UInt16
    public var isDown: Bool
    public var senderTimeNs: UInt64
    public var sequence: UInt32

    public init(code: UInt16, isDown: Bool, senderTimeNs: UInt64, sequence: UInt32) {
        self.code = code
        self.isDown = isDown
        self.senderTimeNs = senderTimeNs
        self.sequence = sequence
    }
}

/// Text the receiver types in its own layout. The bytes are kept as they
/// came: the receiver, not the decoder, refuses invalid UTF-8 and text over
/// `maxBytes` (with a refused message; the session goes on).
public struct TextInput: Equatable, Sendable {
    /// The longest text a receiver types from one message.
    public static let maxBytes = 256
    public var senderTimeNs: UInt64
    public var sequence: UInt32
    public var utf8: [UInt8]

    public init(senderTimeNs: UInt64, sequence: UInt32, utf8: [UInt8]) {
        self.senderTimeNs = senderTimeNs
        self.sequence = sequence
        self.utf8 = utf8
    }

    public init(_ text: String, senderTimeNs: UInt64, sequence: UInt32) {
        self.init(senderTimeNs: senderTimeNs, sequence: sequence, utf8: Array(text.utf8))
    }

    /// The text, or nil when the bytes are not valid UTF-8.
    public var string: String? { String(validating: utf8, as: UTF8.self) }

    /// Splits `text` into pieces of at most `maxBytes` UTF-8 bytes, on
    /// character boundaries (a character longer than that stands alone).
    public static func chunks(_ text: String) -> [String] {
        var out: [String] = []
        var cur = ""
        var n = 0
        for ch in text {
            let c = ch.utf8.count
            if n + c > maxBytes && !cur.isEmpty { out.append(cur); cur = ""; n = 0 }
            cur.append(ch)
            n += c
        }
        if !cur.isEmpty { out.append(cur) }
        return out
    }
}

/// Why the receiver did not play a key or text (refused's reason byte).
public enum KeyRefusal: Equatable, Sendable, CustomStringConvertible {
    case keyboardOff, notAllowed, unknownKey, notHeld, flood, invalidUTF8, tooLong, untypable, alreadyHeld
    case other(UInt8)

    public init(rawValue v: UInt8) {
        switch v {
        case 1: self = .keyboardOff
        case 2: self = .notAllowed
        case 3: self = .unknownKey
        case 4: self = .notHeld
        case 5: self = .flood
        case 6: self = .invalidUTF8
        case 7: self = .tooLong
        case 8: self = .untypable
        case 9: self = .alreadyHeld
        default: self = .other(v)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .keyboardOff: return 1
        case .notAllowed: return 2
        case .unknownKey: return 3
        case .notHeld: return 4
        case .flood: return 5
        case .invalidUTF8: return 6
        case .tooLong: return 7
        case .untypable: return 8
        case .alreadyHeld: return 9
        case .other(let v): return v
        }
    }

    /// The name in statistics and logs.
    public var name: String {
        switch self {
        case .keyboardOff: return "keyboard_off"
        case .notAllowed: return "not_allowed"
        case .unknownKey: return "unknown_key"
        case .notHeld: return "not_held"
        case .flood: return "flood"
        case .invalidUTF8: return "invalid_utf8"
        case .tooLong: return "too_long"
        case .untypable: return "untypable"
        case .alreadyHeld: return "already_held"
        case .other(let v): return "reason_\(v)"
        }
    }

    /// Every reason this build sends, in wire order.
    public static let known: [KeyRefusal] = (1...9).map { KeyRefusal(rawValue: $0) }

    public var description: String {
        switch self {
        case .keyboardOff: return "typing is off on the receiver"
        case .notAllowed: return "this sender may not type on the receiver"
        case .unknownKey: return "the Remolo keyboard has no such key"
        case .notHeld: return "a release of a key that was not pressed"
        case .flood: return "too many keys at once (flood)"
        case .invalidUTF8: return "the text was not valid UTF-8"
        case .tooLong: return "the text was longer than \(TextInput.maxBytes) bytes"
        case .untypable: return "characters the receiver's keyboard layout cannot type"
        case .alreadyHeld: return "a press of a key already held"
        case .other(let v): return "refused (reason \(v))"
        }
    }
}

/// refused: the receiver did not play (all or part of) a key or text message.
public struct KeyRefused: Equatable, Sendable {
    /// The refused message's sequence.
    public var sequence: UInt32
    public var reason: KeyRefusal
    /// How many: 1 for a key; characters for untypable text.
    public var count: UInt16

    public init(sequence: UInt32, reason: KeyRefusal, count: UInt16) {
        self.sequence = sequence
        self.reason = reason
        self.count = count
    }
}

extension ControlMessage {
    /// Shortest text message: the type, the time, the sequence and one byte.
    static let textHeaderLength = 1 + 8 + 4

    static func encodeExtension(_ m: ControlMessage, into b: inout [UInt8]) {
        switch m {
        case .hello(let h):
            b.appendBE(h.features.rawValue)
            b.append(h.keyboard.rawValue)
        case .key(let k):
            b.appendBE(k.code)
            b.append(k.isDown ? 1 : 0)
            b.appendBE(k.senderTimeNs)
            b.appendBE(k.sequence)
        case .text(let t):
            b.appendBE(t.senderTimeNs)
            b.appendBE(t.sequence)
            b.append(contentsOf: t.utf8)
        case .refused(let r):
            b.appendBE(r.sequence)
            b.append(r.reason.rawValue)
            b.appendBE(r.count)
        default:
            preconditionFailure("not an extension message")
        }
    }

    /// Decodes the fields of an extension message (lengths already checked).
    static func decodeExtension(_ kind: Kind, _ r: inout ByteReader) throws(ControlFrameError) -> ControlMessage {
        switch kind {
        case .hello:
            return .hello(ControlHello(features: ControlFeatures(rawValue: r.read(UInt32.self)!),
                                       keyboard: KeyboardStatus(rawValue: r.read(UInt8.self)!)))
        case .key:
            let code = r.read(UInt16.self)!
            let state = r.read(UInt8.self)!
            guard state <= 1 else { throw .badMessage("key state \(state)") }
            return .key(KeyEvent(code: code, isDown: state == 1, senderTimeNs: r.read(UInt64.self)!,
                                 sequence: r.read(UInt32.self)!))
        case .text:
            let t = r.read(UInt64.self)!
            let seq = r.read(UInt32.self)!
            return .text(TextInput(senderTimeNs: t, sequence: seq, utf8: Array(r.readRest())))
        case .refused:
            let seq = r.read(UInt32.self)!
            let reason = r.read(UInt8.self)!
            guard reason != 0 else { throw .badMessage("refused reason 0") }
            return .refused(KeyRefused(sequence: seq, reason: KeyRefusal(rawValue: reason), count: r.read(UInt16.self)!))
        default:
            preconditionFailure("not an extension kind")
        }
    }
}
