import RemoloPlayoutCore
import Testing

/// A key or button that missed its slot (the control channel is often
/// slower than the datagrams) keeps its place in sender order: it plays
/// from its arrival, after the motion sent at or before it, and not after
/// motion the sender sent later that is already queued. Virtual time, the
/// receiver's default policy, 480 Hz ticks.
@Suite struct LateKeyOrderTests {
    static let a: UInt16 = 30, btnLeft: UInt16 = 0x110
    static let t0: UInt64 = 1_000_000

    enum Step: Sendable {
        case motion(rx: UInt64, tx: UInt64, dx: Int32, dy: Int32)
        case button(rx: UInt64, tx: UInt64, down: Bool)
        case key(rx: UInt64, tx: UInt64, down: Bool)

        var rx: UInt64 {
            switch self {
            case let .motion(rx, _, _, _), let .button(rx, _, _), let .key(rx, _, _): rx
            }
        }
    }

    /// `count` packets from sender time `tx0`, one every `every` us, each
    /// arriving `lag(i)` after it was sent (from t0); "X" motion (dx) or
    /// "Y" motion (dy).
    static func motions(_ axis: Character, tx0: UInt64, count: Int, every: UInt64,
                        lag: (Int) -> UInt64) -> [Step] {
        (0..<count).map { i in
            let tx = tx0 + UInt64(i) * every
            return .motion(rx: t0 + tx + lag(i), tx: tx, dx: axis == "X" ? 3 * 256 : 0, dy: axis == "Y" ? 3 * 256 : 0)
        }
    }

    /// Runs the steps (in arrival order) at 480 Hz from the first arrival:
    /// each tick pushes what has arrived, then drains. Each tick's output as
    /// tokens in the order the loop writes them (the pointer's frame, then
    /// the keyboard's): "X", "Y" motion, "B272+" a button, "K30-" a key.
    static func run(_ unsorted: [Step], ticks: Int = 400) -> [[String]] {
        let steps = unsorted.enumerated().sorted { ($0.element.rx, $0.offset) < ($1.element.rx, $1.offset) }.map(\.element)
        var cfg = seedConfig()
        playout_config_default(&cfg)
        let p = CorePlayout(cfg)
        var pending = steps[...]
        var t = steps.first!.rx
        var out: [[String]] = []
        for _ in 0..<ticks {
            while let s = pending.first, s.rx <= t {
                pending = pending.dropFirst()
                switch s {
                case let .motion(rx, tx, dx, dy): p.push(rx: rx, tx: tx, a: dx, b: dy)
                case let .button(rx, tx, down): p.push(rx: rx, tx: tx, kind: PLAYOUT_KIND_BUTTON, code: btnLeft, down: down)
                case let .key(rx, tx, down): p.key(rx: rx, tx: tx, a, down)
                }
            }
            let o = p.tick(t)
            var tok: [String] = []
            if o.dx != 0 { tok.append("X") }
            if o.dy != 0 { tok.append("Y") }
            tok += o.buttons.map { "B\($0.0)\($0.1 ? "+" : "-")" }
            tok += o.keys.map { "K\($0.0)\($0.1 ? "+" : "-")" }
            out.append(tok)
            t += tickUs
        }
        precondition(pending.isEmpty, "the run ended before every step arrived")
        return out
    }

    /// "X" is the first tick with X, "X$" the last.
    static func tick(_ ref: String, _ ticks: [[String]]) -> (tick: Int, index: Int)? {
        let last = ref.hasSuffix("$"), token = last ? String(ref.dropLast()) : ref
        guard let i = last ? ticks.lastIndex(where: { $0.contains(token) }) : ticks.firstIndex(where: { $0.contains(token) })
        else { return nil }
        return (i, ticks[i].firstIndex(of: token)!)
    }

    enum Order: Sendable {
        /// An earlier tick.
        case before
        /// An earlier tick, or the same tick earlier in it (a pointer
        /// frame's motion before its buttons, before the keyboard's frame).
        case sameTickOrBefore
        /// An earlier tick or the same one.
        case notAfter
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let steps: [Step]
        let expect: [(String, Order, String)]
        var testDescription: String { "\(id): \(name)" }
    }

    /// The sender's trace of the VM test: right for 160 ms, A pressed 100 ms
    /// later and held 40 ms, down for 160 ms another 100 ms later; the
    /// datagrams 30 ms on the way, every other one 6 ms more.
    static func jitter(_ i: Int) -> UInt64 { 30_000 + (i % 2 == 1 ? 6_000 : 0) }
    static let right = motions("X", tx0: 0, count: 20, every: 8_000, lag: jitter)
    static let down = motions("Y", tx0: 392_000, count: 20, every: 8_000, lag: jitter)
    /// When the first step down arrives (and is queued, due 8 ms later).
    static let downRx = t0 + 392_000 + 30_000

    /// A drag held up on the way: one step right on time, then the press,
    /// ten steps down and the release, all arriving 200 ms late (far past
    /// the largest delay), the release over the control channel later still.
    static let stalled = t0 + 330_000
    static let drag: [Step] = [.motion(rx: t0 + 30_000, tx: 0, dx: 3 * 256, dy: 0),
                               .button(rx: stalled, tx: 100_000, down: true)]
        + (1...10).map { .motion(rx: stalled, tx: 100_000 + UInt64($0) * 8_000, dx: 0, dy: 3 * 256) }

