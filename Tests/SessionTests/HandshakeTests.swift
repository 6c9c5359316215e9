import Testing
import Synchronization
@testable import RemoloPlayout
@testable import RemoloSession
import RemoloSystem

/// A clock tests move by hand.
final class FakeClock: Sendable {
    let now = Mutex(1_700_000_000.0)
    var clock: SessionClock { { [self] in self.now.withLock { $0 } } }
    func advance(_ s: Double) { now.withLock { $0 += s } }
}

/// Runs a handshake in memory; returns both results or the first error.
func runHandshake(_ sender: SenderHandshake, _ receiver: ReceiverHandshake)
    -> (sender: HandshakeResult?, receiver: HandshakeResult?, error: HandshakeError?) {
    var toReceiver: HandshakeWireMessage? = sender.start()
    while let m = toReceiver {
        // Every message goes through the wire encoding and parser.
        let parsed = try! HandshakeWireMessage.parse(stream: m.encoded()[...])!.0
        let reply: HandshakeWireMessage?
        do { reply = try receiver.receive(parsed) } catch {
            if let r = receiver.refusal { _ = try? sender.receive(r) }
            return (sender.result, receiver.result, error)
        }
        guard let reply else { break }
        do { toReceiver = try sender.receive(reply) } catch { return (sender.result, receiver.result, error) }
    }
    return (sender.result, receiver.result, nil)
}

struct Pair {
    let sender = Identity.generate()
    let receiver = Identity.generate()
    let clock = FakeClock()
    let trust: ReceiverTrust

    init(paired: Bool = true, pairingClock: FakeClock? = nil) throws {
        var list = PeerList()
        if paired { list.add(sender.publicKey, label: "test sender") }
        trust = try ReceiverTrust(identity: receiver, directory: nil,
                                  pairing: PairingAuthority(clock: (pairingClock ?? clock).clock), authorized: list)
    }

    func session(as identity: Identity? = nil, receiverKey: PublicKey? = nil) -> SenderHandshake {
        SenderHandshake(identity: identity ?? sender, mode: .session(receiver: receiverKey ?? receiver.publicKey), clock: clock.clock)
    }

    func pairing(_ secret: PairingSecret) -> SenderHandshake {
        SenderHandshake(identity: sender, mode: .pairing(secret), clock: clock.clock)
    }

    func responder() -> ReceiverHandshake { ReceiverHandshake(trust: trust) }
}

func sameKeys(_ a: SessionKeys, _ b: SessionKeys) -> Bool {
    a.sessionID == b.sessionID && a.datagramKey.constantTimeEquals(b.datagramKey)
        && a.senderToReceiver.constantTimeEquals(b.senderToReceiver)
        && a.receiverToSender.constantTimeEquals(b.receiverToSender) && a.handshakeHash == b.handshakeHash
}

struct HandshakeTests {
    @Test("1: paired keys: both ends derive the same, distinct keys")
    func pairedSucceeds() throws {
        let p = try Pair()
        let r = runHandshake(p.session(), p.responder())
        #expect(r.error == nil)
        let s = try #require(r.sender), v = try #require(r.receiver)
        #expect(sameKeys(s.keys, v.keys))
        #expect(s.peer == p.receiver.publicKey && v.peer == p.sender.publicKey)
        #expect(!s.isPairing && !v.isPairing)
        // Three keys, all different (separate directions and the datagram key).
        let k = [s.keys.datagramKey, s.keys.senderToReceiver, s.keys.receiverToSender].map(\.bytesCopy)
        #expect(Set(k.map { Hex.encode($0) }).count == 3)
        #expect(k.allSatisfy { $0.count == 32 })
        #expect(s.keys.sessionID.bytes.count == 8)
    }

