import Testing
@testable import RemoloPlayout
@testable import RemoloSession
import RemoloSystem

/// A pairing reservation belongs to the secret it reserved: once that
/// secret is withdrawn or replaced, the handshake holding it can neither
/// pair, nor burn, release or use up the secret that replaced it.
struct PairingGenerationTests {
    /// A pairing handshake stopped right before the receiver reads message 3.
    struct InFlight {
        let receiver: ReceiverHandshake
        let message3: HandshakeWireMessage
    }

    /// Runs messages 1 and 2 with `code`, returning the unread message 3.
    static func reserve(_ p: Pair, _ code: PairingSecret) throws -> InFlight {
        let sender = p.pairing(code)
        let receiver = p.responder()
        let m2 = try #require(try receiver.receive(sender.start()))
        let m3 = try #require(try sender.receive(m2))
        return InFlight(receiver: receiver, message3: m3)
    }

    static func wrongCode(_ code: PairingSecret) -> PairingSecret {
        var b = Array(code.bytes.buffer)
        b[0] ^= 1
        return PairingSecret(raw: b)
    }

    @Test("1: cancel() stops a handshake that already reserved the code")
    func cancelStopsInFlight() throws {
        let p = try Pair(paired: false)
        let code = try p.trust.pairing.issue()
        let a = try Self.reserve(p, code)
        p.trust.pairing.cancel()
        #expect(throws: HandshakeError.refused(.pairingUnavailable)) { try a.receiver.receive(a.message3) }
        #expect(a.receiver.result == nil)
        #expect(!p.trust.isAuthorized(p.sender.publicKey))
    }

    @Test("2: a new code stops the old code's handshake and survives it")
    func reissueStopsInFlight() throws {
        let p = try Pair(paired: false)
        let old = try p.trust.pairing.issue()
        let a = try Self.reserve(p, old)
        let new = try p.trust.pairing.issue()
        #expect(throws: HandshakeError.refused(.pairingUnavailable)) { try a.receiver.receive(a.message3) }
        #expect(!p.trust.isAuthorized(p.sender.publicKey))
        // The stale success used up nothing: the new code still pairs.
        #expect(p.trust.pairing.hasLiveSecret)
        #expect(runHandshake(p.pairing(new), p.responder()).error == nil)
        #expect(p.trust.isAuthorized(p.sender.publicKey))
    }

    @Test("3: a stale handshake going away does not free the current code's reservation")
    func staleReleaseKeepsReservation() throws {
        let p = try Pair(paired: false)
        let old = try p.trust.pairing.issue()
        var a: InFlight? = try Self.reserve(p, old)
        let new = try p.trust.pairing.issue()
        let b = try Self.reserve(p, new)
        a = nil // the old handshake's peer vanished: its deinit releases
        _ = a
        // The new code is still taken by b: nobody may try it in parallel.
        #expect(runHandshake(p.pairing(new), p.responder()).error == .refused(.pairingUnavailable))
        #expect(try b.receiver.receive(b.message3) == nil)
        #expect(b.receiver.result?.isPairing == true)
        #expect(p.trust.isAuthorized(p.sender.publicKey))
    }

    @Test("4: a stale wrong guess burns nothing and locks nothing out")
    func staleFailureBurnsNothing() throws {
        let p = try Pair(paired: false)
        let old = try p.trust.pairing.issue()
        let a = try Self.reserve(p, Self.wrongCode(old))
        let new = try p.trust.pairing.issue()
        #expect(throws: HandshakeError.refused(.pairingSecretWrong)) { try a.receiver.receive(a.message3) }
        #expect(p.trust.pairing.lockoutRemaining == 0)
        #expect(p.trust.pairing.hasLiveSecret)
        #expect(runHandshake(p.pairing(new), p.responder()).error == nil)
    }

    @Test("5: the current handshake's wrong guess still burns and locks out")
    func currentFailureBurns() throws {
        let p = try Pair(paired: false)
        let code = try p.trust.pairing.issue()
        let a = try Self.reserve(p, Self.wrongCode(code))
        #expect(throws: HandshakeError.refused(.pairingSecretWrong)) { try a.receiver.receive(a.message3) }
        #expect(p.trust.pairing.lockoutRemaining > 0)
        #expect(!p.trust.pairing.hasLiveSecret)
    }
}
