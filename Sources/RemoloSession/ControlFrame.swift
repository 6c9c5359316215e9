// Control frames and messages, after the handshake, on the same TCP connection:
//
//   u16 BE length L | u64 BE counter | ChaCha20-Poly1305(key_dir, nonce(counter),
//                                                        ad = length||counter,
//                                                        plaintext = message)
//
// L counts the counter and the ciphertext (tag included). Each direction has
// its own key (Noise Split()) and its own counter, starting at 0 and
// increasing by exactly 1 per frame; anything else closes the connection.
// The parser takes arbitrary bytes and only ever returns messages or throws.
//
// This file depends only on Foundation/Glibc and CSodium (fuzz harnesses
// compile it directly).

/// Why a control frame or message was refused. Any of these closes the
/// connection: TCP cannot lose or reorder, so a bad frame means an attack
/// or a broken peer.
public enum ControlFrameError: Error, Equatable, Sendable {
    /// L is below the smallest possible frame.
    case badLength(Int)
    /// L is above `ControlFrame.maxFrameLength`.
    case oversize(Int)
    /// The counter is not the next expected one (replayed, dropped or reordered frame).
    case outOfOrder(expected: UInt64, got: UInt64)
    /// The tag did not verify: wrong key or altered bytes.
    case badTag
    /// The plaintext is not a valid message.
    case badMessage(String)
    /// The counter space is exhausted; reconnect (never happens in practice).
    case counterExhausted
}

public enum ControlFrame {
    public static let lengthFieldSize = 2
    public static let counterSize = 8
    public static let headerSize = lengthFieldSize + counterSize
    /// The largest message plaintext; all current messages are far smaller.
    public static let maxPlaintextLength = 512
    /// The largest L accepted. Checked from the 2-byte prefix alone, before
    /// reading or buffering the body.
    public static let maxFrameLength = counterSize + maxPlaintextLength + ChaChaPoly.tagLength
    /// The smallest L: a counter, a one-byte message and the tag.
    public static let minFrameLength = counterSize + 1 + ChaChaPoly.tagLength

    /// Validates a length prefix.
    public static func frameLength(_ hi: UInt8, _ lo: UInt8) throws(ControlFrameError) -> Int {
        let l = Int(hi) << 8 | Int(lo)
        if l > maxFrameLength { throw .oversize(l) }
        if l < minFrameLength { throw .badLength(l) }
        return l
    }
}

/// Seals outgoing messages for one direction.
public final class ControlFrameSealer {
    let key: SecretBytes
    public private(set) var counter: UInt64 = 0

    public init(key: SecretBytes) {
        precondition(key.count == 32)
        self.key = key
    }

    public func seal(_ message: ControlMessage) throws(ControlFrameError) -> [UInt8] {
        try seal(plaintext: message.encoded())
    }

    /// Seals raw plaintext (also used by tests and the fuzz harness to build
    /// frames whose content is invalid).
    public func seal(plaintext: [UInt8]) throws(ControlFrameError) -> [UInt8] {
        guard counter < UInt64.max else { throw .counterExhausted }
        guard !plaintext.isEmpty, plaintext.count <= ControlFrame.maxPlaintextLength else {
            throw .badMessage("plaintext of \(plaintext.count) bytes")
        }
        var header: [UInt8] = []
        header.appendBE(UInt16(ControlFrame.counterSize + plaintext.count + ChaChaPoly.tagLength))
        header.appendBE(counter)
        let sealed = ChaChaPoly.seal(key: key, nonce: counter, ad: header, plaintext: plaintext)
        counter += 1
        return header + sealed
    }
}

/// Opens incoming frames for one direction, from a byte stream in any chunks.
public final class ControlFrameOpener {
    let key: SecretBytes
    public private(set) var expectedCounter: UInt64 = 0
    private var buffer: [UInt8] = []
    private var failed = false

    public init(key: SecretBytes) {
        precondition(key.count == 32)
        self.key = key
    }

    /// Bytes still needed before the next frame can be opened (at least 1).
    public var bytesWanted: Int {
        if buffer.count < ControlFrame.lengthFieldSize { return ControlFrame.lengthFieldSize - buffer.count }
        let l = Int(buffer[0]) << 8 | Int(buffer[1])
        return max(1, ControlFrame.lengthFieldSize + l - buffer.count)
    }

