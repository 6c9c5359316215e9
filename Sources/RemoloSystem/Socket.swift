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

    /// A UDP socket bound to host:port (port 0 picks one; see `boundPort`),
    /// marked for the lowest-latency queue; `::` takes IPv4 too.
    public static func bindUDP(host: String, port: UInt16) throws(SocketSetupError) -> Int32 {
        var failure = "no address for \(host)"
        let fd: Int32? = try resolve(host, port, .datagram, passive: true) { a in
            do throws(SystemError) {
                let fd = try make(a)
                prepareListening(fd, a)
                if bind(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 {
                    markLowLatency(fd)
                    return fd
                }
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

    /// A UDP socket connected to host:port (a numeric IPv6 address may carry
    /// its zone, `fe80::1%wlan0`: RFC 4007 section 11, which getaddrinfo
    /// turns into the scope id), marked for the lowest-latency queue (DSCP
    /// EF, as the design note's `.interactiveVoice`).
    public static func connectUDP(host: String, port: UInt16) throws(SocketSetupError) -> Int32 {
        var failure = "no address for \(host)"
        let fd: Int32? = try resolve(host, port, .datagram, passive: false) { a in
            do throws(SystemError) {
                let fd = try make(a)
                markLowLatency(fd)
                if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return fd }
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

    /// DSCP EF (46) in the traffic class byte: 46 << 2.
    public static let lowLatencyTOS: Int32 = 0xb8
    /// The socket priority for pointer traffic: 6, the highest an
    /// unprivileged process may set (7 needs CAP_NET_ADMIN).
    public static let lowLatencyPriority: Int32 = 6

    /// Marks a socket for the lowest-latency queue, both ways a Wi-Fi driver
    /// may look: DSCP EF in the IP header (mac80211 derives the 802.11 user
    /// priority from the DSCP: 6, voice, under RFC 8325's mapping, 5 under
    /// the older precedence rule) and `SO_PRIORITY` 6 on every packet
    /// (drivers and qdiscs that take the packet's priority as the 802.1d
    /// user priority: 6 is the voice access category). Best effort: a
    /// failure costs latency, never the connection.
    public static func markLowLatency(_ fd: Int32) {
        var tos = lowLatencyTOS
        let size = socklen_t(MemoryLayout<Int32>.size)
        let family = self.family(fd)
        // An IPv6 socket may also carry IPv4 (v4-mapped peers on a dual-stack
        // socket): those packets take IP_TOS, so it gets both.
        _ = setsockopt(fd, Int32(IPPROTO_IP), IP_TOS, &tos, size)
        if family == AF_INET6 {
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_TCLASS, &tos, size)
        }
        // After IP_TOS, which sets the priority from the TOS bits itself.
        var prio = lowLatencyPriority
        _ = setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, size)
    }

    /// Before bind: an IPv6 wildcard (`--listen [::]:7420`) also takes IPv4
    /// (v4-mapped addresses), whatever net.ipv6.bindv6only says, so one
    /// receiver serves both families on one port.
    static func prepareListening(_ fd: Int32, _ a: UnsafeMutablePointer<addrinfo>) {
        guard a.pointee.ai_family == AF_INET6 else { return }
        let wildcard = a.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
            withUnsafeBytes(of: p.pointee.sin6_addr) { $0.allSatisfy { $0 == 0 } }
        }
        guard wildcard else { return }
        var off: Int32 = 0
        _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Whether this host can make IPv6 sockets at all (a kernel booted with
    /// ipv6.disable=1 cannot): the receiver's default address is then
    /// 0.0.0.0 rather than `::`.
    public static var ipv6Available: Bool {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// The index of the interface that holds `host` (a numeric address of
    /// this machine; an IPv6 zone names the interface itself), 0 for a
    /// wildcard or unknown address.
    public static func interfaceIndex(holding host: String) -> Int32 {
        if let pct = host.firstIndex(of: "%") {
            let zone = String(host[host.index(after: pct)...])
            return Int32(UInt32(zone) ?? if_nametoindex(zone))
        }
        var ifs: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&ifs) == 0, let first = ifs else { return 0 }
        defer { freeifaddrs(first) }
        var p: UnsafeMutablePointer<ifaddrs>? = first
        while let i = p {
            defer { p = i.pointee.ifa_next }
            guard let sa = i.pointee.ifa_addr else { continue }
            let family = Int32(sa.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if family == AF_INET {
                sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { var a = $0.pointee.sin_addr; _ = inet_ntop(AF_INET, &a, &buf, socklen_t(buf.count)) }
            } else {
                sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { var a = $0.pointee.sin6_addr; _ = inet_ntop(AF_INET6, &a, &buf, socklen_t(buf.count)) }
            }
            let text = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if text == host, let name = i.pointee.ifa_name { return Int32(if_nametoindex(name)) }
        }
        return 0
    }

    /// AF_INET or AF_INET6 (whatever getsockname says; AF_UNSPEC if it fails).
    public static func family(_ fd: Int32) -> Int32 {
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let r = withUnsafeMutablePointer(to: &ss) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return r == 0 ? Int32(ss.ss_family) : AF_UNSPEC
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
