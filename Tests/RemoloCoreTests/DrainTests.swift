import RemoloPlayoutCore
import Testing
import RemoloTestSupport

/// The drain: integer deltas at 480 Hz, nothing lost to rounding.
@Suite struct DrainTests {
    /// Rounds q / 256 half away from zero, as the drain does once per tick.
    static func whole(_ q: Int64) -> Int64 { (q >= 0 ? q + 128 : q - 128) / 256 }

    /// 10^5 random packets (motion, scroll, buttons, heartbeats; jitter,
    /// clumps, losses, duplicates, clock steps) at 480 Hz: the sum of the
    /// emitted integers plus the carried remainder equals the input exactly,
    /// and the remainder is under half a unit, so the total was rounded once.
    @Test(arguments: [(1, "seed"), (2, "seed"), (3, "default"), (4, "default")])
    func conservation(_ seed: Int, _ policy: String) {
        var cfg = seedConfig()
        if policy == "default" { playout_config_default(&cfg) }
        let p = CorePlayout(cfg)
        var rng = SplitMix64(seed: UInt64(seed))
        var want = [Int64](repeating: 0, count: 4)
        var got = [Int64](repeating: 0, count: 4)
        var notches = [Int64](repeating: 0, count: 2)
        var tx: UInt64 = 1_000_000
        var rx: UInt64 = 50_000_000
        var nextTick = rx
        for k in 0..<100_000 {
            tx &+= UInt64(2_000 + rng.next() % 14_000)
            if rng.next() % 1000 == 0 { tx &+= 3_600_000_000 }       // clock step ahead
            if rng.next() % 1000 == 0 { tx &-= 10_000_000 }          // and back
            let clump = rng.next() % 50 == 0 ? UInt64(rng.next() % 200_000) : 0
            rx += UInt64(2_000 + rng.next() % 14_000)
            let arrival = rx + clump
            // Drain ticks up to the arrival.
            while nextTick <= arrival {
                let o = p.tick(nextTick)
                got[0] += Int64(o.dx); got[1] += Int64(o.dy)
                got[2] += Int64(o.wheel_hires); got[3] += Int64(o.hwheel_hires)
                notches[0] += Int64(o.wheel); notches[1] += Int64(o.hwheel)
                nextTick += tickUs
            }
            if rng.next() % 100 == 0 { continue }                      // lost
            let a = Int32(truncatingIfNeeded: Int64(rng.next() % 80_001) - 40_000)
            let b = Int32(truncatingIfNeeded: Int64(rng.next() % 80_001) - 40_000)
            switch k % 10 {
            case 0:
                p.push(rx: arrival, tx: tx, kind: PLAYOUT_KIND_SCROLL, a: a / 8, b: b / 8)
                want[2] += Int64(a / 8); want[3] += Int64(b / 8)
            case 1: p.push(rx: arrival, tx: tx, kind: PLAYOUT_KIND_HEARTBEAT)
            case 2: p.push(rx: arrival, tx: tx, kind: PLAYOUT_KIND_BUTTON, code: 0x110, down: k % 20 == 2)
            default:
                p.push(rx: arrival, tx: tx, a: a, b: b)
                want[0] += Int64(a); want[1] += Int64(b)
            }
        }
        // Drain until idle.
        for _ in 0..<2_000 {
            let o = p.tick(nextTick)
            got[0] += Int64(o.dx); got[1] += Int64(o.dy)
            got[2] += Int64(o.wheel_hires); got[3] += Int64(o.hwheel_hires)
            notches[0] += Int64(o.wheel); notches[1] += Int64(o.hwheel)
            nextTick += tickUs
        }
        #expect(p.queued == 0)
        let acc = p.p.pointee.acc
        let rem = [acc.0, acc.1, acc.2, acc.3]
        for i in 0..<4 {
            #expect(got[i] * 256 + rem[i] == want[i], "axis \(i): emitted \(got[i]) + remainder \(rem[i]) vs input \(want[i])")
            #expect(abs(rem[i]) <= 128, "axis \(i): remainder under half a unit")
            #expect(abs(got[i] - want[i] / 256) <= 1)
        }
        // Legacy notches: one per 120 hi-res units, the rest carried.
        let na = p.p.pointee.notch_acc
        #expect(notches[0] * 120 + Int64(na.0) == got[2])
        #expect(notches[1] * 120 + Int64(na.1) == got[3])
        #expect(p.p.pointee.stats.packets > 90_000)
        #expect(p.p.pointee.stats.late > 0, "the run exercised late replays")
        #expect(p.p.pointee.stats.clock_steps > 0, "the run exercised clock steps")
    }