    /// Appends received bytes and returns every complete message. After an
    /// error the opener stays failed: the connection must be closed.
    public func feed(_ bytes: some Collection<UInt8>) throws(ControlFrameError) -> [ControlMessage] {
        guard !failed else { throw .badTag }
        buffer.append(contentsOf: bytes)
        var out: [ControlMessage] = []
        do {
            while let m = try next() { out.append(m) }
        } catch {
            failed = true
            buffer = []
            throw error
        }
        return out
    }

    private func next() throws(ControlFrameError) -> ControlMessage? {
        guard buffer.count >= ControlFrame.lengthFieldSize else { return nil }
        // The length is checked before waiting for (or buffering) the body.
        let l = try ControlFrame.frameLength(buffer[0], buffer[1])
        guard buffer.count >= ControlFrame.lengthFieldSize + l else { return nil }
        var r = ByteReader(buffer[0..<(ControlFrame.lengthFieldSize + l)])
        _ = r.read(UInt16.self)
        let counter = r.read(UInt64.self)!
        guard counter == expectedCounter else { throw .outOfOrder(expected: expectedCounter, got: counter) }
        guard counter < UInt64.max else { throw .counterExhausted }
        let header = Array(buffer[0..<ControlFrame.headerSize])
        let sealed = r.readRest()
        guard let plain = ChaChaPoly.open(key: key, nonce: counter, ad: header, ciphertext: sealed) else { throw .badTag }
        // Authentic: consume it, advance the counter, then decode.
        buffer.removeFirst(ControlFrame.lengthFieldSize + l)
        expectedCounter += 1
        return try ControlMessage.decode(plain)
    }
}

// MARK: - Messages

/// Pointer settings the sender pushes to the receiver.
public struct PointerSettings: Equatable, Sendable {
    public static let speedRange: ClosedRange<Float> = 0.05...20
    public static let accelerationRange: ClosedRange<Float> = 0...10
    public static let scrollSpeedRange: ClosedRange<Float> = 0.05...20

    public var pointerSpeed: Float
    public var acceleration: Float
    public var scrollSpeed: Float
    public var naturalScrolling: Bool

    public init(pointerSpeed: Float, acceleration: Float, scrollSpeed: Float, naturalScrolling: Bool) {
        self.pointerSpeed = pointerSpeed
        self.acceleration = acceleration
        self.scrollSpeed = scrollSpeed
        self.naturalScrolling = naturalScrolling
    }
}

public enum MouseButton: UInt8, Sendable, CaseIterable {
    /// Numbered as on the wire; 4 and 5 are a mouse's thumb buttons, named
    /// after their Linux codes BTN_SIDE and BTN_EXTRA (often labelled back
    /// and forward).
    case left = 1, right = 2, middle = 3, side = 4, extra = 5
}

/// A button press or release. Buttons go over TCP (never lost); the sender
/// time lets the receiver play them at the right moment relative to motion.
/// The sequence number counts the sender's button messages: within a session
/// each is the previous one plus one (the first may be anything), so a sender
/// that skipped one (a bug that could leave a button held) is caught: the
/// receiver ends the session (bye 2), which releases every button.
public struct ButtonEvent: Equatable, Sendable {
    public var button: MouseButton
    public var isDown: Bool
    /// Sender clock, nanoseconds (the same clock as the datagrams' sender time).
    public var senderTimeNs: UInt64
    public var sequence: UInt32

    public init(button: MouseButton, isDown: Bool, senderTimeNs: UInt64, sequence: UInt32) {
        self.button = button
        self.isDown = isDown
        self.senderTimeNs = senderTimeNs
        self.sequence = sequence
    }
}

/// Relative motion or scroll, for the internet fallback (no datagrams).
public struct MotionEvent: Equatable, Sendable {
    public var dx: Int32
    public var dy: Int32
    public var senderTimeNs: UInt64

    public init(dx: Int32, dy: Int32, senderTimeNs: UInt64) {
        self.dx = dx
        self.dy = dy
        self.senderTimeNs = senderTimeNs
    }
}

