// The TCP control connection: handshake, key confirmation, then sealed
// control frames. Blocking sockets with poll(2) deadlines on every read and
// write, so a silent or slow peer can only ever cost a timeout.


internal import Glibc
import Foundation
import Synchronization

/// Timeouts and caps for control connections.
public struct SessionLimits: Sendable {
    /// From accept (or connect) to key confirmation; an unfinished handshake is dropped.
    public var handshakeTimeout: Double = 5
    /// A connection silent for this long is closed; senders ping every `keepaliveInterval`.
    public var idleTimeout: Double = 30
    public var keepaliveInterval: Double = 10
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

    public var description: String {
        switch self {
        case .handshake(let h): return h.description
        case .frame(let f): return "control frame refused (\(f)); the connection was closed"
        case .timedOut(let what): return "timed out \(what); check the network path and that the peer is running"
        case .closed: return "the peer closed the connection"
        case .peerSaidBye(let r): return "the peer ended the session (\(r))"
        case .io(let s): return "socket error: \(s)"
        case .config(let c): return c.description
        case .confirmationFailed: return "key confirmation failed after the handshake (peer does not hold the session keys)"
        }
    }
}

func monotonicSeconds() -> Double { SessionClocks.monotonic() }

private func errnoString(_ what: String) -> String { "\(what): \(String(cString: strerror(errno)))" }

/// A connected TCP socket, non-blocking underneath, closed on deinit.
public final class TCPConnection: @unchecked Sendable {
    // @unchecked Sendable: handed from the accepting thread to exactly one
    // connection thread; never used by two threads at once.
    let fd: Int32
    private var isClosed = false

    init(fd: Int32) {
        self.fd = fd
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        var one: Int32 = 1
        // Buttons and settings are tiny and latency-sensitive: no Nagle delay.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    public func close() {
        if isClosed { return }
        isClosed = true
        Glibc.close(fd)
    }

    /// Connects to a numeric address or host name, trying each address.
    public static func connect(host: String, port: UInt16, timeout: Double) throws(SessionError) -> TCPConnection {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0, let first = res else {
            throw .io("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(first) }
        let deadline = monotonicSeconds() + timeout
        var lastError = "no address for \(host)"
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            ai = a.pointee.ai_next
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), a.pointee.ai_protocol)
            if fd < 0 { lastError = errnoString("socket"); continue }
            let conn = TCPConnection(fd: fd)
            if Glibc.connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return conn }
            guard errno == EINPROGRESS else { lastError = errnoString("connect to \(host):\(port)"); continue }
            do {
                try conn.wait(for: Int16(POLLOUT), deadline: deadline, what: "connecting to \(host):\(port)")
            } catch {
                lastError = error.description
                if case .timedOut = error { throw error }
                continue
            }
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            if err == 0 { return conn }
            lastError = "connect to \(host):\(port): \(String(cString: strerror(err)))"
        }
        throw .io(lastError)
    }

    func wait(for events: Int16, deadline: Double, what: String) throws(SessionError) {
        while true {
            let left = deadline - monotonicSeconds()
            if left <= 0 { throw .timedOut(what) }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let ms = Int32(min(left * 1000 + 1, Double(Int32.max)))
            let n = poll(&p, 1, ms)
            if n < 0 { if errno == EINTR { continue }; throw .io(errnoString("poll")) }
            if n > 0 { return }
        }
    }

    /// Reads up to `max` bytes, waiting until `deadline`; throws `.closed` at EOF.
    func readSome(max: Int, deadline: Double, what: String) throws(SessionError) -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: max)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
            if n > 0 { return Array(buf[0..<n]) }
            if n == 0 { throw .closed }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                try wait(for: Int16(POLLIN), deadline: deadline, what: what)
                continue
            }
            if errno == ECONNRESET { throw .closed }
            throw .io(errnoString("recv"))
        }
    }

    func readExactly(_ count: Int, deadline: Double, what: String) throws(SessionError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            out += try readSome(max: count - out.count, deadline: deadline, what: what)
        }
        return out
    }

    func writeAll(_ bytes: [UInt8], deadline: Double) throws(SessionError) {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + off, bytes.count - off, Int32(MSG_NOSIGNAL)) }
            if n > 0 { off += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try wait(for: Int16(POLLOUT), deadline: deadline, what: "sending")
                continue
            }
            if n < 0 && (errno == EPIPE || errno == ECONNRESET) { throw .closed }
            throw .io(errnoString("send"))
        }
    }
}

