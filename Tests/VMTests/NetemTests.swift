import Foundation
import Testing

/// UDP sockets inside network namespaces, driven from Swift. setns(2) moves
/// only the calling thread, and a socket belongs to the namespace it was
/// created in: so each socket is made on a short-lived thread of its own and
/// then used from anywhere.
enum Netns {
    static let ip = "/usr/sbin/ip"
    static let tc = "/usr/sbin/tc"

    // Swift's Glibc module leaves out the _GNU_SOURCE declarations.
    private typealias SetnsFn = @convention(c) (Int32, Int32) -> Int32
    private static let CLONE_NEWNET: Int32 = 0x4000_0000
    private static let setnsFn: SetnsFn? = dlsym(nil, "setns").map { unsafeBitCast($0, to: SetnsFn.self) }

    /// A UDP socket in namespace `ns`, bound to addr:port.
    static func udpSocket(ns: String, addr: String, port: UInt16) throws -> Int32 {
        final class Box: @unchecked Sendable { var fd: Int32 = -1; var err = "" }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let t = Thread {
            defer { done.signal() }
            guard let setns = setnsFn else { box.err = "no setns in libc"; return }
            let nsfd = open("/run/netns/\(ns)", O_RDONLY | O_CLOEXEC)
            guard nsfd >= 0 else { box.err = "open netns \(ns): \(errno)"; return }
            defer { close(nsfd) }
            guard setns(nsfd, CLONE_NEWNET) == 0 else { box.err = "setns \(ns): \(errno)"; return }
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { box.err = "socket: \(errno)"; return }
            var sa = sockaddrIn(addr, port)
            let r = withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard r == 0 else { box.err = "bind \(addr):\(port): \(errno)"; close(fd); return }
            box.fd = fd
        }
        t.start()
        done.wait()
        try #require(box.fd >= 0, "\(box.err)")
        return box.fd
    }

    static func sockaddrIn(_ addr: String, _ port: UInt16) -> sockaddr_in {
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        inet_pton(AF_INET, addr, &sa.sin_addr)
        return sa
    }
}

/// Two namespaces, "<p>a" (10.77.0.1) and "<p>b" (10.77.0.2), joined by a
/// veth pair; removed again by `close`.
struct VethPair {
    let a: String, b: String
    let dev = "rmlva"

    init(prefix: String) throws {
        a = prefix + "a"; b = prefix + "b"
        for ns in [a, b] { _ = try? run(Netns.ip, "netns", "del", ns) }
        try must(Netns.ip, "netns", "add", a)
        try must(Netns.ip, "netns", "add", b)
        try must(Netns.ip, "-n", a, "link", "add", dev, "type", "veth", "peer", "name", "rmlvb", "netns", b)
        try must(Netns.ip, "-n", a, "addr", "add", "10.77.0.1/24", "dev", dev)
        try must(Netns.ip, "-n", b, "addr", "add", "10.77.0.2/24", "dev", "rmlvb")
        for (ns, d) in [(a, dev), (b, "rmlvb"), (a, "lo"), (b, "lo")] {
            try must(Netns.ip, "-n", ns, "link", "set", d, "up")
        }
    }

    func close() {
        for ns in [a, b] { _ = try? run(Netns.ip, "netns", "del", ns) }
    }

