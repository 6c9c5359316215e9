// Socket creation in one place: resolve a host and port, create the socket,
// bind or connect it; read the port it is bound to.

internal import Glibc

public enum SocketKind: Sendable {
    case stream, datagram

    var type: Int32 { self == .stream ? Int32(SOCK_STREAM.rawValue) : Int32(SOCK_DGRAM.rawValue) }
}

/// Why a socket could not be made.
public struct SocketSetupError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}

public enum Socket {
    /// The addresses for host:port (numeric or a name; AI_PASSIVE for
    /// binding), each handed to `body` until it returns a value.
    static func resolve<T>(_ host: String, _ port: UInt16, _ kind: SocketKind, passive: Bool,
                           _ body: (UnsafeMutablePointer<addrinfo>) -> T?) throws(SocketSetupError) -> T? {
        var hints = addrinfo()
        hints.ai_socktype = kind.type
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0, let first = res else {
            throw SocketSetupError("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(first) }
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            if let r = body(a) { return r }
            ai = a.pointee.ai_next
        }
        return nil
    }

    /// A new socket for `a`, close-on-exec.
    static func make(_ a: UnsafeMutablePointer<addrinfo>) throws(SystemError) -> Int32 {
        try syscall("socket") { socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), a.pointee.ai_protocol) }
    }

    /// A UDP socket bound to host:port (port 0 picks one; see `boundPort`).
    public static func bindUDP(host: String, port: UInt16) throws(SocketSetupError) -> Int32 {
        var failure = "no address for \(host)"
        let fd: Int32? = try resolve(host, port, .datagram, passive: true) { a in
            do throws(SystemError) {
                let fd = try make(a)
                if bind(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return fd }
                let e = SystemError.current("cannot bind UDP \(host):\(port)")
                close(fd)
                failure = e.description + (e.errno == EADDRINUSE ? " (another receiver running? pick another port)" : "")
            } catch {
                failure = error.description
            }
            return nil
        }
        guard let fd else { throw SocketSetupError(failure) }
        return fd
    }

    /// A UDP socket connected to host:port, marked for the lowest-latency
    /// queue (DSCP EF, as the design note's `.interactiveVoice`).
    public static func connectUDP(host: String, port: UInt16) throws(SocketSetupError) -> Int32 {
        var failure = "no address for \(host)"
        let fd: Int32? = try resolve(host, port, .datagram, passive: false) { a in
            do throws(SystemError) {
                let fd = try make(a)
                if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 {
                    markLowLatency(fd, family: a.pointee.ai_family)
                    return fd
                }
                failure = SystemError.current("udp connect to \(host):\(port)").description
                close(fd)
            } catch {
                failure = error.description
            }
            return nil
        }
        guard let fd else { throw SocketSetupError(failure) }
        return fd
    }

    static func markLowLatency(_ fd: Int32, family: Int32) {
        var tos: Int32 = 0xb8
        let size = socklen_t(MemoryLayout<Int32>.size)
        if family == AF_INET {
            _ = setsockopt(fd, Int32(IPPROTO_IP), IP_TOS, &tos, size)
        } else {
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_TCLASS, &tos, size)
        }
    }

    /// The local port a socket is bound to (IPv4 or IPv6).
    public static func boundPort(_ fd: Int32) throws(SystemError) -> UInt16 {
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &ss) { p throws(SystemError) in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(SystemError) in
                try syscall("getsockname") { getsockname(fd, sa, &len) }
            }
        }
        let family = Int32(ss.ss_family)
        return withUnsafePointer(to: &ss) { p in
            if family == AF_INET6 {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }
}
