import RemoloPlayoutCore
import Testing
import RemoloTestSupport

/// The floor under the chooser (choose_floor, delay.c) in virtual time,
/// through the playout: movement packets at 120 Hz, delivered in order, a
/// hold releasing the packets it held at its end. The expectations follow
/// from the two readings the floor takes the lesser of, worked out in each
/// case's comment: the window's target (95th percentile of the last 240
/// packets + 2 ms, within 2..60 ms) and the session's own reading (the
/// lateness that 4.5% of its movement exceeds, from packet 512 on).
@Suite struct FloorTests {
    static let frameUs: UInt64 = 8_333

    static func config(floor: Bool = true) -> playout_config {
        var c = playout_config()
        playout_config_default(&c)
        c.stall_weight = REMOLO_STALL_WEIGHT
        c.choose_floor = floor ? 1 : 0
        return c
    }

    /// Holds as (first packet, length in us): every packet whose slot falls
    /// in [slot of first, + length) arrives at the hold's end.
    struct Case: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let packets: Int
        let holdEvery: Int          // 0: one hold only, at holdAt
        var holdAt: Int = 0
        let holdUs: UInt64
        /// From packet `from` on, the floored delay stays in `floored`.
        let from: Int
        let floored: ClosedRange<UInt32>
        /// The chooser alone at the end (nil: not checked).
        var chooser: ClosedRange<UInt32>? = nil
        var testDescription: String { "\(id): \(name)" }
    }

    static let cases: [Case] = [
        // 90 ms held every 60 packets (500 ms), as a peer-to-peer link
        // stalls: 11 of every 60 packets late by 90, 82, ... 7 ms. The
        // window holds 4 holds: its 12 latest values are 90, 82 and 73 ms
        // four times each: 73 + 2 ms, clamped to 60. The session reads
        // 4.5% of 60 packets, 2.7 of them: past 73 ms. The floor is 60 ms.
        // The chooser alone: covering a hold costs 90 ms on 60 packets,
        // 5.4 s, against 30 x the 11 packets' stall, a few seconds: it sits
        // well below.
        Case(id: 1, name: "stalls twice a second hold the delay at the window's clamp",
             packets: 2_400, holdEvery: 60, holdUs: 90_000, from: 600, floored: 60_000...60_000,
             chooser: 0...35_000),
        // 40 ms held every 60 packets: 5 of every 60 late, by 40, 31.7,
        // 23.3, 15 and 6.7 ms. The window's 95th percentile (nearest
        // rank: the 228th of 240, the 13th latest) is 15 ms, in the bin
        // (14, 15]: 15 + 2 ms. The session reads the latest 4.5%, 2.7 of
        // every 60: the 31.7 ms bin, 32 ms. The floor is the lesser, 17 ms;
        // the chooser alone sits below it.
        Case(id: 2, name: "the floor is the lesser reading: here the window's",
             packets: 2_400, holdEvery: 60, holdUs: 40_000, from: 600, floored: 17_000...17_000,
             chooser: 0...16_000),
        // One 300 ms hold at packet 100 on a network otherwise on time.
        // The session's reading holds it for long (36 packets late, 6% of
        // 600), but the window lets it go 240 packets after it: from packet
        // 100 + 36 + 240 on, the window reads 0 + 2 ms and the floor is
        // that, over the chooser's pick (0: ChooserTests, case 5).
        Case(id: 3, name: "one early hold leaves the floor with the window",
             packets: 1_800, holdEvery: 0, holdAt: 100, holdUs: 300_000, from: 400, floored: 2_000...2_000),
        // A 20 ms hold every 400 packets: 3 packets of 400 late, less than
        // 5% of any window and of the session: both read 0, the floor is
        // the clamp's 2 ms, and the chooser leaves the spike to the
        // catch-up (ChooserTests, case 7).
        Case(id: 4, name: "a rare spike is still left to the catch-up",
             packets: 2_400, holdEvery: 400, holdUs: 20_000, from: 600, floored: 2_000...2_000),
        // A network that is never late: every reading is 0, the clamp's
        // 2 ms from the first packet.
        Case(id: 5, name: "a network never late stays at the clamp",
             packets: 1_200, holdEvery: 0, holdAt: -1, holdUs: 0, from: 1, floored: 2_000...2_000),
    ]

    static func arrivals(_ k: Case) -> [UInt64] {
        var rx: [UInt64] = []
        var releaseUs: UInt64 = 0
        for i in 0..<k.packets {
            let slot = 1_000_000 + UInt64(i) * frameUs
            let starts = k.holdEvery > 0 ? i % k.holdEvery == 5 : i == k.holdAt
            if starts && k.holdUs > 0 { releaseUs = slot + k.holdUs }
            rx.append(max(slot, releaseUs))
        }
        return rx
    }

    static func run(_ k: Case, floor: Bool, check: (Int, UInt32) -> Bool) -> UInt32 {
        let p = CorePlayout(config(floor: floor))
        for (i, rx) in arrivals(k).enumerated() {
            p.push(rx: rx, tx: 1_000_000 + UInt64(i) * frameUs, a: 256)
            if !check(i, p.delay) { break }
        }
        return p.delay
    }

    @Test(arguments: cases)
    func table(_ k: Case) {
        _ = Self.run(k, floor: true) { i, d in
            guard i + 1 >= k.from else { return true }
            #expect(k.floored.contains(d), "case \(k.id): after packet \(i) the delay is \(d) us, want \(k.floored)")
            return k.floored.contains(d)
        }
        if let want = k.chooser {
            let d = Self.run(k, floor: false) { _, _ in true }
            #expect(want.contains(d), "case \(k.id): the chooser alone ends at \(d) us, want \(want)")
        }
    }

    /// The floor needs the chooser and the session's reading, and is 0 or 1.
    @Test func configRules() {
        var c = Self.config()
        #expect(playout_config_check(&c) == 0)
        c.choose_floor = 2
        #expect(String(cString: playout_config_problem(&c)) == "choose_floor must be 0 or 1")
        c = Self.config(); c.stall_weight = 0
        #expect(String(cString: playout_config_problem(&c)) == "choose_floor needs stall_weight and recall_permille")
        c = Self.config(); c.recall_permille = 0
        #expect(String(cString: playout_config_problem(&c)) == "choose_floor needs stall_weight and recall_permille")
    }

    /// A returning sender holds the memory's reading past the window's
    /// 60 ms clamp with the floor on, as without it (delay.c): the clamp
    /// bounds one window's clump, the memory is tens of sessions.
    @Test func heldDelayIsNotClampedToTheWindow() {
        var cfg = Self.config()
        let p = CorePlayout(cfg)
        var mem = recall()
        recall_init(&mem)
        // A memory of 80 ms lateness on 10% of its movement, 0 on the rest.
        let units = UInt32(REMOLO_RECALL_MIN_MOVED) * 2
        mem.bins.80 = units / 10
        mem.bins.0 = units - units / 10
        mem.moved = units
        chooser_recall(&p.p.pointee.delay.chooser, &cfg, &mem)
        #expect(p.p.pointee.delay.chooser.holding)
        // On time: far less than 4x the held delay's quarter, but the check
        // comes only after REMOLO_RECALL_CHECK_PACKETS.
        for i in 0..<100 {
            let t = 1_000_000 + UInt64(i) * Self.frameUs
            p.push(rx: t, tx: t, a: 256)
        }
        #expect(p.delay == 80_000)
    }
}
