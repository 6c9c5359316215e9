import BenchSupport
import RemoloPlayout
import RemoloCore
import RemoloPlayoutCore
import RemoloLab
import RemoloTrace
import RemoloTypes

/// A 120 Hz stream with Wi-Fi-like jitter, precomputed so the timed loops
/// measure only the core.
private struct Stream {
    var tx: [UInt64] = []
    var rx: [UInt64] = []
    var dx: [Int32] = []
    init(count: Int, seed: UInt64) {
        var rng = LabRandom(seed: seed)
        func next() -> UInt64 { rng.next() }
        for k in 0..<count {
            let t = UInt64(k) * 8_333 + 1_000_000
            tx.append(t)
            rx.append(t + 3_000_000 + next() % 12_000)
            dx.append(Int32(truncatingIfNeeded: next() % 4_096) - 2_048)
        }
    }
}

/// The default policy (the chooser with its floor, chooser.c and delay.c),
/// or another of the lab's: `chooser` (without the floor) or `window` (the
/// window's sorted quantile, the default before the chooser).
private func newPlayout(policy: Policy = .default) -> UnsafeMutablePointer<playout> {
    let p = UnsafeMutablePointer<playout>.allocate(capacity: 1)
    if policy != .default, var c = policy.config?.c {
        _ = playout_init(p, &c)
    } else {
        _ = playout_init(p, nil)
    }
    return p
}

/// `core.packet_ns`: one motion packet through offset + delay + enqueue,
/// with the queue drained between batches (untimed) so it never fills.
/// `recoverEvery` > 0: every so many packets the one before was lost and
/// this one carries its motion (the redundancy feature):
/// `core.packet_ns.recovered` with 4. `policy`: the same with the lab's
/// `chooser` or `window` (`core.packet_ns.chooser`, `.window`, measured
/// in the same run).
/// `gesture`: each packet a three-finger swipe's state, a new gesture every
/// 60 (`core.packet_ns.gesture`), in batches of 16, half the gesture ring,
/// as a delay of 130 ms at 120 Hz would hold.
private func packetNs(_ s: BenchSettings, recoverEvery: Int = 0, policy: Policy = .default, gesture: Bool = false) -> Double {
    let n = gesture ? 16 : 64
    let stream = Stream(count: 1 << 16, seed: 1)
    let p = newPlayout(policy: policy)
    defer { p.deallocate() }
    var k = 0
    var total: Double = 0
    var samples: [Double] = []
    let batches = s.iterations(2_000)
    for _ in 0..<s.repetitions {
        total = 0
        for _ in 0..<batches {
            var o = playout_out()
            let t0 = monotonicNs()
            for _ in 0..<n {
                let i = k & (stream.tx.count - 1)
                var pkt = playout_pkt(tx_us: stream.tx[i] &+ UInt64(k >> 16) * 600_000_000, a: stream.dx[i], b: -stream.dx[i],
                                      code: 0, kind: UInt8(PLAYOUT_KIND_MOTION.rawValue), down: 0,
                                      lost_n: 0, lost: (0, 0, 0, 0), g: playout_gesture())
                if gesture {
                    pkt.kind = UInt8(PLAYOUT_KIND_GESTURE.rawValue)
                    pkt.a = Int32(k % 60) * 500
                    pkt.g = playout_gesture(scale_q16: 65536, angle_urad: 0, id: UInt8(truncatingIfNeeded: k / 60),
                                            type: UInt8(PLAYOUT_GESTURE_SWIPE.rawValue), fingers: 3,
                                            flags: k % 60 == 59 ? UInt8(PLAYOUT_GESTURE_FLAG_LAST) : 0)
                }
                if recoverEvery > 0 && k % recoverEvery == 0 {
                    pkt.lost_n = 1
                    pkt.lost = (stream.dx[i] / 2, 256, 0, 0)
                }
                _ = playout_push(p, stream.rx[i] &+ UInt64(k >> 16) * 600_000_000, &pkt)
                k += 1
            }
            total += Double(monotonicNs() - t0)
            playout_flush(p, p.pointee.last_now_us)
            playout_tick(p, p.pointee.last_now_us, &o)
        }
        samples.append(total / Double(batches * n))
    }
    return median(samples)
}

