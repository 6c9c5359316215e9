import Foundation
@testable import RemoloPlayout
import RemoloSystem
import Testing

/// The UDP receive buffer the receiver asks for and reports
/// (docs/architecture.md, "The receiver's sockets").
extension RxSuite {
    @Suite struct ReceiveBufferTests {
        @Test("1: the receiver gets the buffer it asks for, or says how to get it")
        func receiverBuffer() throws {
            let p = try ReceiverTests.Pair()
            let sink = try FrameSink()
            let rx = try p.receiver(into: sink)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let b = rx.receiveBuffer
            #expect(b.asked == Socket.receiveBufferAsk)
            if b.forced || b.cappedAt == nil {
                // The kernel doubles what it is given (socket(7)).
                #expect(b.bytes == 2 * Socket.receiveBufferAsk, "\(b)")
                #expect(b.datagrams >= 10_000)
            } else {
                #expect(b.description.contains("net.core.rmem_max"), "\(b)")
            }
            #expect(rx.statsJSON.contains("\"rcvbuf_bytes\":\(b.bytes)"))
            #expect(rx.statsJSON.contains("\"kernel_drops\":0"), "\(rx.statsJSON)")
        }

        @Test("2: datagrams the kernel drops at a full queue are counted")
        func kernelDrops() throws {
            let fd = try Socket.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(fd) }
            // The smallest queue the kernel allows (SOCK_MIN_RCVBUF): a few
            // datagrams, then it drops.
            var small: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            var addr = sockaddr_in()
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
            let tx = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(tx) }
            #expect(Socket.kernelDrops(fd) == 0)
            let payload = [UInt8](repeating: 7, count: 49)
            for _ in 0..<200 {
                _ = payload.withUnsafeBytes { b in
                    withUnsafePointer(to: &addr) { a in
                        a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(tx, b.baseAddress, b.count, 0, $0, len) }
                    }
                }
            }
            var queued = 0
            var buf = [UInt8](repeating: 0, count: 64)
            while buf.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 { queued += 1 }
            let drops = try #require(Socket.kernelDrops(fd))
            #expect(drops > 0 && Int(drops) + queued == 200, "dropped \(drops), queued \(queued)")
        }
    }
}