    @Test("2: an unpaired sender is refused with notPaired, before the payload is read")
    func unpairedRefused() throws {
        let p = try Pair(paired: false)
        let receiver = p.responder()
        let r = runHandshake(p.session(), receiver)
        #expect(r.error == .refused(.notPaired))
        #expect(r.sender == nil && r.receiver == nil)
        #expect(receiver.refusal == HandshakeWireMessage(type: .refusal, noiseMessage: [RefusalReason.notPaired.rawValue]))
        // The unpaired sender's timestamp was never recorded (payload never accepted).
        #expect(p.trust.state.withLock { $0.latestTimestamp.isEmpty })
    }

    @Test("3: a wrong receiver key (impostor) fails: the impostor cannot read message 1")
    func impostor() throws {
        let p = try Pair()
        // The impostor has its own identity but trusts our sender.
        var list = PeerList()
        list.add(p.sender.publicKey, label: "victim")
        let impostor = try ReceiverTrust(identity: .generate(), directory: nil, authorized: list)
        let r = runHandshake(p.session(), ReceiverHandshake(trust: impostor))
        #expect(r.error == .crypto(.decryptFailed))
        #expect(r.sender == nil && r.receiver == nil)
        // And a real receiver's answer cannot be swapped for another's: the
        // sender expects a different key than the one that answers.
        let other = try Pair()
        let s = p.session(receiverKey: other.receiver.publicKey)
        let r2 = runHandshake(s, p.responder())
        #expect(r2.error == .crypto(.decryptFailed))
    }

    @Test("4: a replayed message 1 is refused (stale timestamp)")
    func replayed() throws {
        let p = try Pair()
        let s = p.session()
        let m1 = s.start()
        let first = p.responder()
        _ = try first.receive(m1)
        #expect(first.result != nil)
        let again = p.responder()
        #expect(throws: HandshakeError.refused(.staleTimestamp)) { try again.receive(m1) }
        #expect(again.result == nil)
        // An older timestamp from a fresh handshake is refused too; a newer one passes.
        p.clock.advance(-1)
        #expect(runHandshake(p.session(), p.responder()).error == .refused(.staleTimestamp))
        p.clock.advance(2)
        #expect(runHandshake(p.session(), p.responder()).error == nil)
    }

    @Test("5: two sessions of the same pair get different keys and session ids")
    func twoSessionsDiffer() throws {
        let p = try Pair()
        let a = try #require(runHandshake(p.session(), p.responder()).sender)
        p.clock.advance(0.001)
        let b = try #require(runHandshake(p.session(), p.responder()).sender)
        #expect(a.keys.sessionID != b.keys.sessionID)
        #expect(a.keys.datagramKey.bytesCopy != b.keys.datagramKey.bytesCopy)
        #expect(a.keys.senderToReceiver.bytesCopy != b.keys.senderToReceiver.bytesCopy)
        #expect(a.keys.receiverToSender.bytesCopy != b.keys.receiverToSender.bytesCopy)
        #expect(a.keys.handshakeHash != b.keys.handshakeHash)
    }

    @Test("6: pairing with the right secret authorizes the sender, and the secret is single-use")
    func pairingSucceeds() throws {
        let p = try Pair(paired: false)
        let secret = try p.trust.pairing.issue()
        // Typed by a person: lower case, no hyphens.
        let typed = try #require(PairingSecret(typed: secret.display.lowercased().replacingOccurrences(of: "-", with: "")))
        let r = runHandshake(p.pairing(typed), p.responder())
        #expect(r.error == nil)
        let s = try #require(r.sender), v = try #require(r.receiver)
        #expect(sameKeys(s.keys, v.keys))
        #expect(s.isPairing && v.isPairing)
        #expect(s.peer == p.receiver.publicKey && v.peer == p.sender.publicKey)
        #expect(p.trust.isAuthorized(p.sender.publicKey))
        // Now IK works for this pair.
        p.clock.advance(1)
        #expect(runHandshake(p.session(), p.responder()).error == nil)
        // Reusing the secret fails.
        #expect(runHandshake(p.pairing(typed), p.responder()).error == .refused(.pairingUnavailable))
    }

