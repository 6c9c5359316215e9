// The sender's side of a control connection: connect, handshake (IK, or
// XXpsk3 to pair), key confirmation.

import Foundation
import RemoloSystem

// MARK: - Handshake over a connection

func readHandshakeMessage(_ c: TCPConnection, deadline: Double) throws(SessionError) -> HandshakeWireMessage {
    let what = "waiting for a handshake message"
    let header = try tcp { () throws(SocketError) in try c.readExactly(HandshakeWireMessage.headerLength, deadline: deadline, what: what) }
    do {
        let l = try HandshakeWireMessage.bodyLength(header: header)
        let body = try tcp { () throws(SocketError) in try c.readExactly(l, deadline: deadline, what: what) }
        return try HandshakeWireMessage.parse(body: body[...])
    } catch let e as HandshakeWireError {
        throw .handshake(.wire(e))
    } catch let e as SessionError {
        throw e
    } catch {
        throw .io("\(error)")
    }
}

/// The sender's entry points: each returns a confirmed session.
extension ControlChannel {
    /// Connects to a paired receiver (Noise IK) and confirms the keys.
    public static func connect(host: String, port: UInt16, identity: Identity, receiver: PublicKey,
                               limits: SessionLimits = SessionLimits()) throws(SessionError) -> ControlChannel {
        let hs = SenderHandshake(identity: identity, mode: .session(receiver: receiver))
        return try run(hs, host: host, port: port, limits: limits)
    }

    /// Pairs with a receiver using the code its user read out (Noise XXpsk3),
    /// confirms the keys, then records the receiver in `known-receivers`
    /// under `label` (if `directory` is given). The returned channel is a
    /// working session.
    public static func pair(host: String, port: UInt16, identity: Identity, secret: PairingSecret,
                            directory: ConfigDirectory?, label: String,
                            limits: SessionLimits = SessionLimits()) throws(SessionError) -> ControlChannel {
        let hs = SenderHandshake(identity: identity, mode: .pairing(secret))
        let channel = try run(hs, host: host, port: port, limits: limits)
        if let d = directory {
            do {
                try d.ensureExists()
                // Under the file's lock: another sender process may be
                // pairing from the same directory right now.
                try PeerList.update(at: d.file(PeerList.knownReceiversFile)) { $0.add(channel.peer, label: label) }
            } catch {
                channel.close()
                throw .config(error)
            }
        }
        return channel
    }

    /// Runs a sender handshake on an already-connected socket.
    public static func establish(_ hs: SenderHandshake, on conn: TCPConnection,
                                 limits: SessionLimits = SessionLimits()) throws(SessionError) -> ControlChannel {
        let deadline = monotonicSeconds() + limits.handshakeTimeout
        var next: HandshakeWireMessage? = hs.start()
        while let out = next {
            try tcp { () throws(SocketError) in try conn.writeAll(out.encoded(), deadline: deadline) }
            if hs.result != nil { break }
            let reply = try readHandshakeMessage(conn, deadline: deadline)
            do { next = try hs.receive(reply) } catch { conn.close(); throw .handshake(error) }
        }
        guard let result = hs.result else { throw .handshake(.connectionClosed) }
        let channel = ControlChannel(connection: conn, result: result, isSender: true, limits: limits)
        // Key confirmation: the receiver answers only if it derived the same
        // keys, which (for pairing) also proves it knew the pairing code.
        let token = randomBytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        try channel.send(.ping(token))
        // After XXpsk3 message 3 the receiver may still refuse (wrong code):
        // its refusal is a handshake message, L = 2, which no frame can have
        // (L >= ControlFrame.minFrameLength), so the first two bytes tell.
        let head = try tcp { () throws(SocketError) in try conn.readExactly(2, deadline: deadline, what: "waiting for key confirmation") }
        if head == [0x00, 0x02] {
            let body = try tcp { () throws(SocketError) in try conn.readExactly(2, deadline: deadline, what: "reading a refusal") }
            conn.close()
            guard let m = try? HandshakeWireMessage.parse(body: body[...]), m.type == .refusal else {
                throw .handshake(.wire(.badLength(2)))
            }
            throw .handshake(.peerRefused(RefusalReason(rawValue: m.noiseMessage[0]) ?? .malformed))
        }
        do { _ = try channel.opener.feed(head) } catch { channel.close(); throw .frame(error) }
        guard case .pong(token) = try channel.receiveRaw(deadline: deadline) else {
            channel.close(); throw .confirmationFailed
        }
        return channel
    }

    private static func run(_ hs: SenderHandshake, host: String, port: UInt16,
                            limits: SessionLimits) throws(SessionError) -> ControlChannel {
        let conn = try tcp { () throws(SocketError) in try TCPConnection.connect(host: host, port: port, timeout: limits.handshakeTimeout) }
        return try establish(hs, on: conn, limits: limits)
    }
}

