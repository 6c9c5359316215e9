import RemoloPlayoutCore
import RemoloTestSupport
import Testing

/// The gesture layout (remolo_wire.h; docs/protocol.md, "Gestures (feature
/// bit 3)"): kind 6 in 65 bytes, only where hello granted it; one set of
/// bounds for the sealer and the opener; an independent Python opener and
/// sealer agree byte for byte; a gesture datagram leaves the running totals
/// alone and hands the datagrams skipped before it to the next totals.
@Suite struct GestureLayoutTests {
    /// A state, as the wire carries it.
    struct State: Sendable, CustomStringConvertible {
        var x: Int32 = 1_500, y: Int32 = -20
        var id: UInt8 = 3, type: UInt8 = 2, fingers: UInt8 = 2, flags: UInt8 = 0
        var scale: Int32 = 98_304, angle: Int32 = -785_398
        var zero: UInt32 = 0
        var description: String { "id \(id) type \(type) \(fingers)f flags \(flags) (\(x),\(y)) s\(scale) a\(angle) z\(zero)" }

        var pkt: playout_pkt {
            var p = playout_pkt()
            p.kind = UInt8(PLAYOUT_KIND_GESTURE.rawValue); p.a = x; p.b = y; p.tx_us = 101
            p.g = playout_gesture(scale_q16: scale, angle_urad: angle, id: id, type: type, fingers: fingers, flags: flags)
            return p
        }
        var block: [UInt8] { [id, type, fingers, flags] + le32(scale) + le32(angle) + le32(Int32(bitPattern: zero)) }
    }

    /// Any plaintext of 33 bytes (kind, a, b, tx, 16 more), sealed as the
    /// header says: what a broken or hostile sender could send.
    static func raw(counter: UInt64, kind: UInt8, a: Int32, b: Int32, ext: [UInt8]?) -> [UInt8] {
        let header = idBytesA + le64(counter)
        let pt = [kind] + le32(a) + le32(b) + le64(101) + (ext ?? [])
        var sealed = [UInt8](repeating: 0, count: pt.count + 16)
        precondition(wire_aead_seal(&sealed, pt, pt.count, header, header.count, WIRE_NONCE_FIXED, counter, keyBytesA)
                     == Int32(pt.count + 16))
        return header + sealed
    }

    /// A table of one session with grants: open `d`, the result.
    final class Table {
        var w = wire()
        init(totals: Bool = false, gestures: Bool = false) {
            precondition(wire_init(&w) == 0)
            precondition(wire_add_session(&w, idBytesA, keyBytesA) == 0)
            if totals { precondition(wire_set_totals(&w, idBytesA, 1) == 0) }
            if gestures { precondition(wire_set_gestures(&w, idBytesA, 1) == 0) }
        }
        deinit { wire_deinit(&w) }
        func open(_ d: [UInt8]) -> (Int32, wire_rx) {
            var rx = wire_rx()
            return (wire_open(&w, d, d.count, &rx), rx)
        }
    }

