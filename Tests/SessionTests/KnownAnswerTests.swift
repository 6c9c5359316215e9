import Testing
@testable import RemoloPlayout
@testable import RemoloSession
import RemoloSystem

/// Fixed answers for every derivation docs/protocol.md
/// specifies beyond the Noise core (which NoiseVectorTests covers), so a
/// typo in a label, a wrong HKDF output or a wrong encoding fails here
/// instead of only breaking an independent client.
///
/// The expected bytes were computed outside this code base, from docs/protocol.md
/// alone, with Python 3.11: `hashlib.blake2b(label + data, digest_size=n)`,
/// `base64.b32encode` with its alphabet translated to Crockford's,
/// `hmac.new(key, data, hashlib.blake2b)` for Noise's HKDF, `struct.pack`
/// for TAI64N, and the `noiseprotocol` 0.3.1 package (which reproduces the
/// cacophony vectors) for the chaining keys and the handshake transcripts.
struct KnownAnswerTests {
    static func hex(_ s: String) -> [UInt8] { Hex.decode(s)! }
    static func kp(_ s: String) -> KeyPair { KeyPair(secret: SecretBytes(copying: hex(s))) }
    static func hex(_ s: SecretBytes) -> String { Hex.encode(s.buffer) }

    // MARK: Fingerprint: BLAKE2b-160("remolo fingerprint v1" || pk), Crockford, groups of 4

    struct FingerprintCase: Sendable, CustomTestStringConvertible {
        let id: Int
        let publicKey: String
        let fingerprint: String
        var testDescription: String { "\(id): \(publicKey.prefix(8))..." }
    }

    static let fingerprints = [
        FingerprintCase(id: 1, publicKey: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                        fingerprint: "PN71-8X67-NEWK-J5QX-261B-QBR9-Y0D7-4CSA"),
        FingerprintCase(id: 2, publicKey: "0000000000000000000000000000000000000000000000000000000000000000",
                        fingerprint: "TJD6-MTT7-7J3V-T8E8-QQ5Q-569S-M3YP-12GX"),
        FingerprintCase(id: 3, publicKey: "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1",
                        fingerprint: "TRJ7-GJ0F-9R8Q-GT53-X002-6K0X-W9CY-SK3S"),
    ]

    @Test("fingerprint of a fixed public key", arguments: fingerprints)
    func fingerprint(_ c: FingerprintCase) throws {
        let key = try #require(PublicKey(hex: c.publicKey))
        #expect(key.fingerprint == c.fingerprint)
    }

    /// From the stored secret to what the user compares: the cacophony
    /// initiator secret, whose public key is 6bc3822a...b75a.
    @Test func identityFingerprintFromSecret() {
        let id = Identity(keyPair: Self.kp(NoiseVectorTests.initStatic))
        #expect(id.publicKey.hex == "6bc3822a2aa7f4e6981d6538692b3cdf3e6df9eea6ed269eb41d93c22757b75a")
        #expect(id.fingerprint == "6M64-JKQ1-QSKQ-KQB0-58HT-0GEE-774Z-E4XE")
    }

    // MARK: Pairing PSK: BLAKE2b-256("remolo pairing psk v1" || 15 code bytes)

    struct PSKCase: Sendable, CustomTestStringConvertible {
        let id: Int
        let code: [UInt8]
        let display: String
        let psk: String
        var testDescription: String { "\(id): \(display)" }
    }

    static let psks = [
        PSKCase(id: 1, code: [UInt8](repeating: 0, count: 15), display: "0000-0000-0000-0000-0000-0000",
                psk: "249102bbc61388d522b203eb5565b8c4377143d39b64a2384f2d28f1f85ca5af"),
        PSKCase(id: 2, code: Array(1...15), display: "0410-6105-0R3G-G28A-1C60-T3GF",
                psk: "df7b3ea05e63cce8f229b7e5c2c9353a51e02041cf7711ce52391725afcf02f4"),
        PSKCase(id: 3, code: [UInt8](repeating: 0xff, count: 15), display: "ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ",
                psk: "1484a7008c53d4b3a3dc9bd59d7ab8f5699aad7235bd0e190e735aff3f0c608e"),
    ]

