// The data-channel extension (feature bit 2): how a web page moves its
// pointer datagrams off its WebSocket (TCP, where one lost segment holds
// back every later datagram) onto an unreliable, unordered RTCDataChannel
// (SCTP over DTLS over UDP, RFC 8831). docs/protocol.md, "The data channel".
//
// The signaling rides this sealed session: the page's offer carries its
// ICE credentials and the SHA-256 of its DTLS certificate, the receiver's
// answer its own and where to reach it. So the DTLS peer at the other end
// is vouched for by the pairing, and nothing new is trusted. Only the
// fields an answer needs travel, not SDP: a control frame holds 512 bytes,
// a browser's SDP offer is often more, and a receiver that parses no SDP
// has no SDP parser to get wrong.

/// ICE characters (RFC 8839 section 5.4, `ice-char`): ALPHA / DIGIT / "+" / "/".
@inline(__always) func isICEChar(_ c: UInt8) -> Bool {
    (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2B || c == 0x2F
}

/// channel offer (0x0D, sender -> receiver): the page's ICE username
/// fragment and password, and the SHA-256 of its DTLS certificate (the
/// `a=fingerprint:sha-256` of its SDP offer).
public struct ChannelOffer: Equatable, Sendable {
    /// RFC 8839: a ufrag has at least 4 characters, a password at least 22;
    /// these maxima are this protocol's (browsers use 4-16 and 22-32).
    public static let ufragLengths = 4...64
    public static let passwordLengths = 22...128
    public static let fingerprintLength = 32

    public var ufrag: String
    public var password: String
    public var fingerprint: [UInt8]

    public init(ufrag: String, password: String, fingerprint: [UInt8]) {
        self.ufrag = ufrag
        self.password = password
        self.fingerprint = fingerprint
    }
}

/// An address in a channel answer: one host candidate.
public enum ChannelAddress: Equatable, Sendable, CustomStringConvertible {
    case v4([UInt8])
    case v6([UInt8])

    public var description: String {
        switch self {
        case .v4(let b): return b.map(String.init).joined(separator: ".")
        case .v6(let b):
            return stride(from: 0, to: 16, by: 2).map { String(UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]), radix: 16) }
                .joined(separator: ":")
        }
    }
}

/// Whether the receiver took the offer.
public enum ChannelAnswerStatus: UInt8, Sendable, CaseIterable {
    /// The endpoint waits for this page's ICE checks.
    case ready = 0
    /// This receiver has no data-channel endpoint (its web page is off, or
    /// its UDP port could not be opened): stay on the WebSocket.
    case unavailable = 1
    /// Too many pages are setting up or using a channel at once.
    case busy = 2
    /// The offer's fields were not acceptable (a ufrag or password the
    /// endpoint refuses).
    case badOffer = 3
}

/// channel answer (0x0E, receiver -> sender): the endpoint's ICE
/// credentials, its DTLS certificate's SHA-256, its UDP port and its host
/// addresses. Only `status` when the status is not `ready`.
public struct ChannelAnswer: Equatable, Sendable {
    /// At most this many addresses (host candidates) in one answer.
    public static let maxAddresses = 8

    public var status: ChannelAnswerStatus
    public var port: UInt16
    public var fingerprint: [UInt8]
    public var ufrag: String
    public var password: String
    public var addresses: [ChannelAddress]

    public init(status: ChannelAnswerStatus, port: UInt16 = 0, fingerprint: [UInt8] = [], ufrag: String = "",
                password: String = "", addresses: [ChannelAddress] = []) {
        self.status = status
        self.port = port
        self.fingerprint = fingerprint
        self.ufrag = ufrag
        self.password = password
        self.addresses = addresses
    }

    public static func refused(_ status: ChannelAnswerStatus) -> ChannelAnswer { ChannelAnswer(status: status) }
}

/// The path a page's datagrams take.
public enum ChannelPathKind: UInt8, Sendable, CaseIterable {
    case webSocket = 0, dataChannel = 1

    public var name: String { self == .webSocket ? "websocket" : "datachannel" }
}

/// Why the page's datagrams take the path they take.
public enum ChannelPathReason: UInt8, Sendable, CaseIterable {
    /// The channel opened (first time, or again after a fallback).
    case opened = 0
    /// The browser has no RTCPeerConnection (WebKitGTK, some embedded views).
    case noPeerConnection = 1
    /// The receiver answered the offer with a status other than ready.
    case refused = 2
    /// The channel did not open within the page's time for it.
    case timedOut = 3
    /// Datagrams sent on the channel stopped reaching the receiver (the
    /// receipts stopped growing) while the WebSocket still works.
    case stalled = 4
    /// The channel or its connection closed or failed.
    case closed = 5

    public var name: String {
        switch self {
        case .opened: return "opened"
        case .noPeerConnection: return "no_peer_connection"
        case .refused: return "refused"
        case .timedOut: return "timed_out"
        case .stalled: return "stalled"
        case .closed: return "closed"
        }
    }
}

/// channel path (0x0F, sender -> receiver): which path the page's
/// datagrams take from now on, and why (for the receiver's statistics;
/// the receiver opens datagrams alike from either).
public struct ChannelPath: Equatable, Sendable {
    public var path: ChannelPathKind
    public var reason: ChannelPathReason

    public init(_ path: ChannelPathKind, _ reason: ChannelPathReason) {
        self.path = path
        self.reason = reason
    }
}

