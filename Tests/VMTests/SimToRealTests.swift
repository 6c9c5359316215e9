import CEvdev
import Foundation
import RemoloLab
import RemoloTrace
import Synchronization
import Testing
import RemoloTestSupport

/// The lab against the real thing. A real `remolo send` in one network
/// namespace and `remolo receive --record-arrivals` in another, over a veth
/// shaped with netem; the receiver's uinput pointer is read back with
/// libevdev, kernel timestamps included. The lab then replays the recorded
/// arrivals through the same core and predicts the pointer's frames; both
/// are scored by the same rules (`LabCase.scoreOutput`) and must agree
/// within what the VM's timer alone explains.
///
/// Clocks: the sender stamps datagrams with CLOCK_MONOTONIC
/// (`senderClockUs`), the receiver's loop stamps arrivals with it
/// (`rx_now_us`), and the evdev reader is switched to it (EVIOCSCLOCKID).
/// All three run in the same guest, so they share one clock: the trace is
/// replayed with the clock map pinned to identity (offset 0, no drift,
/// d_min 0), and latency is measured from the sender's own stamp, network
/// delay included. The receiver's own estimate of the offset (the lower
/// envelope of the transits) is printed next to it as a check: it must be
/// the smallest one-way delay, not seconds off.
///
/// The tolerance comes from the VM's timer, measured in the same run:
///
/// - Tick lateness L: each frame's evdev timestamp against the ideal
///   480 Hz grid (period T = 2083.3 us) fitted to that run's frames (the
///   phase that makes the lateness smallest on average). A tick more than T
///   late wraps; the receiver counts those itself (`missed`). Both are
///   printed. Under TCG on a loaded host a third to a half of the ticks are
///   merged: the guest's timer interrupts are emulated, and the ideal grid
///   is not what the receiver runs.
/// - The lab's prediction drains on the ideal grid. The receiver drained
///   at its real wake-ups: one per device frame (a wake-up that moved no
///   whole pixel wrote nothing and changes nothing, since the core
///   integrates up to each tick's own time and carries the sub-pixel
///   rest), its `now` read somewhere between the frame's grid time and the
///   write that stamped it. The lab replays the same arrivals at those
///   wake-ups, once at each end of that range, frames stamped with their
///   evdev times: how far these land from the ideal-grid prediction is
///   what the timer alone does (for latency the device lies between the
///   two: a later `now` can only show more of the packet's motion).
/// - Tolerance per score: the larger of those two distances, plus the
///   comparison's resolution: one drain tick T for latency (the core
///   decides where a packet's segment starts from what has drained, so
///   moved ticks can move a packet's completion by a tick beyond the
///   direct effect), and for jitter the spread between the two replays
///   plus 0.02: the replays stand for the wake-ups, not for every detail of
///   them (a frame's evdev stamp is taken at its write), and the device has
///   landed up to 0.013 outside their bracket when a tenth of the ticks
///   were merged (within 0.003 on a quiet host).
///   It is as wide as the VM's timer made it in this very run, no wider:
///   a model error larger than the timer's effect fails, whatever the
///   host's load.
extension VMSuite {
    @Suite(.enabled(if: VMEnv.netem, VMEnv.netemReason))
    struct SimToReal {
        /// How far the device's jitter ratio may land from the replays at
        /// its wake-ups (see the tolerance above).
        static let jitterResidual = 0.02
        /// netem settings on the sender's side of the veth: quiet, jitter
        /// (netem reorders datagrams whose delays cross; the receiver drops
        /// the older as a replay, so they are absent from the trace and
        /// from what the pointer shows), clumps (deliveries only at slot
        /// boundaries 5-20 ms apart).
        static let links: [(name: String, netem: [String])] = [
            ("quiet", []),
            ("delay 20ms 10ms", ["delay", "20ms", "10ms"]),
            ("slot 5ms 20ms", ["slot", "5ms", "20ms"]),
        ]
        static let periodUs = 1e6 / 480
        /// The gesture: circles of 150 px radius, one a second, for 3 s
        /// (about 8 px a packet). No button: the swipe's press travels on
        /// the control channel, which `--record-arrivals` does not record,
        /// and the playout holds the drag's motion behind its press, so a
        /// replay without it would predict the motion too early.
        ///
        /// Without redundancy: `--record-arrivals` lists the datagrams the
        /// receiver opened, not the motion a datagram's running totals
        /// recovered for the lost and reordered ones before it, so a replay
        /// of the recording would predict a pointer that never shows that
        /// motion (the lab replays redundancy from traces that list the
        /// lost rows: `remolo simulate --transport redundant`).
        static let gesture = ["--gesture", "circle", "--size", "150", "--seconds", "3", "--no-redundancy"]

        struct Row {
            var link: String
            var predicted: OutputScore
            var measured: OutputScore
            /// The lab at the receiver's wake-ups: `now` = frame time, = grid time.
            var timer: [OutputScore]
            var lateness: [Double]
            var ticks: Int64, missedTicks: Int64
            var offsetUs: Double
            var packets: Int
        }

