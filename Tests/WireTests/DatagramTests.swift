import Glibc
import RemoloPlayout
import RemoloSession
import RemoloSystem
import RemoloPlayoutCore
import RemoloTrace
import Testing
import RemoloTypes

@Suite struct RoundTripTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let number: Int
        let payload: DatagramPayload
        let tx: UInt64
        var testDescription: String { "#\(number) \(payload) tx=\(tx)" }
    }

    static let cases: [Case] = [
        Case(number: 1, payload: .motion(dx: 3 * 256 + 17, dy: -5 * 256), tx: 1_000_000),
        Case(number: 2, payload: .motion(dx: 0, dy: 0), tx: 0),
        Case(number: 3, payload: .motion(dx: .min, dy: .max), tx: .max),
        Case(number: 4, payload: .scroll(vertical: 120 * 256, horizontal: -1), tx: 42),
        Case(number: 5, payload: .scroll(vertical: .max, horizontal: .min), tx: 1 << 63),
        Case(number: 6, payload: .button(code: 0x110, down: true), tx: 7),
        Case(number: 7, payload: .button(code: 0x110, down: false), tx: 8),
        Case(number: 8, payload: .button(code: 0xffff, down: true), tx: 9),
        Case(number: 9, payload: .button(code: 0, down: false), tx: 10),
        Case(number: 10, payload: .heartbeat, tx: 123_456_789),
    ]

    @Test(arguments: cases) func sealThenOpen(_ c: Case) throws {
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        var sealer = DatagramSealer(key: keyA, session: idA, firstCounter: 41)
        let bytes = try sealer.seal(Datagram(c.payload, senderTimeUs: c.tx))
        #expect(bytes.count == Datagram.byteCount && bytes.count == 49)
        #expect(sealer.nextCounter == 42)
        let opened = try opener.open(bytes).get()
        #expect(opened.datagram == Datagram(c.payload, senderTimeUs: c.tx))
        #expect(opened.session == idA)
        #expect(opened.counter == 41)
        #expect(opened.slot == 0)
        #expect(opener.stats.opened == 1 && opener.stats.dropped == 0)
    }

    /// The cleartext header is exactly id || counter LE, and the plaintext
    /// is kind || a || b || tx (checked by decrypting with the bare AEAD).
    @Test(arguments: cases) func layoutIsAsDocumented(_ c: Case) {
        let counter: UInt64 = 0x0102_0304_0506_0708
        let bytes = DatagramSealer.seal(Datagram(c.payload, senderTimeUs: c.tx), counter: counter,
                                        key: keyA, session: idA)
        #expect(Array(bytes[0..<8]) == idBytesA)
        #expect(Array(bytes[8..<16]) == [8, 7, 6, 5, 4, 3, 2, 1])
        var pt = [UInt8](repeating: 0, count: 17)
        let n = wire_aead_open(&pt, Array(bytes[16...]), 33, Array(bytes[0..<16]), 16, 0, counter, keyBytesA)
        #expect(n == 17)
        let (a, b): (Int32, Int32) = switch c.payload {
        case let .motion(dx, dy): (dx, dy)
        case let .scroll(v, h): (v, h)
        case let .button(code, down): (Int32(code), down ? 1 : 0)
        case .heartbeat, .key: (0, 0)
        }
        #expect(pt == [c.payload.kind!.rawValue] + le32(a) + le32(b) + le64(c.tx))
        // Byte-identical to the independent construction in Support.swift.
        #expect(bytes == rawDatagram(key: keyBytesA, id: idBytesA, counter: counter,
                                     kind: c.payload.kind!.rawValue, a: a, b: b, tx: c.tx))
    }

    /// The vector printed in docs/protocol.md.
    @Test func publishedVector() throws {
        let vector = unhex("""
            72 65 6d 6f 6c 6f 2d 41
            00 00 00 00 00 00 00 00
            19 a9 41 31 ad e6 5d 2e ec 21 1e 6e af 43 4e 27 f8
            ec 8a 9d ac 59 b9 a2 59 5b 10 2e 12 e4 25 6c ae
            """)
        let d = Datagram(.motion(dx: 785, dy: -1280), senderTimeUs: 1_000_000)
        #expect(DatagramSealer.seal(d, counter: 0, key: keyA, session: idA) == vector)
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        #expect(try opener.open(vector).get().datagram == d)
    }

    @Test func openedPacketFeedsPlayout() throws {
        // wire_open fills struct playout_pkt the way playout_push reads it.
        var w = wire()
        #expect(wire_init(&w) == 0)
        defer { wire_deinit(&w) }
        #expect(wire_add_session(&w, idBytesA, keyBytesA) == 0)
        let bytes = DatagramSealer.seal(Datagram(.button(code: 0x111, down: true), senderTimeUs: 99),
                                        counter: 3, key: keyA, session: idA)
        var rx = wire_rx()
        #expect(wire_open(&w, bytes, bytes.count, &rx) == 0)
        #expect(rx.pkt.kind == UInt8(PLAYOUT_KIND_BUTTON.rawValue))
        #expect(rx.pkt.code == 0x111 && rx.pkt.down == 1 && rx.pkt.a == 0 && rx.pkt.b == 0)
        #expect(rx.pkt.tx_us == 99 && rx.counter == 3 && rx.slot == 0)
    }
}