/// `core.tick_ns.N`: one drain tick with N segments playing.
private func tickNs(_ s: BenchSettings, active: Int) -> Double {
    let p = newPlayout()
    defer { p.deallocate() }
    var samples: [Double] = []
    let rounds = s.iterations(20_000)
    for _ in 0..<s.repetitions {
        var total: Double = 0
        for r in 0..<rounds {
            // N overlapping 50 ms segments, all started; time each tick
            // halfway through them.
            _ = playout_init(p, nil)
            let base = UInt64(r) * 1_000_000 + 10_000_000
            for j in 0..<active {
                _ = segq_push(&p.pointee.q, UInt8(PLAYOUT_KIND_MOTION.rawValue), base + UInt64(j), 50_000,
                              Int64(1_000 + j), Int64(-j))
            }
            var o = playout_out()
            let now = base + 20_000
            let t0 = monotonicNs()
            playout_tick(p, now, &o)
            playout_tick(p, now + 2_083, &o)
            playout_tick(p, now + 4_166, &o)
            playout_tick(p, now + 6_249, &o)
            total += Double(monotonicNs() - t0)
        }
        samples.append(total / Double(rounds * 4))
    }
    return median(samples)
}

/// `core.allocs_per_1e6`: heap allocations while 10^6 packets and their
/// 480 Hz ticks go through the core (via the Swift `Playout` wrapper, as
/// the receiver drives it), after a warm-up; one in seven carries the
/// motion of a lost one.
private func allocsPer1e6(_ s: BenchSettings, config: PlayoutConfig = .default) -> Double {
    let count = s.quick ? 100_000 : 1_000_000
    let stream = Stream(count: 1 << 16, seed: 2)
    guard let playout = try? Playout(config: config) else { return .nan }
    var nextTick: UInt64 = 0
    var sink: Int64 = 0
    func run(_ n: Int, from: Int) {
        for k in from..<(from + n) {
            let i = k & (stream.tx.count - 1)
            let lap = UInt64(k >> 16) * 600_000_000
            let rx = stream.rx[i] + lap
            while nextTick <= rx {
                let f = playout.tick(nowUs: nextTick)
                sink &+= Int64(f.dx) &+ Int64(f.buttons.count)
                nextTick += 2_083
            }
            let kind: PacketKind = k % 17 == 0 ? .button : (k % 5 == 0 ? .scroll : .motion)
            var pkt = PointerPacket(senderTimeUs: stream.tx[i] + lap, kind: kind, a: stream.dx[i], b: 3,
                                    code: 0x110, down: k % 34 == 0)
            // Every 7th carries the motion of a lost one (redundancy).
            if k % 7 == 3 { pkt.lostDatagrams = 1; pkt.recovered = SIMD4(stream.dx[i], -300, 0, 0) }
            playout.push(pkt, arrivalUs: rx)
        }
    }
    nextTick = stream.rx[0]
    run(10_000, from: 0)               // warm-up
    let before = bench_allocations()
    run(count, from: 10_000)
    let after = bench_allocations()
    blackHole(sink)
    return Double(after - before) * 1_000_000 / Double(count)
}

/// Proof that the counter counts: one known allocation must show.
private func counterWorks() -> Bool {
    let before = bench_allocations()
    let p = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
    let after = bench_allocations()
    p.deallocate()
    return after > before
}

func coreBenches() -> [BenchCase] {
    [
        BenchCase(name: "core.packet_ns") { s in
            [BenchResult(name: "core.packet_ns", value: packetNs(s), unit: "ns"),
             BenchResult(name: "core.packet_ns.recovered", value: packetNs(s, recoverEvery: 4), unit: "ns"),
             BenchResult(name: "core.packet_ns.chooser", value: packetNs(s, policy: .chooser), unit: "ns"),
             BenchResult(name: "core.packet_ns.window", value: packetNs(s, policy: .window), unit: "ns"),
             BenchResult(name: "core.packet_ns.gesture", value: packetNs(s, gesture: true), unit: "ns")]
        },
        BenchCase(name: "core.tick_ns") { s in
            [1, 8, 64].map { BenchResult(name: "core.tick_ns.\($0)", value: tickNs(s, active: $0), unit: "ns") }
        },
        BenchCase(name: "core.allocs_per_1e6") { s in
            guard counterWorks() else {
                return [BenchResult(name: "core.allocs_per_1e6", value: .nan, unit: "allocs (counter not interposed)")]
            }
            return [BenchResult(name: "core.allocs_per_1e6", value: allocsPer1e6(s), unit: "allocs"),
                    BenchResult(name: "core.allocs_per_1e6.chooser", value: allocsPer1e6(s, config: .chooser), unit: "allocs"),
                    BenchResult(name: "core.allocs_per_1e6.window", value: allocsPer1e6(s, config: .window), unit: "allocs")]
        },
    ]
}
