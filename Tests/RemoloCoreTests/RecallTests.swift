import RemoloPlayoutCore
import RemoloPlayout
import Testing

/// A returning sender (recall.c, chooser_recall): the chooser with the lab's
/// `chooser` settings and recall_permille, in virtual time (movement packets
/// at 120 Hz, each with its lateness over its zero-delay slot). A session
/// runs, what it leaves (chooser_recall_out) is loaded by the next, as the
/// receiver does per sender and network. The expectations follow from the
/// rule (docs/playout.md, "A returning sender"), worked out per case.
@Suite struct RecallTests {
    static let frameUs: UInt64 = 8_333
    /// A 120 Hz packet's weight in the memory: its frame in 32 us units.
    static let w = recall_weight(UInt32(frameUs))

    static func config() -> playout_config {
        var c = ChooserTests.config()
        c.recall_permille = REMOLO_RECALL_PERMILLE
        return c
    }

    /// Every 10th packet `spikeUs` late, the rest on time: 10% of the
    /// packets are late by about spikeUs at no delay, more than the 4.5%
    /// share, so the memory reads a delay just under spikeUs.
    static func spiky(_ spikeUs: UInt64) -> @Sendable (Int) -> UInt64 { { i in i % 10 == 5 ? spikeUs : 0 } }

    struct Session {
        var delays: [UInt32] = []
        var held: [Bool] = []
        var left = recall()
    }

    /// One session of `packets` from `memory`, one every `frameUs`.
    static func session(_ memory: recall, packets: Int, frameUs: UInt64 = frameUs,
                        lateness: (Int) -> UInt64) -> Session {
        var cfg = config()
        var c = chooser()
        var mem = memory
        chooser_init(&c, cfg.delay_start_us)
        chooser_recall(&c, &cfg, &mem)
        var s = Session()
        for i in 0..<packets {
            let ref = 1_000_000 + UInt64(i) * frameUs
            chooser_add(&c, &cfg, ref + lateness(i), ref, UInt32(frameUs), i > 0)
            s.delays.append(chooser_delay_us(&c))
            s.held.append(c.holding)
        }
        chooser_recall_out(&c, &s.left)
        return s
    }

    static func empty() -> recall { var r = recall(); recall_init(&r); return r }

    /// A memory of `packets` packets on `lateness`, built in sessions of 2,000.
    static func learned(_ packets: Int, frameUs: UInt64 = frameUs, _ lateness: @escaping (Int) -> UInt64) -> recall {
        var m = empty()
        var left = packets
        while left > 0 {
            m = session(m, packets: min(2_000, left), frameUs: frameUs, lateness: lateness).left
            left -= 2_000
        }
        return m
    }

    static func bins(_ r: recall) -> [UInt32] { withUnsafeBytes(of: r.bins) { Array($0.bindMemory(to: UInt32.self)) } }

    // 1: a first session (no memory) is the chooser's own: never held.
    @Test func case1_firstSessionIsTheChoosers() {
        let s = Self.session(Self.empty(), packets: 2_000, lateness: Self.spiky(30_000))
        #expect(!s.held.contains(true))
        #expect(s.left.moved == 2_000 * Self.w)
    }

    // 2: a memory of less than REMOLO_RECALL_MIN_MOVED (67 s of movement)
    // is not held (one session's holds are its own luck), however clear it
    // reads.
    @Test func case2_aThinMemoryIsNotHeld() {
        var m = Self.learned(Int(REMOLO_RECALL_MIN_MOVED / Self.w) - 2_000, Self.spiky(30_000))
        #expect(!recall_usable(&m))
        let s = Self.session(m, packets: 600, lateness: Self.spiky(30_000))
        #expect(!s.held.contains(true))
    }

    // 3: a learned memory is held from the session's first packet, at the
    // lateness 10% of the packets reach (less the catch-up's head start:
    // within a frame below 30 ms), and kept while the network agrees.
    @Test func case3_aReturningSenderStartsAtItsNetworksDelay() {
        let m = Self.learned(10_000, Self.spiky(30_000))
        var mm = m
        #expect(recall_usable(&mm))
        let s = Self.session(m, packets: 4_000, lateness: Self.spiky(30_000))
        #expect(s.held.allSatisfy { $0 })
        #expect((21_000...30_000).contains(s.delays[0]), "held \(s.delays[0]) us")
        #expect(Set(s.delays).count == 1, "the held delay never moves")
    }

