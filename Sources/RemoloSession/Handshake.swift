// The Remolo session handshake: Noise IK for paired peers, Noise XXpsk3 for
// pairing, as byte-in/byte-out state machines (no I/O here: the control
// channel moves the bytes over TCP, tests move them in memory).

import Foundation
import RemoloSystem

/// Both ends hash this before anything else (Noise "prologue", rev 34
/// section 6), so a peer speaking another Remolo handshake version fails at
/// the first tag instead of being misinterpreted.
let handshakePrologue = Array("Remolo handshake v1".utf8)
/// HKDF input that separates the datagram key from the Split() keys.
let datagramKeyLabel = "remolo datagram key v1"

/// What a finished handshake gives both ends. The keys are owned by
/// `SecretBytes` (wiped when the last reference goes); copy them out only
/// where another layer needs them (e.g. registering the datagram session).
public struct SessionKeys: Sendable {
    /// Chosen at random by the receiver; prefixes every datagram in clear.
    public let sessionID: SessionID
    /// ChaCha20-Poly1305 key for pointer datagrams, sender -> receiver.
    public let datagramKey: SecretBytes
    /// Control-frame key, sender -> receiver (Noise Split() k1).
    public let senderToReceiver: SecretBytes
    /// Control-frame key, receiver -> sender (Noise Split() k2).
    public let receiverToSender: SecretBytes
    /// The final Noise handshake hash h: identical on both ends, usable for
    /// channel binding.
    public let handshakeHash: [UInt8]
}

public struct HandshakeResult: Sendable {
    public let keys: SessionKeys
    /// The other end's static key (for a pairing, the newly learned one).
    public let peer: PublicKey
    /// True if this handshake was a pairing (XXpsk3).
    public let isPairing: Bool
    /// The sender's address and port as the receiver sees them
    /// (`TCPConnection.peerEndpoint`); nil where unknown (the sender's side).
    /// A phone page's is the web bridge's, on this machine.
    public var endpoint: PeerEndpoint? = nil
}

/// Why a handshake failed.
public enum HandshakeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// We (the receiver) refused the peer for this reason.
    case refused(RefusalReason)
    /// The receiver told us (the sender) it refused us. Unauthenticated: a hint.
    case peerRefused(RefusalReason)
    case wire(HandshakeWireError)
    case crypto(NoiseError)
    case unexpectedMessage(UInt8)
    case unsupportedVersion(UInt8)
    case timedOut
    case connectionClosed
    case io(String)

    public var description: String {
        switch self {
        case .refused(let r), .peerRefused(let r):
            let who = { if case .refused = self { return "refused the sender" } else { return "the receiver refused us" } }()
            switch r {
            case .notPaired: return "\(who): this sender is not paired; pair it first (receiver: issue a pairing code, sender: pair with it)"
            case .pairingUnavailable: return "\(who): no pairing code is active (none issued, expired, used, or locked out after a wrong code); issue a new code on the receiver"
            case .pairingSecretWrong: return "\(who): wrong pairing code; the code is now burned, issue a new one on the receiver"
            case .busy: return "\(who): too many handshakes in progress; retry in a moment"
            case .staleTimestamp: return "\(who): replayed or stale handshake (timestamp not newer than the last one); check the sender's clock"
            case .unsupportedVersion: return "\(who): unsupported protocol version; update both ends"
            case .malformed: return "\(who): malformed handshake"
            }
        case .wire(let e): return "malformed handshake message: \(e)"
        case .crypto(let e): return "handshake authentication failed (\(e)): wrong key, wrong pairing code, or tampering on the way"
        case .unexpectedMessage(let t): return "unexpected handshake message type 0x\(String(t, radix: 16))"
        case .unsupportedVersion(let v): return "peer speaks handshake payload version \(v); update both ends"
        case .timedOut: return "handshake timed out; check the network path and that the receiver is running"
        case .connectionClosed: return "connection closed during the handshake"
        case .io(let s): return "I/O error during the handshake: \(s)"
        }
    }
}

private func finish(_ noise: NoiseHandshake, sessionID: SessionID, peer: [UInt8], isPairing: Bool) -> HandshakeResult {
    let datagram = noise.symmetric.deriveExtraKey(label: datagramKeyLabel)
    let (k1, k2) = noise.split()
    let keys = SessionKeys(sessionID: sessionID, datagramKey: datagram, senderToReceiver: k1,
                           receiverToSender: k2, handshakeHash: noise.handshakeHash)
    return HandshakeResult(keys: keys, peer: PublicKey(bytes: peer)!, isPairing: isPairing)
}

/// The sender's (initiator's) side.
public final class SenderHandshake {
    public enum Mode: Sendable {
        /// A paired receiver: Noise IK with its known static key.
        case session(receiver: PublicKey)
        /// First contact: Noise XXpsk3 with the typed pairing code.
        case pairing(PairingSecret)
    }

