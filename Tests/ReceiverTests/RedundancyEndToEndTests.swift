import Foundation
import Synchronization
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The redundancy feature agreed per session over real TCP, its datagrams
/// over real UDP through a forwarder that drops every k-th one (README,
/// Protocol, "Extensions and the keyboard"; remolo_wire.h).
extension RxSuite {
    @Suite struct RedundancyEndToEndTests {
        typealias Pair = ReceiverTests.Pair

        /// Forwards datagrams from its own port to `to`, dropping every k-th
        /// (1-based) and counting the bytes of each it forwards.
        final class LossyForwarder: @unchecked Sendable {
            // @unchecked: fd and port are set once; the rest behind Mutexes.
            let fd: Int32
            /// Connected to the receiver: what it forwards leaves from here.
            let out: Int32
            let port: UInt16
            final class State: Sendable {
                let sizes = Mutex<[Int]>([])
                let dropped = Mutex(0)
                let stop = Atomic<Bool>(false)
            }
            let state = State()
            let done = DispatchSemaphore(value: 0)

            init(k: Int, to: UInt16) throws {
                let s = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0), o = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
                let size = socklen_t(MemoryLayout<sockaddr_in>.size)
                var a = sockaddr_in()
                a.sin_family = sa_family_t(AF_INET)
                a.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
                var dst = a
                dst.sin_port = to.bigEndian
                _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, size) } }
                var len = size
                _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) } }
                _ = withUnsafePointer(to: &dst) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(o, $0, size) } }
                var tv = timeval(tv_sec: 0, tv_usec: 50_000)
                setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
                fd = s
                out = o
                port = UInt16(bigEndian: a.sin_port)
                let state = self.state, done = self.done
                Thread {
                    var buf = [UInt8](repeating: 0, count: 2048)
                    var n = 0
                    while !state.stop.load(ordering: .relaxed) {
                        let r = recv(s, &buf, buf.count, 0)
                        guard r > 0 else { continue }
                        n += 1
                        if n % k == 0 { state.dropped.withLock { $0 += 1 }; continue }
                        state.sizes.withLock { $0.append(r) }
                        _ = send(o, buf, r, 0)
                    }
                    done.signal()
                }.start()
            }

            func close() { state.stop.store(true, ordering: .relaxed); done.wait(); Glibc.close(fd); Glibc.close(out) }
        }

        struct Case: Sendable, CustomTestStringConvertible {
            let id: Int
            let what: String
            let senderAsks: Bool
            let receiverGrants: Bool
            var testDescription: String { "\(id). \(what)" }
        }

        @Test(arguments: [
            // 1. Both speak it: 65-byte datagrams, the pointer ends where the
            //    sender's motion ends although every 5th datagram was dropped.
            Case(id: 1, what: "agreed: the lost motion is played", senderAsks: true, receiverGrants: true),
            // 2. A sender that does not ask: the session of before.
            Case(id: 2, what: "a sender that does not ask", senderAsks: false, receiverGrants: true),
            // 3. A receiver that does not grant it (--no-redundancy; what a
            //    receiver that speaks only the keyboard answers alike).
            Case(id: 3, what: "a receiver that does not grant it", senderAsks: true, receiverGrants: false),
        ])
        func strokeThroughALossyLink(_ c: Case) throws {
            let p = try Pair()
            let sink = try FrameSink()
            let rx = try Receiver(host: "127.0.0.1", port: 0, trust: p.trust, output: .fileDescriptor(sink.writeFD),
                                  redundancy: c.receiverGrants)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let link = try LossyForwarder(k: 5, to: rx.port)
            var lines: [String] = []
            let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: p.senderID, receiver: p.receiverID.publicKey,
                                        datagramsTo: ("127.0.0.1", link.port), redundancy: c.senderAsks,
                                        log: { lines.append($0) })
            let agreed = c.senderAsks && c.receiverGrants
            #expect(tx.redundancyGranted == agreed, "case \(c.id)")
            #expect(tx.datagramBytes == (agreed ? 65 : 49), "case \(c.id)")
            #expect(tx.receiverHello == (c.senderAsks ? ControlHello(features: agreed ? .redundancy : [], keyboard: .allowed) : nil),
                    "case \(c.id): \(String(describing: tx.receiverHello))")
            if c.senderAsks && !c.receiverGrants {
                #expect(lines.contains { $0.contains("does not take redundant datagrams") }, "case \(c.id): \(lines)")
            }
            var g = SyntheticGesture(.swipe, size: 600)
            try tx.run(&g, seconds: 0.6)
            // The last datagram may be the dropped one: a heartbeat after it
            // (100 ms later) recovers its motion.
            usleep(150_000)
            try tx.send(.heartbeat, at: senderClockUs())
            let sent = tx.stats
            usleep(100_000)
            tx.close()
            #expect(eventually(3) { rx.liveSessions == 0 })
            link.close()
            sink.drain()
            let st = rx.stats
            let sizes = link.state.sizes.withLock { $0 }
            #expect(!sizes.isEmpty && sizes.allSatisfy { $0 == (agreed ? 65 : 49) }, "case \(c.id): sizes \(Set(sizes))")
            #expect(link.state.dropped.withLock { $0 } >= 10, "case \(c.id)")
            #expect(st.dropped == 0, "case \(c.id): \(st.summary)")
            let x = sink.sum(Event.relX), y = sink.sum(Event.relY)
            if agreed {
                #expect(nearestPixel(x, sent.totalDX) && nearestPixel(y, sent.totalDY),
                        "case \(c.id): x \(x) y \(y) px, sent \(sent.totalDX) \(sent.totalDY) Q8")
                #expect(st.recoveredPackets > 0, "case \(c.id)")
            } else {
                // A fifth of the swipe's 600 px never shown.
                let miss = abs(Double(x) - Double(sent.totalDX) / 256) + abs(Double(y) - Double(sent.totalDY) / 256)
                #expect(miss > 20, "case \(c.id): x \(x) y \(y) px, sent \(sent.totalDX) \(sent.totalDY) Q8")
                #expect(st.recoveredPackets == 0, "case \(c.id)")
            }
        }
    }
}
