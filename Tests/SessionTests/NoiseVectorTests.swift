import Testing
@testable import RemoloPlayout
@testable import RemoloSession
import RemoloSystem

/// The Noise layer against known transcripts: a published cacophony vector
/// for IK, and for XXpsk3 one produced by an independent implementation
/// (Python `noiseprotocol` 0.3.1, which reproduces the cacophony IK vector
/// byte for byte) with the same keys and payloads.
struct NoiseVectorTests {
    static func hex(_ s: String) -> [UInt8] { Hex.decode(s)! }
    static func kp(_ s: String) -> KeyPair { KeyPair(secret: SecretBytes(copying: hex(s))) }

    // The cacophony key set (cacophony.txt, shared by all 25519 vectors).
    static let initStatic = "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1"
    static let initEphemeral = "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a"
    static let respStatic = "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893"
    static let respEphemeral = "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b"
    static let prologue = hex("4a6f686e2047616c74") // "John Galt"
    static let payloads = ["4c756477696720766f6e204d69736573", "4d757272617920526f746862617264",
                           "462e20412e20486179656b", "4361726c204d656e676572",
                           "4a65616e2d426170746973746520536179", "457567656e2042f6686d20766f6e2042617765726b"].map(hex)

    struct Vector: Sendable {
        let pattern: NoisePattern
        let psk: [UInt8]?
        let ciphertexts: [String]
        let handshakeHash: String?
    }

    static let ik = Vector(pattern: .ik, psk: nil, ciphertexts: [
        // Noise_IK_25519_ChaChaPoly_BLAKE2b from cacophony.txt
        "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd2f88f1db7e1fb0e99c64419097af91cee64e470f4b6fcd9298ce0b56fe20f86e13bf70439c538e3602a7127af71a29cc",
        "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f1448088439f069b267a06b3de3ecb1043bcb098e9af91d9c64748d998c7b47890871571",
        "cd54383060e7a28434cca27fb1cc524cfbabeb18181589df219d07",
        "a856d3bf0246bfc476c655009cd1ed677b8dcc5b349ae8ef2a05f2",
        "49063084b2c51f098337cb8a13739ac848f907e67cfb2cc8a8b60586467aa02fc7",
        "8b9709d23b47e4639df7678d7a21741eba4ef1e9c60383001c7435549c20f9d56f30e935d3",
    ], handshakeHash: "1c8fa891cb414fedba6daa7c6f4ae0a6d98e5f9768cc9cecd27e805614943ee9c8a1b27fbfb76dc197255c8aa69f6b4285c423840b8bedf45e652ca64f797d81")

    static let xxpsk3 = Vector(pattern: .xxpsk3, psk: Array(0..<32), ciphertexts: [
        "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c79440aa831d1e3bbd16bd7ffda87e9f7b6eeca2510006499a573ac27af3392ed1b69",
        "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f14480884381a78489d56c9e2ac962826f25684980b25244dbfd505b7d903a94d4f4fd84004a1c7fbe94d686bc4c1f67259364f6f2a41cb40bf5198b9b3975be2cdd49d3e065a554e12c477d82029fabc6555bc1",
        "291dfeff6eff386e29adb0bdbd5a1ae9e09de4449c8695d109adcb63e80e489555792a3e9150eff75d6d45571f824ed23fbb6b147e16261207bb663cde9287589c608bac51a8a2f9b06ca8",
        "f951ee9dc0a4c0c69145096895b8360ab618256f6cd404f34fea95",
        "8f5bf4db08bd9f8b3aee23272468c64592c2eea1ac4d2317855fd07731b9d6b8ec",
        "520439dda571637467d70bc9680b351906afa9e541255bcfca8373aea4e3e213bf81ee0a08",
    ], handshakeHash: "c25ca67acae99c52ef9655c813bf6f2e9a68a07b570255363da68882bbd107f80eaf2e6c0565ca97fd7694ce8861c7623352ac61d06f661ab0f50aad87aa480f")

    static func pair(_ v: Vector) -> (NoiseHandshake, NoiseHandshake) {
        let psk = v.psk.map { SecretBytes(copying: $0) }
        let i = NoiseHandshake(pattern: v.pattern, initiator: true, prologue: prologue, staticKey: kp(initStatic),
                               remoteStatic: v.pattern == .ik ? kp(respStatic).publicKey : nil, psk: psk,
                               ephemeral: kp(initEphemeral))
        let r = NoiseHandshake(pattern: v.pattern, initiator: false, prologue: prologue, staticKey: kp(respStatic),
                               psk: psk, ephemeral: kp(respEphemeral))
        return (i, r)
    }