public enum ByeReason: UInt8, Sendable, CaseIterable {
    case normal = 0, idleTimeout = 1, protocolError = 2, shuttingDown = 3, replaced = 4
}

/// Every control message. Encoding: one type byte, then fixed-size
/// big-endian fields; each type has exactly one length.
public enum ControlMessage: Equatable, Sendable {
    case settings(PointerSettings)
    case button(ButtonEvent)
    case motion(MotionEvent)
    case scroll(MotionEvent)
    case ping(UInt64)
    case pong(UInt64)
    case bye(ByeReason)
    /// Receiver -> sender, after each pong: datagrams of this session the
    /// receiver has opened so far (how the sender tells whether UDP gets
    /// through, and when to fall back to the control channel).
    case receipt(UInt64)
    /// What a side speaks (extensions, ControlKeyboard.swift): sender
    /// first, as frame 1; the receiver answers only a sender's hello.
    case hello(ControlHello)
    /// Sender -> receiver, after the receiver's hello granted the keyboard.
    case key(KeyEvent)
    case text(TextInput)
    /// Receiver -> sender: a key or text not (wholly) played, and why.
    case refused(KeyRefused)
    /// The data channel (ControlDataChannel.swift), after the receiver's
    /// hello granted it: the page's offer, the receiver's answer, and which
    /// path the page's datagrams take.
    case channelOffer(ChannelOffer)
    case channelAnswer(ChannelAnswer)
    case channelPath(ChannelPath)
    /// Sender -> receiver, after the receiver's hello granted gestures: the
    /// gesture with this id is over (its last state's sender time). The
    /// datagrams carry the states; this makes the end reliable.
    case gestureEnd(GestureEndMessage)

    public enum Kind: UInt8, Sendable, CaseIterable {
        case settings = 0x01, button = 0x02, motion = 0x03, scroll = 0x04, ping = 0x05, pong = 0x06, bye = 0x07
        case receipt = 0x08
        case hello = 0x09, key = 0x0A, text = 0x0B, refused = 0x0C
        case channelOffer = 0x0D, channelAnswer = 0x0E, channelPath = 0x0F
        case gestureEnd = 0x10

        /// Plaintext lengths including the type byte: one for every type
        /// but text, whose UTF-8 may fill the rest of a frame (a receiver
        /// refuses more than `TextInput.maxBytes` of it, keeping the session).
        public var encodedLengths: ClosedRange<Int> {
            switch self {
            case .settings: return 14...14
            case .button: return 15...15
            case .motion, .scroll: return 17...17
            case .ping, .pong, .receipt: return 9...9
            case .bye: return 2...2
            case .hello: return 6...6
            case .key: return 16...16
            case .text: return (ControlMessage.textHeaderLength + 1)...ControlFrame.maxPlaintextLength
            case .refused: return 8...8
            case .channelOffer: return ControlMessage.channelOfferLengths
            case .channelAnswer: return ControlMessage.channelAnswerLengths
            case .channelPath: return 3...3
            case .gestureEnd: return 10...10
            }
        }
    }

    public var kind: Kind {
        switch self {
        case .settings: return .settings
        case .button: return .button
        case .motion: return .motion
        case .scroll: return .scroll
        case .ping: return .ping
        case .pong: return .pong
        case .bye: return .bye
        case .receipt: return .receipt
        case .hello: return .hello
        case .key: return .key
        case .text: return .text
        case .refused: return .refused
        case .channelOffer: return .channelOffer
        case .channelAnswer: return .channelAnswer
        case .channelPath: return .channelPath
        case .gestureEnd: return .gestureEnd
        }
    }

