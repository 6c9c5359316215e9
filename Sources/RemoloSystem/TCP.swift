// TCP sockets (the control connection): blocking semantics over
// non-blocking descriptors, with a poll(2) deadline on every read and write,
// so a silent or slow peer can only ever cost a timeout.

internal import Glibc
import Synchronization

private func errnoString(_ what: String) -> String { SystemError.current(what).description }

private func monotonicSeconds() -> Double { MonotonicClock.seconds() }

/// Why a read, write, connect or accept on a TCP socket failed.
public enum SocketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The deadline passed while `what` (e.g. "waiting for a control frame").
    case timedOut(String)
    /// The peer closed the connection (end-of-file or reset).
    case closed
    /// Anything else, with the system's reason.
    case failed(String)

    public var description: String {
        switch self {
        case .timedOut(let what): return "timed out \(what); check the network path and that the peer is running"
        case .closed: return "the peer closed the connection"
        case .failed(let s): return s
        }
    }
}

/// A connected TCP socket, non-blocking underneath, closed on deinit.
public final class TCPConnection: @unchecked Sendable {
    // @unchecked Sendable: handed from the accepting thread to exactly one
    // connection thread; never used by two threads at once.
    public let fd: Int32
    /// Guards the descriptor's end against `shutdownReading()` from another
    /// thread: once closed, its number may belong to another file.
    private let closed = Mutex(false)

    init(fd: Int32) {
        self.fd = fd
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        var one: Int32 = 1
        // Buttons and settings are tiny and latency-sensitive: no Nagle delay.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // Buttons travel here: the same queue as the pointer datagrams.
        Socket.markLowLatency(fd)
    }

    deinit { close() }

    public func close() {
        closed.withLock { c in
            if !c { c = true; Glibc.close(fd) }
        }
    }

    /// Closes after a last message: sends end-of-file behind what was
    /// written, drops whatever the peer sent that nobody read, then closes.
    /// A plain close with unread bytes resets the connection (RFC 1122
    /// 4.2.2.13), and a reset discards what the kernel has not sent yet:
    /// the last message (a bye) could be lost.
    public func closeAfterWriting() {
        closed.withLock { c in
            guard !c else { return }
            _ = shutdown(fd, Int32(SHUT_WR))
            var buf = [UInt8](repeating: 0, count: 4096)
            // Non-blocking: what has arrived, at most a few frames' worth.
            for _ in 0..<64 {
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
            }
            c = true
            Glibc.close(fd)
        }
    }

    /// Ends the reading side (any thread): a read blocked on this
    /// connection returns end-of-file; writing still works.
    public func shutdownReading() {
        closed.withLock { c in
            if !c { _ = shutdown(fd, Int32(SHUT_RD)) }
        }
    }