    // 4: the same memory on a quiet network: its own packets read 0
    // against ~25 ms (less than a quarter, by more than 10 ms), so it lets
    // go at its first check (REMOLO_RECALL_CHECK_PACKETS), goes back to the
    // chooser (which settles on 0), and leaves only its own packets.
    @Test func case4_aQuietNetworkOverrulesAStallingMemory() {
        let m = Self.learned(10_000, Self.spiky(30_000))
        let s = Self.session(m, packets: 3_000, lateness: { _ in 0 })
        let check = Int(REMOLO_RECALL_CHECK_PACKETS)
        #expect(s.held[check - 2])
        #expect(!s.held[check - 1], "released at packet \(s.held.firstIndex(of: false) ?? -1)")
        #expect(s.delays.last == 0)
        #expect(s.left.moved == 3_000 * Self.w, "the old network's memory is dropped")
    }

    // 5: a quiet memory (it reads 0) on a network that is 30 ms late one
    // packet in ten: its own reading is more than four times 0 plus 10 ms,
    // so it lets go at the first check and the chooser learns the spikes
    // (ChooserTests case 6: it covers them).
    @Test func case5_aStallingNetworkOverrulesAQuietMemory() {
        let m = Self.learned(10_000, { _ in 0 })
        let s = Self.session(m, packets: 3_000, lateness: Self.spiky(30_000))
        #expect(s.held[0] && s.delays[0] == 0)
        #expect(!s.held[Int(REMOLO_RECALL_CHECK_PACKETS) - 1])
        #expect((20_000...30_000).contains(s.delays.last ?? 0), "the chooser's pick \(s.delays.last ?? 0)")
    }

    // 6: one 200 ms outlier in a held session moves nothing.
    @Test func case6_oneOutlierDoesNotMoveIt() {
        let m = Self.learned(10_000, Self.spiky(30_000))
        let s = Self.session(m, packets: 3_000, lateness: { i in i == 1_500 ? 200_000 : Self.spiky(30_000)(i) })
        #expect(s.held.allSatisfy { $0 })
        #expect(Set(s.delays).count == 1)
    }

    // 7: merging ages the old memory once per 2^21 units of movement
    // crossed, folding the count past 2^31 by 2^30 (a whole number of
    // agings): (7.1) 2^21 - 1,000 and a session of 3,000 cross 2^21 once,
    // so the old bins lose 1/8; (7.2) the same below 2^31 crosses it once
    // and folds; (7.3) a session that crosses nothing ages nothing.
    @Test func case7_mergeAgesTheOldMemory() {
        for (n, was, add, aged, moved) in [(1, UInt32(1 << 21) - 1_000, UInt32(3_000), true, UInt32(1 << 21) + 2_000),
                                           (2, REMOLO_RECALL_FOLD_AT - 1_000, 3_000, true, REMOLO_RECALL_FOLD_AT + 2_000 - REMOLO_RECALL_FOLD_BY),
                                           (3, UInt32(1 << 21) + 1_000, 3_000, false, UInt32(1 << 21) + 4_000)] {
            var old = Self.empty(), own = Self.empty(), out = recall()
            old.moved = was
            withUnsafeMutableBytes(of: &old.bins) { $0.bindMemory(to: UInt32.self)[3] = 8_000 }
            own.moved = add
            withUnsafeMutableBytes(of: &own.bins) { $0.bindMemory(to: UInt32.self)[3] = 100 }
            recall_merge(&out, &old, &own)
            #expect(Self.bins(out)[3] == (aged ? 7_000 : 8_000) + 100, "case 7.\(n)")
            #expect(out.moved == moved, "case 7.\(n)")
            #expect(recall_valid(&out) && recall_usable(&out), "case 7.\(n)")
        }
    }