    @Test("pairing code display and PSK", arguments: psks)
    func pairingPSK(_ c: PSKCase) throws {
        let secret = PairingSecret(raw: c.code)
        #expect(secret.display == c.display)
        let typed = try #require(PairingSecret(typed: c.display))
        #expect(typed == secret)
        #expect(Self.hex(typed.psk()) == c.psk)
    }

    // MARK: TAI64N: u64 BE (0x400000000000000a + Unix seconds) || u32 BE nanoseconds

    @Test("TAI64N labels", arguments: [
        (1, 0.0, "400000000000000a00000000"),
        (2, 1.5, "400000000000000b1dcd6500"),
        (3, 1_700_000_000.25, "400000006553f10a0ee6b280"),
        (4, -5.0, "400000000000000a00000000"), // before 1970: clamped to the epoch
    ] as [(Int, Double, String)])
    func tai64n(_ id: Int, _ unix: Double, _ expected: String) {
        #expect(Hex.encode(TAI64N(unixSeconds: unix).bytes) == expected, "case \(id)")
    }

    // MARK: Datagram key: HKDF(ck, "remolo datagram key v1", 2), output 1, first 32 bytes

    /// The cacophony transcripts' final chaining keys, and the datagram key
    /// each gives (output 2 of the same HKDF is different, so using it fails).
    @Test("datagram key from a known final chaining key", arguments: [
        (1, NoiseVectorTests.ik,
         "e2fb0fa51ce9901668a0320953f2f0dd3484f8edc74980de22811cafbe3811110ba6452338ff352d4d66137a6599850d8a6bfd194670cab5ce9a861bc91136b9",
         "a200e6c86b86fbdbc232dc314934728f7e866fc93f9a7438bfad15c40fd81fd6"),
        (2, NoiseVectorTests.xxpsk3,
         "e5020c18594b172c0de824a801e44ba12b7ceb7e56c70b70d1b5c46c3e45c6d1be0a920ecc24f97c6ffe93c3754e2f9abbafa6df60e946235e6d8de058bb2f23",
         "e65e2848d4148badf9f37755a60573a0edbb3ab6a36c743597342053d78b1786"),
    ] as [(Int, NoiseVectorTests.Vector, String, String)])
    func datagramKey(_ id: Int, _ v: NoiseVectorTests.Vector, _ ck: String, _ expected: String) throws {
        let (i, r) = NoiseVectorTests.pair(v)
        for n in 0..<v.pattern.messages.count {
            let (w, rd) = n % 2 == 0 ? (i, r) : (r, i)
            _ = try rd.readMessage(try w.writeMessage(payload: NoiseVectorTests.payloads[n]))
        }
        #expect(Self.hex(i.symmetric.ck) == ck, "case \(id)")
        #expect(Self.hex(i.symmetric.deriveExtraKey(label: datagramKeyLabel)) == expected, "case \(id)")
        #expect(Self.hex(r.symmetric.deriveExtraKey(label: datagramKeyLabel)) == expected, "case \(id)")
    }

    // MARK: Whole Remolo handshakes, sender side, against the independent transcript

    struct Transcript: Sendable, CustomTestStringConvertible {
        let id: Int
        let name: String
        let pairing: Bool
        /// Sender messages (1 and, for pairing, 3) and the receiver's message 2.
        let messages: [String]
        let datagramKey: String
        let k1: String
        let k2: String
        let handshakeHash: String
        var testDescription: String { "\(id): \(name)" }
    }

