// A confirmed control session: sealed control frames both ways over the
// TCP connection (TCP.swift) that the handshake ran on (SenderConnect.swift,
// ControlServer.swift).


internal import Glibc
import Foundation
import RemoloSystem
import Synchronization

/// Timeouts and caps for control connections.
public struct SessionLimits: Sendable {
    /// From accept (or connect) to key confirmation; an unfinished handshake is dropped.
    public var handshakeTimeout: Double = 5
    /// A connection silent for this long is closed (bye 1); every frame
    /// received renews it. Senders ping every `keepaliveInterval`; each
    /// ping's answer carries a receipt, so a second is also how soon a
    /// sender learns that its datagrams stopped getting through.
    public var idleTimeout: Double = 30
    public var keepaliveInterval: Double = 1
    /// A sender whose ping interval plus this margin passes without any
    /// frame from the receiver (a pong answers every ping) takes the
    /// session for dead.
    public var answerMargin: Double = 5
    /// Connections still in their handshake at once; more are closed at accept.
    public var maxUnauthenticated: Int = 8

    public init() {}
}

/// Errors of a control connection.
public enum SessionError: Error, Equatable, Sendable, CustomStringConvertible {
    case handshake(HandshakeError)
    case frame(ControlFrameError)
    case timedOut(String)
    case closed
    case peerSaidBye(ByeReason)
    case io(String)
    case config(ConfigError)
    /// The key-confirmation round (ping/pong right after the handshake) failed.
    case confirmationFailed
    /// This side ended the session (and said bye with this reason).
    case ended(ByeReason)
    /// The peer sent nothing, not even a pong, for this many seconds.
    case peerSilent(Double)

    public var description: String {
        switch self {
        case .handshake(let h): return h.description
        case .frame(let f): return "control frame refused (\(f)); the connection was closed"
        case .timedOut(let what): return SocketError.timedOut(what).description
        case .closed: return SocketError.closed.description
        case .peerSaidBye(let r): return "the peer ended the session (\(r))"
        case .io(let s): return "socket error: \(s)"
        case .config(let c): return c.description
        case .confirmationFailed: return "key confirmation failed after the handshake (peer does not hold the session keys)"
        case .ended(let r): return "the session was ended here (\(r))"
        case .peerSilent(let s):
            return "the peer has not answered for \(Int(s.rounded())) s (no pong to the pings); it stopped or the network dropped"
        }
    }
}

func monotonicSeconds() -> Double { SessionClocks.monotonic() }

extension SessionError {
    /// A socket failure as the session sees it.
    public init(_ e: SocketError) {
        switch e {
        case .timedOut(let what): self = .timedOut(what)
        case .closed: self = .closed
        case .failed(let s): self = .io(s)
        }
    }
}

/// Runs a socket operation, its failure as a session error.
@inline(__always)
func tcp<T>(_ body: () throws(SocketError) -> T) throws(SessionError) -> T {
    do { return try body() } catch { throw SessionError(error) }
}

/// Ends a session from another thread: records why and shuts the
/// connection's reading side, so the channel's own thread (blocked in
/// `receive`) wakes, says bye with that reason and closes. Only the
/// channel's thread ever writes to the connection (the sealer's counter is
/// not shared).
public final class ChannelEnder: Sendable {
    let reason = Mutex<ByeReason?>(nil)
    let connection: TCPConnection

    init(connection: TCPConnection) { self.connection = connection }

    /// The first reason given wins.
    public func end(_ why: ByeReason) {
        let first = reason.withLock { r -> Bool in
            guard r == nil else { return false }
            r = why
            return true
        }
        if first { connection.shutdownReading() }
    }

    var requested: ByeReason? { reason.withLock { $0 } }
}

/// An established, key-confirmed control session.
public final class ControlChannel {
    public let connection: TCPConnection
    public let result: HandshakeResult
    public let limits: SessionLimits
    /// Hands the session's end to other threads (see `ChannelEnder`).
    public let ender: ChannelEnder
    let sealer: ControlFrameSealer
    let opener: ControlFrameOpener
    private var pending: [ControlMessage] = []
    public private(set) var isClosed = false
    /// When the last frame from the peer arrived (monotonic seconds).
    public private(set) var lastHeard: Double
    /// Messages taken from the peer so far, pings and pongs included: the
    /// key-confirmation ping is message 1.
    public private(set) var messagesReceived = 0
    /// What to send after each pong `receive` answers (the receiver's receipt).
    public var afterPong: (() -> ControlMessage?)?

    public var keys: SessionKeys { result.keys }
    public var peer: PublicKey { result.peer }

    init(connection: TCPConnection, result: HandshakeResult, isSender: Bool, limits: SessionLimits) {
        self.connection = connection
        self.result = result
        self.limits = limits
        ender = ChannelEnder(connection: connection)
        lastHeard = monotonicSeconds()
        sealer = ControlFrameSealer(key: isSender ? result.keys.senderToReceiver : result.keys.receiverToSender)
        opener = ControlFrameOpener(key: isSender ? result.keys.receiverToSender : result.keys.senderToReceiver)
    }

