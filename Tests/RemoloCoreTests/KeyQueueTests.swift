import RemoloPlayoutCore
import RemoloTestSupport
import Testing

/// The key queue (keyq.c) inside the playout: keys at their sender time on
/// the session's clock, in one order with motion and buttons, never a
/// press and its release in one tick, refusals that change nothing, a full
/// queue that never refuses a release, and a flush that releases every key.
@Suite struct KeyQueueTests {
    static let a: UInt16 = 30, b: UInt16 = 48, c: UInt16 = 46, d: UInt16 = 32
    static let shift: UInt16 = 42, btnLeft: UInt16 = 0x110

    /// What a script does at one arrival time.
    enum Step: Sendable {
        case motion(rx: UInt64, tx: UInt64, dx: Int32)
        case button(rx: UInt64, tx: UInt64, code: UInt16, down: Bool)
        case key(rx: UInt64, tx: UInt64, code: UInt16, down: Bool)
        case keys(rx: UInt64, tx: UInt64, [(UInt16, Bool)])

        var rx: UInt64 {
            switch self {
            case let .motion(rx, _, _), let .button(rx, _, _, _), let .key(rx, _, _, _), let .keys(rx, _, _): rx
            }
        }
    }

    /// Runs a script at 480 Hz from its first arrival: each tick pushes what
    /// has arrived, then drains. Returns each tick's output as tokens in
    /// the order the loop writes them (the pointer's frame, then the
    /// keyboard's): "M" motion, "B272+" a button, "K30-" a key.
    static func run(_ steps: [Step], ticks: Int = 200, config: playout_config? = nil) -> [[String]] {
        var cfg = seedConfig()
        playout_config_default(&cfg)
        let p = CorePlayout(config ?? cfg)
        var pending = steps[...]
        var t = steps.first!.rx
        var out: [[String]] = []
        for _ in 0..<ticks {
            while let s = pending.first, s.rx <= t {
                pending = pending.dropFirst()
                switch s {
                case let .motion(rx, tx, dx): p.push(rx: rx, tx: tx, a: dx)
                case let .button(rx, tx, code, down):
                    p.push(rx: rx, tx: tx, kind: PLAYOUT_KIND_BUTTON, code: code, down: down)
                case let .key(rx, tx, code, down): p.key(rx: rx, tx: tx, code, down)
                case let .keys(rx, tx, list): _ = p.keys(rx: rx, tx: tx, list)
                }
            }
            out.append(tokens(p.tick(t)))
            t += tickUs
        }
        return out
    }

    static func tokens(_ o: playout_out) -> [String] {
        var t: [String] = []
        if o.dx != 0 || o.dy != 0 { t.append("M") }
        for b in o.buttons { t.append("B\(b.0)\(b.1 ? "+" : "-")") }
        for k in o.keys { t.append("K\(k.0)\(k.1 ? "+" : "-")") }
        return t
    }

    static func firstTick(_ token: String, _ ticks: [[String]]) -> Int? {
        ticks.firstIndex { $0.contains(token) }
    }

    enum Order: Sendable { case before, sameTickOrBefore }