    static func seal(_ s: State, counter: UInt64 = 0) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 80)
        var p = s.pkt
        let n = wire_seal_gesture(keyBytesA, idBytesA, counter, &p, &out, out.count)
        return n < 0 ? nil : Array(out.prefix(Int(n)))
    }

    static let badField = -Int32(WIRE_DROP_BAD_FIELD.rawValue)
    static let badKind = -Int32(WIRE_DROP_BAD_KIND.rawValue)
    static let long = -Int32(WIRE_DROP_LONG.rawValue)

    @Test func aGrantedSessionOpensWhatWasSealed() throws {
        let s = State()
        let d = try #require(Self.seal(s, counter: 9))
        #expect(d.count == 65)
        let t = Table(gestures: true)
        let (r, rx) = t.open(d)
        #expect(r == 0)
        #expect(rx.pkt.kind == 6 && rx.pkt.a == 1_500 && rx.pkt.b == -20 && rx.pkt.tx_us == 101 && rx.counter == 9)
        #expect(rx.pkt.g.id == 3 && rx.pkt.g.type == 2 && rx.pkt.g.fingers == 2 && rx.pkt.g.flags == 0)
        #expect(rx.pkt.g.scale_q16 == 98_304 && rx.pkt.g.angle_urad == -785_398)
        // One bit anywhere in the sealed part: the tag fails.
        for i in [16, 33, 40, 48, 64] {
            var bad = d
            bad[i] ^= 1
            let t2 = Table(gestures: true)
            #expect(t2.open(bad).0 == -Int32(WIRE_DROP_BAD_TAG.rawValue), "byte \(i)")
        }
    }

    /// Which session may send which layout (numbered).
    struct GrantCase: Sendable, CustomTestStringConvertible {
        let id: Int, what: String, totals: Bool, gestures: Bool, kind: UInt8, ext: Bool, expect: Int32
        var testDescription: String { "\(id). \(what)" }
    }

    static let grants: [GrantCase] = [
        GrantCase(id: 1, what: "gesture, nothing granted: too long, as before the layout", totals: false, gestures: false,
                  kind: 6, ext: true, expect: long),
        GrantCase(id: 2, what: "gesture, redundancy granted only", totals: true, gestures: false, kind: 6, ext: true,
                  expect: badKind),
        GrantCase(id: 3, what: "gesture in 49 bytes, gestures granted", totals: false, gestures: true, kind: 6,
                  ext: false, expect: badKind),
        GrantCase(id: 4, what: "motion in 65 bytes, gestures granted only", totals: false, gestures: true, kind: 1,
                  ext: true, expect: badKind),
        GrantCase(id: 5, what: "motion in 65 bytes, both granted", totals: true, gestures: true, kind: 1, ext: true,
                  expect: 0),
        GrantCase(id: 6, what: "gesture, both granted", totals: true, gestures: true, kind: 6, ext: true, expect: 0),
        GrantCase(id: 7, what: "motion in 49 bytes, gestures granted", totals: false, gestures: true, kind: 1,
                  ext: false, expect: 0),
    ]

    @Test(arguments: grants) func whoMaySendWhichLayout(_ c: GrantCase) {
        let ext = c.kind == 6 ? State().block : [UInt8](repeating: 0, count: 16)
        let a: Int32 = c.kind == 6 ? 1_500 : 0
        let d = Self.raw(counter: 0, kind: c.kind, a: a, b: 0, ext: c.ext ? ext : nil)
        #expect(Table(totals: c.totals, gestures: c.gestures).open(d).0 == c.expect)
    }

    /// The bounds (numbered): each state is refused by the opener as
    /// bad_field and by the sealer, which never seals what would be refused.
    static let bounds: [(Int, String, State)] = [
        (1, "offset x past 500 mm", State(x: 500_001)),
        (2, "offset y past -500 mm", State(y: -500_001)),
        (3, "type 0", State(type: 0)),
        (4, "type 3", State(type: 3)),
        (5, "a swipe of 2 fingers", State(type: 1, fingers: 2, scale: 65536, angle: 0)),
        (6, "a swipe of 5 fingers", State(type: 1, fingers: 5, scale: 65536, angle: 0)),
        (7, "a swipe that scales", State(type: 1, fingers: 3, scale: 65537, angle: 0)),
        (8, "a swipe that turns", State(type: 1, fingers: 3, scale: 65536, angle: 1)),
        (9, "a pinch of 1 finger", State(fingers: 1)),
        (10, "a pinch of 5 fingers", State(fingers: 5)),
        (11, "a pinch below 1/64", State(scale: 1_023)),
        (12, "a pinch above 64", State(scale: 4_194_305)),
        (13, "a pinch past four turns", State(angle: -25_132_742)),
        (14, "an unknown flag", State(flags: 2)),
        (15, "a reserved field not zero", State(zero: 1)),
    ]

    @Test func boundsAreOneRuleForBothEnds() {
        for (n, what, s) in Self.bounds {
            let d = Self.raw(counter: 0, kind: 6, a: s.x, b: s.y, ext: s.block)
            #expect(Table(gestures: true).open(d).0 == Self.badField, "\(n). \(what)")
            if s.zero == 0 { #expect(Self.seal(s) == nil, "\(n). \(what): sealed") }
        }
        // The edges themselves are in.
        for s in [State(x: 500_000, y: -500_000), State(scale: 1_024), State(scale: 4_194_304),
                  State(angle: 25_132_741), State(flags: 1), State(type: 1, fingers: 4, scale: 65536, angle: 0)] {
            let d = Self.seal(s)
            #expect(d != nil, "\(s)")
            if let d { #expect(Table(gestures: true).open(d).0 == 0, "\(s)") }
        }
    }

    /// On a redundant session, motion lost before a gesture datagram is
    /// recovered by the next datagram that carries totals, with the gap
    /// counted across the gesture datagram.
    @Test func aGestureDatagramHandsItsGapToTheNextTotals() throws {
        let t = Table(totals: true, gestures: true)
        var totals: [UInt32] = [0, 0, 0, 0]
        func motion(_ c: UInt64, _ dx: Int32) -> [UInt8] {
            totals[0] &+= UInt32(bitPattern: dx)
            var p = playout_pkt()
            p.kind = UInt8(PLAYOUT_KIND_MOTION.rawValue); p.a = dx; p.tx_us = 100 + c
            var out = [UInt8](repeating: 0, count: 65)
            precondition(wire_seal_totals(keyBytesA, idBytesA, c, &p, totals, &out, out.count) == 65)
            return out
        }
        #expect(t.open(motion(0, 100)).0 == 0)
        _ = motion(1, 250)                          // lost
        #expect(t.open(try #require(Self.seal(State(), counter: 2))).0 == 0)
        let (r, rx) = t.open(motion(3, 7))
        #expect(r == 0)
        #expect(rx.pkt.lost_n == 1 && rx.pkt.lost.0 == 250, "recovered \(rx.pkt.lost) over \(rx.pkt.lost_n)")
        // And a gesture datagram straight after, skipping none: nothing owed.
        #expect(t.open(try #require(Self.seal(State(), counter: 4))).0 == 0)
        let (r2, rx2) = t.open(motion(5, 1))
        #expect(r2 == 0 && rx2.pkt.lost_n == 0 && rx2.pkt.lost.0 == 0)
    }

    /// Python's independent implementation seals; the core opens the same
    /// fields and seals the same bytes. And the other way round, refusals
    /// included.
    @Test func pythonAndTheCoreAgree() throws {
        try Python.requireCryptography()
        let states = [State(), State(x: -500_000, y: 500_000, id: 255, type: 1, fingers: 4, flags: 1, scale: 65536, angle: 0),
                      State(x: 0, y: 0, id: 0, fingers: 3, scale: 1_024, angle: 25_132_741)]
        let k = hex(keyBytesA), id = hex(idBytesA)
        let input = states.enumerated().map { i, s in
            "\(k) \(id) \(i) 6 \(s.x) \(s.y) 101 g \(s.id) \(s.type) \(s.fingers) \(s.flags) \(s.scale) \(s.angle)"
        }.joined(separator: "\n") + "\n"
        let sealed = try Python.run([Python.script, "seal"], input: input).split(separator: "\n").map { unhex(String($0)) }
        try #require(sealed.count == states.count)
        let t = Table(gestures: true)
        for (i, (d, s)) in zip(sealed, states).enumerated() {
            #expect(d == Self.seal(s, counter: UInt64(i)), "state \(i): the same bytes")
            let (r, rx) = t.open(d)
            #expect(r == 0 && rx.pkt.a == s.x && rx.pkt.g.scale_q16 == s.scale && rx.pkt.g.id == s.id, "state \(i)")
        }
        var lines = states.enumerated().map { i, s in "\(k) \(hex(Self.seal(s, counter: UInt64(i))!))" }
        lines.append("\(k) \(hex(Self.raw(counter: 7, kind: 6, a: 0, b: 0, ext: State(zero: 1).block)))")
        lines.append("\(k) \(hex(Self.raw(counter: 8, kind: 6, a: 0, b: 0, ext: nil)))")
        let opened = try Python.run([Python.script, "open"], input: lines.joined(separator: "\n") + "\n")
            .split(separator: "\n").map(String.init)
        let want = states.enumerated().map { i, s in
            "ok \(id) \(i) 6 \(s.x) \(s.y) 101 g \(s.id) \(s.type) \(s.fingers) \(s.flags) \(s.scale) \(s.angle)"
        } + ["drop bad_field", "drop bad_kind"]
        #expect(opened == want)
    }
}