@Suite struct BitFlipTests {
    /// Every one of the 392 bits of a datagram, flipped alone: refused with
    /// the reason its field implies, the counter never moves, and the
    /// original still opens afterwards.
    @Test func everyBitOfEveryByteIsRefused() throws {
        let original = DatagramSealer.seal(Datagram(.motion(dx: 512, dy: -256), senderTimeUs: 5_000),
                                           counter: 77, key: keyA, session: idA)
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        var refused = 0
        for byte in 0..<original.count {
            for bit in 0..<8 {
                var d = original
                d[byte] ^= UInt8(1 << bit)
                let expected: DatagramDropReason = byte < 8 ? .unknownSession : .badTag
                #expect(Outcome(opener.open(d)) == .drop(expected), "byte \(byte) bit \(bit)")
                refused += 1
            }
        }
        #expect(refused == 49 * 8)
        #expect(opener.newestCounter(of: idA) == nil)
        #expect(opener.stats[.unknownSession] == 64 && opener.stats[.badTag] == 41 * 8)
        #expect(Outcome(opener.open(original)) == .ok(.motion(dx: 512, dy: -256)))
        #expect(opener.newestCounter(of: idA) == 77)
    }
}

@Suite struct RejectionTests {
    /// One step of a scenario against a table holding sessions A and B.
    enum Step: Sendable, CustomStringConvertible {
        /// A valid datagram of session A.
        case valid(UInt64, DatagramPayload)
        /// Session A's header, arbitrary kind and fields, valid tag.
        case raw(UInt64, kind: UInt8, a: Int32, b: Int32)
        /// Session A's header under session B's key.
        case wrongKey(UInt64)
        /// Session A's header, a random ciphertext and tag.
        case forged(UInt64)
        /// A valid datagram (key A) of an id nobody added.
        case unknownSession(UInt64)
        /// A valid datagram of session A cut to n bytes or padded to n.
        case resized(UInt64, Int)
        case removeA

        var description: String {
            switch self {
            case let .valid(c, p): "valid \(c) \(p)"
            case let .raw(c, k, a, b): "raw \(c) kind \(k) a \(a) b \(b)"
            case let .wrongKey(c): "wrong key \(c)"
            case let .forged(c): "forged \(c)"
            case let .unknownSession(c): "unknown session \(c)"
            case let .resized(c, n): "valid \(c) resized to \(n)"
            case .removeA: "remove A"
            }
        }

