import Foundation
import RemoloPlayout
import RemoloTrace
import Synchronization
#if canImport(Glibc)
internal import Glibc
#endif

/// Forwards real UDP datagrams with a scenario's delays, clumps and losses
/// (`remolo relay`), for demos and tests on kernels without netem. Each
/// datagram received on the listening socket is a sending at its arrival
/// time; `LinkDelivery` (the simulator's link) says when it leaves towards
/// the destination, or that it is lost. Delivery is in order, so the queue
/// is a FIFO; it is bounded (`capacity` datagrams, `maxDatagram` bytes each),
/// and a datagram that finds it full is dropped and counted. One thread,
/// poll(2) on the socket with the time to the next departure as timeout.
public final class UDPRelay: Sendable {
    public struct Stats: Sendable, Equatable {
        public var received = 0
        public var forwarded = 0
        public var lost = 0
        public var overflow = 0
    }

    public static let capacity = 4096
    public static let maxDatagram = 2048

    let fd: Int32
    let destination: sockaddr_in
    let scenario: Scenario
    let seed: UInt64
    private let state = Mutex(Stats())
    private let stopFlag = Atomic<Bool>(false)
    private let blocked = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    /// The bound listening address (port 0 picks one).
    public let listenPort: UInt16

    static func parseAddress(_ s: String) throws(LabError) -> sockaddr_in {
        guard let colon = s.lastIndex(of: ":"), let port = UInt16(s[s.index(after: colon)...]) else {
            throw LabError("'\(s)' is not ADDR:PORT (an IPv4 address and a port, e.g. 127.0.0.1:9000)")
        }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        let host = String(s[..<colon])
        guard inet_pton(AF_INET, host.isEmpty ? "0.0.0.0" : host, &a.sin_addr) == 1 else {
            throw LabError("'\(host)' is not an IPv4 address (in '\(s)')")
        }
        return a
    }

    public init(scenario: Scenario, listen: String, to: String, seed: UInt64 = 1) throws(LabError) {
        var la = try Self.parseAddress(listen)
        destination = try Self.parseAddress(to)
        self.scenario = scenario
        self.seed = seed
        let s = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard s >= 0 else { throw LabError("socket: \(String(cString: strerror(errno)))") }
        let r = withUnsafePointer(to: &la) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else {
            let e = String(cString: strerror(errno))
            close(s)
            throw LabError("cannot listen on \(listen): \(e)")
        }
        var bound = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) }
        }
        listenPort = UInt16(bigEndian: bound.sin_port)
        fd = s
    }

    deinit { close(fd) }

    public var stats: Stats { state.withLock { $0 } }

    /// Asks `run` to return (within 50 ms).
    public func stop() { stopFlag.store(true, ordering: .relaxed) }

    /// Drops every datagram from now on (counted as lost) while true: a
    /// network that lets no UDP through.
    public func setBlocked(_ b: Bool) { blocked.store(b, ordering: .relaxed) }

    static func nowUs() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) * 1e6 + Double(ts.tv_nsec) / 1e3
    }

    /// Relays until `stop()`, or for `seconds` when given. Blocks.
    public func run(seconds: Double? = nil) {
        let t0 = Self.nowUs()
        let until = seconds.map { t0 + $0 * 1e6 }
        // Holds are drawn for a day from now; the relay is for demos.
        var link = LinkDelivery(scenario: scenario, seed: seed, from: t0, to: t0 + 86_400e6)
        var queue: [(at: Double, data: [UInt8])] = []
        queue.reserveCapacity(64)
        var head = 0
        var buf = [UInt8](repeating: 0, count: Self.maxDatagram)
        var dest = destination
        while !stopFlag.load(ordering: .relaxed) {
            let now = Self.nowUs()
            if let u = until, now >= u { break }
            // Send what is due.
            while head < queue.count && queue[head].at <= now {
                let d = queue[head].data
                let n = d.withUnsafeBytes { b in
                    withUnsafePointer(to: &dest) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
                if n >= 0 { state.withLock { $0.forwarded += 1 } }
                head += 1
            }
            if head > 1024 { queue.removeFirst(head); head = 0 }
            var wait = 50.0
            if head < queue.count { wait = min(wait, (queue[head].at - now) / 1000) }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let timeoutMs = Int32(max(0, wait.rounded(.up)))
            guard poll(&pfd, 1, timeoutMs) > 0, pfd.revents & Int16(POLLIN) != 0 else { continue }
            // Drain everything readable.
            while true {
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n < 0 { break }
                let at = Self.nowUs()
                state.withLock { $0.received += 1 }
                guard !blocked.load(ordering: .relaxed), let leave = link.deliver(emitUs: at) else {
                    state.withLock { $0.lost += 1 }
                    continue
                }
                guard queue.count - head < Self.capacity else {
                    state.withLock { $0.overflow += 1 }
                    continue
                }
                // The link's delay includes its smallest one-way delay: the
                // loopback's own is negligible.
                queue.append((leave, Array(buf[0..<n])))
            }
        }
        finished.store(true, ordering: .relaxed)
    }
}
