// The receiver's side of control connections: the accept loop, the cap on
// unauthenticated connections, the handshake and key confirmation.

internal import Glibc
import Foundation
import RemoloSystem
import Synchronization

/// The receiver's accept loop: one thread per connection, a cap on
/// connections still in their handshake, and a callback per confirmed session.
public final class ControlServer: Sendable {
    public let listener: TCPListener
    public let trust: ReceiverTrust
    public let limits: SessionLimits
    let newSessionID: @Sendable () -> SessionID
    let onSession: @Sendable (ControlChannel) -> Void
    let onRejected: @Sendable (SessionError) -> Void
    let onConfirmed: @Sendable (HandshakeResult) throws(SessionError) -> Void
    let onAbandoned: @Sendable (HandshakeResult) -> Void
    let unauthenticated = Mutex(0)

    /// - Parameters:
    ///   - onSession: runs on the connection's own thread with a confirmed
    ///     session; the connection closes when it returns.
    ///   - onRejected: every connection that failed before confirmation (for logs/tests).
    ///   - onConfirmed: runs once the sender's ping proved the keys and before
    ///     the pong, so whatever it registers (the datagram session) is live
    ///     before the sender can use it; throwing refuses the session.
    ///   - onAbandoned: undoes `onConfirmed` when the pong cannot be sent
    ///     (the sender vanished, or the connection was reset on the path):
    ///     no session is left registered without its connection.
    public init(listener: TCPListener, trust: ReceiverTrust, limits: SessionLimits = SessionLimits(),
                newSessionID: @escaping @Sendable () -> SessionID = SessionID.random,
                onRejected: @escaping @Sendable (SessionError) -> Void = { _ in },
                onConfirmed: @escaping @Sendable (HandshakeResult) throws(SessionError) -> Void = { _ in },
                onAbandoned: @escaping @Sendable (HandshakeResult) -> Void = { _ in },
                onSession: @escaping @Sendable (ControlChannel) -> Void) {
        self.listener = listener
        self.trust = trust
        self.limits = limits
        self.newSessionID = newSessionID
        self.onRejected = onRejected
        self.onConfirmed = onConfirmed
        self.onAbandoned = onAbandoned
        self.onSession = onSession
    }

    /// Connections currently in their handshake.
    public var unauthenticatedCount: Int { unauthenticated.withLock { $0 } }

    /// Accepts until `stop()`. Blocks the calling thread.
    public func run() {
        while !listener.isClosed {
            // No timeout: stop() wakes the accept, so an idle receiver sleeps.
            guard let conn = try? listener.accept(timeout: .infinity) else { continue }
            let admitted = unauthenticated.withLock { n -> Bool in
                guard n < limits.maxUnauthenticated else { return false }
                n += 1
                return true
            }
            guard admitted else {
                // Over the cap: close at once, before reading a byte.
                conn.close()
                onRejected(.handshake(.refused(.busy)))
                continue
            }
            let t = Thread { [self] in
                var released = false
                let release = { if !released { released = true; self.unauthenticated.withLock { $0 -= 1 } } }
                do throws(SessionError) {
                    let channel = try self.establish(conn)
                    release()
                    self.onSession(channel)
                    channel.close()
                } catch {
                    release()
                    conn.close()
                    self.onRejected(error)
                }
            }
            t.start()
        }
    }

    public func stop() { listener.close() }