/// A listening TCP socket.
public final class TCPListener: @unchecked Sendable {
    // @unchecked Sendable: the fd is only read after init; close() is idempotent
    // and guarded by a lock so stop() from another thread is safe.
    let fd: Int32
    public let port: UInt16
    private let closed = Mutex(false)

    /// Binds to `host` (numeric IPv4/IPv6 address; "0.0.0.0" or "::" for
    /// all) and `port` (0 picks a free one, see `port`).
    public init(host: String = "0.0.0.0", port: UInt16) throws(SessionError) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0, let a = res else { throw .io("bad listen address \(host): \(String(cString: gai_strerror(rc)))") }
        defer { freeaddrinfo(a) }
        let fd = socket(a.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .io(errnoString("socket")) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 else {
            let e = errnoString("bind \(host):\(port) (is another receiver running?)"); Glibc.close(fd); throw .io(e)
        }
        guard listen(fd, 64) == 0 else { let e = errnoString("listen"); Glibc.close(fd); throw .io(e) }
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &ss) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let family = Int32(ss.ss_family)
        let bound: UInt16 = withUnsafePointer(to: &ss) { p in
            if family == AF_INET6 {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        self.fd = fd
        self.port = bound
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    deinit { close() }

    public func close() {
        let first = closed.withLock { c -> Bool in defer { c = true }; return !c }
        if first { shutdown(fd, Int32(SHUT_RDWR)); Glibc.close(fd) }
    }

    public var isClosed: Bool { closed.withLock { $0 } }

    /// Waits up to `timeout` seconds for a connection; nil on timeout or after close().
    public func accept(timeout: Double) throws(SessionError) -> TCPConnection? {
        let deadline = monotonicSeconds() + timeout
        while !isClosed {
            let c = Glibc.accept(fd, nil, nil)
            if c >= 0 { _ = fcntl(c, F_SETFD, FD_CLOEXEC); return TCPConnection(fd: c) }
            if isClosed { return nil }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK:
                let left = deadline - monotonicSeconds()
                if left <= 0 { return nil }
                // Short slices, so close() from another thread is noticed promptly.
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&p, 1, Int32(min(left, 0.2) * 1000) + 1)
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors: back off instead of spinning.
                usleep(50_000)
            default:
                if isClosed { return nil }
                throw .io(errnoString("accept"))
            }
        }
        return nil
    }
}

/// An established, key-confirmed control session.
public final class ControlChannel {
    public let connection: TCPConnection
    public let result: HandshakeResult
    public let limits: SessionLimits
    let sealer: ControlFrameSealer
    let opener: ControlFrameOpener
    private var pending: [ControlMessage] = []
    public private(set) var isClosed = false

    public var keys: SessionKeys { result.keys }
    public var peer: PublicKey { result.peer }

    init(connection: TCPConnection, result: HandshakeResult, isSender: Bool, limits: SessionLimits) {
        self.connection = connection
        self.result = result
        self.limits = limits
        sealer = ControlFrameSealer(key: isSender ? result.keys.senderToReceiver : result.keys.receiverToSender)
        opener = ControlFrameOpener(key: isSender ? result.keys.receiverToSender : result.keys.senderToReceiver)
    }

    public func send(_ message: ControlMessage, timeout: Double? = nil) throws(SessionError) {
        guard !isClosed else { throw .closed }
        let frame: [UInt8]
        do { frame = try sealer.seal(message) } catch { throw .frame(error) }
        do { try connection.writeAll(frame, deadline: monotonicSeconds() + (timeout ?? limits.idleTimeout)) } catch {
            close(); throw error
        }
    }