    let identity: Identity
    let mode: Mode
    let clock: SessionClock
    let noise: NoiseHandshake
    public private(set) var result: HandshakeResult?

    public convenience init(identity: Identity, mode: Mode, clock: @escaping SessionClock = SessionClocks.wall) {
        self.init(identity: identity, mode: mode, clock: clock, ephemeral: nil)
    }

    init(identity: Identity, mode: Mode, clock: @escaping SessionClock, ephemeral: KeyPair?) {
        self.identity = identity
        self.mode = mode
        self.clock = clock
        switch mode {
        case .session(let receiver):
            noise = NoiseHandshake(pattern: .ik, initiator: true, prologue: handshakePrologue,
                                   staticKey: identity.keyPair, remoteStatic: receiver.bytes, ephemeral: ephemeral)
        case .pairing(let secret):
            noise = NoiseHandshake(pattern: .xxpsk3, initiator: true, prologue: handshakePrologue,
                                   staticKey: identity.keyPair, psk: secret.psk(), ephemeral: ephemeral)
        }
    }

    /// The first message to send.
    public func start() -> HandshakeWireMessage {
        switch mode {
        case .session:
            let p = HandshakePayload.initiator(timestamp: TAI64N(unixSeconds: clock()))
            return HandshakeWireMessage(type: .sessionInit, noiseMessage: try! noise.writeMessage(payload: p))
        case .pairing:
            return HandshakeWireMessage(type: .pairInit, noiseMessage: try! noise.writeMessage(payload: []))
        }
    }

    /// Feeds the receiver's reply; returns the next message to send, if any.
    /// `result` is set once the handshake is complete.
    public func receive(_ msg: HandshakeWireMessage) throws(HandshakeError) -> HandshakeWireMessage? {
        if msg.type == .refusal {
            throw .peerRefused(RefusalReason(rawValue: msg.noiseMessage.first ?? 0) ?? .malformed)
        }
        let expected: HandshakeMessageType
        switch mode {
        case .session: expected = .sessionResponse
        case .pairing: expected = .pairResponse
        }
        guard result == nil, msg.type == expected else { throw .unexpectedMessage(msg.type.rawValue) }
        let payload: [UInt8]
        do { payload = try noise.readMessage(msg.noiseMessage) } catch { throw .crypto(error) }
        guard let (version, sessionID) = HandshakePayload.parseResponder(payload) else { throw .wire(.badLength(payload.count)) }
        guard version == HandshakePayload.version else { throw .unsupportedVersion(version) }
        switch mode {
        case .session(let receiver):
            result = finish(noise, sessionID: sessionID, peer: receiver.bytes, isPairing: false)
            return nil
        case .pairing:
            let p = HandshakePayload.initiator(timestamp: TAI64N(unixSeconds: clock()))
            let m3: [UInt8]
            do { m3 = try noise.writeMessage(payload: p) } catch { throw .crypto(error) }
            result = finish(noise, sessionID: sessionID, peer: noise.remoteStatic!, isPairing: true)
            return HandshakeWireMessage(type: .pairFinish, noiseMessage: m3)
        }
    }
}

/// The receiver's (responder's) side of one connection.
public final class ReceiverHandshake {
    let trust: ReceiverTrust
    let newSessionID: @Sendable () -> SessionID
    private var noise: NoiseHandshake?
    private var pendingSessionID: SessionID?
    /// The generation of the pairing secret this handshake reserved, if any.
    private var pairingReservation: UInt64?
    /// The keyboard right that secret was issued with.
    private var pairingKeyboard = KeyboardRight.deny
    public private(set) var result: HandshakeResult?
    /// Set when the handshake was refused: send it, then close.
    public private(set) var refusal: HandshakeWireMessage?

    /// - Parameter newSessionID: where session ids come from; the datagram
    ///   layer may pass one that avoids ids already in its table.
    public init(trust: ReceiverTrust,
                newSessionID: @escaping @Sendable () -> SessionID = SessionID.random) {
        self.trust = trust
        self.newSessionID = newSessionID
    }

    deinit {
        // Gone before message 3: the secret was not tested; keep it usable.
        if let g = pairingReservation { trust.pairing.released(g) }
    }

    private func refuse(_ r: RefusalReason) -> HandshakeError {
        refusal = HandshakeWireMessage(type: .refusal, noiseMessage: [r.rawValue])
        noise = nil
        return .refused(r)
    }