    /// Runs the receiver side of the handshake and key confirmation on one
    /// accepted connection (also usable without `run()`).
    public func establish(_ conn: TCPConnection) throws(SessionError) -> ControlChannel {
        let deadline = monotonicSeconds() + limits.handshakeTimeout
        let hs = ReceiverHandshake(trust: trust, newSessionID: newSessionID)
        // One rule for what a refused handshake gets back: a refusal naming
        // the reason, then the close. Only two cases get no reply: a session
        // init that does not decrypt (not addressed to this receiver), and a
        // connection that ended or fell silent (nobody to tell).
        let refuse = { (r: HandshakeWireMessage) in
            try? conn.writeAll(r.encoded(), deadline: min(deadline, monotonicSeconds() + 0.5)) as Void
        }
        while hs.result == nil {
            let msg: HandshakeWireMessage
            do { msg = try readHandshakeMessage(conn, deadline: deadline) } catch {
                if case .handshake(.wire) = error { refuse(HandshakeWireMessage(type: .refusal, noiseMessage: [RefusalReason.malformed.rawValue])) }
                conn.close()
                throw error
            }
            let reply: HandshakeWireMessage?
            do { reply = try hs.receive(msg) } catch {
                if let r = hs.refusal { refuse(r) }
                conn.close()
                throw .handshake(error)
            }
            if let reply { try tcp { () throws(SocketError) in try conn.writeAll(reply.encoded(), deadline: deadline) } }
        }
        let channel = ControlChannel(connection: conn, result: hs.result!, isSender: false, limits: limits)
        // Key confirmation: the sender's first frame must be a ping, sealed
        // with the new keys. A replayed or abandoned handshake never gets here.
        guard case .ping(let token) = try channel.receiveRaw(deadline: deadline) else {
            channel.close(); throw .confirmationFailed
        }
        var result = hs.result!
        result.endpoint = conn.peerEndpoint
        do { try onConfirmed(result) } catch { channel.close(); throw error }
        // Within the handshake's deadline, not the idle timeout.
        do { try channel.send(.pong(token), timeout: max(0, deadline - monotonicSeconds())) } catch {
            onAbandoned(result)
            channel.close()
            throw error
        }
        // The ping renewed the idle deadline on arrival; the sender learns
        // the session is live only from the pong, so the 30 s count from
        // here (however long registering the session took).
        channel.renewDeadline()
        return channel
    }
}

/// How a one-off pairing (`ControlServer.pairOnce`) ended.
public enum PairingOutcome: Equatable, Sendable {
    /// This sender proved the code; it is now in `authorized-senders`.
    case paired(PublicKey)
    /// A wrong code was tried: the code is gone, pairing locked out for this long.
    case burned(lockout: Double)
    /// The code's lifetime ran out first.
    case expired
    /// The caller's wait ran out first (the code was withdrawn).
    case gaveUp
}

extension ControlServer {
    /// Issues a code, shows it, and serves until one sender pairs with it,
    /// the code is burned or expires, or `wait` seconds pass (on the
    /// authority's clock; the code lives `PairingAuthority.defaultLifetime`
    /// whatever `wait` is). Returns at once when a lockout refuses the code.
    /// `keyboard`: whether the sender that pairs may type (`sender-rights`).
    public static func pairOnce(listener: TCPListener, trust: ReceiverTrust, wait: Double,
                                keyboard: KeyboardRight = .allow,
                                limits: SessionLimits = SessionLimits(),
                                show: (PairingSecret) -> Void,
                                onRejected: @escaping @Sendable (SessionError) -> Void = { _ in })
        throws(PairingError) -> PairingOutcome {
        let paired = Mutex<PublicKey?>(nil)
        let server = ControlServer(listener: listener, trust: trust, limits: limits, onRejected: onRejected,
                                    onSession: { channel in
            if channel.result.isPairing { paired.withLock { $0 = channel.peer } }
            channel.close(saying: .normal)
        })
        let code = try trust.pairing.issue(keyboard: keyboard)
        show(code)
        let done = DispatchSemaphore(value: 0)
        let t = Thread { server.run(); done.signal() }
        t.name = "remolo-pair"
        t.start()
        defer { server.stop(); done.wait() }
        let clock = trust.pairing.clock
        let deadline = clock() + wait
        var usedSince: Double?
        while true {
            if let k = paired.withLock({ $0 }) { return .paired(k) }
            switch trust.pairing.codeState {
            case .burned: return .burned(lockout: trust.pairing.lockoutRemaining)
            case .expired: return .expired
            case .used:
                // Proven at pair finish; the session follows within the
                // handshake's deadline (key confirmation), or never if the
                // sender vanished in between.
                let now = monotonicSeconds()
                if usedSince == nil { usedSince = now }
                if now - usedSince! > limits.handshakeTimeout + 1 { return .gaveUp }
            case .none, .live:
                if clock() >= deadline {
                    trust.pairing.cancel()
                    return paired.withLock({ $0 }).map { .paired($0) } ?? .gaveUp
                }
            }
            usleep(20_000)
        }
    }
}