    /// The next message. Pings are answered here (and not returned); a bye
    /// ends the session with `.peerSaidBye`. Any bad frame closes the
    /// connection and throws. `timeout` defaults to the idle timeout.
    public func receive(timeout: Double? = nil) throws(SessionError) -> ControlMessage {
        let deadline = monotonicSeconds() + (timeout ?? limits.idleTimeout)
        while true {
            let m = try receiveRaw(deadline: deadline)
            switch m {
            case .ping(let t): try send(.pong(t))
            case .bye(let r): close(); throw .peerSaidBye(r)
            default: return m
            }
        }
    }

    func receiveRaw(deadline: Double) throws(SessionError) -> ControlMessage {
        while pending.isEmpty {
            guard !isClosed else { throw .closed }
            do {
                let bytes = try connection.readSome(max: opener.bytesWanted, deadline: deadline, what: "waiting for a control frame")
                pending = try opener.feed(bytes)
            } catch let e as SessionError {
                close(); throw e
            } catch let e as ControlFrameError {
                close(); throw .frame(e)
            } catch {
                close(); throw .io("\(error)")
            }
        }
        return pending.removeFirst()
    }

    /// Says bye (best effort) and closes.
    public func close(saying reason: ByeReason) {
        if !isClosed { try? send(.bye(reason), timeout: 0.5) }
        close()
    }

    public func close() {
        guard !isClosed else { return }
        isClosed = true
        connection.close()
    }
}

// MARK: - Handshake over a connection

private func readHandshakeMessage(_ c: TCPConnection, deadline: Double) throws(SessionError) -> HandshakeWireMessage {
    let what = "waiting for a handshake message"
    let header = try c.readExactly(HandshakeWireMessage.headerLength, deadline: deadline, what: what)
    do {
        let l = try HandshakeWireMessage.bodyLength(header: header)
        let body = try c.readExactly(l, deadline: deadline, what: what)
        return try HandshakeWireMessage.parse(body: body[...])
    } catch let e as HandshakeWireError {
        throw .handshake(.wire(e))
    } catch let e as SessionError {
        throw e
    } catch {
        throw .io("\(error)")
    }
}

/// The sender's entry points.
public enum RemoloSender {
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
                let path = d.file(PeerList.knownReceiversFile)
                var list = try PeerList.load(from: path)
                list.add(channel.peer, label: label)
                try list.save(to: path)
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
            try conn.writeAll(out.encoded(), deadline: deadline)
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
        let head = try conn.readExactly(2, deadline: deadline, what: "waiting for key confirmation")
        if head == [0x00, 0x02] {
            let body = try conn.readExactly(2, deadline: deadline, what: "reading a refusal")
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
        let conn = try TCPConnection.connect(host: host, port: port, timeout: limits.handshakeTimeout)
        return try establish(hs, on: conn, limits: limits)
    }
}

/// The receiver's accept loop: one thread per connection, a cap on
/// connections still in their handshake, and a callback per confirmed session.
public final class ReceiverServer: Sendable {
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
            guard let conn = try? listener.accept(timeout: 1) else { continue }
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
        while hs.result == nil {
            let msg = try readHandshakeMessage(conn, deadline: deadline)
            let reply: HandshakeWireMessage?
            do { reply = try hs.receive(msg) } catch {
                if let r = hs.refusal { try? conn.writeAll(r.encoded(), deadline: min(deadline, monotonicSeconds() + 0.5)) }
                conn.close()
                throw .handshake(error)
            }
            if let reply { try conn.writeAll(reply.encoded(), deadline: deadline) }
        }
        let channel = ControlChannel(connection: conn, result: hs.result!, isSender: false, limits: limits)
        // Key confirmation: the sender's first frame must be a ping, sealed
        // with the new keys. A replayed or abandoned handshake never gets here.
        guard case .ping(let token) = try channel.receiveRaw(deadline: deadline) else {
            channel.close(); throw .confirmationFailed
        }
        let result = hs.result!
        do { try onConfirmed(result) } catch { channel.close(); throw error }
        // Within the handshake's deadline, not the idle timeout.
        do { try channel.send(.pong(token), timeout: max(0, deadline - monotonicSeconds())) } catch {
            onAbandoned(result)
            channel.close()
            throw error
        }
        return channel
    }
}