    /// Steps right every 1 ms, a press at 20 ms, then `n` steps down on
    /// time; the press arrives just after the last of them.
    static func crowded(_ n: Int) -> [Step] {
        let r = motions("X", tx0: 0, count: 20, every: 1_000) { _ in 30_000 }
        let d = motions("Y", tx0: 21_000, count: n, every: 1_000) { _ in 30_000 }
        return r + d + [.key(rx: d.last!.rx + 500, tx: 20_000, down: true)]
    }

    @Test(arguments: [
        Case(id: 1, name: "a late release sent between two motions plays after the first, before the second", steps:
            right + down + [.key(rx: t0 + 342_000, tx: 252_000, down: true), .key(rx: downRx + 1_000, tx: 292_000, down: false)],
             expect: [("X$", .sameTickOrBefore, "K30+"), ("K30+", .before, "K30-"), ("K30-", .before, "Y")]),
        Case(id: 2, name: "a late press and release, both after the second motion was queued", steps:
            right + down + [.key(rx: downRx + 500, tx: 252_000, down: true), .key(rx: downRx + 1_000, tx: 292_000, down: false)],
             expect: [("X$", .sameTickOrBefore, "K30+"), ("K30+", .before, "K30-"), ("K30-", .before, "Y")]),
        Case(id: 3, name: "a late click sent between two motions plays after the first, before the second", steps:
            right + down + [.button(rx: t0 + 342_000, tx: 252_000, down: true),
                            .button(rx: downRx + 1_000, tx: 292_000, down: false)],
             expect: [("X$", .sameTickOrBefore, "B272+"), ("B272+", .before, "B272-"), ("B272-", .before, "Y")]),
        Case(id: 4, name: "a late release after a late drag follows all of the drag's motion", steps:
            drag + [.button(rx: stalled + 5_000, tx: 188_000, down: false)],
             expect: [("X$", .before, "B272+"), ("B272+", .notAfter, "Y"), ("Y$", .sameTickOrBefore, "B272-")]),
        Case(id: 5, name: "a late key after a late drag's release follows the release and the motion", steps:
            drag + [.button(rx: stalled + 5_000, tx: 188_000, down: false), .key(rx: stalled + 6_000, tx: 190_000, down: true)],
             expect: [("Y$", .sameTickOrBefore, "B272-"), ("B272-", .sameTickOrBefore, "K30+")]),
        Case(id: 6, name: "an on-time key between two motions", steps:
            right + down + [.key(rx: t0 + 252_000 + 31_000, tx: 252_000, down: true)],
             expect: [("X$", .before, "K30+"), ("K30+", .before, "Y")]),
        Case(id: 7, name: "a late key before motion the marks still hold plays before its end", steps: crowded(100),
             expect: [("X$", .sameTickOrBefore, "K30+"), ("K30+", .before, "Y$")]),
        Case(id: 8, name: "past the marks' ring: after all queued motion, as before", steps: crowded(140),
             expect: [("Y$", .sameTickOrBefore, "K30+")]),
    ])
    func order(_ c: Case) throws {
        let ticks = Self.run(c.steps)
        let seen = ticks.enumerated().filter { !$0.element.isEmpty }.map { "\($0.offset):\($0.element.joined(separator: ","))" }
        for (x, order, y) in c.expect {
            let tx = try #require(Self.tick(x, ticks), "case \(c.id): no \(x): \(seen)")
            let ty = try #require(Self.tick(y, ticks), "case \(c.id): no \(y): \(seen)")
            switch order {
            case .before: #expect(tx.tick < ty.tick, "case \(c.id): \(x) at tick \(tx.tick), \(y) at \(ty.tick): \(seen)")
            case .notAfter: #expect(tx.tick <= ty.tick, "case \(c.id): \(x) at tick \(tx.tick), \(y) at \(ty.tick): \(seen)")
            case .sameTickOrBefore:
                #expect(tx.tick < ty.tick || (tx.tick == ty.tick && tx.index < ty.index),
                        "case \(c.id): \(x) at tick \(tx.tick), \(y) at \(ty.tick): \(seen)")
            }
        }
    }

    struct SlotCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let before: [Step]
        let keyRx: UInt64
        let keyTx: UInt64
        var testDescription: String { "\(id): \(name)" }
    }

    /// A key that arrives before its slot plays at its slot (sender time +
    /// offset + the delay as applied), whatever motion is queued.
    @Test(arguments: [
        SlotCase(id: 1, name: "between two motions", before: right, keyRx: t0 + 252_000 + 31_000, keyTx: 252_000),
        SlotCase(id: 2, name: "at a motion's sender time, mid-stream", before: right, keyRx: t0 + 152_000 + 36_000,
                 keyTx: 152_000),
        SlotCase(id: 3, name: "with motion sent later already queued", before: right + down.prefix(3),
                 keyRx: t0 + 392_000 + 31_000, keyTx: 392_000),
    ])
    func onTimeAtSlot(_ c: SlotCase) {
        var cfg = seedConfig()
        playout_config_default(&cfg)
        let p = CorePlayout(cfg)
        for s in c.before {
            if case let .motion(rx, tx, dx, dy) = s { p.push(rx: rx, tx: tx, a: dx, b: dy) }
        }
        let r = p.key(rx: c.keyRx, tx: c.keyTx, Self.a, true)
        #expect(r == Int32(PLAYOUT_PUSH_ON_TIME.rawValue), "case \(c.id)")
        let slot = c.keyTx &+ UInt64(bitPattern: p.offset) &+ UInt64(bitPattern: p.p.pointee.applied_us)
        #expect(p.p.pointee.k.last_at_us == slot, "case \(c.id): at \(p.p.pointee.k.last_at_us), slot \(slot)")
    }
}
