import RemoloPlayout
import RemoloPlayoutCore
import RemoloSession
import RemoloSystem
import RemoloTrace
import Testing

/// The redundancy feature (remolo_wire.h, "The redundant layout"): in
/// virtual time, the real sealer, opener and playout. A stroke of 120 Hz
/// motion, every k-th datagram dropped, heartbeats after it; the output's
/// total (whole pixels plus the Q8 remainder the playout carries) against
/// the finger's.
@Suite struct RedundancyTests {
    /// One stroke: `frames` motion datagrams 8333 us apart, each arriving
    /// 3 ms plus a little after it was sent, then heartbeats every 100 ms
    /// for 0.5 s; datagram n (1-based, heartbeats counted) is dropped when
    /// n % k == 0.
    struct Stroke: Sendable, CustomTestStringConvertible {
        let id: Int
        let what: String
        let k: Int
        var frames = 120
        var scroll = false
        var policy = "default"
        var testDescription: String { "\(id). \(what)" }
    }

    static let strokes: [Stroke] = [
        Stroke(id: 1, what: "every 2nd dropped", k: 2),
        Stroke(id: 2, what: "every 3rd dropped", k: 3),
        Stroke(id: 3, what: "every 10th dropped", k: 10),
        // 4. The stroke's last datagram is dropped (120 % 5 == 0): the
        //    first heartbeat, 100 ms later, carries its motion.
        Stroke(id: 4, what: "the last datagram dropped, a heartbeat recovers it", k: 5),
        Stroke(id: 5, what: "scroll, every 4th dropped", k: 4, scroll: true),
        // 6. The design note's policy spreads a packet over the time since
        //    the previous one: recovered motion joins the packet's own.
        Stroke(id: 6, what: "the seed policy, every 3rd dropped", k: 3, policy: "seed"),
        // 7. Applied at arrival: recovered motion comes with the next packet.
        Stroke(id: 7, what: "applied on arrival, every 3rd dropped", k: 3, policy: "arrival"),
    ]

    static func motion(_ i: Int) -> (Int32, Int32) {
        (Int32(300 + 37 * (i % 7)), Int32(-(100 + 13 * (i % 5))))
    }

    struct Outcome {
        /// Q8 totals the playout let out (x, y, wheel, hwheel).
        var out: SIMD4<Int64>
        /// Q8 totals the finger made, and those of the dropped datagrams.
        var finger: SIMD4<Int64>
        var dropped: SIMD4<Int64>
        var recoveredPackets: UInt64
        var opener: DatagramStats
    }

    static func config(_ name: String) -> PlayoutConfig {
        switch name {
        case "seed": return .seed
        case "arrival":
            var c = PlayoutConfig.seed
            c.delayMinUs = 0; c.delayMaxUs = 0; c.delayStartUs = 0; c.delayMarginUs = 0
            c.segMinUs = 0; c.segMaxUs = 0; c.lateMinUs = 0; c.lateMaxUs = 0
            return c
        default: return .default
        }
    }

