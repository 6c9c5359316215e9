import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloLab
import RemoloTrace
@testable import RemoloSession
import RemoloSystem
import Synchronization
import Testing

/// The internet fallback (docs/protocol.md, "receipt"): when datagrams stop
/// getting through, motion moves to the control channel at about 30
/// messages a second, played through the same playout; when they get
/// through again, back to UDP. Nothing that arrives is lost or doubled.
extension RxSuite {
    @Suite struct FallbackTests {
        typealias Pair = ReceiverTests.Pair

        /// Runs a circle through a relay that blocks all UDP for `block`
        /// seconds of the run (or forces the control channel).
        static func run(seconds: Double, block: ClosedRange<Double>?, over: SenderTransport)
            throws -> (sent: SenderStats, rx: ReceiverStats, sink: FrameSink, arrivedQ8: (Int64, Int64), events: [String]) {
            let p = try Pair()
            let sink = try FrameSink()
            var limits = SessionLimits()
            limits.keepaliveInterval = 0.25
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-fallback-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).csv").path
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let recorder = try ArrivalRecorder(path: dir)
            let rx = try p.receiver(into: sink, limits: limits, recordArrivals: recorder)
            let relay = try UDPRelay(scenario: .s1, listen: "127.0.0.1:0", to: "127.0.0.1:\(rx.port)")
            let relayDone = DispatchSemaphore(value: 0)
            Thread { relay.run(); relayDone.signal() }.start()
            let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: p.senderID,
                                        receiver: p.receiverID.publicKey, limits: limits,
                                        datagramsTo: ("127.0.0.1", relay.listenPort))
            let events = Mutex<[String]>([])
            if let b = block {
                Thread {
                    usleep(UInt32(b.lowerBound * 1e6)); relay.setBlocked(true)
                    usleep(UInt32((b.upperBound - b.lowerBound) * 1e6)); relay.setBlocked(false)
                }.start()
            }
            var g = SyntheticGesture(.swipe, size: 2000)
            try tx.run(&g, seconds: seconds, over: over, onEvent: { e in events.withLock { $0.append(e) } })
            usleep(300_000)
            tx.close()
            #expect(eventually(3) { rx.stats.sessionsRemoved == 1 })
            relay.stop()
            relayDone.wait()
            rx.stop()
            sink.drain()
            let trace = try Trace.read(from: dir)
            let moves = trace.records.filter { $0.kind == .motion }
            let q8 = (moves.reduce(Int64(0)) { $0 + Int64($1.dx) }, moves.reduce(Int64(0)) { $0 + Int64($1.dy) })
            return (tx.stats, rx.stats, sink, q8, events.withLock { $0 })
        }

        @Test("1: UDP blocked, then let through: two switches, and the pointer moves by exactly what arrived")
        func switchesBothWays() throws {
            let r = try Self.run(seconds: 4, block: 0.8...2.4, over: .udp)
            #expect(r.sent.switchesToTCP == 1, "\(r.events)")
            #expect(r.sent.switchesToUDP == 1, "\(r.events)")
            #expect(r.sent.fallbackMessages >= 20, "about 30 a second while blocked: \(r.sent.fallbackMessages)")
            #expect(r.events.contains { $0.contains("do not get through") } && r.events.contains { $0.contains("back to UDP") })
            // Exact: every datagram that arrived plus every fallback message.
            let wantX = r.arrivedQ8.0 + r.sent.fallbackDX, wantY = r.arrivedQ8.1 + r.sent.fallbackDY
            #expect(nearestPixel(r.sink.sum(Event.relX), wantX), "x \(r.sink.sum(Event.relX)) px for \(wantX) Q8")
            #expect(nearestPixel(r.sink.sum(Event.relY), wantY), "y \(r.sink.sum(Event.relY)) px for \(wantY) Q8")
            // The drag's press and release came through the control channel.
            #expect(r.sink.keys().map(\.value) == [1, 0])
        }

        @Test("2: --over tcp: all motion in control messages, never a switch, totals exact")
        func forcedControlChannel() throws {
            let r = try Self.run(seconds: 1.5, block: nil, over: .tcp)
            #expect(r.sent.motionDatagrams == 0)
            #expect(r.sent.switchesToTCP == 0 && r.sent.switchesToUDP == 0)
            // About 30 a second: 180 frames of 120 Hz give 45 slots of 33 ms at
            // most; a busy machine stretches the run, never shrinks the count much.
            #expect(r.sent.fallbackMessages >= 30 && r.sent.fallbackMessages <= 46, "\(r.sent.fallbackMessages) in 1.5 s")
            #expect(r.arrivedQ8 == (0, 0))
            #expect(nearestPixel(r.sink.sum(Event.relX), r.sent.fallbackDX))
            #expect(r.sent.fallbackDX > 1900 * 256, "the whole swipe")
        }
    }
}