    struct OrderCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let steps: [Step]
        /// (a, order, b): a's first tick is before b's, or (pointer a,
        /// key b) the same tick, where the pointer's frame goes first.
        let expect: [(String, Order, String)]
        var testDescription: String { "\(id): \(name)" }
    }

    static let t0: UInt64 = 1_000_000

    @Test(arguments: [
        OrderCase(id: 1, name: "a key after a motion's start in sender time plays after it starts", steps: [
            .motion(rx: t0, tx: 0, dx: 20 * 256), .key(rx: t0 + 3_000, tx: 3_000, code: a, down: true),
        ], expect: [("M", .sameTickOrBefore, "K30+")]),
        OrderCase(id: 2, name: "a key pressed after a motion plays after it", steps: [
            .motion(rx: t0, tx: 0, dx: 20 * 256), .key(rx: t0 + 8_000, tx: 8_000, code: a, down: true),
        ], expect: [("M", .before, "K30+")]),
        OrderCase(id: 3, name: "a key pressed before a motion plays before it", steps: [
            .key(rx: t0, tx: 0, code: a, down: true), .motion(rx: t0 + 8_000, tx: 8_000, dx: 20 * 256),
        ], expect: [("K30+", .before, "M")]),
        OrderCase(id: 4, name: "a button, then a key at the same sender time", steps: [
            .button(rx: t0, tx: 0, code: btnLeft, down: true), .key(rx: t0, tx: 0, code: a, down: true),
        ], expect: [("B272+", .sameTickOrBefore, "K30+")]),
        OrderCase(id: 5, name: "a key, then a button at the same sender time: the button a tick later", steps: [
            .key(rx: t0, tx: 0, code: shift, down: true), .button(rx: t0, tx: 0, code: btnLeft, down: true),
        ], expect: [("K42+", .before, "B272+")]),
        OrderCase(id: 6, name: "Shift+click: key, button, button, key keep their order", steps: [
            .key(rx: t0, tx: 0, code: shift, down: true),
            .button(rx: t0 + 1_000, tx: 1_000, code: btnLeft, down: true),
            .button(rx: t0 + 1_500, tx: 1_500, code: btnLeft, down: false),
            .key(rx: t0 + 1_600, tx: 1_600, code: shift, down: false),
        ], expect: [("K42+", .before, "B272+"), ("B272+", .before, "B272-"), ("B272-", .sameTickOrBefore, "K42-")]),
        OrderCase(id: 7, name: "a press and its release at one sender time: never one tick", steps: [
            .key(rx: t0, tx: 0, code: a, down: true), .key(rx: t0, tx: 0, code: a, down: false),
        ], expect: [("K30+", .before, "K30-")]),
        OrderCase(id: 8, name: "a key later in sender time than a late one keeps its order", steps: [
            .motion(rx: t0, tx: 0, dx: 256),
            .key(rx: t0 + 40_000, tx: 5_000, code: a, down: true),        // late
            .key(rx: t0 + 40_100, tx: 6_000, code: b, down: true),        // on time, but after it
        ], expect: [("K30+", .sameTickOrBefore, "K48+")]),
        OrderCase(id: 9, name: "a batch, then a motion pressed after it", steps: [
            .keys(rx: t0, tx: 0, [(shift, true), (a, true), (a, false), (shift, false)]),
            .motion(rx: t0 + 20_000, tx: 20_000, dx: 10 * 256),
        ], expect: [("K42+", .before, "K30-"), ("K30-", .sameTickOrBefore, "K42-"), ("K42-", .before, "M")]),
    ])
    func order(_ c: OrderCase) throws {
        let ticks = Self.run(c.steps)
        for (x, order, y) in c.expect {
            let tx = try #require(Self.firstTick(x, ticks), "case \(c.id): \(x) never came out: \(ticks.filter { !$0.isEmpty })")
            let ty = try #require(Self.firstTick(y, ticks), "case \(c.id): \(y) never came out: \(ticks.filter { !$0.isEmpty })")
            switch order {
            case .before: #expect(tx < ty, "case \(c.id): \(x) at tick \(tx), \(y) at \(ty)")
            case .sameTickOrBefore:
                #expect(tx < ty || (tx == ty && ticks[tx].firstIndex(of: x)! < ticks[ty].firstIndex(of: y)!),
                        "case \(c.id): \(x) at tick \(tx), \(y) at \(ty): \(ticks[tx])")
            }
        }
        // Whatever the script, no key changes twice in one tick.
        for (i, tick) in ticks.enumerated() {
            let keys = tick.filter { $0.hasPrefix("K") }.map { $0.dropLast() }
            #expect(Set(keys).count == keys.count, "case \(c.id): tick \(i) changes a key twice: \(tick)")
        }
    }

    /// A key at the same sender time as a motion packet gets that packet's
    /// slot (one offset, one delay): it plays in the first tick at or after
    /// the moment the packet's motion starts to play, with a button of the
    /// same time.
    @Test(arguments: [(1, "first packet", UInt64(0)), (2, "mid-stream", UInt64(8_333))])
    func sameSenderTimeAsMotion(_ c: (Int, String, UInt64)) {
        var cfg = seedConfig()
        playout_config_default(&cfg)
        let p = CorePlayout(cfg), q = CorePlayout(cfg)
        let t0 = Self.t0
        if c.2 > 0 {
            for x in [p, q] { x.push(rx: t0, tx: 0, a: 256) }
        }
        for x in [p, q] { x.push(rx: t0 + c.2, tx: c.2, a: 30 * 256) }
        let start = p.segment(p.queued - 1).start_us
        p.key(rx: t0 + c.2, tx: c.2, Self.a, true)
        q.push(rx: t0 + c.2, tx: c.2, kind: PLAYOUT_KIND_BUTTON, code: Self.btnLeft, down: true)
        var keyAt: UInt64?, buttonAt: UInt64?
        var t = t0
        for _ in 0..<100 {
            if !p.tick(t).keys.isEmpty, keyAt == nil { keyAt = t }
            if !q.tick(t).buttons.isEmpty, buttonAt == nil { buttonAt = t }
            t += tickUs
        }
        #expect(keyAt != nil && keyAt! >= start && keyAt! < start + tickUs, "case \(c.0): \(String(describing: keyAt)) vs \(start)")
        #expect(keyAt == buttonAt, "case \(c.0): a key and a button of one sender time share a tick")
    }

    /// A text's keys at one sender time come out in order, one change per
    /// key per tick: "ab" as a+ | a- b+ | b-.
    @Test func textTickByTick() {
        let ticks = Self.run([.keys(rx: Self.t0, tx: 0, [(Self.a, true), (Self.a, false), (Self.b, true), (Self.b, false)])])
        #expect(ticks.filter { !$0.isEmpty } == [["K30+"], ["K30-", "K48+"], ["K48-"]])
    }

    /// More than REMOLO_KEYS_PER_TICK changes due at once take more ticks,
    /// so a reader's 64-event evdev buffer is not overrun by one burst.
    @Test func perTickCap() {
        let codes = (UInt16(16)...UInt16(35))           // 20 distinct keys, Q ... L
        let ticks = Self.run([.keys(rx: Self.t0, tx: 0, codes.map { ($0, true) })])
        let nonEmpty = ticks.filter { !$0.isEmpty }
        let per = Int(REMOLO_KEYS_PER_TICK)
        #expect(nonEmpty.map(\.count) == Array(repeating: per, count: 20 / per) + (20 % per == 0 ? [] : [20 % per]))
        #expect(nonEmpty.flatMap { $0 } == codes.map { "K\($0)+" })
    }

    struct RefusalCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let pushes: [(UInt16, Bool)]
        /// enum playout_key_refusal per push: 0 taken.
        let refused: [UInt32]
        var testDescription: String { "\(id): \(name)" }
    }

    static let held = PLAYOUT_KEY_REFUSED_HELD.rawValue, notHeld = PLAYOUT_KEY_REFUSED_NOT_HELD.rawValue
    static let unknown = PLAYOUT_KEY_REFUSED_UNKNOWN.rawValue

    @Test(arguments: [
        RefusalCase(id: 1, name: "a second press of a held key", pushes: [(a, true), (a, true)], refused: [0, held]),
        RefusalCase(id: 2, name: "a release of a key not held", pushes: [(a, false)], refused: [notHeld]),
        RefusalCase(id: 3, name: "a second release", pushes: [(a, true), (a, false), (a, false)], refused: [0, 0, notHeld]),
        RefusalCase(id: 4, name: "presses and releases of two keys interleaved",
                    pushes: [(a, true), (b, true), (a, false), (b, false)], refused: [0, 0, 0, 0]),
        RefusalCase(id: 5, name: "codes the keyboard does not have",
                    pushes: [(0, true), (84, true), (116, true), (142, true), (205, true), (247, true), (255, true),
                             (0x100, true), (0x110, true), (0x2ff, true), (0xffff, true)],
                    refused: Array(repeating: unknown, count: 11)),
        RefusalCase(id: 6, name: "the release of a refused unknown press is refused too",
                    pushes: [(116, true), (116, false)], refused: [unknown, unknown]),
        RefusalCase(id: 7, name: "a refused double press leaves one release to take",
                    pushes: [(a, true), (a, true), (a, false), (a, false)], refused: [0, held, 0, notHeld]),
        RefusalCase(id: 8, name: "edge keys of the keyboard are taken",
                    pushes: [1, 83, 85, 86, 87, 88, 96, 99, 100, 102, 111, 113, 115, 119, 125, 126, 127, 139, 163, 164,
                             165, 166, 183, 194, 210, 224, 225, 248].flatMap { [(UInt16($0), true), (UInt16($0), false)] },
                    refused: Array(repeating: 0, count: 56)),
    ])
    func refusals(_ c: RefusalCase) {
        let p = CorePlayout()
        var got: [UInt32] = []
        var want = [UInt64](repeating: 0, count: Int(PLAYOUT_KEY_REFUSED_COUNT.rawValue))
        var packets = p.p.pointee.stats.packets
        for (code, down) in c.pushes {
            let r = p.key(rx: Self.t0, tx: 0, code, down)
            let why = r > Int32(PLAYOUT_PUSH_REJECTED.rawValue) ? UInt32(r) - PLAYOUT_PUSH_REJECTED.rawValue : 0
            got.append(why)
            want[Int(why)] += 1
            // A refused key feeds nothing, the clock included.
            #expect(p.p.pointee.stats.packets == packets + (why == 0 ? 1 : 0), "case \(c.id)")
            packets = p.p.pointee.stats.packets
        }
        #expect(got == c.refused, "case \(c.id)")
        let counted = withUnsafeBytes(of: p.p.pointee.stats.key_refused) { Array($0.bindMemory(to: UInt64.self)) }
        #expect(Array(counted[1...]) == Array(want[1...]), "case \(c.id): counted by reason")
        // The same pushes as one batch refuse the same ones.
        let q = CorePlayout()
        var refused = [UInt32](repeating: 0, count: Int(PLAYOUT_KEY_REFUSED_COUNT.rawValue))
        let taken = q.keys(rx: Self.t0, tx: 0, c.pushes, refused: &refused)
        #expect(Int(taken) == c.refused.filter { $0 == 0 }.count, "case \(c.id): batch")
        #expect(refused.map(UInt64.init)[1...] == want[1...], "case \(c.id): batch refusals")
        #expect(q.p.pointee.stats.packets == (taken > 0 ? 1 : 0), "case \(c.id): a batch feeds the clock once")
    }

    /// Drains a playout tick by tick from `t`; returns the key changes in
    /// order with their ticks, checking that each key alternates from up.
    static func drainKeys(_ p: CorePlayout, from t: UInt64, ticks: Int,
                          start: [UInt16: Bool] = [:]) -> (events: [(Int, UInt16, Bool)], state: [UInt16: Bool]) {
        var state = start
        var events: [(Int, UInt16, Bool)] = []
        for i in 0..<ticks {
            for k in p.tick(t + UInt64(i) * tickUs).keys {
                #expect((state[k.0] ?? false) != k.1, "key \(k.0) went \(k.1 ? "down" : "up") twice")
                state[k.0] = k.1
                events.append((i, k.0, k.1))
            }
        }
        return (events, state)
    }

    /// A press keeps a place for its release (keyq_room): a full queue
    /// refuses presses, never a release, so nothing is folded and nothing
    /// locks presses out; the press after a refused one is taken as soon as
    /// the queue has played two changes.
    @Test func fullQueueKeepsReleases() {
        let p = CorePlayout()
        let cap = Int(REMOLO_KEYQ_CAP)
        let t0 = Self.t0
        let flood = PLAYOUT_PUSH_KEY_FLOOD.rawValue, onTime = PLAYOUT_PUSH_ON_TIME.rawValue
        // a+ a- ... (cap - 2 events): room for one press and its release.
        for i in 0..<(cap - 2) { #expect(p.key(rx: t0, tx: 0, Self.a, i % 2 == 0) == onTime) }
        #expect(keyq_room(&p.p.pointee.k) == 2)
        #expect(p.key(rx: t0, tx: 0, Self.b, true) == onTime, "the last press that fits with its release")
        #expect(keyq_room(&p.p.pointee.k) == 0)
        #expect(p.key(rx: t0, tx: 0, Self.c, true) == flood, "no room for c and its release")
        #expect(p.key(rx: t0, tx: 0, Self.b, false) == onTime, "b's release had its place")
        #expect(p.p.pointee.k.tail &- p.p.pointee.k.head == UInt32(cap))
        #expect(p.key(rx: t0, tx: 0, Self.c, false) == PLAYOUT_PUSH_KEY_NOT_HELD.rawValue, "c was refused")
        #expect(p.key(rx: t0, tx: 0, Self.a, true) == flood)
        #expect(p.p.pointee.stats.key_folded == 0)
        // Two changes played: a press is taken again at once.
        var t = t0, out = 0
        while out < 2 && t < t0 + 1_000_000 { out += p.tick(t).keys.count; t += tickUs }
        #expect(out == 2)
        #expect(p.key(rx: t, tx: 0, Self.d, true) != flood)
        #expect(p.key(rx: t, tx: 0, Self.d, false) != flood)
        let (events, state) = Self.drainKeys(p, from: t, ticks: cap + 50)
        #expect(out + events.count == cap + 2, "every queued change once")
        #expect(state.values.allSatisfy { !$0 }, "nothing stays down: \(state)")
    }

    /// A batch is taken whole when it fits (keyq_room) and refused whole
    /// otherwise, each of its changes counted as a flood.
    @Test(arguments: [(1, 0, true), (2, 2048 - 32, true), (3, 2048 - 31, false), (4, 2048, false)])
    func wholeBatch(_ c: (Int, Int, Bool)) {
        let p = CorePlayout()
        let t0 = Self.t0
        // c.1 changes queued first (a+ a- ...), then a batch of 32: 16 keys
        // pressed and released.
        for i in 0..<c.1 { p.key(rx: t0, tx: 0, Self.a, i % 2 == 0) }
        let batch: [(UInt16, Bool)] = (UInt16(16)...UInt16(31)).flatMap { [($0, true), ($0, false)] }
        var refused = [UInt32](repeating: 0, count: Int(PLAYOUT_KEY_REFUSED_COUNT.rawValue))
        let fits = refused.withUnsafeMutableBufferPointer {
            playout_keys_fit(p.p, 2 * 16, UInt32(batch.count), $0.baseAddress)
        }
        #expect(fits == c.2, "case \(c.0)")
        if fits {
            #expect(p.keys(rx: t0, tx: 0, batch) == UInt32(batch.count), "case \(c.0): a batch that fits is taken whole")
        } else {
            #expect(refused[Int(PLAYOUT_KEY_REFUSED_FLOOD.rawValue)] == UInt32(batch.count), "case \(c.0)")
            let counted = withUnsafeBytes(of: p.p.pointee.stats.key_refused) { Array($0.bindMemory(to: UInt64.self)) }
            #expect(counted[Int(PLAYOUT_KEY_REFUSED_FLOOD.rawValue)] == UInt64(batch.count), "case \(c.0)")
        }
    }

    /// A release uses the place its press kept: with no room left, a batch
    /// of releases of held keys needs none and is taken.
    @Test func releasesNeedNoRoom() {
        let p = CorePlayout()
        let t0 = Self.t0
        for i in 0..<(Int(REMOLO_KEYQ_CAP) - 2) { p.key(rx: t0, tx: 0, Self.a, i % 2 == 0) }
        #expect(p.key(rx: t0, tx: 0, Self.b, true) == PLAYOUT_PUSH_ON_TIME.rawValue)
        #expect(keyq_room(&p.p.pointee.k) == 0)
        #expect(playout_keys_fit(p.p, 0, 1, nil), "a release needs no room")
        #expect(!playout_keys_fit(p.p, 2, 2, nil), "a press and its release need 2")
        #expect(p.keys(rx: t0, tx: 0, [(Self.b, false)]) == 1)
    }

    struct FlushCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        /// Pushed at t0 (sender time 0) before anything drains.
        let first: [(UInt16, Bool)]
        /// Ticks drained before the next pushes.
        let drained: Int
        /// Pushed later (sender time 40 ms, so still queued at the flush).
        let then: [(UInt16, Bool)]
        var testDescription: String { "\(id): \(name)" }
    }

    /// playout_flush (the session's end): every queued key event is due at
    /// once, in order, then every key still down is released.
    @Test(arguments: [
        FlushCase(id: 1, name: "held keys, nothing queued", first: [(a, true), (b, true)], drained: 20, then: []),
        FlushCase(id: 2, name: "presses still queued", first: [], drained: 0, then: [(a, true), (shift, true)]),
        FlushCase(id: 3, name: "a held key and a queued press and release",
                  first: [(shift, true)], drained: 20, then: [(a, true), (a, false), (b, true)]),
        FlushCase(id: 4, name: "more keys held than one tick releases",
                  first: (UInt16(16)...UInt16(35)).map { ($0, true) }, drained: 20, then: [(2, true)]),
        FlushCase(id: 5, name: "a full queue", first: [(c, true)], drained: 20,
                  then: Array(repeating: [(a, true), (a, false)], count: Int(REMOLO_KEYQ_CAP) / 2).flatMap { $0 }
                        + [(c, false), (b, true)]),
    ])
    func flushReleasesEveryKey(_ c: FlushCase) {
        let p = CorePlayout()
        let t0 = Self.t0
        if !c.first.isEmpty { _ = p.keys(rx: t0, tx: 0, c.first) }
        let (early, state) = Self.drainKeys(p, from: t0, ticks: c.drained)
        let now = t0 + UInt64(c.drained) * tickUs
        if !c.then.isEmpty { _ = p.keys(rx: now, tx: 40_000 + UInt64(c.drained) * tickUs, c.then) }
        let queued = Int(p.p.pointee.k.tail &- p.p.pointee.k.head)
        playout_flush(p.p, now)
        // The loop's end_session: ticks at the same instant until empty.
        var events: [(UInt16, Bool)] = []
        var st = state
        for _ in 0..<(Int(REMOLO_KEYQ_CAP) + 40) {
            for k in p.tick(now).keys {
                #expect((st[k.0] ?? false) != k.1, "case \(c.id): key \(k.0) changed to its own state")
                st[k.0] = k.1
                events.append(k)
            }
        }
        #expect(st.values.allSatisfy { !$0 }, "case \(c.id): still down: \(st.filter { $0.value }.keys.sorted())")
        #expect(events.count >= queued, "case \(c.id): every queued event played (\(events.count) of \(queued))")
        #expect(p.tick(now + 1_000_000).idle, "case \(c.id)")
        _ = early
    }

    /// Random presses and releases of a few keys, with refusals, bursts that
    /// fill the queue, ticks at random times and a flush at the end: every
    /// key alternates down/up from up, every change taken comes out exactly
    /// once, and nothing is down at the end.
    @Test(arguments: [1, 2, 3])
    func randomNeverSticks(_ seed: Int) {
        var rng = SplitMix64(seed: UInt64(seed))
        let p = CorePlayout()
        let codes: [UInt16] = [Self.a, Self.b, Self.shift, 29, 56, 116]   // 116 (Power) is refused
        var t: UInt64 = Self.t0, tx: UInt64 = 0
        var state: [UInt16: Bool] = [:]
        var out = 0, taken = 0
        func drain(_ now: UInt64) {
            for k in p.tick(now).keys {
                #expect((state[k.0] ?? false) != k.1, "seed \(seed): key \(k.0) repeated \(k.1)")
                state[k.0] = k.1
                out += 1
            }
        }
        for _ in 0..<20_000 {
            t += rng.next() % 3_000
            tx += rng.next() % 3_000
            let burst = rng.next() % 500 == 0 ? 5_000 : 1
            for _ in 0..<burst {
                let r = p.key(rx: t, tx: tx, codes[Int(rng.next() % UInt64(codes.count))], rng.next() % 2 == 0)
                if r <= PLAYOUT_PUSH_MERGED.rawValue { taken += 1 }
            }
            if rng.next() % 3 == 0 { drain(t) }
        }
        playout_flush(p.p, t)
        for _ in 0..<(Int(REMOLO_KEYQ_CAP) + 40) { drain(t) }
        #expect(state.values.allSatisfy { !$0 }, "seed \(seed): \(state)")
        // Each taken change came out once; the flush adds the releases of
        // what was still down (at most one per key).
        #expect(out >= taken && out <= taken + codes.count, "seed \(seed): \(out) out, \(taken) taken")
        // The bursts filled the queue: presses were refused, and no release
        // had to be folded (each press kept a place for its release).
        let floods = withUnsafeBytes(of: p.p.pointee.stats.key_refused) { $0.bindMemory(to: UInt64.self)[Int(PLAYOUT_KEY_REFUSED_FLOOD.rawValue)] }
        #expect(floods > 0, "seed \(seed): the bursts filled the queue")
        #expect(p.p.pointee.stats.key_folded == 0, "seed \(seed)")
    }
}