        @Test func predictedMatchesMeasured() throws {
            var rows: [Row] = []
            for (name, netem) in Self.links { rows.append(try runOnce(name, netem)) }

            // The side-by-side table, then the checks.
            var out = "sim-to-real, default policy: pred = lab on the ideal 480 Hz grid; timer = lab at the receiver's wake-ups "
                + "(now = frame stamp .. its grid time); meas = the device (evdev); tol = the timer's own effect, max |timer - pred|, "
                + "plus one tick (2.08 ms) for latency, the timer range's width for jitter\n"
            out += "link             pkts | lat p50 ms pred  timer         meas   tol | lat p95 ms pred  timer         meas   tol | jitter pred timer        meas   tol   | L p50/p99 ms missed/ticks | offset ms\n"
            var failures: [String] = []
            for r in rows {
                let p = r.predicted.scores, m = r.measured.scores
                let t = r.timer.map(\.scores)
                // The timer's effect, and the resolution of the comparison:
                // one drain tick for latency, the bracket's width and the
                // replays' own residual for jitter.
                func span(_ f: (Scores) -> Double, resolution: Double?) -> (lo: Double, hi: Double, tol: Double) {
                    let v = t.map(f)
                    let lo = v.min() ?? f(p), hi = v.max() ?? f(p)
                    return (lo, hi, (v.map { abs($0 - f(p)) }.max() ?? 0) + (resolution ?? (hi - lo)))
                }
                let tick = Self.periodUs / 1000
                let l50 = span(\.latencyMsP50, resolution: tick), l95 = span(\.latencyMsP95, resolution: tick)
                let j = span(\.jitterRatio, resolution: (t.map(\.jitterRatio).max() ?? 0) - (t.map(\.jitterRatio).min() ?? 0) + Self.jitterResidual)
                let l = r.lateness.sorted()
                let q = { (x: Double) in l.isEmpty ? 0 : l[min(l.count - 1, Int((x * Double(l.count)).rounded(.up)) - 1)] / 1000 }
                out += r.link.padding(toLength: 16, withPad: " ", startingAt: 0)
                out += String(format: " %4d |      %6.2f %6.2f-%6.2f %6.2f %5.2f |      %6.2f %6.2f-%6.2f %6.2f %5.2f |  %5.3f %5.3f-%5.3f %5.3f %5.3f | %4.2f/%4.2f %4lld/%5lld | %6.2f\n",
                              r.packets, p.latencyMsP50, l50.lo, l50.hi, m.latencyMsP50, l50.tol,
                              p.latencyMsP95, l95.lo, l95.hi, m.latencyMsP95, l95.tol,
                              p.jitterRatio, j.lo, j.hi, m.jitterRatio, j.tol, q(0.5), q(0.99),
                              r.missedTicks, r.ticks, r.offsetUs / 1000)
                func check(_ what: String, _ pv: Double, _ mv: Double, _ tol: Double) {
                    if abs(mv - pv) > tol {
                        failures.append("\(r.link): \(what) measured \(mv), predicted \(pv): off by more than the timer explains (\(tol)). "
                                        + "If meas is far from the timer columns too, the lab's replay and the receiver's core disagree: "
                                        + "keep the run's --record-arrivals trace and compare `remolo simulate --trace` with the receiver")
                    }
                }
                check("latency p50 ms", p.latencyMsP50, m.latencyMsP50, l50.tol)
                check("latency p95 ms", p.latencyMsP95, m.latencyMsP95, l95.tol)
                check("jitter ratio", p.jitterRatio, m.jitterRatio, j.tol)
            }
            print(out, terminator: "")
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))\n\(out)")
        }

        func runOnce(_ name: String, _ netem: [String]) throws -> Row {
            let v = try VethPair(prefix: "rmlr")
            defer { v.close() }
            if !netem.isEmpty {
                try must(Netns.tc, ["-n", v.a, "qdisc", "add", "dev", v.dev, "root", "netem"] + netem)
            }
            let c = try PairedConfigs(label: "s2r")
            defer { c.remove() }
            let trace = c.root + "/arrivals.csv"
            let rx = try CLIProcess(["receive", "--listen", "10.77.0.2:7420", "--seconds", "60", "--record-arrivals", trace],
                                    configDir: c.receiver, log: c.log("rx"), prefix: [Netns.ip, "netns", "exec", v.b])
            defer { if rx.process.isRunning { rx.signal(SIGKILL) }; _ = rx.wait() }
            let listening = try #require(rx.line("receiver "), "\(name): receive did not start: \(rx.output)")
            let node = try #require(listening.split(separator: " ").last.map(String.init))
            let reader = try EvdevReader(node)
            try reader.useMonotonicClock()

            let tx = try CLIProcess(["send", "--to", "10.77.0.2:7420"] + Self.gesture, configDir: c.sender,
                                    log: c.log("tx"), prefix: [Netns.ip, "netns", "exec", v.a])
            let done = Mutex(false)
            Thread { tx.process.waitUntilExit(); done.withLock { $0 = true } }.start()
            let events = reader.readTimed(settleMs: 500) { done.withLock { $0 } && rx.output.contains(" ended") }
            #expect(tx.wait() == 0, "\(name): send: \(tx.output)")
            rx.signal(SIGTERM)
            #expect(rx.wait(upTo: 20) == 0, "\(name): \(rx.output)")
            #expect(!events.contains { $0.ev == Ev(EV_SYN, SYN_DROPPED, 0) }, "\(name): the reader fell behind")

            // The frames as written: REL_X/REL_Y summed up to each SYN_REPORT.
            var frames: [OutputFrame] = []
            var f = OutputFrame(tUs: 0, dx: 0, dy: 0)
            for e in events {
                if e.ev.type == UInt16(EV_REL) && e.ev.code == UInt16(REL_X) { f.dx += e.ev.value }
                if e.ev.type == UInt16(EV_REL) && e.ev.code == UInt16(REL_Y) { f.dy += e.ev.value }
                if e.ev == .syn {
                    f.tUs = Double(e.tUs)
                    if f.dx != 0 || f.dy != 0 { frames.append(f) }
                    f = OutputFrame(tUs: 0, dx: 0, dy: 0)
                }
            }
            let final = try #require(rx.line("final: "), "\(name): \(rx.output)")
            let counters = try #require(Self.tickCounters(in: final), "\(name): no tick counters in \(final)")

            var recorded = try Trace.read(from: trace)
            #expect(recorded.records.count >= 200, "\(name): \(recorded.records.count) arrivals recorded")
            // The receiver's estimate of the transit at the mean send time
            // (the lower envelope touches the fastest trips there).
            let est = recorded.effectiveClock.segments[0]
            let meanSend = recorded.records.reduce(0.0) { $0 + Double($1.sendUs) } / Double(max(1, recorded.records.count))
            let estimate = est.offsetUs + est.ppm * 1e-6 * meanSend
            // One clock in the guest: identity map, latency from the sender's stamp.
            recorded.clock = TraceClock(segments: [.init(fromRow: 0, offsetUs: 0, ppm: 0)], dminUs: 0)
            #expect(estimate >= 0 && estimate < 200_000, "\(name): estimated offset \(estimate) us: not one shared clock?")
            let lab = LabCase(trace: recorded, displayHz: 120)

            // The lab's core drained at the receiver's own wake-ups: every
            // frame is one (a wake-up that moved no whole pixel wrote
            // nothing, and skipping it changes nothing: the core integrates
            // up to each tick's time and carries the sub-pixel rest).
            // The tick read the clock (its `now`) between its grid time and
            // the write that stamped the frame: the lab runs it at either
            // end, both stamped with the frame's evdev time.
            let stamps = frames.map(\.tUs)
            let lateness = Self.lateness(stamps)
            let grid = zip(stamps, lateness).map { UInt64(($0 - $1).rounded()) }
            let timer = [lab.scoreOutput(lab.predictFrames(.default, ticksUs: stamps.map { UInt64($0) }, stampsUs: stamps)),
                         lab.scoreOutput(lab.predictFrames(.default, ticksUs: grid, stampsUs: stamps))]
            let moved = recorded.records.filter { $0.kind == .motion }.count
            return Row(link: name, predicted: lab.scoreOutput(lab.predictFrames(.default)), measured: lab.scoreOutput(frames),
                       timer: timer, lateness: lateness, ticks: counters.ticks, missedTicks: counters.missed, offsetUs: estimate, packets: moved)
        }

        /// The tick counters of the receiver's final line
        /// (`| ticks N late L missed M |`): ticks run, ticks that found
        /// more than one expiration, expirations they merged.
        static func tickCounters(in line: String) -> (ticks: Int64, late: Int64, missed: Int64)? {
            let w = line.split(separator: " ").map(String.init)
            guard let i = w.firstIndex(of: "ticks"), i + 5 < w.count, w[i + 2] == "late", w[i + 4] == "missed",
                  let t = Int64(w[i + 1]), let l = Int64(w[i + 3]), let m = Int64(w[i + 5]) else { return nil }
            return (t, l, m)
        }

        /// Each frame's lateness against the 480 Hz grid, microseconds. The
        /// grid is fitted per timer run (the timer stops after half a second
        /// of quiet and restarts on a fresh phase): with the residues r_k =
        /// (t_k - t_0) mod T sorted, the phase is the residue r_j that makes
        /// the mean of (r_k - r_j) mod T smallest, i.e. where the frames'
        /// cluster on the grid begins.
        static func lateness(_ times: [Double]) -> [Double] {
            var out: [Double] = []
            var start = 0
            while start < times.count {
                var end = start + 1
                while end < times.count && times[end] - times[end - 1] < 400_000 { end += 1 }
                let t0 = times[start]
                let res = times[start..<end].map { ($0 - t0).truncatingRemainder(dividingBy: periodUs) }
                let r = res.sorted()
                // sum_k (r_k - r_j) mod T = S - n r_j + j T: smallest at argmin(j T - n r_j).
                let n = Double(r.count)
                let j = r.indices.min { Double($0) * periodUs - n * r[$0] < Double($1) * periodUs - n * r[$1] } ?? 0
                out += res.map { ($0 - r[j] + periodUs).truncatingRemainder(dividingBy: periodUs) }
                start = end
            }
            return out
        }
    }
}
