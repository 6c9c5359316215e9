import Foundation
import Synchronization
import Testing
import RemoloTestSupport
@testable import RemoloPlayout
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem

/// Sessions that last, and sessions that end saying why (docs/protocol.md,
/// "Timeouts and limits" and the bye reasons). Short limits, real sockets,
/// each test longer than every timeout it involves.
@Suite(.serialized) struct LifetimeTests {

    @Test("1: pings alone keep a session open for several idle timeouts; then a message still arrives")
    func pingsRenewTheIdleDeadline() throws {
        let p = try Pair()
        let limits = SessionLimits.testing(idle: 0.6)
        let rx = try LoopbackReceiver(trust: p.trust, limits: limits)
        let ch = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.sender,
                                          receiver: p.receiver.publicKey, limits: limits)
        let end = monotonicSeconds() + 5 * limits.idleTimeout
        var pongs = 0
        while monotonicSeconds() < end {
            try ch.send(.ping(UInt64(pongs)))
            #expect(try ch.receive(timeout: 2) == .pong(UInt64(pongs)))
            pongs += 1
            usleep(UInt32(limits.keepaliveInterval * 1e6))
        }
        let b = ButtonEvent(button: .left, isDown: true, senderTimeNs: 1, sequence: 0)
        try ch.send(.button(b))
        ch.close(saying: .normal)
        try rx.wait()
        #expect(rx.events.messages.withLock { $0 } == [.button(b)])
        #expect(rx.events.sessionErrors.withLock { $0 } == [.peerSaidBye(.normal)])
        #expect(pongs >= 12)
    }

    @Test("2: the receiver says bye: 1 on silence, 2 on a bad frame", arguments: [1, 2])
    func byeOnIdleAndProtocolError(_ n: Int) throws {
        let p = try Pair()
        let limits = SessionLimits.testing(idle: 0.4)
        let rx = try LoopbackReceiver(trust: p.trust, limits: limits)
        let ch = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.sender,
                                          receiver: p.receiver.publicKey)
        if n == 2 {
            var f = try ch.sealer.seal(.ping(5))
            f[f.count - 1] ^= 1
            try ch.connection.writeAll(f, deadline: monotonicSeconds() + 2)
        }
        let want: ByeReason = n == 1 ? .idleTimeout : .protocolError
        #expect(throws: SessionError.peerSaidBye(want)) { _ = try ch.receive(timeout: 3) }
        try rx.wait()
    }

    @Test("3: a sender's keepAlive notices a receiver that stops answering, within the interval plus the margin")
    func senderNoticesSilence() throws {
        let p = try Pair()
        let limits = SessionLimits.testing(idle: 0.6)
        // A receiver that confirms the session and then reads nothing: no pongs.
        let server = ControlServer(listener: try TCPListener(host: "127.0.0.1", port: 0), trust: p.trust,
                                    onSession: { _ in usleep(3_000_000) })
        Thread { server.run() }.start()
        defer { server.stop() }
        let tx = try Sender.connect(host: "127.0.0.1", port: server.listener.port, identity: p.sender,
                                    receiver: p.receiver.publicKey, limits: limits)
        let t0 = monotonicSeconds()
        var failure: SessionError?
        while monotonicSeconds() - t0 < 3 {
            do { try tx.keepAlive() } catch { failure = error; break }
            usleep(10_000)
        }
        let took = monotonicSeconds() - t0
        guard case .peerSilent = failure else { Issue.record("expected peerSilent, got \(String(describing: failure))"); return }
        #expect(took >= limits.keepaliveInterval + limits.answerMargin - 0.05)
        #expect(took < limits.keepaliveInterval + limits.answerMargin + 0.5, "noticed after \(took) s")
    }

    /// Handshake messages the receiver cannot take: every one gets a
    /// refusal naming the reason, then the close; a session init that does
    /// not decrypt gets nothing (not addressed to this receiver).
    @Test("4: one refusal rule for malformed handshake messages", arguments: [
        (1, "L below 2"), (2, "L above 256"), (3, "unknown type"), (4, "wrong size for its type"),
        (5, "a receiver's message type"), (6, "pair init that does not decrypt"), (7, "session init that does not decrypt"),
    ])
    func malformedHandshake(_ n: Int, _ what: String) throws {
        let p = try Pair()
        let rx = try LoopbackReceiver(trust: p.trust)
        _ = try? p.trust.pairing.issue()
        let c = try TCPConnection.connect(host: "127.0.0.1", port: rx.port, timeout: 2)
        let bytes: [UInt8]
        switch n {
        case 1: bytes = [0x00, 0x01, 0x01]
        case 2: bytes = [0x01, 0x01] + [UInt8](repeating: 0, count: 257)
        case 3: bytes = [0x00, 0x03, 0x42, 0, 0]
        case 4: bytes = [0x00, 0x03, 0x01, 0, 0]
        case 5: bytes = [0x00, 0x3a, 0x02] + [UInt8](repeating: 7, count: 57)
        case 6: bytes = [0x00, 0x31, 0x11] + [UInt8](repeating: 7, count: 48)
        default: bytes = [0x00, 0x6e, 0x01] + [UInt8](repeating: 7, count: 109)
        }
        try c.writeAll(bytes, deadline: monotonicSeconds() + 2)
        var got: [UInt8] = []
        let deadline = monotonicSeconds() + 3
        while true {
            do { got += try c.readSome(max: 64, deadline: deadline, what: "reply") } catch { break }
        }
        if n == 7 {
            #expect(got.isEmpty, "\(n): \(what): \(got)")
        } else {
            #expect(got == [0x00, 0x02, 0x7f, RefusalReason.malformed.rawValue], "\(n): \(what): \(got)")
        }
        try rx.wait()
    }

    @Test("5: lockouts double per consecutive failure up to 60 s, shared through the lockout file")
    func lockoutDoublesAcrossAuthorities() throws {
        let root = tempDir("lockout")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        try dir.ensureExists()
        let clock = FakeClock()
        // Two authorities on one directory stand for two processes.
        let a = PairingAuthority(clock: clock.clock, directory: dir)
        let b = PairingAuthority(clock: clock.clock, directory: dir)
        var seen: [Double] = []
        for round in 0..<7 {
            let issuer = round % 2 == 0 ? a : b
            let other = round % 2 == 0 ? b : a
            _ = try issuer.issue()
            guard case .success(let r) = issuer.reserve() else { Issue.record("round \(round): no reservation"); return }
            issuer.failed(r.generation)
            #expect(issuer.codeState == .burned)
            // The other process refuses to issue, with the same time left.
            do {
                _ = try other.issue()
                Issue.record("round \(round): issued inside the lockout")
            } catch {
                guard case .lockedOut(let left) = error else { Issue.record("\(error)"); return }
                seen.append(left)
            }
            clock.advance(seen.last ?? 0)
        }
        #expect(seen == [2, 4, 8, 16, 32, 60, 60])
        _ = try a.issue()
        guard case .success(let r) = a.reserve() else { Issue.record("no reservation"); return }
        #expect(a.succeeded(r.generation))
        #expect(b.lockoutRemaining == 0)
        #expect(PairingLockoutFile(path: dir.file(PairingLockoutFile.name)).read() == PairingLockout())
    }

    @Test("6: `remolo pair --timeout 400`: the code still dies at 5 minutes")
    func codeLifetimeIsNotTheWait() throws {
        let p = try Pair(paired: false)
        let listener = try TCPListener(host: "127.0.0.1", port: 0)
        let port = listener.port
        let outcome = Mutex<PairingOutcome?>(nil)
        let code = Mutex<PairingSecret?>(nil)
        let trust = p.trust
        let t = Thread {
            let o = try? ControlServer.pairOnce(listener: listener, trust: trust, wait: 400,
                                                 show: { c in code.withLock { $0 = c } })
            outcome.withLock { $0 = o }
        }
        t.start()
        #expect(eventuallyTrue(5) { code.withLock { $0 } != nil })
        p.clock.advance(299)
        #expect(outcome.withLock { $0 } == nil, "still waiting at 299 s")
        p.clock.advance(2)
        #expect(eventuallyTrue(5) { outcome.withLock { $0 } != nil })
        #expect(outcome.withLock { $0 } == .expired)
        // The expired code pairs nobody.
        let secret = try #require(code.withLock { $0 })
        let rx = try LoopbackReceiver(trust: p.trust)
        _ = port
        #expect(throws: SessionError.handshake(.peerRefused(.pairingUnavailable))) {
            _ = try ControlChannel.pair(host: "127.0.0.1", port: rx.port, identity: p.sender, secret: secret,
                                      directory: nil, label: "late")
        }
        try rx.wait()
    }
}

func eventuallyTrue(_ seconds: Double, _ cond: () -> Bool) -> Bool {
    let deadline = monotonicSeconds() + seconds
    while monotonicSeconds() < deadline {
        if cond() { return true }
        usleep(5000)
    }
    return cond()
}
