import Testing
import Foundation
import Synchronization
@testable import RemoloPlayout
@testable import RemoloSession
import RemoloSystem

/// What the receiver saw, collected from its connection threads.
final class Events: Sendable {
    let messages = Mutex<[ControlMessage]>([])
    let sessionErrors = Mutex<[SessionError]>([])
    let rejected = Mutex<[SessionError]>([])
    let sessions = Mutex<[HandshakeResult]>([])
    let done = DispatchSemaphore(value: 0)
}

/// A receiver on 127.0.0.1 with an ephemeral port, its accept loop on a thread.
final class LoopbackReceiver {
    let server: ControlServer
    let events = Events()
    let stopped = DispatchSemaphore(value: 0)
    var port: UInt16 { server.listener.port }

    init(trust: ReceiverTrust, limits: SessionLimits = SessionLimits()) throws {
        let events = self.events
        server = ControlServer(listener: try TCPListener(host: "127.0.0.1", port: 0), trust: trust, limits: limits,
                                onRejected: { e in events.rejected.withLock { $0.append(e) }; events.done.signal() },
                                onSession: { ch in
            events.sessions.withLock { $0.append(ch.result) }
            // Serve the session until it ends one way or another.
            while true {
                do throws(SessionError) { let m = try ch.receive(); events.messages.withLock { $0.append(m) } } catch {
                    events.sessionErrors.withLock { $0.append(error) }
                    break
                }
            }
            events.done.signal()
        })
        let server = self.server, stopped = self.stopped
        Thread { server.run(); stopped.signal() }.start()
    }

    func wait(_ what: String = "receiver event") throws {
        guard events.done.wait(timeout: .now() + 10) == .success else { throw SessionError.timedOut(what) }
    }

    deinit {
        server.stop()
        _ = stopped.wait(timeout: .now() + 5)
    }
}

/// Reads from a raw connection until EOF (the peer closed) or timeout.
func seesEOF(_ c: TCPConnection, within seconds: Double = 5) -> Bool {
    let deadline = monotonicSeconds() + seconds
    while true {
        do { _ = try c.readSome(max: 4096, deadline: deadline, what: "EOF") } catch {
            return error == .closed
        }
    }
}