    @Test("transcript matches the known vector", arguments: [ik, xxpsk3])
    func transcript(_ v: Vector) throws {
        let (i, r) = Self.pair(v)
        let handshakeCount = v.pattern.messages.count
        for n in 0..<handshakeCount {
            let (w, rd) = n % 2 == 0 ? (i, r) : (r, i)
            let m = try w.writeMessage(payload: Self.payloads[n])
            #expect(Hex.encode(m) == v.ciphertexts[n], "handshake message \(n)")
            #expect(try rd.readMessage(m) == Self.payloads[n])
        }
        #expect(i.isFinished && r.isFinished)
        #expect(Hex.encode(i.handshakeHash) == v.handshakeHash)
        #expect(i.handshakeHash == r.handshakeHash)
        // Transport messages: Split() k1 for initiator->responder, k2 back.
        let (ik1, ik2) = i.split(), (rk1, rk2) = r.split()
        let isend = CipherState(), irecv = CipherState(), rsend = CipherState(), rrecv = CipherState()
        isend.initializeKey(ik1); irecv.initializeKey(ik2); rsend.initializeKey(rk2); rrecv.initializeKey(rk1)
        for n in handshakeCount..<Self.payloads.count {
            let (s, d) = n % 2 == 0 ? (isend, rrecv) : (rsend, irecv)
            let c = s.encryptWithAd([], Self.payloads[n])
            #expect(Hex.encode(c) == v.ciphertexts[n], "transport message \(n)")
            #expect(try d.decryptWithAd([], c[...]) == Self.payloads[n])
        }
    }

    /// Every single-bit flip in every byte of every handshake message is refused.
    @Test("a tampered handshake message fails", arguments: [ik, xxpsk3])
    func tampered(_ v: Vector) throws {
        let count = v.pattern.messages.count
        for target in 0..<count {
            let (i0, r0) = Self.pair(v)
            var good: [UInt8] = []
            for n in 0...target {
                let (w, rd) = n % 2 == 0 ? (i0, r0) : (r0, i0)
                good = try w.writeMessage(payload: Self.payloads[n])
                if n < target { _ = try rd.readMessage(good) }
            }
            for pos in 0..<good.count {
                // XXpsk3 message 1 carries only e: a flipped e is undetectable
                // until the next tag, which is message 1's payload tag. Every
                // flip must still fail at that message.
                let (i, r) = Self.pair(v)
                for n in 0..<target {
                    let (w, rd) = n % 2 == 0 ? (i, r) : (r, i)
                    _ = try rd.readMessage(try w.writeMessage(payload: Self.payloads[n]))
                }
                let reader = target % 2 == 0 ? r : i
                var bad = good
                bad[pos] ^= 0x01 << UInt8(pos % 8)
                #expect(throws: NoiseError.self, "message \(target) byte \(pos)") { try reader.readMessage(bad) }
            }
            // Truncated and extended messages fail too.
            let (i, r) = Self.pair(v)
            for n in 0..<target {
                let (w, rd) = n % 2 == 0 ? (i, r) : (r, i)
                _ = try rd.readMessage(try w.writeMessage(payload: Self.payloads[n]))
            }
            let reader = target % 2 == 0 ? r : i
            #expect(throws: NoiseError.self) { try reader.readMessage(Array(good.dropLast())) }
        }
    }

    /// HMAC-BLAKE2b against RFC 4231-style input checked with Python's hmac
    /// module: HMAC-BLAKE2b-512(key = 0x0b * 20, "Hi There").
    @Test func hmacKnownAnswer() {
        let key = [UInt8](repeating: 0x0b, count: 20)
        let data = Array("Hi There".utf8)
        var out = [UInt8](repeating: 0, count: 64)
        key.withUnsafeBytes { k in data.withUnsafeBytes { d in out.withUnsafeMutableBytes { hmacBlake2b(key: k, data: [d], into: $0) } } }
        #expect(Hex.encode(out) == Self.hmacExpected)
    }
    static let hmacExpected = "358a6a184924894fc34bee5680eedf57d84a37bb38832f288e3b27dc63a98cc8c91e76da476b508bc6b2d408a248857452906e4a20b48c6b4b55d2df0fe1dd24"
}