        func bytes() -> [UInt8] {
            let m = Datagram(.motion(dx: 1, dy: 2), senderTimeUs: 3)
            switch self {
            case let .valid(c, p):
                return DatagramSealer.seal(Datagram(p, senderTimeUs: c &* 8_333), counter: c, key: keyA, session: idA)
            case let .raw(c, k, a, b):
                return rawDatagram(key: keyBytesA, id: idBytesA, counter: c, kind: k, a: a, b: b)
            case let .wrongKey(c):
                return DatagramSealer.seal(m, counter: c, key: keyB, session: idA)
            case let .forged(c):
                var g = SystemRandomNumberGenerator()
                return idBytesA + le64(c) + (0..<33).map { _ in UInt8.random(in: 0...255, using: &g) }
            case let .unknownSession(c):
                return DatagramSealer.seal(m, counter: c, key: keyA, session: try! SessionID(bytes: Array("nobody!!".utf8)))
            case let .resized(c, n):
                let d = DatagramSealer.seal(m, counter: c, key: keyA, session: idA)
                return n <= d.count ? Array(d[..<n]) : d + [UInt8](repeating: 0, count: n - d.count)
            case .removeA:
                return []
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let number: Int
        let name: String
        let steps: [(Step, Outcome?)]   // nil outcome: not an open
        /// The newest counter of A at the end.
        let newest: UInt64?
        var testDescription: String { "#\(number) \(name)" }
    }

    static let mv = DatagramPayload.motion(dx: 256, dy: 0)
    static let ok = Outcome.ok(mv)

    static let cases: [Case] = [
        Case(number: 1, name: "replayed datagram", steps: [(.valid(5, mv), ok), (.valid(5, mv), .drop(.replay))], newest: 5),
        Case(number: 2, name: "older counter after a newer one", steps: [
            (.valid(5, mv), ok), (.valid(3, mv), .drop(.replay)), (.valid(4, mv), .drop(.replay)), (.valid(0, mv), .drop(.replay)),
        ], newest: 5),
        Case(number: 3, name: "duplicated counter, other content", steps: [
            (.valid(9, mv), ok), (.valid(9, .heartbeat), .drop(.replay)),
        ], newest: 9),
        Case(number: 4, name: "gaps are allowed", steps: [
            (.valid(0, mv), ok), (.valid(2, mv), ok), (.valid(1_000, mv), ok), (.valid(UInt64(1) << 40, mv), ok),
        ], newest: 1 << 40),
        Case(number: 5, name: "truncated", steps: [
            (.resized(1, 48), .drop(.short)), (.resized(1, 33), .drop(.short)), (.resized(1, 16), .drop(.short)),
            (.resized(1, 1), .drop(.short)), (.resized(1, 0), .drop(.short)), (.valid(1, mv), ok),
        ], newest: 1),
        Case(number: 6, name: "oversized", steps: [
            (.resized(1, 50), .drop(.long)), (.resized(1, 1500), .drop(.long)), (.resized(1, 65_536), .drop(.long)),
            (.valid(1, mv), ok),
        ], newest: 1),
        Case(number: 7, name: "unknown session", steps: [(.unknownSession(1), .drop(.unknownSession))], newest: nil),
        Case(number: 8, name: "wrong key", steps: [(.wrongKey(1), .drop(.badTag)), (.valid(1, mv), ok)], newest: 1),
        Case(number: 9, name: "forged far ahead does not advance the counter", steps: [
            (.valid(10, mv), ok), (.forged(1_000_000), .drop(.badTag)), (.forged(.max), .drop(.badTag)),
            (.valid(11, mv), ok),
        ], newest: 11),
        Case(number: 10, name: "wrong key ahead does not advance the counter", steps: [
            (.wrongKey(50), .drop(.badTag)), (.valid(49, mv), ok), (.valid(50, mv), ok),
        ], newest: 50),
        Case(number: 11, name: "forged replay of a seen counter is a replay", steps: [
            (.valid(7, mv), ok), (.forged(7), .drop(.replay)), (.forged(6), .drop(.replay)),
        ], newest: 7),
        Case(number: 12, name: "unknown kinds consume their counter", steps: [
            (.raw(1, kind: 0, a: 0, b: 0), .drop(.badKind)), (.raw(2, kind: 5, a: 0, b: 0), .drop(.badKind)),
            (.raw(3, kind: 255, a: 1, b: 1), .drop(.badKind)), (.raw(3, kind: 1, a: 1, b: 1), .drop(.replay)),
            (.valid(4, mv), ok),
        ], newest: 4),
        Case(number: 13, name: "bad fields", steps: [
            (.raw(1, kind: 3, a: 0x110, b: 2), .drop(.badField)), (.raw(2, kind: 3, a: -1, b: 1), .drop(.badField)),
            (.raw(3, kind: 3, a: 0x10000, b: 0), .drop(.badField)), (.raw(4, kind: 3, a: 0x110, b: -1), .drop(.badField)),
            (.raw(5, kind: 4, a: 1, b: 0), .drop(.badField)), (.raw(6, kind: 4, a: 0, b: -1), .drop(.badField)),
            (.raw(7, kind: 3, a: 0xffff, b: 1), .ok(.button(code: 0xffff, down: true))),
            (.raw(8, kind: 4, a: 0, b: 0), .ok(.heartbeat)),
        ], newest: 8),
        Case(number: 14, name: "removed session", steps: [
            (.valid(1, mv), ok), (.removeA, nil), (.valid(2, mv), .drop(.unknownSession)),
        ], newest: nil),
        Case(number: 15, name: "counter 0 first, then 0 again", steps: [(.valid(0, mv), ok), (.valid(0, mv), .drop(.replay))], newest: 0),
        Case(number: 16, name: "last counter closes the session", steps: [
            (.valid(.max, mv), ok), (.valid(.max, mv), .drop(.replay)), (.valid(.max - 1, mv), .drop(.replay)),
        ], newest: .max),
    ]

    @Test(arguments: cases) func scenario(_ c: Case) throws {
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        try opener.addSession(idB, key: keyB)
        var expected: [DatagramDropReason: UInt64] = [:]
        var opened: UInt64 = 0
        for (i, (step, want)) in c.steps.enumerated() {
            let bytes = step.bytes()
            guard let want else {
                #expect(opener.removeSession(idA))
                continue
            }
            let got = Outcome(opener.open(bytes))
            #expect(got == want, "step \(i + 1): \(step)")
            switch want {
            case .ok: opened += 1
            case let .drop(r): expected[r, default: 0] += 1
            }
        }
        #expect(opener.newestCounter(of: idA) == c.newest)
        #expect(opener.newestCounter(of: idB) == nil)
        let stats = opener.stats
        #expect(stats.opened == opened)
        for r in DatagramDropReason.allCases {
            #expect(stats[r] == expected[r, default: 0], "\(r)")
        }
    }

    /// Sessions keep separate counters: B's datagrams do not make A's
    /// replays, and the slot says which session spoke.
    @Test func sessionsAreIndependent() throws {
        let opener = DatagramOpener()
        let slotA = try opener.addSession(idA, key: keyA)
        let slotB = try opener.addSession(idB, key: keyB)
        #expect(slotA != slotB)
        var a = DatagramSealer(key: keyA, session: idA, firstCounter: 100)
        var b = DatagramSealer(key: keyB, session: idB)
        for i in 0..<20 {
            let d = Datagram(.motion(dx: Int32(i), dy: 0), senderTimeUs: UInt64(i))
            let oa = try opener.open(try a.seal(d)).get()
            let ob = try opener.open(try b.seal(d)).get()
            #expect(oa.slot == slotA && oa.session == idA && oa.counter == 100 + UInt64(i))
            #expect(ob.slot == slotB && ob.session == idB && ob.counter == UInt64(i))
        }
        // B's key on A's id: refused.
        let cross = DatagramSealer.seal(Datagram(.heartbeat, senderTimeUs: 1), counter: 500, key: keyB, session: idA)
        #expect(Outcome(opener.open(cross)) == .drop(.badTag))
    }
}

@Suite struct SealerTests {
    @Test func counterAdvancesAndExhausts() throws {
        var s = DatagramSealer(key: keyA, session: idA, firstCounter: .max - 1)
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        #expect(try opener.open(try s.seal(Datagram(.heartbeat, senderTimeUs: 1))).get().counter == .max - 1)
        #expect(try opener.open(try s.seal(Datagram(.heartbeat, senderTimeUs: 2))).get().counter == .max)
        #expect(throws: DatagramError.counterExhausted) { try s.seal(Datagram(.heartbeat, senderTimeUs: 3)) }
    }

