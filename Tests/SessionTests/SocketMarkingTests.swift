import Testing
import Foundation
@testable import RemoloSystem

/// Every socket Remolo makes is marked for the lowest-latency queue (DSCP
/// EF and SO_PRIORITY 6), and `::` listens for IPv4 too: read back from the
/// kernel with getsockopt.
@Suite struct SocketMarkingTests {
    func option(_ fd: Int32, _ level: Int32, _ name: Int32) -> Int32 {
        var v: Int32 = -1
        var len = socklen_t(MemoryLayout<Int32>.size)
        let r = getsockopt(fd, level, name, &v, &len)
        return r == 0 ? v : -1000 - errno
    }

    func expectMarked(_ fd: Int32, ipv6: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(option(fd, SOL_SOCKET, SO_PRIORITY) == 6, sourceLocation: sourceLocation)
        #expect(option(fd, Int32(IPPROTO_IP), IP_TOS) == 0xb8, sourceLocation: sourceLocation)
        if ipv6 {
            #expect(option(fd, Int32(IPPROTO_IPV6), IPV6_TCLASS) == 0xb8, sourceLocation: sourceLocation)
        }
    }

    @Test func udpBothWaysAndDualStack() throws {
        try #require(Socket.ipv6Available, "this host has no IPv6")
        let rx = try Socket.bindUDP(host: "::", port: 0)
        defer { close(rx) }
        #expect(Socket.family(rx) == AF_INET6)
        expectMarked(rx, ipv6: true)
        #expect(option(rx, Int32(IPPROTO_IPV6), IPV6_V6ONLY) == 0, "[::] must take IPv4 too")

        let port = try Socket.boundPort(rx)
        let tx4 = try Socket.connectUDP(host: "127.0.0.1", port: port)
        defer { close(tx4) }
        expectMarked(tx4, ipv6: false)
        let tx6 = try Socket.connectUDP(host: "::1", port: port)
        defer { close(tx6) }
        expectMarked(tx6, ipv6: true)

        // An IPv4 sender reaches the dual-stack socket, and so does IPv6.
        for (fd, byte) in [(tx4, UInt8(4)), (tx6, UInt8(6))] {
            var b = byte
            #expect(send(fd, &b, 1, 0) == 1)
            var p = pollfd(fd: rx, events: Int16(POLLIN), revents: 0)
            #expect(poll(&p, 1, 2000) == 1)
            var got: UInt8 = 0
            #expect(recv(rx, &got, 1, 0) == 1)
            #expect(got == byte)
        }
    }

    @Test func tcpListenerAcceptedAndConnected() throws {
        try #require(Socket.ipv6Available, "this host has no IPv6")
        let l = try TCPListener(host: "::", port: 0)
        defer { l.close() }
        expectMarked(l.fd, ipv6: true)
        #expect(option(l.fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY) == 0)

        let c = try TCPConnection.connect(host: "127.0.0.1", port: l.port, timeout: 5)
        expectMarked(c.fd, ipv6: false)
        let a = try #require(try l.accept(timeout: 5))
        #expect(Socket.family(a.fd) == AF_INET6, "an IPv4 peer on the dual-stack listener")
        expectMarked(a.fd, ipv6: true)

        let c6 = try TCPConnection.connect(host: "::1", port: l.port, timeout: 5)
        expectMarked(c6.fd, ipv6: true)
    }

    @Test func specificIPv6AddressStaysIPv6Only() throws {
        try #require(Socket.ipv6Available, "this host has no IPv6")
        // Only the wildcard is made dual-stack; ::1 is left as the kernel has it.
        let fd = try Socket.bindUDP(host: "::1", port: 0)
        defer { close(fd) }
        expectMarked(fd, ipv6: true)
    }

    /// A zone in a numeric IPv6 address (RFC 4007 section 11) becomes the
    /// scope id, by name or by number.
    @Test func zoneBecomesScopeID() throws {
        let lo = Int32(if_nametoindex("lo"))
        try #require(lo > 0)
        for host in ["fe80::1%lo", "fe80::1%\(lo)"] {
            let scope: UInt32? = try Socket.resolve(host, 7420, .datagram, passive: false) { a in
                guard a.pointee.ai_family == AF_INET6 else { return nil }
                return a.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_scope_id }
            }
            #expect(scope == UInt32(lo), "\(host)")
        }
        #expect(Socket.interfaceIndex(holding: "fe80::1%lo") == lo)
        #expect(Socket.interfaceIndex(holding: "127.0.0.1") == lo)
        #expect(Socket.interfaceIndex(holding: "::") == 0)
    }
}
