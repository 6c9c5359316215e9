import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloLab
import RemoloTrace
@testable import RemoloSession
import RemoloSystem
import Testing

/// The whole path on loopback: handshake over TCP, sealed datagrams over
/// UDP, buttons over the control channel, the io_uring loop, frames out.
extension RxSuite {
    @Suite struct ReceiverTests {
        struct Pair {
            let senderID = Identity.generate()
            let receiverID = Identity.generate()
            let trust: ReceiverTrust

            /// `typing`: the sender may type too (a right of its own).
            init(authorized: Bool = true, typing: Bool = true) throws {
                var list = PeerList()
                if authorized { list.add(senderID.publicKey, label: "test sender") }
                trust = try ReceiverTrust(identity: receiverID, directory: nil, authorized: list)
                if authorized && typing { try trust.setKeyboard(senderID.publicKey, .allow) }
            }

            /// A receiver on loopback that trusts this sender, its frames
            /// written into `sink`.
            func receiver(into sink: FrameSink, limits: SessionLimits = SessionLimits(),
                          recordArrivals: ArrivalRecorder? = nil) throws -> Receiver {
                try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .fileDescriptor(sink.writeFD),
                             limits: limits, recordArrivals: recordArrivals)
            }

            /// A receiver writing into a new sink and this sender's session
            /// with it; the caller stops `rx` and keeps `sink` alive until then.
            func session() throws -> (rx: Receiver, tx: Sender, sink: FrameSink) {
                let sink = try FrameSink()
                let rx = try receiver(into: sink)
                do { return (rx, try connect(to: rx), sink) } catch { rx.stop(); throw error }
            }

            /// This sender's session with `rx` (the receiver already knows it).
            func connect(to rx: Receiver, limits: SessionLimits = SessionLimits()) throws -> Sender {
                try Sender.connect(host: "127.0.0.1", port: rx.port, identity: senderID,
                                   receiver: receiverID.publicKey, limits: limits)
            }
        }

        @Test(arguments: [SyntheticGesture.Shape.circle, .swipe])
        func senderMovesReceiver(_ shape: SyntheticGesture.Shape) throws {
            let (rx, tx, sink) = try Pair().session()
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            #expect(rx.liveSessions == 1)
            var g = SyntheticGesture(shape, size: shape == .swipe ? 600 : 150)
            try tx.run(&g, seconds: 0.5)
            let sent = tx.stats
            tx.close()
            #expect(eventually(3) { rx.liveSessions == 0 })
            #expect(eventually(2) { rx.stats.sessionsRemoved == 1 })
            sink.drain()
            let st = rx.stats
            #expect(sent.motionDatagrams >= 55, "sent \(sent.motionDatagrams)")
            #expect(st.opened == sent.motionDatagrams + sent.heartbeats)
            #expect(st.dropped == 0)
            // Whole pixels: the gesture's end point, rounded as the playout rounds.
            #expect(nearestPixel(sink.sum(Event.relX), sent.totalDX), "x: \(sink.sum(Event.relX)) px, sent \(sent.totalDX) Q8")
            #expect(nearestPixel(sink.sum(Event.relY), sent.totalDY), "y: \(sink.sum(Event.relY)) px, sent \(sent.totalDY) Q8")
            #expect(sink.frames.count > Int(sent.motionDatagrams), "frames \(sink.frames.count)")
            let keys = sink.keys()
            if shape == .swipe {
                #expect(keys == [Event(type: Event.evKey, code: Event.btnLeft, value: 1),
                                 Event(type: Event.evKey, code: Event.btnLeft, value: 0)])
                // The drag: the press lands before most of the motion.
                let firstKey = sink.frames.firstIndex { $0.contains { $0.type == Event.evKey } } ?? 0
                #expect(firstKey < sink.frames.count / 4)
            } else {
                #expect(keys.isEmpty)
            }
        }

        @Test func unpairedSenderIsRefused() throws {
            let p = try Pair(authorized: false)
            let sink = try FrameSink()
            let rx = try p.receiver(into: sink)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            #expect(throws: SessionError.self) {
                _ = try p.connect(to: rx)
            }
            #expect(rx.liveSessions == 0)
            #expect(rx.stats.sessionsAdded == 0)
        }

        @Test func pairingCodeGivesAWorkingSession() throws {
            let p = try Pair(authorized: false)
            let sink = try FrameSink()
            let rx = try p.receiver(into: sink)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let code = try p.trust.pairing.issue()
            let tx = try Sender.pair(host: "127.0.0.1", port: rx.port, identity: p.senderID, code: code,
                                     directory: nil, label: "test")
            #expect(p.trust.isAuthorized(p.senderID.publicKey))
            let t = senderClockUs()
            try tx.send(.motion(dx: 256 * 7, dy: 0), at: t)
            try tx.button(.right, down: true, at: t + 1000)
            try tx.button(.right, down: false, at: t + 20_000)
            usleep(200_000)
            tx.close()
            #expect(eventually(3) { rx.stats.sessionsRemoved == 1 })
            sink.drain()
            #expect(sink.sum(Event.relX) == 7)
            #expect(sink.keys().map(\.value) == [1, 0])
        }

        /// The sender vanishes mid-drag (no bye, connection reset): the
        /// receiver still ends the session and lifts the button.
        @Test func vanishedSenderReleasesButton() throws {
            let (rx, tx, sink) = try Pair().session()
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            try tx.button(.left, down: true, at: senderClockUs())
            try tx.send(.motion(dx: 2560, dy: 0), at: senderClockUs())
            usleep(100_000)
            tx.channel.close()     // no bye
            #expect(eventually(3) { rx.stats.sessionsRemoved == 1 })
            sink.drain()
            #expect(sink.keys().map(\.value) == [1, 0])
        }
    }
}

/// `px` whole pixels are the nearest to `q8` (the playout keeps at most half
/// a pixel back as its remainder).
func nearestPixel(_ px: Int64, _ q8: Int64) -> Bool {
    abs(px * 256 - q8) <= 128
}