    /// Sub-pixel packets add up: 1000 packets of 0.3 px move 300 px, not 0.
    @Test func subPixelMotionIsCarried() {
        let p = CorePlayout()
        var got: Int64 = 0
        var t: UInt64 = 1_000_000
        for k in 0..<1000 {
            p.push(rx: t, tx: UInt64(k) * 8_333, a: 77)  // 77/256 = 0.3 px
            for _ in 0..<4 { got += Int64(p.tick(t).dx); t += 2_083 }
        }
        for _ in 0..<100 { got += Int64(p.tick(t).dx); t += 2_083 }
        #expect(got == DrainTests.whole(77 * 1000))
    }

    struct SpreadCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let dx: Int32
        let interval: UInt64
        let minTicks: Int
        var testDescription: String { "\(id): \(dx / 256) px over \(interval) us" }
    }

    /// One packet's motion comes out over several ticks, never in one step.
    @Test(arguments: [
        SpreadCase(id: 1, dx: 100 * 256, interval: 8_333, minTicks: 4),
        SpreadCase(id: 2, dx: 30 * 256, interval: 16_667, minTicks: 8),
        SpreadCase(id: 3, dx: -100 * 256, interval: 4_167, minTicks: 2),
        SpreadCase(id: 4, dx: 1024 * 256, interval: 50_000, minTicks: 24),
    ])
    func spread(_ c: SpreadCase) {
        let p = CorePlayout()
        p.push(rx: 1_000_000, tx: 0, a: 0)                     // sets offset and prev
        p.push(rx: 1_000_000 + c.interval, tx: c.interval, a: c.dx)
        var steps: [Int32] = []
        var t: UInt64 = 1_000_000
        for _ in 0..<100 { t += tickUs; let o = p.tick(t); if o.dx != 0 { steps.append(o.dx) } }
        #expect(steps.reduce(0, +) == c.dx / 256, "case \(c.id): all of it")
        #expect(steps.count >= c.minTicks, "case \(c.id): \(steps)")
        let biggest = steps.map { abs(Int($0)) }.max() ?? 0
        #expect(biggest * 2 <= abs(Int(c.dx / 256)), "case \(c.id): no tick carries half of it")
    }

    struct IdleCase: CustomTestStringConvertible, Sendable {
        let id: Int
        let name: String
        let after: UInt64        // microseconds after the segment ends
        let idle: Bool
        var testDescription: String { "\(id): \(name)" }
    }

    /// The idle signal: nothing queued and the last motion 0.5 s old.
    @Test(arguments: [
        IdleCase(id: 1, name: "just after the segment ends", after: 1, idle: false),
        IdleCase(id: 2, name: "0.4 s after", after: 400_000, idle: false),
        IdleCase(id: 3, name: "0.5 s after", after: 500_000, idle: true),
        IdleCase(id: 4, name: "2 s after", after: 2_000_000, idle: true),
    ])
    func idle(_ c: IdleCase) {
        let p = CorePlayout()
        p.push(rx: 1_000_000, tx: 0, a: 256)      // slot 1 011 880, 50 ms
        #expect(!p.tick(1_000_000).idle)
        let end: UInt64 = 1_011_880 + 50_000
        #expect(p.tick(end).idle == false)
        #expect(p.tick(end + c.after).idle == c.idle, "case \(c.id)")
    }

    /// Heartbeats every 100 ms (an idle trackpad on screen) do not keep
    /// the drain timer running.
    @Test func heartbeatsAreNotActivity() {
        let p = CorePlayout()
        p.push(rx: 1_000_000, tx: 0, a: 256)
        var t: UInt64 = 1_000_000
        var idleAt: UInt64?
        for k in 1...20 {
            p.push(rx: 1_000_000 + UInt64(k) * 100_000, tx: UInt64(k) * 100_000, kind: PLAYOUT_KIND_HEARTBEAT)
            while t < 1_000_000 + UInt64(k) * 100_000 {
                if p.tick(t).idle, idleAt == nil { idleAt = t }
                t += tickUs
            }
        }
        // Idle 0.5 s after the motion's segment ended (1 011 880 + 50 000).
        #expect(idleAt != nil && idleAt! >= 1_561_880 && idleAt! < 1_561_880 + tickUs)
    }

    @Test func idleBeforeAnything() {
        let p = CorePlayout()
        #expect(p.tick(1_000_000).idle)
    }

    /// Scroll: hi-res units, legacy notches every 120, remainders carried
    /// in both directions.
    @Test func wheelNotches() {
        let p = CorePlayout()
        var hires = 0, notches = 0
        var t: UInt64 = 1_000_000
        for k in 0..<3 {   // three 40-unit scrolls: one notch in all
            p.push(rx: t, tx: UInt64(k) * 8_333, kind: PLAYOUT_KIND_SCROLL, a: 40 * 256)
            for _ in 0..<4 { let o = p.tick(t); hires += Int(o.wheel_hires); notches += Int(o.wheel); t += 2_083 }
        }
        for _ in 0..<60 { let o = p.tick(t); hires += Int(o.wheel_hires); notches += Int(o.wheel); t += 2_083 }
        #expect(hires == 120)
        #expect(notches == 1)
    }

    /// Buttons play on the same clock as motion, keep their order, and a
    /// click never collapses into one frame.
    @Test func buttonsOnTheClock() {
        let p = CorePlayout()
        p.push(rx: 1_000_000, tx: 0, kind: PLAYOUT_KIND_HEARTBEAT)
        p.push(rx: 1_001_000, tx: 1_000, kind: PLAYOUT_KIND_BUTTON, code: 0x110, down: true)
        p.push(rx: 1_001_000, tx: 1_000, kind: PLAYOUT_KIND_BUTTON, code: 0x110, down: false)
        #expect(p.tick(1_001_000).nbtn == 0, "not before its slot")
        var events: [(UInt64, UInt16, Bool)] = []
        var t: UInt64 = 1_001_000
        for _ in 0..<20 { t += tickUs; for b in p.tick(t).buttons { events.append((t, b.0, b.1)) } }
        #expect(events.count == 2)
        #expect(events.first?.2 == true && events.last?.2 == false)
        #expect(events[0].0 < events[1].0, "down and up in different frames")
        #expect(events[0].0 >= 1_001_000 + 11_600, "played at its slot, about one delay after sending")
    }

    /// A flood of button events collapses into each button's final state:
    /// nothing sticks.
    @Test func buttonFloodNeverSticks() {
        let p = CorePlayout()
        for k in 0..<1000 {
            p.push(rx: 1_000_000, tx: UInt64(k), kind: PLAYOUT_KIND_BUTTON, code: UInt16(0x110 + k % 3), down: k % 2 == 0)
        }
        // Finally everything up.
        for c in 0x110...0x112 { p.push(rx: 1_000_000, tx: 2_000, kind: PLAYOUT_KIND_BUTTON, code: UInt16(c), down: false) }
        var state = [UInt16: Bool]()
        var t: UInt64 = 1_000_000
        for _ in 0..<400 { t += tickUs; for b in p.tick(t).buttons { #expect(state[b.0] != b.1, "a real change"); state[b.0] = b.1 } }
        #expect(state.values.allSatisfy { !$0 }, "\(state)")
        #expect(p.p.pointee.b.state == 0)
        #expect(p.p.pointee.stats.btn_collapsed > 0)
        #expect(p.tick(t + 1_000_000).idle)
    }

    /// The end of a session: queued motion comes out at once and held
    /// buttons are released.
    @Test func flushReleasesEverything() {
        let p = CorePlayout()
        p.push(rx: 1_000_000, tx: 0, kind: PLAYOUT_KIND_BUTTON, code: 0x111, down: true)
        var t: UInt64 = 1_000_000
        var pressed = false
        for _ in 0..<10 { t += tickUs; for b in p.tick(t).buttons where b.0 == 0x111 { pressed = b.1 } }
        #expect(pressed)
        // 50 px due over 20 ms, about 11 ms from now; and a queued release.
        p.push(rx: t, tx: t - 1_000_000, a: 50 * 256)
        p.push(rx: t, tx: t - 1_000_000, kind: PLAYOUT_KIND_BUTTON, code: 0x112, down: true)
        #expect(p.tick(t).dx == 0)
        playout_flush(p.p, t)
        var dx = 0
        var changes: [(UInt16, Bool)] = []
        for _ in 0..<3 { let o = p.tick(t); dx += Int(o.dx); changes += o.buttons }
        #expect(dx == 50, "all queued motion at once")
        #expect(changes.contains { $0.0 == 0x112 && $0.1 }, "the queued press still happens")
        #expect(changes.contains { $0.0 == 0x111 && !$0.1 }, "then every button is released")
        #expect(changes.contains { $0.0 == 0x112 && !$0.1 })
        #expect(p.queued == 0 && p.p.pointee.b.state == 0)
    }
}