    /// The other end's address and port, as this end sees them; nil when
    /// the socket cannot say.
    public var peerEndpoint: PeerEndpoint? {
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &ss) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &len) == 0 }
        }
        guard ok else { return nil }
        switch Int32(ss.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &ss) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                    PeerEndpoint(address: withUnsafeBytes(of: a.pointee.sin_addr) { Array($0) },
                                 port: UInt16(bigEndian: a.pointee.sin_port))
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &ss) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    PeerEndpoint(address: withUnsafeBytes(of: a.pointee.sin6_addr) { Array($0) },
                                 port: UInt16(bigEndian: a.pointee.sin6_port))
                }
            }
        default:
            return nil
        }
    }

    /// The /24 of a 4-byte address, the /64 of a 16-byte one (`PeerEndpoint.network`).
    public static func network(of address: [UInt8]) -> String? {
        switch address.count {
        case 4:
            return "\(address[0]).\(address[1]).\(address[2]).0/24"
        case 16:
            let groups = (0..<4).map { String(UInt16(address[2 * $0]) << 8 | UInt16(address[2 * $0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        default:
            return nil
        }
    }

    /// Whatever bytes have arrived (at most `max`), nil if none yet; never
    /// waits. Throws `.closed` at end-of-file.
    public func readAvailable(max: Int) throws(SocketError) -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: max)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
            if n > 0 { return Array(buf[0..<n]) }
            if n == 0 { throw .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return nil
            case ECONNRESET: throw .closed
            default: throw .failed(errnoString("recv"))
            }
        }
    }

    /// Connects to a numeric address or host name, trying each address.
    public static func connect(host: String, port: UInt16, timeout: Double) throws(SocketError) -> TCPConnection {
        let deadline = monotonicSeconds() + timeout
        var lastError = SocketError.failed("no address for \(host)")
        let conn: TCPConnection?
        do throws(SocketSetupError) {
            conn = try Socket.resolve(host, port, .stream, passive: false) { a -> TCPConnection? in
                guard lastError != .timedOut("connecting to \(host):\(port)") else { return nil }
                let fd: Int32
                do throws(SystemError) { fd = try Socket.make(a) } catch { lastError = .failed(error.description); return nil }
                let conn = TCPConnection(fd: fd)
                if Glibc.connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return conn }
                guard errno == EINPROGRESS else { lastError = .failed(errnoString("connect to \(host):\(port)")); return nil }
                do throws(SocketError) {
                    try conn.wait(for: Int16(POLLOUT), deadline: deadline, what: "connecting to \(host):\(port)")
                } catch {
                    lastError = error
                    return nil
                }
                var err: Int32 = 0
                var len = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
                if err == 0 { return conn }
                lastError = .failed("connect to \(host):\(port): \(String(cString: strerror(err)))")
                return nil
            }
        } catch {
            throw .failed(error.description)
        }
        guard let conn else { throw lastError }
        return conn
    }

    public func wait(for events: Int16, deadline: Double, what: String) throws(SocketError) {
        while true {
            let left = deadline - monotonicSeconds()
            if left <= 0 { throw .timedOut(what) }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let ms = Int32(min(left * 1000 + 1, Double(Int32.max)))
            let n = poll(&p, 1, ms)
            if n < 0 { if errno == EINTR { continue }; throw .failed(errnoString("poll")) }
            if n > 0 { return }
        }
    }

    /// Reads up to `max` bytes, waiting until `deadline`; throws `.closed` at EOF.
    public func readSome(max: Int, deadline: Double, what: String) throws(SocketError) -> [UInt8] {
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
            throw .failed(errnoString("recv"))
        }
    }

    public func readExactly(_ count: Int, deadline: Double, what: String) throws(SocketError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            out += try readSome(max: count - out.count, deadline: deadline, what: what)
        }
        return out
    }

    public func writeAll(_ bytes: [UInt8], deadline: Double) throws(SocketError) {
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
            throw .failed(errnoString("send"))
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
    /// A pipe written once by close() and never read: a waiting accept
    /// wakes at once instead of polling in slices, and, as the pipe stays
    /// open until deinit, a poll that begins after close() returns at once
    /// too (the listening fd's number may by then belong to another file).
    private let wakeFD: (read: Int32, write: Int32)

    /// Binds to `host` (numeric IPv4/IPv6 address; "0.0.0.0" for all IPv4,
    /// "::" for all IPv6 and IPv4) and `port` (0 picks a free one, see `port`).
    public init(host: String = "0.0.0.0", port: UInt16) throws(SocketError) {
        var failure = "no address for \(host)"
        let fd: Int32?
        do throws(SocketSetupError) {
            fd = try Socket.resolve(host, port, .stream, passive: true) { a -> Int32? in
                let fd: Int32
                do throws(SystemError) { fd = try Socket.make(a) } catch { failure = error.description; return nil }
                var one: Int32 = 1
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
                Socket.prepareListening(fd, a)
                // Accepted connections inherit the marking, and their
                // handshake replies already travel in the low-latency queue.
                Socket.markLowLatency(fd)
                guard bind(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 else {
                    failure = errnoString("bind \(host):\(port) (is another receiver running?)"); Glibc.close(fd); return nil
                }
                guard listen(fd, 64) == 0 else { failure = errnoString("listen"); Glibc.close(fd); return nil }
                return fd
            }
        } catch {
            throw .failed("bad listen address \(host): \(error)")
        }
        guard let fd else { throw .failed(failure) }
        let bound: UInt16
        do { bound = try Socket.boundPort(fd) } catch { Glibc.close(fd); throw .failed(error.description) }
        var wake: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else { let e = errnoString("pipe"); Glibc.close(fd); throw .failed(e) }
        for w in wake { _ = fcntl(w, F_SETFD, FD_CLOEXEC); _ = fcntl(w, F_SETFL, O_NONBLOCK) }
        self.fd = fd
        self.port = bound
        self.wakeFD = (wake[0], wake[1])
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    deinit { close(); Glibc.close(wakeFD.read); Glibc.close(wakeFD.write) }

    public func close() {
        let first = closed.withLock { c -> Bool in defer { c = true }; return !c }
        guard first else { return }
        var one: UInt8 = 1
        _ = Glibc.write(wakeFD.write, &one, 1)
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    public var isClosed: Bool { closed.withLock { $0 } }

    /// Waits up to `timeout` seconds (`.infinity`: until a connection or
    /// close()) for a connection; nil on timeout or after close(). Sleeps
    /// in one poll: an idle listener costs no wake-ups.
    public func accept(timeout: Double) throws(SocketError) -> TCPConnection? {
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
                // close() from another thread wakes this through wakeFD.
                var p = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                         pollfd(fd: wakeFD.read, events: Int16(POLLIN), revents: 0)]
                let ms: Int32 = left > 86_400 ? -1 : Int32(left * 1000) + 1
                _ = poll(&p, 2, ms)
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                // Out of descriptors: back off instead of spinning.
                usleep(50_000)
            default:
                if isClosed { return nil }
                throw .failed(errnoString("accept"))
            }
        }
        return nil
    }
}


/// One end of a connection: its address, 4 bytes for IPv4 (an IPv6
/// address mapped from IPv4, ::ffff:a.b.c.d, RFC 4291 2.5.5.2, counts as
/// IPv4) or 16 for IPv6, and its port.
public struct PeerEndpoint: Sendable, Hashable {
    public let address: [UInt8]
    public let port: UInt16

    public init(address: [UInt8], port: UInt16) {
        if address.count == 16 && address[0..<10].allSatisfy({ $0 == 0 }) && address[10] == 0xff && address[11] == 0xff {
            self.address = Array(address[12..<16])
        } else {
            self.address = address
        }
        self.port = port
    }

    /// The network the address is on: the IPv4 /24 ("192.168.1.0/24") or
    /// the IPv6 /64 ("fd00:1:2:3::/64"). A home Wi-Fi hands out addresses
    /// from one such prefix, a phone on mobile data or another access
    /// network gets another: the receiver keys what it learned of a
    /// sender's network by it.
    public var network: String? { TCPConnection.network(of: address) }
}