    /// Runs a stroke through the sealer, a lossy link, the opener and the
    /// playout. `late`: datagrams (1-based) delivered again 40 ms after
    /// their first delivery, or delivered only then if they were dropped.
    static func run(_ s: Stroke, redundant: Bool, late: Set<Int> = []) throws -> Outcome {
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        if redundant { #expect(opener.grantRedundancy(idA)) }
        var sealer = DatagramSealer(key: keyA, session: idA)
        if redundant { sealer.useRedundancy() }
        let playout = try Playout(config: config(s.policy))

        var sends: [(rx: UInt64, bytes: [UInt8])] = []
        var finger = SIMD4<Int64>.zero, dropped = SIMD4<Int64>.zero
        let t0: UInt64 = 5_000_000
        var n = 0
        func send(_ p: DatagramPayload, at t: UInt64) throws {
            n += 1
            let bytes = try sealer.seal(Datagram(p, senderTimeUs: t))
            #expect(bytes.count == (redundant ? 65 : 49))
            var d = SIMD4<Int64>.zero
            switch p {
            case let .motion(dx, dy): d = SIMD4(Int64(dx), Int64(dy), 0, 0)
            case let .scroll(v, h): d = SIMD4(0, 0, Int64(v), Int64(h))
            default: break
            }
            finger &+= d
            let rx = t + 3_000 + UInt64((n * 7919) % 1_500)
            if n % s.k == 0 {
                dropped &+= d
            } else {
                sends.append((rx, bytes))
            }
            if late.contains(n) { sends.append((rx + 40_000, bytes)) }
        }
        var t = t0
        for i in 0..<s.frames {
            t = t0 + UInt64(i) * 8_333
            let (a, b) = motion(i)
            try send(s.scroll ? .scroll(vertical: a, horizontal: b) : .motion(dx: a, dy: b), at: t)
        }
        for h in 1...5 { try send(.heartbeat, at: t + UInt64(h) * 100_000) }
        sends.sort { $0.rx < $1.rx }

        var whole = SIMD4<Int64>.zero
        var next = 0
        var now = t0
        let end = (sends.last?.rx ?? t0) + 1_000_000
        while now <= end {
            while next < sends.count && sends[next].rx <= now {
                if case .success(let o) = opener.open(sends[next].bytes) {
                    var pkt = PointerPacket(senderTimeUs: o.datagram.senderTimeUs, kind: o.datagram.payload.kind!)
                    switch o.datagram.payload {
                    case let .motion(dx, dy): pkt.a = dx; pkt.b = dy
                    case let .scroll(v, h): pkt.a = v; pkt.b = h
                    default: break
                    }
                    pkt.lostDatagrams = o.lostDatagrams
                    pkt.recovered = o.recovered
                    playout.push(pkt, arrivalUs: sends[next].rx)
                }
                next += 1
            }
            let f = playout.tick(nowUs: now)
            whole &+= SIMD4(Int64(f.dx), Int64(f.dy), Int64(f.wheelHiRes), Int64(f.hwheelHiRes)) &* 256
            now += 2_083
        }
        let r = playout.remainders
        // Scroll: the playout's remainders are (x, y, wheel, hwheel) and
        // the packet's a is the vertical (wheel).
        let out = whole &+ SIMD4(r.0, r.1, r.2, r.3)
        return Outcome(out: out, finger: finger, dropped: dropped, recoveredPackets: playout.stats.recovered,
                       opener: opener.stats)
    }

    @Test(arguments: strokes)
    func strokeEndsWhereTheFingerEnded(_ s: Stroke) throws {
        let with = try Self.run(s, redundant: true)
        #expect(with.dropped != .zero, "case \(s.id): something was dropped")
        #expect(with.out == with.finger, "case \(s.id): out \(with.out), finger \(with.finger)")
        #expect(with.recoveredPackets > 0, "case \(s.id)")
        let without = try Self.run(s, redundant: false)
        #expect(without.out == without.finger &- without.dropped,
                "case \(s.id): short by exactly the dropped motion: out \(without.out), finger \(without.finger), dropped \(without.dropped)")
        #expect(without.recoveredPackets == 0, "case \(s.id)")
    }

    /// Replayed and reordered datagrams are refused by the strict counter
    /// before their totals are read: nothing is played twice.
    struct Duplicate: Sendable, CustomTestStringConvertible {
        let id: Int
        let what: String
        let late: Set<Int>
        let replays: UInt64
        var testDescription: String { "\(id). \(what)" }
    }

    static let duplicates: [Duplicate] = [
        // 1. Datagram 6 dropped, recovered by 7; it then arrives 40 ms late.
        Duplicate(id: 1, what: "a dropped datagram arrives late after its motion was recovered", late: [6], replays: 1),
        // 2. Datagrams 7 and 8 arrive twice (a replay, 40 ms later).
        Duplicate(id: 2, what: "datagrams replayed", late: [7, 8], replays: 2),
        // 3. The heartbeat that recovered the last motion comes again.
        Duplicate(id: 3, what: "the recovering heartbeat replayed", late: [121], replays: 1),
    ]

    @Test(arguments: duplicates)
    func replayedOrReorderedNeverDouble(_ d: Duplicate) throws {
        let s = Stroke(id: 0, what: "", k: 6)
        let r = try Self.run(s, redundant: true, late: d.late)
        #expect(r.out == r.finger, "case \(d.id): out \(r.out), finger \(r.finger)")
        #expect(r.opener[.replay] == d.replays, "case \(d.id): \(r.opener)")
    }