    /// Sender static/ephemeral = cacophony initiator keys, receiver
    /// static/ephemeral = cacophony responder keys, prologue "Remolo
    /// handshake v1", sender clock 1.5 s, session id "remolo-A", pairing
    /// code of 15 zero bytes.
    static let transcripts = [
        Transcript(id: 1, name: "IK session", pairing: false, messages: [
            "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd3367f752754e594c600bd28404803a77ab7b23782208ede4fcbde67e977ce607b83980fbc6b56e9479c953a85d",
            "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f144808843d3018c397413fca110e5d219acdef6f8337ead977ab83129cb",
        ], datagramKey: "a200e6c86b86fbdbc232dc314934728f7e866fc93f9a7438bfad15c40fd81fd6",
           k1: "e5a7ef420e26421734c82df62522251fa2f56a6626d64039756ffec438b2883f",
           k2: "065bc21e75d5ac1c0d227dcd158cc9e1979fc30efeb558622535b4b84eb6c80a",
           handshakeHash: "737ea4997a45ba70ff292b7fa352fbd3de15b08d6537e27a3d1e1ea635e8e4f38265abf9cf5d6e69ca460988b6b2e4ceeac374feeb5999f1b5607fc7763d7234"),
        Transcript(id: 2, name: "XXpsk3 pairing", pairing: true, messages: [
            "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944be76eda322491c8f83a6311ef552c41a",
            "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f14480884381a78489d56c9e2ac962826f25684980b25244dbfd505b7d903a94d4f4fd8400a00a9e6cc392b79053bcafde5900aafee81ba314fb0cc4e4172a280e4d8a75a4b7c534eae63e858da8",
            "291dfeff6eff386e29adb0bdbd5a1ae9e09de4449c8695d109adcb63e80e4895a2c24dda1f94d812cebb4d624f8b8286c5b4cbd55ed398b4e415b328f51f7cba1da5a9eec57136a56449bd6615",
        ], datagramKey: "91dd1960d94159699fe3d8537da84f56bc49fbfc3862f0643e28ce89bf153039",
           k1: "71dad7872e815cf97e919c6cb57e3b16d8127857898538459a564440283cfb1e",
           k2: "7e12dcc6a02d79d11431f1e8dc5a27e6c100cbaba4d7d652dd07525d3260bd94",
           handshakeHash: "19a1a944cea522294b8382109c2096aa59bd2b1aea1ef2583f5eb4797614a5c5e55aa8cfe262efc15063a3fde62bb604c6fb4fa0b9168ee6686e7777b0541af1"),
    ]

    @Test("sender handshake reproduces the transcript and keys", arguments: transcripts)
    func senderTranscript(_ t: Transcript) throws {
        let receiverKey = try #require(PublicKey(bytes: Self.kp(NoiseVectorTests.respStatic).publicKey))
        let mode: SenderHandshake.Mode = t.pairing
            ? .pairing(PairingSecret(raw: [UInt8](repeating: 0, count: 15))) : .session(receiver: receiverKey)
        let s = SenderHandshake(identity: Identity(keyPair: Self.kp(NoiseVectorTests.initStatic)), mode: mode,
                                clock: { 1.5 }, ephemeral: Self.kp(NoiseVectorTests.initEphemeral))
        let m1 = s.start()
        #expect(m1.type == (t.pairing ? .pairInit : .sessionInit))
        #expect(Hex.encode(m1.noiseMessage) == t.messages[0], "message 1")
        let m2 = HandshakeWireMessage(type: t.pairing ? .pairResponse : .sessionResponse, noiseMessage: Self.hex(t.messages[1]))
        let m3 = try s.receive(m2)
        if t.pairing {
            #expect(m3?.type == .pairFinish)
            #expect(m3.map { Hex.encode($0.noiseMessage) } == t.messages[2], "message 3")
        } else {
            #expect(m3 == nil)
        }
        let r = try #require(s.result)
        #expect(r.keys.sessionID.bytes == Array("remolo-A".utf8))
        #expect(r.peer == receiverKey)
        #expect(Self.hex(r.keys.datagramKey) == t.datagramKey)
        #expect(Self.hex(r.keys.senderToReceiver) == t.k1)
        #expect(Self.hex(r.keys.receiverToSender) == t.k2)
        #expect(Hex.encode(r.keys.handshakeHash) == t.handshakeHash)
        // The datagram layer takes the key straight from its owner and seals
        // exactly as with the same bytes given by value.
        let fromSecret = try DatagramKey(secret: r.keys.datagramKey)
        let fromBytes = try DatagramKey(bytes: Self.hex(t.datagramKey))
        let session = r.keys.sessionID
        let d = Datagram(.motion(dx: 785, dy: -1280), senderTimeUs: 1_000_000)
        #expect(DatagramSealer.seal(d, counter: 7, key: fromSecret, session: session)
                == DatagramSealer.seal(d, counter: 7, key: fromBytes, session: session))
        #expect(throws: DatagramError.badKeyLength(64)) { try DatagramKey(secret: SecretBytes(count: 64)) }
    }
}
