// Handshake messages on the TCP control connection, before any control frame:
//
//   u16 big-endian length L (1...maxLength) | u8 type | L-1 bytes of Noise message
//
// Every type has one exact size (the Noise payloads are fixed-size), so the
// parser can refuse anything else before doing any cryptography. This file
// depends only on Foundation/Glibc (fuzz harnesses compile it directly).

/// The kinds of handshake message (docs/protocol.md, "Handshake messages on the wire").
public enum HandshakeMessageType: UInt8, Sendable, CaseIterable {
    /// IK message 1, sender -> receiver: e, es, s, ss, payload(version, TAI64N).
    case sessionInit = 0x01
    /// IK message 2, receiver -> sender: e, ee, se, payload(version, session id).
    case sessionResponse = 0x02
    /// XXpsk3 message 1, sender -> receiver: e, payload(empty).
    case pairInit = 0x11
    /// XXpsk3 message 2, receiver -> sender: e, ee, s, es, payload(version, session id).
    case pairResponse = 0x12
    /// XXpsk3 message 3, sender -> receiver: s, se, psk, payload(version, TAI64N).
    case pairFinish = 0x13
    /// Unauthenticated refusal, receiver -> sender: one reason byte. A hint
    /// for the user only: an attacker on the path can forge it (but could
    /// equally just drop the connection).
    case refusal = 0x7f

    /// The exact Noise-message size for each type (without the type byte).
    var noiseLength: Int {
        let tag = 16, key = 32
        switch self {
        case .sessionInit: return key + (key + tag) + (HandshakePayload.initiatorLength + tag)
        case .sessionResponse: return key + (HandshakePayload.responderLength + tag)
        // XXpsk3: "e" with a PSK also runs MixKey, so even the first payload
        // (empty) carries a tag.
        case .pairInit: return key + tag
        case .pairResponse: return key + (key + tag) + (HandshakePayload.responderLength + tag)
        case .pairFinish: return (key + tag) + (HandshakePayload.initiatorLength + tag)
        case .refusal: return 1
        }
    }
}

/// Why the receiver refused a handshake (the refusal message's byte).
public enum RefusalReason: UInt8, Error, Sendable, CaseIterable {
    case notPaired = 1
    case pairingUnavailable = 2
    case pairingSecretWrong = 3
    case busy = 4
    case staleTimestamp = 5
    case unsupportedVersion = 6
    case malformed = 7
}

public enum HandshakeWireError: Error, Equatable, Sendable {
    case badLength(Int)
    case unknownType(UInt8)
    case wrongSize(type: UInt8, expected: Int, actual: Int)
}

public struct HandshakeWireMessage: Equatable, Sendable {
    /// The largest L accepted; the largest real message is 110 bytes.
    public static let maxLength = 256
    public static let headerLength = 2

    public let type: HandshakeMessageType
    public let noiseMessage: [UInt8]

    public init(type: HandshakeMessageType, noiseMessage: [UInt8]) {
        self.type = type
        self.noiseMessage = noiseMessage
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(3 + noiseMessage.count)
        out.appendBE(UInt16(1 + noiseMessage.count))
        out.append(type.rawValue)
        out += noiseMessage
        return out
    }

    /// The body length announced by a 2-byte header, checked before reading it.
    public static func bodyLength(header: some Collection<UInt8>) throws(HandshakeWireError) -> Int {
        guard header.count == headerLength else { throw .badLength(header.count) }
        let l = Int(header[header.startIndex]) << 8 | Int(header[header.index(after: header.startIndex)])
        guard (2...maxLength).contains(l) else { throw .badLength(l) }
        return l
    }

    /// Parses a body (type byte + Noise message).
    public static func parse(body: ArraySlice<UInt8>) throws(HandshakeWireError) -> HandshakeWireMessage {
        guard let first = body.first else { throw .badLength(0) }
        guard let type = HandshakeMessageType(rawValue: first) else { throw .unknownType(first) }
        let rest = body.dropFirst()
        guard rest.count == type.noiseLength else {
            throw .wrongSize(type: first, expected: type.noiseLength, actual: rest.count)
        }
        return HandshakeWireMessage(type: type, noiseMessage: Array(rest))
    }