    @Test("7: a wrong secret fails, burns the secret and locks pairing out for a while")
    func wrongSecret() throws {
        let p = try Pair(paired: false)
        let right = try p.trust.pairing.issue()
        var wrongRaw = Array(right.bytes.buffer)
        wrongRaw[0] ^= 1
        let r = runHandshake(p.pairing(PairingSecret(raw: wrongRaw)), p.responder())
        #expect(r.error == .refused(.pairingSecretWrong))
        #expect(r.sender == nil || r.receiver == nil)
        #expect(r.receiver == nil)
        #expect(!p.trust.isAuthorized(p.sender.publicKey))
        // Burned: even the right secret no longer works.
        #expect(runHandshake(p.pairing(right), p.responder()).error == .refused(.pairingUnavailable))
        // Locked out: no fresh secret is issued until the lockout ends.
        #expect(p.trust.pairing.lockoutRemaining > 0)
        #expect(throws: PairingError.lockedOut(remaining: PairingAuthority.baseLockout)) { try p.trust.pairing.issue() }
        p.clock.advance(PairingAuthority.baseLockout + 0.1)
        let fresh = try p.trust.pairing.issue()
        #expect(runHandshake(p.pairing(fresh), p.responder()).error == nil)
        #expect(p.trust.isAuthorized(p.sender.publicKey))
    }

    @Test("8: an expired secret fails")
    func expiredSecret() throws {
        let p = try Pair(paired: false)
        let secret = try p.trust.pairing.issue()
        p.clock.advance(PairingAuthority.defaultLifetime + 1)
        #expect(!p.trust.pairing.hasLiveSecret)
        #expect(runHandshake(p.pairing(secret), p.responder()).error == .refused(.pairingUnavailable))
        #expect(!p.trust.isAuthorized(p.sender.publicKey))
    }

    @Test("9: one pairing handshake at a time; an abandoned one does not burn the secret")
    func pairingReservation() throws {
        let p = try Pair(paired: false)
        let secret = try p.trust.pairing.issue()
        var first: ReceiverHandshake? = p.responder()
        _ = try first!.receive(p.pairing(secret).start())
        #expect(runHandshake(p.pairing(secret), p.responder()).error == .refused(.pairingUnavailable))
        first = nil // peer vanished before message 3
        _ = first
        #expect(runHandshake(p.pairing(secret), p.responder()).error == nil)
    }

    @Test("10: messages out of turn or of the wrong type are refused")
    func outOfTurn() throws {
        let p = try Pair()
        let r = p.responder()
        let bogus = HandshakeWireMessage(type: .pairFinish, noiseMessage: [UInt8](repeating: 0, count: HandshakeMessageType.pairFinish.noiseLength))
        #expect(throws: HandshakeError.refused(.malformed)) { try r.receive(bogus) }
        let s = p.session()
        _ = s.start()
        let wrongType = HandshakeWireMessage(type: .pairResponse, noiseMessage: [UInt8](repeating: 0, count: HandshakeMessageType.pairResponse.noiseLength))
        #expect(throws: HandshakeError.unexpectedMessage(HandshakeMessageType.pairResponse.rawValue)) { try s.receive(wrongType) }
    }

    @Test("11: handshake wire parser: lengths and types", arguments: [
        ([0x00, 0x01, 0x01], HandshakeWireError.badLength(1)),
        ([0x01, 0x01], HandshakeWireError.badLength(257)),
        ([0x00, 0x03, 0x55, 0, 0], HandshakeWireError.unknownType(0x55)),
        ([0x00, 0x03, 0x01, 0, 0], HandshakeWireError.wrongSize(type: 1, expected: 109, actual: 2)),
    ] as [([UInt8], HandshakeWireError)])
    func wireParser(_ bytes: [UInt8], _ expected: HandshakeWireError) {
        #expect(throws: expected) { _ = try HandshakeWireMessage.parse(stream: bytes[...]) }
    }
}