    public func encoded() -> [UInt8] {
        var b: [UInt8] = [kind.rawValue]
        switch self {
        case .settings(let s):
            b.appendBE(s.pointerSpeed.bitPattern)
            b.appendBE(s.acceleration.bitPattern)
            b.appendBE(s.scrollSpeed.bitPattern)
            b.append(s.naturalScrolling ? 1 : 0)
        case .button(let e):
            b.append(e.button.rawValue)
            b.append(e.isDown ? 1 : 0)
            b.appendBE(e.senderTimeNs)
            b.appendBE(e.sequence)
        case .motion(let m), .scroll(let m):
            b.appendBE(m.dx)
            b.appendBE(m.dy)
            b.appendBE(m.senderTimeNs)
        case .ping(let t), .pong(let t), .receipt(let t):
            b.appendBE(t)
        case .bye(let r):
            b.append(r.rawValue)
        case .hello, .key, .text, .refused:
            Self.encodeExtension(self, into: &b)
        case .channelOffer, .channelAnswer, .channelPath:
            Self.encodeChannel(self, into: &b)
        case .gestureEnd(let g):
            b.append(g.id)
            b.appendBE(g.senderTimeNs)
        }
        return b
    }

    /// Decodes a plaintext; hostile input only ever throws.
    public static func decode(_ bytes: [UInt8]) throws(ControlFrameError) -> ControlMessage {
        guard let t = bytes.first else { throw .badMessage("empty") }
        guard let kind = Kind(rawValue: t) else { throw .badMessage("unknown type 0x\(String(t, radix: 16))") }
        let lengths = kind.encodedLengths
        guard lengths.contains(bytes.count) else {
            let want = lengths.count == 1 ? "\(lengths.lowerBound)" : "\(lengths.lowerBound)..\(lengths.upperBound)"
            throw .badMessage("type 0x\(String(t, radix: 16)) is \(want) bytes, got \(bytes.count)")
        }
        var r = ByteReader(bytes)
        _ = r.read(UInt8.self)
        // Lengths were checked above, so these reads cannot fail.
        switch kind {
        case .settings:
            let speed = Float(bitPattern: r.read(UInt32.self)!)
            let accel = Float(bitPattern: r.read(UInt32.self)!)
            let scroll = Float(bitPattern: r.read(UInt32.self)!)
            let flags = r.read(UInt8.self)!
            guard PointerSettings.speedRange.contains(speed), PointerSettings.accelerationRange.contains(accel),
                  PointerSettings.scrollSpeedRange.contains(scroll) else {
                throw .badMessage("settings out of range") // also rejects NaN
            }
            guard flags <= 1 else { throw .badMessage("settings flags 0x\(String(flags, radix: 16))") }
            return .settings(PointerSettings(pointerSpeed: speed, acceleration: accel, scrollSpeed: scroll,
                                             naturalScrolling: flags == 1))
        case .button:
            let raw = r.read(UInt8.self)!
            guard let button = MouseButton(rawValue: raw) else { throw .badMessage("unknown button \(raw)") }
            let state = r.read(UInt8.self)!
            guard state <= 1 else { throw .badMessage("button state \(state)") }
            return .button(ButtonEvent(button: button, isDown: state == 1, senderTimeNs: r.read(UInt64.self)!,
                                       sequence: r.read(UInt32.self)!))
        case .motion, .scroll:
            let m = MotionEvent(dx: r.read(Int32.self)!, dy: r.read(Int32.self)!, senderTimeNs: r.read(UInt64.self)!)
            return kind == .motion ? .motion(m) : .scroll(m)
        case .ping: return .ping(r.read(UInt64.self)!)
        case .pong: return .pong(r.read(UInt64.self)!)
        case .receipt: return .receipt(r.read(UInt64.self)!)
        case .bye:
            let raw = r.read(UInt8.self)!
            guard let reason = ByeReason(rawValue: raw) else { throw .badMessage("unknown bye reason \(raw)") }
            return .bye(reason)
        case .hello, .key, .text, .refused:
            return try decodeExtension(kind, &r)
        case .channelOffer, .channelAnswer, .channelPath:
            return try decodeChannel(kind, &r)
        case .gestureEnd:
            return .gestureEnd(GestureEndMessage(id: r.read(UInt8.self)!, senderTimeNs: r.read(UInt64.self)!))
        }
    }
}

/// gesture end (0x10, sender -> receiver): u8 id, u64 sender time ns.
public struct GestureEndMessage: Equatable, Sendable {
    public var id: UInt8
    public var senderTimeNs: UInt64
    public init(id: UInt8, senderTimeNs: UInt64) { self.id = id; self.senderTimeNs = senderTimeNs }
}