    @Test func smallBufferIsRefused() throws {
        var s = DatagramSealer(key: keyA, session: idA)
        var buf = [UInt8](repeating: 0, count: 48)
        #expect(throws: DatagramError.bufferTooSmall(needed: 49)) {
            try buf.withUnsafeMutableBytes { try s.seal(Datagram(.heartbeat, senderTimeUs: 1), into: $0) }
        }
        #expect(s.nextCounter == 0)
    }

    @Test func cSealRefusesWhatCannotBeOpened() {
        var out = [UInt8](repeating: 0, count: 64)
        var pkt = playout_pkt()
        pkt.kind = 9
        #expect(wire_seal(keyBytesA, idBytesA, 1, &pkt, &out, 64) == -EINVAL)
        pkt.kind = UInt8(PLAYOUT_KIND_BUTTON.rawValue); pkt.code = 0x110; pkt.down = 2
        #expect(wire_seal(keyBytesA, idBytesA, 1, &pkt, &out, 64) == -EINVAL)
        pkt.down = 1
        #expect(wire_seal(keyBytesA, idBytesA, 1, &pkt, &out, 48) == -ENOSPC)
        #expect(wire_seal(keyBytesA, idBytesA, 1, &pkt, &out, 49) == 49)
    }

    /// The playout's key kind (5) is internal: keys come over the control
    /// channel only. A datagram of kind 5 stays `badKind` whatever its
    /// fields, it consumes its counter like any authentic datagram, and
    /// nothing seals one.
    @Test func keyKindIsNotADatagram() throws {
        #expect(PLAYOUT_KIND_KEY.rawValue == 5)
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        let cases: [(counter: UInt64, a: Int32, b: Int32)] = [(1, 30, 1), (2, 30, 0), (3, 0, 0), (4, 0x110, 1)]
        for c in cases {
            let bytes = rawDatagram(key: keyBytesA, id: idBytesA, counter: c.counter,
                                    kind: UInt8(PLAYOUT_KIND_KEY.rawValue), a: c.a, b: c.b, tx: 1000)
            #expect(opener.open(bytes) == .failure(.badKind), "counter \(c.counter)")
        }
        #expect(opener.stats[.badKind] == 4 && opener.stats.opened == 0)
        #expect(opener.newestCounter(of: idA) == 4)
        var out = [UInt8](repeating: 0, count: 64)
        var pkt = playout_pkt()
        pkt.kind = UInt8(PLAYOUT_KIND_KEY.rawValue); pkt.code = 30; pkt.down = 1
        #expect(wire_seal(keyBytesA, idBytesA, 1, &pkt, &out, 64) == -EINVAL)
        var s = DatagramSealer(key: keyA, session: idA)
        #expect(throws: DatagramError.notADatagram) { try s.seal(Datagram(.key(code: 30, down: true), senderTimeUs: 1)) }
        #expect(s.nextCounter == 0, "a refused key uses no counter")
        #expect(DatagramPayload.key(code: 30, down: true).kind == nil)
    }

    @Test func badLengthsAreRefused() {
        #expect(throws: DatagramError.badKeyLength(31)) { try DatagramKey(bytes: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: SessionIDLengthError(count: 9)) { try SessionID(bytes: [UInt8](repeating: 1, count: 9)) }
        #expect(idA.description == "72656d6f6c6f2d41")
        #expect(SessionID.random() != SessionID.random())
    }

    /// One kind enum and one session id type above the wire: their values
    /// are the C header's (remolo_wire.h, remolo_playout.h).
    @Test func swiftNamesMatchTheWire() {
        #expect(SessionID.byteCount == Int(WIRE_ID_LEN))
        #expect(PacketKind.motion.rawValue == UInt8(PLAYOUT_KIND_MOTION.rawValue))
        #expect(PacketKind.scroll.rawValue == UInt8(PLAYOUT_KIND_SCROLL.rawValue))
        #expect(PacketKind.button.rawValue == UInt8(PLAYOUT_KIND_BUTTON.rawValue))
        #expect(PacketKind.heartbeat.rawValue == UInt8(PLAYOUT_KIND_HEARTBEAT.rawValue))
        #expect(PacketKind.allCases.map(\.traceName) == ["move", "scroll", "button", "heartbeat"])
    }
}
