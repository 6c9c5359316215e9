// One session's keyboard on the receiver: the hello it answers, and the
// checks a key or text message passes before anything reaches the loop
// (docs/protocol.md, "Extensions and the keyboard"). Bad input is refused
// with a reason and counted; none of it can leave a key held: the loop
// releases every key a session holds when the session ends.
import Foundation
import RemoloSession
import RemoloSystem
import Synchronization
import RemoloTypes
import RemoloKeymap

/// What the receiver as a whole does with keys.
public struct ReceiverKeyboard: Sendable {
    /// False: `remolo receive --no-keyboard`, every sender is refused.
    public var enabled: Bool
    /// The layout text messages are typed in; nil: text is refused as untypable.
    public var keymap: Keymap?

    public init(enabled: Bool = true, keymap: Keymap? = nil) {
        self.enabled = enabled
        self.keymap = keymap
    }

    public static let off = ReceiverKeyboard(enabled: false)
}

/// Counters of the keyboard's control plane, receiver-wide (`--stats-json`
/// "keys"): what was taken, and what was refused by reason.
public struct KeyboardCounters: Sendable, Equatable {
    public var keyMessages: UInt64 = 0
    public var textMessages: UInt64 = 0
    /// Key events handed to the loop (presses and releases, typed text's included).
    public var keyEvents: UInt64 = 0
    /// Refused messages by reason name (KeyRefusal.name); untypable counts characters.
    public var refused: [String: UInt64] = [:]

    public init() {}

    /// Fields of the statistics' "keys" object (beside the loop's).
    public var jsonFields: [(String, String)] {
        [("key_messages", "\(keyMessages)"), ("text_messages", "\(textMessages)"), ("key_events", "\(keyEvents)"),
         ("refused", "{" + KeyRefusal.known.map { "\"\($0.name)\":\(refused[$0.name] ?? 0)" }.joined(separator: ",") + "}")]
    }
}

/// The per-session rules. Used by one session's thread only.
struct SessionKeyboard {
    /// What the loop is asked to play.
    enum Play: Equatable {
        case none
        case strokes([KeyChange], senderTimeUs: UInt64)
    }

    /// At most this many keys held by one session at once (a real keyboard
    /// rolls over far fewer); a press beyond is refused as a flood.
    static let maxHeld = 32
    /// The session's token bucket: presses (a text's included) take a
    /// token each, releases none, so a release is never refused and
    /// nothing stays held; the bucket holds `burst` and refills
    /// continuously at `eventsPerSecond` (docs/protocol.md, "Refused").
    /// A 256-character text of shifted letters is about 300 presses.
    static let eventsPerSecond = 1000.0
    static let burst = 2000.0

    let policy: ReceiverKeyboard
    let mayType: Bool
    let hasDevice: Bool
    let hasKey: (UInt16) -> Bool
    /// The features this receiver grants at all (the keyboard still
    /// depends on the status).
    let offered: ControlFeatures
    private(set) var spoken: ControlFeatures?
    private(set) var status: KeyboardStatus = .off
    private(set) var lastSequence: UInt32?
    private(set) var held: Set<UInt16> = []
    private var tokens: Double
    private var tokensAt: Double

    init(policy: ReceiverKeyboard, mayType: Bool, hasDevice: Bool, hasKey: @escaping (UInt16) -> Bool,
         offered: ControlFeatures = ControlFeatures.all.subtracting([.dataChannel, .gestures]),
         now: Double = MonotonicClock.seconds()) {
        self.policy = policy
        self.offered = offered
        self.mayType = mayType
        self.hasDevice = hasDevice
        self.hasKey = hasKey
        tokens = Self.burst
        tokensAt = now
    }

    /// Protocol errors: the session ends with bye 2 (releasing every key).
    enum Violation: Error, Equatable, CustomStringConvertible {
        case helloTwice, helloLate, keyWithoutHello, sequenceGap(got: UInt32, after: UInt32)
        var description: String {
            switch self {
            case .helloTwice: return "a second hello"
            case .helloLate: return "hello after other messages (it must be frame 1)"
            case .keyWithoutHello: return "a key or text message without a hello first"
            case .sequenceGap(let got, let after): return "key/text sequence \(got) after \(after)"
            }
        }
    }

    /// The answer to the sender's hello (it must be the first message after
    /// key confirmation: `isFirst`).
    mutating func hello(_ h: ControlHello, isFirst: Bool) throws(Violation) -> ControlHello {
        guard spoken == nil else { throw .helloTwice }
        guard isFirst else { throw .helloLate }
        status = !policy.enabled ? .off : !hasDevice ? .noDevice : !mayType ? .notAllowed : .allowed
        var granted = h.features.intersection(.all).intersection(offered)
        if status != .allowed { granted.remove(.keyboard) }
        spoken = granted
        return ControlHello(features: granted, keyboard: status)
    }