    public func send(_ message: ControlMessage, timeout: Double? = nil) throws(SessionError) {
        guard !isClosed else { throw .closed }
        let frame: [UInt8]
        do { frame = try sealer.seal(message) } catch { throw .frame(error) }
        do { try tcp { () throws(SocketError) in try connection.writeAll(frame, deadline: monotonicSeconds() + (timeout ?? limits.idleTimeout)) } } catch {
            close(); throw error
        }
    }

    /// The next message. Pings are answered here (and not returned); a bye
    /// ends the session with `.peerSaidBye`. Every frame received renews
    /// the deadline: `timeout` (default: the idle timeout) is how long the
    /// peer may stay silent. The session ends, with a bye where one can
    /// still be sealed, on silence (`idleTimeout`), on a bad frame
    /// (`protocolError`), and on `ender.end(reason)` from another thread.
    public func receive(timeout: Double? = nil) throws(SessionError) -> ControlMessage {
        let silence = timeout ?? limits.idleTimeout
        while true {
            let m: ControlMessage
            do { m = try receiveRaw(deadline: lastHeard + silence) } catch { throw end(after: error) }
            switch m {
            case .ping(let t):
                try send(.pong(t))
                if let extra = afterPong?() { try send(extra) }
            case .bye(let r): close(); throw .peerSaidBye(r)
            default: return m
            }
        }
    }

    /// Every message that has already arrived, without waiting: pings are
    /// answered, pongs returned like any other message, a bye throws. For a
    /// sender's frame loop, which must never block on the control channel.
    public func receiveAvailable() throws(SessionError) -> [ControlMessage] {
        var out: [ControlMessage] = []
        do throws(SessionError) {
            while true {
                if pending.isEmpty {
                    guard !isClosed else { throw .closed }
                    guard let bytes = try tcp({ () throws(SocketError) in try connection.readAvailable(max: opener.bytesWanted) }) else { break }
                    do { pending = try opener.feed(bytes) } catch { throw .frame(error) }
                    lastHeard = monotonicSeconds()
                    continue
                }
                let m = pending.removeFirst()
                messagesReceived += 1
                switch m {
                case .ping(let t): try send(.pong(t))
                case .bye(let r): close(); throw .peerSaidBye(r)
                default: out.append(m)
                }
            }
        } catch {
            throw end(after: error)
        }
        return out
    }

    /// Closes after a failed read, saying bye where that still makes sense,
    /// and returns the error to throw.
    private func end(after error: SessionError) -> SessionError {
        if let r = ender.requested {
            close(saying: r)
            return .ended(r)
        }
        switch error {
        case .timedOut: close(saying: .idleTimeout)
        case .frame: close(saying: .protocolError)
        case .peerSaidBye: break
        default: close()
        }
        return error
    }

    /// The next message, frames read until `deadline`; does not close on
    /// errors (the caller decides what to say).
    func receiveRaw(deadline: Double) throws(SessionError) -> ControlMessage {
        while pending.isEmpty {
            guard !isClosed else { throw .closed }
            let bytes = try tcp { () throws(SocketError) in try connection.readSome(max: opener.bytesWanted, deadline: deadline, what: "waiting for a control frame") }
            do { pending = try opener.feed(bytes) } catch { throw .frame(error) }
            lastHeard = monotonicSeconds()
        }
        messagesReceived += 1
        return pending.removeFirst()
    }

    /// The session starts now (the receiver's key-confirmation pong went
    /// out): the idle deadline counts from here, never from before.
    func renewDeadline() { lastHeard = max(lastHeard, monotonicSeconds()) }

    /// Says bye (best effort) and closes, so that the bye is not lost to a
    /// reset (`TCPConnection.closeAfterWriting`).
    public func close(saying reason: ByeReason) {
        guard !isClosed else { return }
        do { try send(.bye(reason), timeout: 0.5) } catch { return }   // send closed it
        isClosed = true
        connection.closeAfterWriting()
    }

    public func close() {
        guard !isClosed else { return }
        isClosed = true
        connection.close()
    }
}

// MARK: - Extensions (ControlKeyboard.swift)

/// How a receiver answered a sender's hello.
public enum HelloOutcome: Equatable, Sendable {
    /// It speaks extensions: what it takes from this sender.
    case answered(ControlHello)
    /// It said bye 2 (a receiver written before extensions): this connection
    /// is closed; open a new one and send no hello to it.
    case olderPeer
}

extension ControlChannel {
    /// The sender's hello, as frame 1 right after key confirmation, and the
    /// receiver's answer. Call it before anything else is sent.
    public func hello(_ features: ControlFeatures) throws(SessionError) -> HelloOutcome {
        try send(.hello(ControlHello(features: features)))
        let deadline = monotonicSeconds() + limits.handshakeTimeout
        do throws(SessionError) {
            switch try receiveRaw(deadline: deadline) {
            case .hello(let h): return .answered(h)
            case .bye(.protocolError):
                close()
                return .olderPeer
            case .bye(let r):
                close()
                throw SessionError.peerSaidBye(r)
            case let other:
                close(saying: .protocolError)
                throw SessionError.io("expected the receiver's hello, got \(other.kind)")
            }
        } catch {
            close()
            throw error
        }
    }
}