@Suite(.serialized) struct LoopbackTests {
    @Test("1: paired sender over real TCP: handshake, messages both ways, bye")
    func pairedSession() throws {
        let p = try Pair()
        let rx = try LoopbackReceiver(trust: p.trust)
        let ch = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.sender, receiver: p.receiver.publicKey)
        let sent: [ControlMessage] = ControlFrameTests.messages.filter {
            if case .bye = $0 { return false }; if case .ping = $0 { return false }; if case .pong = $0 { return false }; return true
        }
        for m in sent { try ch.send(m) }
        // A ping is answered by the receiver's channel.
        try ch.send(.ping(77))
        #expect(try ch.receive(timeout: 5) == .pong(77))
        ch.close(saying: .normal)
        try rx.wait()
        #expect(rx.events.messages.withLock { $0 } == sent)
        #expect(rx.events.sessionErrors.withLock { $0 } == [.peerSaidBye(.normal)])
        let r = try #require(rx.events.sessions.withLock { $0.first })
        #expect(sameKeys(r.keys, ch.keys))
        #expect(r.peer == p.sender.publicKey)
    }

    @Test("2: pairing over TCP stores each side's key in its files")
    func pairingOverTCP() throws {
        let root = tempDir("pair")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let rdir = ConfigDirectory(path: root + "/receiver"), sdir = ConfigDirectory(path: root + "/sender")
        let receiver = try Identity.loadOrCreate(in: rdir), sender = try Identity.loadOrCreate(in: sdir)
        let trust = try ReceiverTrust(identity: receiver, directory: rdir)
        let rx = try LoopbackReceiver(trust: trust)
        let code = try trust.pairing.issue().display
        let ch = try ControlChannel.pair(host: "127.0.0.1", port: rx.port, identity: sender,
                                       secret: try #require(PairingSecret(typed: code)), directory: sdir, label: "desk")
        ch.close(saying: .normal)
        try rx.wait()
        let known = try PeerList.load(from: sdir.file(PeerList.knownReceiversFile))
        #expect(known.key(labelled: "desk") == receiver.publicKey)
        let authorized = try PeerList.load(from: rdir.file(PeerList.authorizedSendersFile))
        #expect(authorized.contains(sender.publicKey))
        #expect(mode(sdir.file(PeerList.knownReceiversFile)) == 0o600)
        #expect(mode(rdir.file(PeerList.authorizedSendersFile)) == 0o600)
        // And the stored key is good for a normal session.
        let again = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: sender, receiver: known.key(labelled: "desk")!)
        again.close(saying: .normal)
        try rx.wait()
    }

    @Test("3: unpaired sender and wrong pairing code are refused over TCP")
    func refusedOverTCP() throws {
        let p = try Pair(paired: false)
        let rx = try LoopbackReceiver(trust: p.trust)
        #expect(throws: SessionError.handshake(.peerRefused(.notPaired))) {
            _ = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.sender, receiver: p.receiver.publicKey)
        }
        try rx.wait()
        _ = try p.trust.pairing.issue()
        #expect(throws: SessionError.handshake(.peerRefused(.pairingSecretWrong))) {
            _ = try ControlChannel.pair(host: "127.0.0.1", port: rx.port, identity: p.sender, secret: .random(),
                                      directory: nil, label: "x")
        }
        try rx.wait()
        #expect(rx.events.rejected.withLock { $0 } == [.handshake(.refused(.notPaired)), .handshake(.refused(.pairingSecretWrong))])
    }

    /// Numbered cases of bad frames sent after a good handshake. Each must
    /// close that connection, leave the receiver running, and be reported
    /// with the right reason.
    @Test("4: bad control frames close the connection cleanly", arguments: [
        (1, "bad length"), (2, "oversize"), (3, "bad tag"), (4, "out-of-order counter"), (5, "truncated then EOF"),
    ])
    func badFrames(_ n: Int, _ what: String) throws {
        let p = try Pair()
        let rx = try LoopbackReceiver(trust: p.trust)
        let ch = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.sender, receiver: p.receiver.publicKey)
        let deadline = monotonicSeconds() + 5
        let expected: SessionError
        switch n {
        case 1:
            try ch.connection.writeAll([0x00, 0x03, 1, 2, 3], deadline: deadline)
            expected = .frame(.badLength(3))
        case 2:
            try ch.connection.writeAll([0xff, 0xf0], deadline: deadline)
            expected = .frame(.oversize(0xfff0))
        case 3:
            var f = try ch.sealer.seal(.ping(5))
            f[f.count - 5] ^= 0x80
            try ch.connection.writeAll(f, deadline: deadline)
            expected = .frame(.badTag)
        case 4:
            let a = try ch.sealer.seal(.motion(MotionEvent(dx: 1, dy: 1, senderTimeNs: 1)))
            let b = try ch.sealer.seal(.motion(MotionEvent(dx: 2, dy: 2, senderTimeNs: 2)))
            try ch.connection.writeAll(b + a, deadline: deadline)
            expected = .frame(.outOfOrder(expected: 1, got: 2))
        default:
            let f = try ch.sealer.seal(.ping(5))
            try ch.connection.writeAll(Array(f.prefix(7)), deadline: deadline)
            shutdown(ch.connection.fd, Int32(SHUT_WR))
            expected = .closed
        }
        try rx.wait("session end after \(what)")
        #expect(rx.events.sessionErrors.withLock { $0 } == [expected], "\(n): \(what)")
        #expect(seesEOF(ch.connection), "\(n): the receiver closed the connection")
        // The receiver is still serving.
        let ok = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.sender, receiver: p.receiver.publicKey)
        try ok.send(.ping(1))
        #expect(try ok.receive(timeout: 5) == .pong(1))
        ok.close(saying: .normal)
        try rx.wait()
    }

    @Test("5: unfinished handshakes time out; the unauthenticated cap closes extra connections at once")
    func handshakeTimeoutAndCap() throws {
        let p = try Pair()
        var limits = SessionLimits()
        limits.handshakeTimeout = 0.5
        limits.maxUnauthenticated = 2
        let rx = try LoopbackReceiver(trust: p.trust, limits: limits)
        let silent = try (0..<2).map { _ in try TCPConnection.connect(host: "127.0.0.1", port: rx.port, timeout: 2) }
        // Wait until both are counted, then a third is over the cap.
        let until = monotonicSeconds() + 2
        while rx.server.unauthenticatedCount < 2 && monotonicSeconds() < until { usleep(5_000) }
        #expect(rx.server.unauthenticatedCount == 2)
        let third = try TCPConnection.connect(host: "127.0.0.1", port: rx.port, timeout: 2)
        let t0 = monotonicSeconds()
        #expect(seesEOF(third, within: 2))
        #expect(monotonicSeconds() - t0 < 0.4, "closed at accept, not after the handshake timeout")
        // The silent ones are dropped after the handshake timeout.
        for c in silent { #expect(seesEOF(c, within: 3)) }
        for _ in 0..<3 { try rx.wait() }
        let reasons = rx.events.rejected.withLock { $0 }
        #expect(reasons.filter { $0 == .handshake(.refused(.busy)) }.count == 1)
        #expect(reasons.filter { if case .timedOut = $0 { return true }; return false }.count == 2)
        #expect(rx.server.unauthenticatedCount == 0)
    }

    @Test("6: an idle session is closed after the idle timeout")
    func idleTimeout() throws {
        let p = try Pair()
        var limits = SessionLimits()
        limits.idleTimeout = 0.4
        let rx = try LoopbackReceiver(trust: p.trust, limits: limits)
        let ch = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.sender, receiver: p.receiver.publicKey)
        try rx.wait()
        #expect(rx.events.sessionErrors.withLock { $0.first.map { if case .timedOut = $0 { return true }; return false } } == true)
        #expect(seesEOF(ch.connection))
    }
}