extension ControlMessage {
    /// 1 type + 1 + ufrag + 1 + password + 32.
    static let channelOfferLengths = (3 + ChannelOffer.ufragLengths.lowerBound + ChannelOffer.passwordLengths.lowerBound
        + ChannelOffer.fingerprintLength)...(3 + ChannelOffer.ufragLengths.upperBound
        + ChannelOffer.passwordLengths.upperBound + ChannelOffer.fingerprintLength)
    /// A refusal is 2 bytes; a ready answer 1 + 1 + 2 + 32 + 1 + u + 1 + p + 1 + addresses.
    static let channelAnswerLengths = 2...ControlFrame.maxPlaintextLength

    static func encodeChannel(_ m: ControlMessage, into b: inout [UInt8]) {
        switch m {
        case .channelOffer(let o):
            b.append(UInt8(o.ufrag.utf8.count))
            b.append(contentsOf: o.ufrag.utf8)
            b.append(UInt8(o.password.utf8.count))
            b.append(contentsOf: o.password.utf8)
            b.append(contentsOf: o.fingerprint)
        case .channelAnswer(let a):
            b.append(a.status.rawValue)
            guard a.status == .ready else { return }
            b.appendBE(a.port)
            b.append(contentsOf: a.fingerprint)
            b.append(UInt8(a.ufrag.utf8.count))
            b.append(contentsOf: a.ufrag.utf8)
            b.append(UInt8(a.password.utf8.count))
            b.append(contentsOf: a.password.utf8)
            b.append(UInt8(a.addresses.count))
            for addr in a.addresses {
                switch addr {
                case .v4(let v): b.append(4); b.append(contentsOf: v)
                case .v6(let v): b.append(6); b.append(contentsOf: v)
                }
            }
        case .channelPath(let p):
            b.append(p.path.rawValue)
            b.append(p.reason.rawValue)
        default:
            preconditionFailure("not a data-channel message")
        }
    }

    /// An ICE ufrag or password: a length byte, then that many ice-chars in range.
    private static func iceString(_ r: inout ByteReader, _ lengths: ClosedRange<Int>, _ what: String) throws(ControlFrameError) -> String {
        guard let n = r.read(UInt8.self), lengths.contains(Int(n)) else {
            throw .badMessage("\(what) length outside \(lengths.lowerBound)..\(lengths.upperBound)")
        }
        guard let bytes = r.read(count: Int(n)) else { throw .badMessage("\(what) cut short") }
        guard bytes.allSatisfy(isICEChar) else { throw .badMessage("\(what) has a character ICE does not allow") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes a data-channel message (its length range already checked).
    /// Every field is exact: nothing may follow the last one.
    static func decodeChannel(_ kind: Kind, _ r: inout ByteReader) throws(ControlFrameError) -> ControlMessage {
        let m: ControlMessage
        switch kind {
        case .channelOffer:
            let ufrag = try iceString(&r, ChannelOffer.ufragLengths, "channel offer ufrag")
            let pwd = try iceString(&r, ChannelOffer.passwordLengths, "channel offer password")
            guard let fp = r.read(count: ChannelOffer.fingerprintLength).map(Array.init) else { throw .badMessage("channel offer fingerprint cut short") }
            m = .channelOffer(ChannelOffer(ufrag: ufrag, password: pwd, fingerprint: fp))
        case .channelAnswer:
            guard let raw = r.read(UInt8.self), let status = ChannelAnswerStatus(rawValue: raw) else {
                throw .badMessage("unknown channel answer status")
            }
            guard status == .ready else { m = .channelAnswer(.refused(status)); break }
            guard let port = r.read(UInt16.self), port != 0 else { throw .badMessage("channel answer without a port") }
            guard let fp = r.read(count: ChannelOffer.fingerprintLength).map(Array.init) else { throw .badMessage("channel answer fingerprint cut short") }
            let ufrag = try iceString(&r, ChannelOffer.ufragLengths, "channel answer ufrag")
            let pwd = try iceString(&r, ChannelOffer.passwordLengths, "channel answer password")
            guard let n = r.read(UInt8.self), (1...ChannelAnswer.maxAddresses).contains(Int(n)) else {
                throw .badMessage("channel answer address count outside 1..\(ChannelAnswer.maxAddresses)")
            }
            var addresses: [ChannelAddress] = []
            for _ in 0..<n {
                switch r.read(UInt8.self) {
                case 4:
                    guard let v = r.read(count: 4).map(Array.init) else { throw .badMessage("channel answer address cut short") }
                    addresses.append(.v4(v))
                case 6:
                    guard let v = r.read(count: 16).map(Array.init) else { throw .badMessage("channel answer address cut short") }
                    addresses.append(.v6(v))
                default: throw .badMessage("channel answer address family")
                }
            }
            m = .channelAnswer(ChannelAnswer(status: .ready, port: port, fingerprint: fp, ufrag: ufrag, password: pwd,
                                             addresses: addresses))
        case .channelPath:
            guard let p = ChannelPathKind(rawValue: r.read(UInt8.self)!) else { throw .badMessage("unknown channel path") }
            guard let why = ChannelPathReason(rawValue: r.read(UInt8.self)!) else { throw .badMessage("unknown channel path reason") }
            m = .channelPath(ChannelPath(p, why))
        default:
            preconditionFailure("not a data-channel kind")
        }
        guard r.remaining == 0 else { throw .badMessage("\(r.remaining) bytes after a \(kind) message") }
        return m
    }
}