    /// What the opener recovers: totals - sums - own, only after a gap,
    /// bounded in the playout; without a gap nothing, whatever the totals.
    @Test func openerRecoversFromTheTotals() throws {
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        #expect(opener.grantRedundancy(idA))
        var t = DatagramTotals()
        func sealed(_ p: DatagramPayload, _ counter: UInt64) -> [UInt8] {
            let d = Datagram(p, senderTimeUs: 1_000 + counter)
            t.add(d)
            return DatagramSealer.seal(d, counter: counter, totals: t, key: keyA, session: idA)
        }
        // 1. Counter 0 arrives: no gap.
        var o = try opener.open(sealed(.motion(dx: 100, dy: -5), 0)).get()
        #expect(o.lostDatagrams == 0 && o.recovered == .zero)
        // 2. 1 (motion) and 2 (scroll) are lost; 3 recovers both kinds.
        _ = sealed(.motion(dx: 7, dy: 9), 1)
        _ = sealed(.scroll(vertical: 120, horizontal: -3), 2)
        o = try opener.open(sealed(.motion(dx: 1, dy: 1), 3)).get()
        #expect(o.lostDatagrams == 2 && o.recovered == SIMD4(7, 9, 120, -3))
        // 3. A 49-byte datagram on the granted session (sealed before the
        //    sender heard the grant): its motion counts in the sums.
        let plain = Datagram(.motion(dx: 50, dy: 0), senderTimeUs: 5_000)
        t.add(plain)
        o = try opener.open(DatagramSealer.seal(plain, counter: 4, key: keyA, session: idA)).get()
        #expect(o.lostDatagrams == 0 && o.recovered == .zero)
        o = try opener.open(sealed(.heartbeat, 5)).get()
        #expect(o.recovered == .zero)
        // 4. Totals that disagree without a gap (a broken sender): nothing
        //    recovered, and the sums follow the totals.
        var bad = t
        bad.values &+= SIMD4(1_000, 0, 0, 0)
        o = try opener.open(DatagramSealer.seal(Datagram(.heartbeat, senderTimeUs: 6_000), counter: 6, totals: bad,
                                                key: keyA, session: idA)).get()
        #expect(o.lostDatagrams == 0 && o.recovered == .zero)
        t = bad
        o = try opener.open(sealed(.motion(dx: 2, dy: 2), 8)).get()
        #expect(o.lostDatagrams == 1 && o.recovered == .zero, "datagram 7 was never sealed: nothing to recover")
    }

    /// Totals claiming more than the single-packet bound per skipped
    /// datagram are clamped in the playout, and counted.
    @Test func recoveredMotionIsBounded() throws {
        let p = try Playout(config: .default)
        var pkt = PointerPacket.motion(dx: 0, dy: 0, at: 1_000_000)
        p.push(pkt, arrivalUs: 2_000_000)
        pkt = .motion(dx: 0, dy: 0, at: 1_025_000)
        pkt.lostDatagrams = 2
        pkt.recovered = SIMD4(Int32.max, Int32.min, 0, 0)
        p.push(pkt, arrivalUs: 2_025_000)
        var sum: Int64 = 0
        for k in 0..<2_000 { sum += Int64(p.tick(nowUs: 2_025_000 + UInt64(k) * 2_083).dx) }
        let bound = Int64(REMOLO_MAX_MOTION_Q8) * 2 / 256
        #expect(sum == bound, "clamped to two datagrams' bound: \(sum)")
        #expect(p.stats.clamped == 2 && p.stats.recovered == 1)

        // Hostile times and counts: a sender clock that runs back, the
        // largest gap; bounded by 128 datagrams' worth, played within the
        // longest segment, nothing left over.
        let q = try Playout(config: .default)
        q.push(.motion(dx: 256, dy: 0, at: 9_000_000), arrivalUs: 1_000_000)
        pkt = .motion(dx: 0, dy: 0, at: 1_000)
        pkt.lostDatagrams = .max
        pkt.recovered = SIMD4(Int32.max, 0, 0, 0)
        q.push(pkt, arrivalUs: 1_010_000)
        sum = 0
        for k in 0..<1_200 { sum += Int64(q.tick(nowUs: 1_000_000 + UInt64(k) * 2_083).dx) }
        #expect(sum == 1 + Int64(REMOLO_MAX_MOTION_Q8) * Int64(REMOLO_LOST_BOUND_DATAGRAMS) / 256, "\(sum)")
        #expect(q.queuedSegments == 0)
    }

    /// A session whose hello did not grant the feature is the session of
    /// before: a 65-byte datagram is too long (and moves nothing, not even
    /// the counter), and 49-byte ones play exactly as on a granted session.
    @Test func sessionWithoutTheFeatureIsUnchanged() throws {
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        var t = DatagramTotals()
        let d = Datagram(.motion(dx: 256, dy: 0), senderTimeUs: 1_000)
        t.add(d)
        #expect(opener.open(DatagramSealer.seal(d, counter: 3, totals: t, key: keyA, session: idA)) == .failure(.long))
        #expect(opener.newestCounter(of: idA) == nil)
        #expect(try opener.open(DatagramSealer.seal(d, counter: 3, key: keyA, session: idA)).get().counter == 3)

        // The same 49-byte stream with gaps through a session that granted
        // the feature and one that did not: every opened datagram the same
        // (no recovered motion), so the playouts' output is the same.
        let granted = DatagramOpener(), plain = DatagramOpener()
        try granted.addSession(idA, key: keyA)
        try plain.addSession(idA, key: keyA)
        #expect(granted.grantRedundancy(idA))
        for counter in UInt64(0)..<60 where counter % 4 != 3 {
            let bytes = DatagramSealer.seal(Datagram(.motion(dx: Int32(counter) * 40, dy: 9), senderTimeUs: 10_000 + counter * 8_333),
                                            counter: counter, key: keyA, session: idA)
            let a = try granted.open(bytes).get(), b = try plain.open(bytes).get()
            #expect(a == b && a.lostDatagrams == 0 && a.recovered == .zero)
        }
    }
}