    /// Feeds one sender message; returns the reply to send, if any. Throws
    /// on refusal (then `refusal` holds the message to send before closing).
    public func receive(_ msg: HandshakeWireMessage) throws(HandshakeError) -> HandshakeWireMessage? {
        guard result == nil, refusal == nil else { throw .unexpectedMessage(msg.type.rawValue) }
        switch (msg.type, noise) {
        case (.sessionInit, nil): return try sessionInit(msg)
        case (.pairInit, nil): return try pairInit(msg)
        case (.pairFinish, .some(let n)) where n.pattern == .xxpsk3: return try pairFinish(msg, n)
        default: throw refuse(.malformed)
        }
    }

    private func sessionInit(_ msg: HandshakeWireMessage) throws(HandshakeError) -> HandshakeWireMessage? {
        let n = NoiseHandshake(pattern: .ik, initiator: false, prologue: handshakePrologue, staticKey: trust.identity.keyPair)
        // Refuse unpaired senders as soon as their static key is decrypted,
        // before the "ss" DH and before the payload is looked at.
        var unpaired = false
        n.remoteStaticCheck = { [trust] rs in
            guard let k = PublicKey(bytes: rs), trust.isAuthorized(k) else { unpaired = true; return false }
            return true
        }
        let payload: [UInt8]
        do { payload = try n.readMessage(msg.noiseMessage) } catch {
            if unpaired { throw refuse(.notPaired) }
            noise = nil
            throw .crypto(error) // not even addressed to us: no reply at all
        }
        guard let (version, ts) = HandshakePayload.parseInitiator(payload) else { throw refuse(.malformed) }
        guard version == HandshakePayload.version else { throw refuse(.unsupportedVersion) }
        let peer = PublicKey(bytes: n.remoteStatic!)!
        guard trust.acceptTimestamp(ts, for: peer) else { throw refuse(.staleTimestamp) }
        let sid = newSessionID()
        let reply: [UInt8]
        do { reply = try n.writeMessage(payload: HandshakePayload.responder(sessionID: sid)) } catch { throw .crypto(error) }
        result = finish(n, sessionID: sid, peer: peer.bytes, isPairing: false)
        return HandshakeWireMessage(type: .sessionResponse, noiseMessage: reply)
    }

    private func pairInit(_ msg: HandshakeWireMessage) throws(HandshakeError) -> HandshakeWireMessage? {
        let psk: SecretBytes
        switch trust.pairing.reserve() {
        case .success(let r): psk = r.psk; pairingReservation = r.generation; pairingKeyboard = r.keyboard
        case .failure(let r): throw refuse(r)
        }
        let n = NoiseHandshake(pattern: .xxpsk3, initiator: false, prologue: handshakePrologue,
                               staticKey: trust.identity.keyPair, psk: psk)
        do {
            let p = try n.readMessage(msg.noiseMessage)
            guard p.isEmpty else { throw refuse(.malformed) }
            let sid = newSessionID()
            let reply = try n.writeMessage(payload: HandshakePayload.responder(sessionID: sid))
            noise = n
            pendingSessionID = sid
            return HandshakeWireMessage(type: .pairResponse, noiseMessage: reply)
        } catch is NoiseError {
            // Only the ephemeral key protects message 1's tag (the PSK enters
            // at message 3): a failure is garbage, not a wrong code.
            throw refuse(.malformed)
        } catch let e as HandshakeError {
            throw e
        } catch {
            throw refuse(.malformed)
        }
    }

    private func pairFinish(_ msg: HandshakeWireMessage, _ n: NoiseHandshake) throws(HandshakeError) -> HandshakeWireMessage? {
        // pairInit set it before creating the state that led here.
        let generation = pairingReservation!
        pairingReservation = nil
        let payload: [UInt8]
        do { payload = try n.readMessage(msg.noiseMessage) } catch {
            // Message 3 is where the PSK enters: a failure here is a wrong
            // code (or tampering). Either way the code is burned, unless it
            // was already replaced or withdrawn.
            trust.pairing.failed(generation)
            throw refuse(.pairingSecretWrong)
        }
        // The right code, but one the user may have withdrawn (or replaced)
        // since this handshake reserved it: that must not pair anybody.
        guard trust.pairing.succeeded(generation) else { throw refuse(.pairingUnavailable) }
        guard let (version, ts) = HandshakePayload.parseInitiator(payload) else { throw refuse(.malformed) }
        guard version == HandshakePayload.version else { throw refuse(.unsupportedVersion) }
        let peer = PublicKey(bytes: n.remoteStatic!)!
        _ = trust.acceptTimestamp(ts, for: peer)
        do {
            try trust.authorize(peer, label: "paired \(ISO8601DateFormatter().string(from: Date()))", keyboard: pairingKeyboard)
        } catch {
            throw .io(error.description)
        }
        result = finish(n, sessionID: pendingSessionID!, peer: peer.bytes, isPairing: true)
        return nil
    }
}