    // 8: a rise of the offset moves the session's latenesses down by it
    // (the clock's step is not lateness), the last bin's too.
    @Test func case8_rebaseMovesLatenessDown() {
        var r = Self.empty()
        recall_add(&r, 5_500, UInt32(Self.frameUs)); recall_add(&r, 200_000, UInt32(Self.frameUs))
        recall_rebase(&r, 3_000)
        let bins = Self.bins(r)
        // 5.5 ms is in bin 6, (5, 6] ms, and 2.5 ms in bin 3.
        #expect(bins[3] == Self.w && bins[Int(REMOLO_RECALL_BINS) - 4] == Self.w)
        #expect(bins.reduce(0, +) == 2 * Self.w)
    }

    /// The file: a round trip, and every damaged form refused with a fix;
    /// the earlier forms, which counted packets (RRC2; RRC1, no held
    /// delay), still read, their count as the weight 256 a packet had.
    @Test func fileRoundTripAndDamage() throws {
        var m = DelayRecall(Self.learned(10_000, Self.spiky(30_000)))
        m.heldUs = 27_000
        let back = try DelayRecall(data: m.data)
        #expect(back == m && back.isUsable && m.data.count == 524 && m.data.prefix(4) == Array("RRC3".utf8)[...])
        func word(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        for (n, count, moved) in [(1, UInt32(9_000), UInt32(9_000 * 256)),
                                  // saturated: folded, a whole number of agings from 2^40 - 256
                                  (2, UInt32.max, UInt32(1 << 30) + (UInt32(1 << 30) - 256))] {
            let v2 = Array("RRC2".utf8) + word(count) + Array(m.data[8...])
            let two = try DelayRecall(data: v2)
            #expect(two.heldUs == m.heldUs && two.bins == m.bins && two.moved == moved && two.isUsable, "RRC2 \(n): \(two.moved)")
            var v1 = Array("RRC1".utf8) + word(count) + Array(m.data[12...])
            #expect(v1.count == 520)
            let one = try DelayRecall(data: v1)
            #expect(one.heldUs == 0 && one.bins == m.bins && one.moved == moved, "RRC1 \(n)")
            v1[0] = 0x58
            #expect(throws: PlayoutError.self) { try DelayRecall(data: v1) }
        }
        var edge = m; edge.heldUs = (REMOLO_RECALL_BINS - 1) * REMOLO_RECALL_BIN_US
        #expect(try DelayRecall(data: edge.data) == edge, "the last bin's is a reading")
        var far = m; far.heldUs = REMOLO_RECALL_BINS * REMOLO_RECALL_BIN_US
        #expect(throws: PlayoutError.self) { try DelayRecall(data: far.data) }
        var long = m; long.moved = REMOLO_RECALL_FOLD_AT
        #expect(throws: PlayoutError.self) { try DelayRecall(data: long.data) }
        #expect(back.delayUs(permille: REMOLO_RECALL_PERMILLE) == m.delayUs(permille: REMOLO_RECALL_PERMILLE))
        var bad = m.data; bad[0] = 0x58
        #expect(throws: PlayoutError.self) { try DelayRecall(data: bad) }
        #expect(throws: PlayoutError.self) { try DelayRecall(data: Array(m.data.dropLast())) }
        var heavy = m; heavy.bins[7] = REMOLO_RECALL_TOTAL_MAX
        #expect(throws: PlayoutError.self) { try DelayRecall(data: heavy.data) }
        #expect(!DelayRecall().isUsable)
    }

    /// Through the playout: a loaded memory sets the delay of the first
    /// packet (no ramp from the start delay), and `recall` returns it with
    /// the session's packets added.
    @Test func throughThePlayout() throws {
        let cfg = Self.config()
        let m = DelayRecall(Self.learned(10_000, Self.spiky(30_000)))
        let p = try Playout(config: PlayoutConfig(cfg))
        p.load(recall: m)
        #expect(p.heldDelayUs == m.delayUs(permille: cfg.recall_permille))
        var tx: UInt64 = 5_000_000
        for i in 0..<300 {
            let pkt = PointerPacket(senderTimeUs: tx, kind: .motion, a: 256, b: 0)
            p.push(pkt, arrivalUs: tx + 2_000 + Self.spiky(30_000)(i))
            tx += Self.frameUs
            if i == 0 { #expect(p.delayUs == p.heldDelayUs) }
        }
        // Each packet weighs its frame; the first, with no frame before
        // it, weighs at most REMOLO_RECALL_FRAME_MAX_US's.
        let added = p.recall.moved - m.moved
        #expect(added >= 300 * Self.w && added <= 299 * Self.w + recall_weight(REMOLO_RECALL_FRAME_MAX_US), "\(added)")
    }

    /// The default's sessions (the window's quantile, recall_permille
    /// 45) through the playout: `pattern` gives each packet's lateness; the
    /// delay after each packet.
    static func defaultSession(_ cfg: PlayoutConfig, memory: DelayRecall?, packets: Int,
                               lateness: (Int) -> UInt64) throws -> (delays: [UInt32], left: DelayRecall) {
        let p = try Playout(config: cfg)
        if let memory { p.load(recall: memory) }
        var tx: UInt64 = 5_000_000
        var delays: [UInt32] = []
        for i in 0..<packets {
            p.push(PointerPacket(senderTimeUs: tx, kind: .motion, a: 256, b: 0), arrivalUs: tx + 2_000 + lateness(i))
            tx += Self.frameUs
            delays.append(p.delayUs)
        }
        return (delays, p.recall)
    }

    // 9: under the window's rule (`PlayoutConfig.window`) a first session
    // (no memory) is the same packet for packet with the memory on or off:
    // there the memory only watches. (The default's floor reads it:
    // FloorTests.)
    @Test func case9_theWindowsFirstSessionOnlyWatchesItsMemory() throws {
        var off = PlayoutConfig.window
        off.recallPermille = 0
        #expect(PlayoutConfig.window.recallPermille == REMOLO_RECALL_PERMILLE)
        // Candidate 0 of the chooser, which runs with the memory on, is the
        // zero-delay shadow the memory reads.
        #expect(chooser_candidate_us(0) == 0)
        let with = try Self.defaultSession(.window, memory: nil, packets: 3_000, lateness: Self.spiky(30_000))
        let without = try Self.defaultSession(off, memory: nil, packets: 3_000, lateness: Self.spiky(30_000))
        #expect(with.delays == without.delays)
        #expect(with.left.moved >= 3_000 * Self.w && with.left.moved <= 2_999 * Self.w + recall_weight(REMOLO_RECALL_FRAME_MAX_US))
    }

    // 10: the default holds a learned memory from the first packet, past
    // the window's 60 ms cap (a share of 2^13 packets is not one clump),
    // while the network agrees.
    @Test func case10_theDefaultHoldsPastTheWindowsCap() throws {
        let m = DelayRecall(Self.learned(10_000, Self.spiky(75_000)))
        let held = m.delayUs(permille: REMOLO_RECALL_PERMILLE)
        #expect(held > PlayoutConfig.default.delayMaxUs, "held \(held)")
        let s = try Self.defaultSession(.default, memory: m, packets: 2_000, lateness: Self.spiky(75_000))
        #expect(s.delays.allSatisfy { $0 == held }, "\(Set(s.delays).sorted())")
    }

    // 11: the same memory on a quiet network lets go at the first check
    // and the window takes over: the delay falls to the window's estimate
    // (the floor plus the margin) and stays within the window's clamp.
    @Test func case11_theWindowTakesOverWhenTheNetworkDisagrees() throws {
        let m = DelayRecall(Self.learned(10_000, Self.spiky(75_000)))
        let held = m.delayUs(permille: REMOLO_RECALL_PERMILLE)
        let s = try Self.defaultSession(.default, memory: m, packets: 3_000, lateness: { _ in 0 })
        let check = Int(REMOLO_RECALL_CHECK_PACKETS)
        #expect(s.delays[check - 2] == held)
        let cfg = PlayoutConfig.default
        #expect((s.delays.last ?? 0) <= cfg.delayMinUs + cfg.delayMarginUs, "settled at \(s.delays.last ?? 0)")
        #expect(s.delays[check...].allSatisfy { $0 <= max(held, cfg.delayMaxUs) })
        #expect(s.left.moved <= 2_999 * Self.w + recall_weight(REMOLO_RECALL_FRAME_MAX_US), "the old network's memory is dropped")
    }

    // 12: a session keeps what the one before it held while the memory
    // reads within 1/8 of it (REMOLO_RECALL_KEEP_SHIFT), reads afresh
    // beyond, and leaves what it held for the next; one that let go
    // (case 4) leaves none.
    @Test func case12_aReturningSessionKeepsWhatTheOneBeforeHeld() {
        var m = Self.learned(10_000, Self.spiky(30_000))
        let read = Self.session(m, packets: 10, lateness: Self.spiky(30_000)).delays[0]
        #expect(read > 24_000, "the memory reads \(read) us")
        for (n, before, holds) in [(1, read - read / 10, read - read / 10), (2, read + read / 10, read + read / 10),
                                   (3, read - read / 4, read), (4, read + read / 4, read), (5, UInt32(0), read)] {
            m.held_us = before
            let s = Self.session(m, packets: 2_000, lateness: Self.spiky(30_000))
            #expect(s.delays.allSatisfy { $0 == holds }, "case 12.\(n): held \(s.delays[0]) us after \(before)")
            #expect(s.left.held_us == holds, "case 12.\(n): leaves \(s.left.held_us) us")
        }
        m.held_us = read
        let gone = Self.session(m, packets: 3_000, lateness: { _ in 0 })
        #expect(gone.left.held_us == 0, "a session that let go leaves no held delay")
    }

    // 13: the memory counts movement, not packets: the same minutes of
    // movement at a 240 Hz sender (twice the packets, each half the
    // weight) age it as often, make it usable as soon, and read the same
    // delay as at 120 Hz; so its horizon is the same number of sessions at
    // any sender rate (RESULTS.md, round 16).
    @Test func case13_theMemoryCountsMovementNotPackets() {
        let spikes: @Sendable (Int) -> UInt64 = { i in i % 20 >= 18 ? 30_000 : 0 }
        for (n, packets) in [(1, 6_000), (2, 9_000), (3, 40_000)] {
            let at120 = Self.learned(packets, spikes)
            let at240 = Self.learned(2 * packets, frameUs: 4_166, { i in spikes(i / 2) })
            var a = at120, b = at240
            #expect(recall_usable(&a) == recall_usable(&b), "case 13.\(n)")
            let wa = Self.bins(a).reduce(0, +), wb = Self.bins(b).reduce(0, +)
            // Within the rounding of a 32 us unit (260 against 2 x 130 per
            // 120 Hz frame) and of where an aging falls.
            #expect(Double(wa) / Double(wb) > 0.97 && Double(wa) / Double(wb) < 1.03, "case 13.\(n): \(wa) against \(wb)")
            // The same within the catch-up's pace: a late packet's motion
            // ends a share of its frame sooner at 120 Hz.
            let da = recall_delay_us(&a, REMOLO_RECALL_PERMILLE), db = recall_delay_us(&b, REMOLO_RECALL_PERMILLE)
            #expect(da > 20_000 && (da > db ? da - db : db - da) <= 2_000, "case 13.\(n): \(da) against \(db)")
        }
    }

    // 14: bin b holds lateness in (b - 1, b] ms and the reading is its
    // upper edge, so that less than the share is later than the delay it
    // gives: 10% at 30.4 ms reads 31 ms, where every packet is on time
    // (14.1), at exactly 30 ms 30 ms (14.2), at 0.2 ms 1 ms (14.3); 4% is
    // under the 4.5% share, so nothing need wait (14.4); an empty memory
    // reads 0 (14.5).
    @Test func case14_theReadingLeavesLessThanTheShareLater() {
        for (n, late, lateUs, want) in [(1, 10, UInt64(30_400), UInt32(31_000)), (2, 10, 30_000, 30_000), (3, 10, 200, 1_000),
                                        (4, 4, 30_400, 0), (5, 0, 0, 0)] {
            var r = Self.empty()
            for i in 0..<(late == 0 ? 0 : 1_000) { recall_add(&r, i % 100 < late ? lateUs : 0, UInt32(Self.frameUs)) }
            #expect(recall_delay_us(&r, REMOLO_RECALL_PERMILLE) == want, "case 14.\(n)")
        }
    }
}
