// libFuzzer harness for the handshake parsers: the wire framing and the
// Noise message processing of both roles at every step. Built by ./run with
// the Session sources compiled in (swiftc -sanitize=fuzzer,address).
//
// Input: one selector byte, then the bytes under test.

import Foundation

private let receiverIdentity = Identity(keyPair: KeyPair(secret: SecretBytes(copying: [UInt8](repeating: 7, count: 32))))
private let senderIdentity = Identity(keyPair: KeyPair(secret: SecretBytes(copying: [UInt8](repeating: 9, count: 32))))
private let fixedSecret = PairingSecret(raw: [UInt8](repeating: 3, count: 15))

private func trust() -> ReceiverTrust {
    var list = PeerList()
    list.add(senderIdentity.publicKey, label: "fuzz")
    let t = try! ReceiverTrust(identity: receiverIdentity, directory: nil, authorized: list)
    return t
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let selector = bytes[0] % 6
    let body = Array(bytes[1...])
    switch selector {
    case 0:
        // Framing: parse as many messages as the stream holds, then feed
        // each to a receiver (as a hostile sender would).
        var rest = body[...]
        let r = ReceiverHandshake(trust: trust())
        while let (m, used) = try? HandshakeWireMessage.parse(stream: rest) {
            rest = rest.dropFirst(used)
            _ = try? r.receive(m)
        }
    case 1:
        // IK message 1 of any length, straight into the responder.
        let n = NoiseHandshake(pattern: .ik, initiator: false, prologue: handshakePrologue, staticKey: receiverIdentity.keyPair)
        _ = try? n.readMessage(body)
    case 2:
        // IK message 2 into an initiator that sent message 1.
        let s = SenderHandshake(identity: senderIdentity, mode: .session(receiver: receiverIdentity.publicKey))
        _ = s.start()
        _ = try? s.noise.readMessage(body)
        if let m = try? HandshakeWireMessage.parse(body: body[...]) { _ = try? s.receive(m) }
    case 3:
        // XXpsk3 message 1 into the responder.
        let t = trust()
        _ = try? t.pairing.issue()
        let r = ReceiverHandshake(trust: t)
        _ = try? r.receive(HandshakeWireMessage(type: .pairInit, noiseMessage: body))
    case 4:
        // XXpsk3 message 2 into an initiator that sent message 1.
        let s = SenderHandshake(identity: senderIdentity, mode: .pairing(fixedSecret))
        _ = s.start()
        _ = try? s.receive(HandshakeWireMessage(type: .pairResponse, noiseMessage: body))
    default:
        // XXpsk3 message 3 after a genuine message 1 and 2.
        let t = trust()
        _ = try? t.pairing.issue()
        let r = ReceiverHandshake(trust: t)
        let s = SenderHandshake(identity: senderIdentity, mode: .pairing(fixedSecret))
        guard let m2 = try? r.receive(s.start()) else { return 0 }
        _ = m2
        _ = try? r.receive(HandshakeWireMessage(type: .pairFinish, noiseMessage: body))
    }
    return 0
}