    /// The answer actually sent: what the loop could not take (the
    /// touchpad could not be made, the session just went) is not granted,
    /// so the session's later checks refuse it as never granted.
    mutating func answered(_ features: ControlFeatures) {
        spoken = spoken?.intersection(features)
    }

    private mutating func sequence(_ s: UInt32) throws(Violation) {
        guard spoken != nil else { throw .keyWithoutHello }
        if let last = lastSequence, s != last &+ 1 { throw .sequenceGap(got: s, after: last) }
        lastSequence = s
    }

    /// The refusal for a session that may not type at all, if it may not.
    private var denied: KeyRefusal? {
        guard spoken?.contains(.keyboard) != true else { return nil }
        switch status {
        case .notAllowed: return .notAllowed
        default: return .keyboardOff
        }
    }

    private mutating func take(_ n: Int, now: Double) -> Bool {
        tokens = min(Self.burst, tokens + (now - tokensAt) * Self.eventsPerSecond)
        tokensAt = now
        guard tokens >= Double(n) else { return false }
        tokens -= Double(n)
        return true
    }

    mutating func key(_ k: KeyEvent, now: Double = MonotonicClock.seconds()) throws(Violation) -> (Play, KeyRefused?) {
        try sequence(k.sequence)
        func no(_ r: KeyRefusal) -> (Play, KeyRefused?) { (.none, KeyRefused(sequence: k.sequence, reason: r, count: 1)) }
        if let d = denied { return no(d) }
        guard hasKey(k.code) else { return no(.unknownKey) }
        if k.isDown {
            guard !held.contains(k.code) else { return no(.alreadyHeld) }
            guard held.count < Self.maxHeld, take(1, now: now) else { return no(.flood) }
            held.insert(k.code)
        } else {
            // A release is never rate-limited: it can only free a key.
            guard held.remove(k.code) != nil else { return no(.notHeld) }
        }
        return (.strokes([KeyChange(code: k.code, down: k.isDown)], senderTimeUs: k.senderTimeNs / 1000), nil)
    }

    /// Strokes the loop could not take (its key queue full): presses among
    /// them are not held, and their tokens go back, since nothing played.
    mutating func forget(_ strokes: [KeyChange]) {
        for s in strokes where s.down { held.remove(s.code) }
        tokens = min(Self.burst, tokens + Double(strokes.filter(\.down).count))
    }

    mutating func text(_ t: TextInput, now: Double = MonotonicClock.seconds()) throws(Violation) -> (Play, KeyRefused?) {
        try sequence(t.sequence)
        func no(_ r: KeyRefusal, _ n: Int = 1) -> (Play, KeyRefused?) {
            (.none, KeyRefused(sequence: t.sequence, reason: r, count: UInt16(clamping: n)))
        }
        if let d = denied { return no(d) }
        guard t.utf8.count <= TextInput.maxBytes else { return no(.tooLong) }
        guard let s = t.string else { return no(.invalidUTF8) }
        guard let keymap = policy.keymap else { return no(.untypable, s.unicodeScalars.count) }
        var (strokes, untypable) = keymap.strokes(for: s)
        // Keys this session holds through key messages stay as they are
        // (Ctrl held + "c" is Ctrl+C): the text neither presses nor
        // releases them.
        if !held.isEmpty { strokes.removeAll { held.contains($0.code) } }
        strokes.removeAll { !hasKey($0.code) }
        guard take(strokes.filter(\.down).count, now: now) else { return no(.flood) }
        let refusal = untypable > 0 ? KeyRefused(sequence: t.sequence, reason: .untypable, count: UInt16(clamping: untypable)) : nil
        return (strokes.isEmpty ? .none : .strokes(strokes, senderTimeUs: t.senderTimeNs / 1000), refusal)
    }
}

/// Receiver-wide keyboard counters, shared by the sessions' threads.
final class KeyboardTally: Sendable {
    private let counters = Mutex(KeyboardCounters())

    var snapshot: KeyboardCounters { counters.withLock { $0 } }

    func count(_ m: ControlMessage, played: SessionKeyboard.Play, refused: KeyRefused?) {
        counters.withLock { c in
            if case .key = m { c.keyMessages += 1 }
            if case .text = m { c.textMessages += 1 }
            if case .strokes(let s, _) = played { c.keyEvents += UInt64(s.count) }
            if let r = refused {
                c.refused[r.reason.name, default: 0] += r.reason == .untypable ? UInt64(r.count) : 1
            }
        }
    }
}