    /// Parses one whole message (header + body) from a buffer; returns the
    /// message and the bytes consumed, or nil if more bytes are needed.
    public static func parse(stream: ArraySlice<UInt8>) throws(HandshakeWireError) -> (HandshakeWireMessage, Int)? {
        guard stream.count >= headerLength else { return nil }
        let l = try bodyLength(header: stream.prefix(headerLength))
        guard stream.count >= headerLength + l else { return nil }
        let start = stream.startIndex + headerLength
        return (try parse(body: stream[start..<(start + l)]), headerLength + l)
    }
}

/// The protocol version a peer speaks: the handshake payload's version
/// byte, which is also what a receiver announces in DNS-SD (`proto=`), so a
/// sender can tell an incompatible receiver before connecting.
public enum RemoloProtocol {
    public static var version: Int { Int(HandshakePayload.version) }
}

/// The fixed-size payloads carried inside the Noise messages.
enum HandshakePayload {
    static let version: UInt8 = 1
    /// version (1) | TAI64N timestamp (12)
    static let initiatorLength = 13
    /// version (1) | session id (8)
    static let responderLength = 9

    static func initiator(timestamp: TAI64N) -> [UInt8] { [version] + timestamp.bytes }

    static func parseInitiator(_ p: [UInt8]) -> (version: UInt8, timestamp: TAI64N)? {
        guard p.count == initiatorLength else { return nil }
        return (p[0], TAI64N(bytes: Array(p[1...])))
    }

    static func responder(sessionID: SessionID) -> [UInt8] { [version] + sessionID.bytes }

    static func parseResponder(_ p: [UInt8]) -> (version: UInt8, sessionID: SessionID)? {
        guard p.count == responderLength else { return nil }
        guard let id = try? SessionID(bytes: p[1...]) else { return nil }
        return (p[0], id)
    }
}

/// A TAI64N label (12 bytes: big-endian 2^62 + 10 + Unix seconds, then
/// big-endian nanoseconds), as WireGuard puts in its first handshake message.
/// The receiver accepts a sender's handshake only if its timestamp is newer
/// than the newest it has seen from that sender, so a recorded message 1
/// cannot be replayed.
public struct TAI64N: Comparable, Hashable, Sendable {
    public let bytes: [UInt8]

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// From Unix time in seconds.
    public init(unixSeconds t: Double) {
        let clamped = max(0, t)
        let secs = UInt64(clamped)
        let nanos = UInt32(min(999_999_999, max(0, (clamped - Double(secs)) * 1e9)))
        var b: [UInt8] = []
        b.appendBE(UInt64(0x4000_0000_0000_000a) &+ secs)
        b.appendBE(nanos)
        bytes = b
    }

    public static func < (a: TAI64N, b: TAI64N) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

/// The 8-byte session id the receiver hands out; it prefixes every datagram
/// of the session in clear, so it is public, and random so that it reveals
/// nothing and collisions are negligible.
/// The same type names the session in the handshake, the session table and
/// the head of every datagram (`WIRE_ID_LEN` in remolo_wire.h).
public struct SessionID: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = 8
    /// The bytes, in wire order.
    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(SessionIDLengthError) {
        guard bytes.count == Self.byteCount else { throw SessionIDLengthError(count: bytes.count) }
        self.bytes = Array(bytes)
    }

    private init(checked bytes: [UInt8]) { self.bytes = bytes }

    /// The same 8 bytes read as a big-endian integer (wire order).
    public var value: UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }

    public var description: String { Hex.encode(bytes) }

    /// A fresh random id (libsodium's CSPRNG).
    @Sendable public static func random() -> SessionID { SessionID(checked: randomBytes(byteCount)) }
}

/// A session id of another length than `SessionID.byteCount`.
public struct SessionIDLengthError: Error, Equatable, Sendable {
    public let count: Int
    public init(count: Int) { self.count = count }
}
