import RemoloPlayoutCore
import Testing

// RFC 8439 section 2.8.2, through wire_aead_seal / wire_aead_open: the
// functions wire_seal and wire_open use, with the same nonce builder
// (constant 07 00 00 00 = fixed 7, IV 40..47 = the u64 LE 0x4746454443424140).
enum RFC8439 {
    static let key = unhex("""
        80 81 82 83 84 85 86 87 88 89 8a 8b 8c 8d 8e 8f
        90 91 92 93 94 95 96 97 98 99 9a 9b 9c 9d 9e 9f
        """)
    static let fixed: UInt32 = 7
    static let iv: UInt64 = 0x4746_4544_4342_4140
    static let aad = unhex("50 51 52 53 c0 c1 c2 c3 c4 c5 c6 c7")
    static let plaintext = Array(("Ladies and Gentlemen of the class of '99: If I could offer you only one tip "
        + "for the future, sunscreen would be it.").utf8)
    static let ciphertext = unhex("""
        d3 1a 8d 34 64 8e 60 db 7b 86 af bc 53 ef 7e c2
        a4 ad ed 51 29 6e 08 fe a9 e2 b5 a7 36 ee 62 d6
        3d be a4 5e 8c a9 67 12 82 fa fb 69 da 92 72 8b
        1a 71 de 0a 9e 06 0b 29 05 d6 a5 b6 7e cd 3b 36
        92 dd bd 7f 2d 77 8b 8c 98 03 ae e3 28 09 1b 58
        fa b3 24 e4 fa d6 75 94 55 85 80 8b 48 31 d7 bc
        3f f4 de f0 8e 4b 7a 9d e5 76 d2 65 86 ce c6 4b
        61 16
        """)
    static let tag = unhex("1a:e1:0b:59:4f:09:e2:6a:7e:90:2e:cb:d0:60:06:91")
}

@Suite struct AEADTests {
    init() { #expect(wire_crypto_init() == 0) }

    @Test func rfc8439Section282Seal() {
        #expect(RFC8439.plaintext.count == 114)
        var out = [UInt8](repeating: 0, count: 114 + 16)
        let n = wire_aead_seal(&out, RFC8439.plaintext, 114, RFC8439.aad, RFC8439.aad.count,
                               RFC8439.fixed, RFC8439.iv, RFC8439.key)
        #expect(n == 130)
        #expect(hex(Array(out[..<114])) == hex(RFC8439.ciphertext))
        #expect(hex(Array(out[114...])) == hex(RFC8439.tag))
    }

    @Test func rfc8439Section282Open() {
        let sealed = RFC8439.ciphertext + RFC8439.tag
        var out = [UInt8](repeating: 0, count: 114)
        let n = wire_aead_open(&out, sealed, sealed.count, RFC8439.aad, RFC8439.aad.count,
                               RFC8439.fixed, RFC8439.iv, RFC8439.key)
        #expect(n == 114)
        #expect(out == RFC8439.plaintext)
    }

    /// Each case changes one input of the RFC vector; open must refuse it.
    struct Tamper: Sendable, CustomTestStringConvertible {
        let number: Int
        let name: String
        var sealed = RFC8439.ciphertext + RFC8439.tag
        var aad = RFC8439.aad
        var fixed = RFC8439.fixed
        var iv = RFC8439.iv
        var key = RFC8439.key
        var testDescription: String { "#\(number) \(name)" }
    }

    static let tampers: [Tamper] = {
        var t: [Tamper] = []
        var c = Tamper(number: 1, name: "ciphertext bit"); c.sealed[0] ^= 1; t.append(c)
        c = Tamper(number: 2, name: "tag bit"); c.sealed[129] ^= 0x80; t.append(c)
        c = Tamper(number: 3, name: "aad bit"); c.aad[11] ^= 4; t.append(c)
        c = Tamper(number: 4, name: "nonce constant"); c.fixed = 0; t.append(c)
        c = Tamper(number: 5, name: "nonce iv"); c.iv += 1; t.append(c)
        c = Tamper(number: 6, name: "key bit"); c.key[31] ^= 1; t.append(c)
        c = Tamper(number: 7, name: "truncated tag"); c.sealed.removeLast(); t.append(c)
        c = Tamper(number: 8, name: "aad dropped"); c.aad = []; t.append(c)
        return t
    }()

    @Test(arguments: tampers) func tamperedVectorIsRefused(_ t: Tamper) {
        var out = [UInt8](repeating: 0xee, count: 130)
        let n = t.aad.withUnsafeBufferPointer { aad in
            wire_aead_open(&out, t.sealed, t.sealed.count, aad.baseAddress, aad.count, t.fixed, t.iv, t.key)
        }
        #expect(n == -1)
    }

    @Test func emptyPlaintextSealsToTagOnly() {
        var out = [UInt8](repeating: 0, count: 16)
        #expect(wire_aead_seal(&out, nil, 0, RFC8439.aad, 12, 0, 1, RFC8439.key) == 16)
        var none = [UInt8](repeating: 0, count: 1)
        #expect(wire_aead_open(&none, out, 16, RFC8439.aad, 12, 0, 1, RFC8439.key) == 0)
        #expect(wire_aead_open(&none, out, 15, RFC8439.aad, 12, 0, 1, RFC8439.key) == -1)
    }
}
