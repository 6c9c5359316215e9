import Foundation
import Testing
import Synchronization
@testable import RemoloPlayout
@testable import RemoloLab
import RemoloTrace
@testable import RemoloSession
import RemoloSystem
#if canImport(Glibc)
import Glibc
#endif

/// A loopback UDP socket bound to an ephemeral port.
func loopbackSocket() -> (Int32, UInt16) {
    let s = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) } }
    var tv = timeval(tv_sec: 0, tv_usec: 20_000)
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    return (s, UInt16(bigEndian: a.sin_port))
}

func monoUs() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) * 1e6 + Double(ts.tv_nsec) / 1e3
}

/// Sends `count` numbered datagrams `gapUs` apart through a relay and
/// returns, per number, the measured one-way delay (nil = never came).
func throughRelay(_ scenario: Scenario, count: Int, gapUs: Double) throws -> (delays: [Double?], stats: UDPRelay.Stats) {
    let (rx, rxPort) = loopbackSocket()
    let (tx, _) = loopbackSocket()
    defer { close(rx); close(tx) }
    let relay = try UDPRelay(scenario: scenario, listen: "127.0.0.1:0", to: "127.0.0.1:\(rxPort)", seed: 5)
    let done = Atomic<Bool>(false)
    let thread = Thread { relay.run(seconds: 20); done.store(true, ordering: .relaxed) }
    thread.start()
    var dst = sockaddr_in()
    dst.sin_family = sa_family_t(AF_INET)
    dst.sin_port = relay.listenPort.bigEndian
    dst.sin_addr.s_addr = inet_addr("127.0.0.1")
    var sentAt = [Double](repeating: 0, count: count)
    var delays = [Double?](repeating: nil, count: count)
    var buf = [UInt8](repeating: 0, count: 64)
    let start = monoUs()
    var i = 0
    var quietSince = Double.infinity
    while true {
        let now = monoUs()
        if i < count && now >= start + Double(i) * gapUs {
            var n = UInt32(i).bigEndian
            sentAt[i] = now
            _ = withUnsafeBytes(of: &n) { b in
                withUnsafePointer(to: &dst) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(tx, b.baseAddress, 4, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            }
            i += 1
            if i == count { quietSince = now }
            continue
        }
        let r = buf.withUnsafeMutableBytes { recv(rx, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if r == 4 {
            let k = Int(UInt32(buf[0]) << 24 | UInt32(buf[1]) << 16 | UInt32(buf[2]) << 8 | UInt32(buf[3]))
            if k < count { delays[k] = monoUs() - sentAt[k] }
            if i == count { quietSince = monoUs() }
        } else {
            usleep(200)
        }
        // Stop 400 ms after the last datagram came (or was sent).
        if i == count && monoUs() - quietSince > 400_000 { break }
    }
    relay.stop()
    while !done.load(ordering: .relaxed) { usleep(1000) }
    return (delays, relay.stats)
}

/// S5's ~90 ms stalls, twice a second, over real loopback sockets: most
/// datagrams pass in a few ms, some wait for a stall's end, order is kept.
@Test func relayAppliesStalls() throws {
    let (delays, stats) = try throughRelay(.s5, count: 300, gapUs: 5_000)
    let got = delays.compactMap { $0 }
    #expect(stats.received == 300)
    #expect(stats.lost == 0 && got.count == 300)
    let sorted = got.sorted()
    #expect(sorted[got.count / 2] < 15_000, "median \(sorted[got.count / 2]) us")
    // Over 1.5 s, two or three stalls hold ~15-18 datagrams each.
    #expect(got.filter { $0 > 40_000 }.count >= 10)
    #expect(sorted.last! < 250_000)
}

/// S3's bursty 1.6% loss: the relay loses exactly the datagrams the link
/// model loses (its loss draws do not depend on timing).
@Test func relayAppliesLoss() throws {
    let (delays, stats) = try throughRelay(.s3, count: 1000, gapUs: 1_000)
    var model = LinkDelivery(scenario: .s3, seed: 5, from: 0, to: 86_400e6)
    var expectLost = 0
    for k in 0..<1000 where model.deliver(emitUs: Double(k) * 1000) == nil { expectLost += 1 }
    #expect(stats.received == 1000)
    #expect(stats.lost == expectLost)
    #expect(delays.filter { $0 == nil }.count == expectLost)
    #expect(expectLost > 0)
}