extension CorePlayout {
    @discardableResult
    func key(rx: UInt64, tx: UInt64, _ code: UInt16, _ down: Bool) -> Int32 {
        push(rx: rx, tx: tx, kind: PLAYOUT_KIND_KEY, code: code, down: down)
    }

    @discardableResult
    func keys(rx: UInt64, tx: UInt64, _ list: [(UInt16, Bool)]) -> UInt32 {
        var refused = [UInt32](repeating: 0, count: Int(PLAYOUT_KEY_REFUSED_COUNT.rawValue))
        return keys(rx: rx, tx: tx, list, refused: &refused)
    }

    func keys(rx: UInt64, tx: UInt64, _ list: [(UInt16, Bool)], refused: inout [UInt32]) -> UInt32 {
        let k = list.map { playout_key(code: $0.0, down: $0.1 ? 1 : 0) }
        return refused.withUnsafeMutableBufferPointer { r in
            playout_push_keys(p, rx, tx, k, UInt32(k.count), r.baseAddress)
        }
    }
}

extension playout_out {
    var keys: [(UInt16, Bool)] {
        withUnsafeBytes(of: key) { raw in
            let k = raw.bindMemory(to: playout_key.self)
            return (0..<Int(nkey)).map { (k[$0].code, k[$0].down != 0) }
        }
    }
}
