import Foundation
@testable import RemoloPlayout
@testable import RemoloSender
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

extension RxSuite.SessionEndTests {
    /// docs/protocol.md: the receiver's stop says bye 3 to every live
    /// session before it closes the connection. Each round starts a receiver,
    /// confirms a session and stops the receiver; every other round the
    /// sender has just pinged, so the receiver closes with frames of the
    /// sender's unread or unanswered (a close then must not reset the
    /// connection before the bye is out).
    @Test("8: stopped 100 times with a live session, the receiver says bye 3 every time")
    func byeOnEveryStop() throws {
        let p = try Pair()
        var byes = 0
        var other: [String] = []
        for round in 0..<100 {
            let sink = try FrameSink()
            let rx = try p.receiver(into: sink)
            let tx = try p.connect(to: rx)
            if round % 2 == 1 { try tx.channel.send(.ping(UInt64(round))) }
            rx.stop()
            do {
                // Pongs and receipts may come first; then the bye.
                while true { _ = try tx.channel.receive(timeout: 5) }
            } catch SessionError.peerSaidBye(.shuttingDown) {
                byes += 1
            } catch {
                other.append("round \(round): \(error)")
            }
            tx.close()
            withExtendedLifetime(sink) {}
        }
        #expect(byes == 100, "\(other)")
    }

    /// docs/protocol.md, "Timeouts and limits": 30 s without a frame end a
    /// session (bye 1), and the key-confirmation ping is a frame like every
    /// other. A sender that confirms 4 s after its handshake (within the
    /// 5 s the handshake and confirmation get) is closed 30 s after its
    /// confirmation, not 30 s after the handshake. Real time: 34 s.
    @Test("9: a session confirmed late stays 30 s after its key confirmation, then gets bye 1")
    func idleAfterLateConfirmation() throws {
        let p = try Pair()
        let sink = try FrameSink()
        let rx = try p.receiver(into: sink)
        defer { rx.stop(); withExtendedLifetime(sink) {} }
        let limits = SessionLimits()
        #expect(limits.idleTimeout == 30 && limits.handshakeTimeout == 5)
        let conn = try TCPConnection.connect(host: "127.0.0.1", port: rx.port, timeout: 5)
        let hs = SenderHandshake(identity: p.senderID, mode: .session(receiver: p.receiverID.publicKey))
        var next: HandshakeWireMessage? = hs.start()
        while let out = next {
            try conn.writeAll(out.encoded(), deadline: MonotonicClock.seconds() + 5)
            if hs.result != nil { break }
            next = try hs.receive(try readHandshakeMessage(conn, deadline: MonotonicClock.seconds() + 5))
        }
        let result = try #require(hs.result)
        usleep(4_000_000)
        let ch = ControlChannel(connection: conn, result: result, isSender: true, limits: limits)
        defer { ch.close() }
        let pingAt = MonotonicClock.seconds()
        try ch.send(.ping(99))
        #expect(try ch.receiveRaw(deadline: pingAt + 2) == .pong(99))
        let pongAt = MonotonicClock.seconds()
        #expect(rx.liveSessions == 1)
        #expect(throws: SessionError.peerSaidBye(.idleTimeout)) { _ = try ch.receive(timeout: 45) }
        let byeAt = MonotonicClock.seconds()
        #expect(byeAt - pingAt >= 30, "closed \(byeAt - pingAt) s after the key-confirmation ping")
        // The receiver counts from its pong at the latest; the pong's trip
        // over loopback is microseconds.
        #expect(byeAt - pongAt >= 29.9, "closed \(byeAt - pongAt) s after the pong")
        #expect(eventually(3) { rx.liveSessions == 0 })
    }
}

extension RxSuite.SessionEndTests {
    /// Every field path of a JSON object: "keys.refused.flood" for the
    /// field flood of the object refused inside keys.
    static func paths(_ object: [String: Any], prefix: String = "") -> Set<String> {
        var out: Set<String> = []
        for (k, v) in object {
            if let inner = v as? [String: Any] { out.formUnion(paths(inner, prefix: prefix + k + ".")) }
            else { out.insert(prefix + k) }
        }
        return out
    }

    /// docs/cli.md, "Statistics": one table row per field, its path in
    /// backticks in the first column. Held both ways: the receiver has no
    /// field the page leaves out, and the page names none it lacks.
    @Test("10: every --stats-json field, keys and keys.refused included, is in docs/cli.md's table, and only those")
    func statsJSONFieldsMatchTheCLIPage() throws {
        let page = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/cli.md").path,
            encoding: .utf8)
        let start = try #require(page.range(of: "## Statistics"), "docs/cli.md has no Statistics section")
        let rest = page[start.upperBound...]
        let body = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        var documented: [String] = []
        for line in body.split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(3)
            if let end = cell.firstIndex(of: "`") { documented.append(String(cell[..<end])) }
        }
        #expect(Set(documented).count == documented.count, "a field listed twice")
        let p = try Pair()
        let sink = try FrameSink()
        let rx = try p.receiver(into: sink)
        defer { rx.stop(); withExtendedLifetime(sink) {} }
        let json = rx.statsJSON
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json)")
        let fields = Self.paths(object)
        for f in fields.subtracting(documented).sorted() { Issue.record("docs/cli.md does not list --stats-json field \(f)") }
        for f in Set(documented).subtracting(fields).sorted() { Issue.record("docs/cli.md lists \(f), which --stats-json lacks") }
        // The names of the refusals are the protocol's reasons, all nine.
        #expect(fields.filter { $0.hasPrefix("keys.refused.") }.count == KeyRefusal.known.count)
        #expect(fields.count > 60, "\(fields.count) fields")
    }
}