    /// `n` sequential UDP round trips a -> b -> a, milliseconds each. The
    /// echo is done by this thread too, so nothing else adds scheduling
    /// noise.
    func roundTrips(_ n: Int) throws -> [Double] {
        let cli = try Netns.udpSocket(ns: a, addr: "10.77.0.1", port: 0)
        let srv = try Netns.udpSocket(ns: b, addr: "10.77.0.2", port: 9477)
        defer { Glibc.close(cli); Glibc.close(srv) }
        var to = Netns.sockaddrIn("10.77.0.2", 9477)
        var buf = [UInt8](repeating: 0, count: 64)
        var rtts: [Double] = []

        func waitReadable(_ fd: Int32) throws {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            try #require(poll(&p, 1, 3000) == 1, "no datagram within 3 s")
        }

        for i in 0..<n {
            var payload = UInt32(i).bigEndian
            let t0 = monotonicNs()
            let s = withUnsafePointer(to: &to) { pto in
                pto.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(cli, &payload, 4, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(s == 4)
            try waitReadable(srv)
            var from = sockaddr_storage()
            var flen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let got = withUnsafeMutablePointer(to: &from) { pf in
                pf.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(srv, &buf, buf.count, 0, $0, &flen) }
            }
            try #require(got == 4)
            let back = withUnsafePointer(to: &from) { pf in
                pf.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(srv, buf, 4, 0, $0, flen) }
            }
            try #require(back == 4)
            try waitReadable(cli)
            try #require(recv(cli, &buf, buf.count, 0) == 4)
            rtts.append(Double(monotonicNs() - t0) / 1e6)
            try #require(buf.prefix(4).elementsEqual(withUnsafeBytes(of: &payload) { Array($0) }))
        }
        return rtts
    }
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : s[s.count / 2]
}

func fmt(_ xs: [Double]) -> String { xs.map { String(format: "%.1f", $0) }.joined(separator: " ") }

extension VMSuite {
    /// netem on a veth between two namespaces: the impairments the product
    /// will be tested under really apply. Guest timing is noisy (RTT on an
    /// idle veth ranges 0.3-30 ms under emulation), so the checks use the
    /// one thing noise cannot do: make a packet faster than netem allows.
    @Suite(.enabled(if: VMEnv.netem, VMEnv.netemReason))
    struct Netem {
        @Test func delayWithJitter() throws {
            let v = try VethPair(prefix: "rmld")
            defer { v.close() }
            let base = try v.roundTrips(15)

            try must(Netns.tc, "-n", v.a, "qdisc", "add", "dev", v.dev, "root", "netem", "delay", "20ms", "10ms")
            let show = try run(Netns.tc, "-n", v.a, "qdisc", "show", "dev", v.dev).output
            #expect(show.contains("netem") && show.contains("delay 20ms  10ms") || show.contains("delay 20ms 10ms"),
                    "\(show)")
            let delayed = try v.roundTrips(25)
            print("netem delay 20ms 10ms: base [\(fmt(base))] ms, delayed [\(fmt(delayed))] ms")

            // 20 ms +- 10 ms, one way: never under 10 ms.
            #expect(delayed.min()! >= 9.5, "faster than netem allows: \(fmt(delayed))")
            #expect(median(delayed) >= 14 && median(delayed) <= 80, "median \(median(delayed))")
            #expect(median(delayed) - median(base) >= 8, "base \(fmt(base)) delayed \(fmt(delayed))")
            // Jitter: uniform over 20 ms, so 25 samples spread well apart.
            #expect(delayed.max()! - delayed.min()! >= 4, "no jitter: \(fmt(delayed))")

            try must(Netns.tc, "-n", v.a, "qdisc", "del", "dev", v.dev, "root")
            let after = try v.roundTrips(15)
            #expect(median(after) < median(delayed), "removing netem: \(fmt(after))")
        }

        @Test func slots() throws {
            let v = try VethPair(prefix: "rmls")
            defer { v.close() }
            // Packets leave only in slots 25 ms apart: a lone packet waits
            // for the next slot.
            try must(Netns.tc, "-n", v.a, "qdisc", "add", "dev", v.dev, "root", "netem", "slot", "25ms", "25ms")
            let show = try run(Netns.tc, "-n", v.a, "qdisc", "show", "dev", v.dev).output
            #expect(show.contains("slot 25ms 25ms"), "\(show)")
            let rtts = try v.roundTrips(15)
            print("netem slot 25ms 25ms: [\(fmt(rtts))] ms")
            #expect(rtts.min()! >= 20, "a packet skipped its slot: \(fmt(rtts))")
            #expect(median(rtts) <= 80, "\(fmt(rtts))")
        }
    }
}
