import Foundation
@testable import Remolo
@testable import RemoloLab
import RemoloTrace
@testable import RemoloSession
import RemoloSystem
import Testing
import RemoloTestSupport

/// How the whole receiver ends sessions, and what the control channel may
/// still play (docs/protocol.md: bye reasons, control messages).
extension RxSuite {
    @Suite struct SessionEndTests {
        typealias Pair = ReceiverTests.Pair


        @Test("1: a sender that only pings outlives the idle timeout several times, then its motion arrives")
        func pingsKeepTheSession() throws {
            let p = try Pair()
            let sink = try FrameSink()
            let limits = SessionLimits.testing(idle: 0.6)
            let rx = try p.receiver(into: sink, limits: limits)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let tx = try p.connect(to: rx, limits: limits)
            var idle = SyntheticGesture(.idle)
            try tx.run(&idle, seconds: 5 * limits.idleTimeout)
            #expect(rx.liveSessions == 1)
            #expect(rx.stats.sessionsRemoved == 0)
            var circle = SyntheticGesture(.circle, size: 100)
            try tx.run(&circle, seconds: 0.5)
            let sent = tx.stats
            tx.close()
            #expect(eventually(3) { rx.stats.sessionsRemoved == 1 })
            sink.drain()
            #expect(sent.sessionsLost == 0)
            #expect(nearestPixel(sink.sum(Event.relX), sent.totalDX), "x \(sink.sum(Event.relX)) of \(sent.totalDX) Q8")
            #expect(nearestPixel(sink.sum(Event.relY), sent.totalDY), "y \(sink.sum(Event.relY)) of \(sent.totalDY) Q8")
            #expect(rx.stats[.unknownSession] == 0)
        }

        @Test("2: a second session from the same sender replaces the first (bye 4); the old one's datagrams no longer count")
        func replacedSession() throws {
            let p = try Pair()
            let sink = try FrameSink()
            let rx = try p.receiver(into: sink)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let first = try p.connect(to: rx)
            try first.button(.left, down: true, at: senderClockUs())
            usleep(50_000)
            let second = try p.connect(to: rx)
            #expect(throws: SessionError.peerSaidBye(.replaced)) { _ = try first.channel.receive(timeout: 3) }
            #expect(rx.liveSessions == 1)
            let before = rx.stats[.unknownSession]
            try first.send(.motion(dx: 256 * 50, dy: 0), at: senderClockUs())
            try second.send(.motion(dx: 256 * 7, dy: 0), at: senderClockUs())
            #expect(eventually(2) { rx.stats[.unknownSession] == before + 1 })
            usleep(100_000)
            second.close()
            #expect(eventually(3) { rx.liveSessions == 0 && rx.stats.sessionsRemoved == 2 })
            sink.drain()
            #expect(sink.sum(Event.relX) == 7, "only the live session moves the pointer")
            // The replaced session's button was released when it ended.
            #expect(sink.keys().map(\.value) == [1, 0])
        }

        @Test("3: stopping the receiver says bye 3 (shutting down) to every session")
        func byeOnShutdown() throws {
            let p = try Pair()
            let sink = try FrameSink()
            let rx = try p.receiver(into: sink)
            defer { withExtendedLifetime(sink) {} }
            let tx = try p.connect(to: rx)
            rx.stop()
            #expect(throws: SessionError.peerSaidBye(.shuttingDown)) { _ = try tx.channel.receive(timeout: 3) }
        }

        @Test("4: settings are refused with bye 2; fallback motion and scroll play through the playout")
        func controlMessages() throws {
            let (rx, tx, sink) = try Pair().session()
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let ns = senderClockUs() * 1000
            try tx.channel.send(.motion(MotionEvent(dx: 256 * 12, dy: -256 * 5, senderTimeNs: ns)))
            try tx.channel.send(.motion(MotionEvent(dx: 256 * 3, dy: 0, senderTimeNs: ns + 33_000_000)))
            // Scroll: dx horizontal (right), dy vertical (up), Q8 hi-res units.
            try tx.channel.send(.scroll(MotionEvent(dx: 256 * 60, dy: 256 * 120, senderTimeNs: ns + 66_000_000)))
            usleep(300_000)
            #expect(rx.liveSessions == 1)
            try tx.channel.send(.settings(PointerSettings(pointerSpeed: 1, acceleration: 1, scrollSpeed: 1,
                                                          naturalScrolling: false)))
            #expect(throws: SessionError.peerSaidBye(.protocolError)) { _ = try tx.channel.receive(timeout: 3) }
            #expect(eventually(3) { rx.stats.sessionsRemoved == 1 })
            sink.drain()
            #expect(sink.sum(Event.relX) == 15)
            #expect(sink.sum(Event.relY) == -5)
            #expect(rx.stats.totalWheelHiRes == 120)
            #expect(rx.stats.totalHWheelHiRes == 60)
        }

        @Test("5: drop reasons and counters are named as in docs/protocol.md")
        func statsNamesMatchTheProtocolPage() throws {
            let page = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/protocol.md").path,
                encoding: .utf8)
            for r in DatagramDropReason.allCases {
                #expect(page.contains("`\(r.name)`"), "docs/protocol.md does not name drop reason \(r.name)")
            }
            #expect(page.contains("`clamped_packets`"), "docs/protocol.md does not name clamped_packets")
            let rig = try LoopRig()
            let json = rig.stats.json
            for r in DatagramDropReason.allCases { #expect(json.contains("\"\(r.name)\":0")) }
            #expect(json.contains("\"clamped_packets\":0"))
            #expect(rig.stats.summary.contains("clamped 0"))
            #expect((try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil, "\(json)")
        }

        @Test("6: a packet over the single-packet bound is clamped and counted")
        func clampCounted() throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            rig.send(s.seal(.motion(dx: 256 * 5000, dy: 0)))
            rig.waitDatagrams(1)
            #expect(eventually(2) { rig.stats.clampedPackets == 1 })
        }
    }
}

extension RxSuite.SessionEndTests {
    @Test("7: a button message that skips a sequence number ends the session (bye 2) and releases the button")
    func buttonSequenceGap() throws {
        let (rx, tx, sink) = try Pair().session()
        defer { rx.stop(); withExtendedLifetime(sink) {} }
        let ns = senderClockUs() * 1000
        try tx.channel.send(.button(ButtonEvent(button: .left, isDown: true, senderTimeNs: ns, sequence: 41)))
        try tx.channel.send(.button(ButtonEvent(button: .right, isDown: true, senderTimeNs: ns + 1000, sequence: 42)))
        try tx.channel.send(.button(ButtonEvent(button: .left, isDown: false, senderTimeNs: ns + 2000, sequence: 44)))
        #expect(throws: SessionError.peerSaidBye(.protocolError)) { _ = try tx.channel.receive(timeout: 3) }
        #expect(eventually(3) { rx.stats.sessionsRemoved == 1 })
        sink.drain()
        let keys = sink.keys()
        #expect(keys.filter { $0.value == 1 }.count == 2 && keys.filter { $0.value == 0 }.count == 2, "\(keys)")
    }
}
