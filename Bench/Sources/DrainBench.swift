import Foundation
import RemoloPlayout
import RemoloCore
import RemoloPlayoutCore
import RemoloSession
import RemoloSystem

// What the drain's rate costs (docs/drain-rate.md): the loop thread's CPU
// per second of motion at 480, 576 and 720 Hz. A sender on this thread sends
// one motion datagram every 8.33 ms (a 120 Hz phone) in real time for a
// second; the loop receives, opens and plays them, and its timer ticks at
// the rate under test, each tick writing a frame to /dev/null. The timer
// runs only while there is motion (an idle loop sleeps: rx.idle_wakeups_per_s).
//
//   rx.loop_cpu_ms_per_s_moving.HZ  CPU time of the loop's thread (every
//                                   thread but the sender's, from
//                                   /proc/self/task/TID/schedstat) over the
//                                   second, in ms
//   rx.ticks_per_s_moving.HZ        timer completions the loop handled in
//                                   that second (the rate, less merged ticks)
func drainBenches() -> [BenchCase] {
    [BenchCase(name: "rx.loop_cpu_ms_per_s_moving", reports: ["rx.ticks_per_s_moving"]) { s in drainCostBench(s) }]
}

/// The rates measured: the default and auto's picks for 144 and 360 Hz.
let drainBenchRates: [Double] = [480, 576, 720]

/// Time on a CPU of every thread of this process but the calling one (the
/// sender), from /proc/self/task/TID/schedstat (ns): the loop's thread, the
/// only other one that runs while the bench sends.
private func otherThreadsRunNs() -> UInt64? {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return nil }
    // /proc/thread-self links to PID/task/TID of the calling thread.
    let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))?
        .split(separator: "/").last.map(String.init) ?? ""
    var sum: UInt64 = 0, seen = 0
    for t in tasks where t != me {
        guard let sched = try? String(contentsOfFile: "/proc/self/task/\(t)/schedstat", encoding: .utf8),
              let ns = sched.split(separator: " ").first.flatMap({ UInt64($0) }) else { continue }
        sum += ns
        seen += 1
    }
    return seen > 0 ? sum : nil
}

private func drainCostBench(_ settings: BenchSettings) -> [BenchResult] {
    precondition(wire_crypto_init() == 0)
    let len = Int(WIRE_DATAGRAM_LEN)
    let reps = settings.quick ? 1 : 5
    let seconds = settings.quick ? 0.3 : 1.0
    var out: [BenchResult] = []
    var counter: UInt64 = 0
    for hz in drainBenchRates {
        let loop = BenchLoop(drain: DrainRate(hz: hz)!)
        let tx = udpTo(loop.port)
        var cpu: [Double] = [], ticks: [Double] = []
        var buf = [UInt8](repeating: 0, count: len)
        for _ in 0..<reps {
            // Quiet first: the previous motion has played out and the timer stopped.
            while loop.stats.timer_armed != 0 { usleep(10_000) }
            guard let c0 = otherThreadsRunNs() else {
                benchNote("no /proc/self/task/*/schedstat (CONFIG_SCHED_INFO): rx.loop_cpu_ms_per_s_moving not measured")
                return drainBenchRates.map { BenchResult(name: "rx.loop_cpu_ms_per_s_moving.\(Int($0))", value: .nan, unit: "ms") }
            }
            let k0 = loop.stats.ticks
            let start = monotonicNs()
            let n = Int(seconds * 120)
            for i in 0..<n {
                // Real time: each datagram at its 120 Hz slot.
                let due = start + UInt64(i) * 8_333_333
                let now = monotonicNs()
                if due > now { usleep(UInt32((due - now) / 1000)) }
                var pkt = playout_pkt()
                pkt.kind = UInt8(PLAYOUT_KIND_MOTION.rawValue)
                pkt.a = 3 * 256
                pkt.b = -2 * 256
                pkt.tx_us = monotonicNs() / 1000
                buf.withUnsafeMutableBufferPointer { b in
                    precondition(wire_seal(rxKey, rxID, counter, &pkt, b.baseAddress!, len) == Int32(len))
                    _ = send(tx, b.baseAddress!, len, 0)
                }
                counter += 1
            }
            let end = start + UInt64(n) * 8_333_333
            let now = monotonicNs()
            if end > now { usleep(UInt32((end - now) / 1000)) }
            let elapsed = Double(monotonicNs() - start) / 1e9
            let c1 = otherThreadsRunNs() ?? c0
            cpu.append(Double(c1 - c0) / 1e6 / elapsed)
            ticks.append(Double(loop.stats.ticks - k0) / elapsed)
        }
        close(tx)
        out.append(BenchResult(name: "rx.loop_cpu_ms_per_s_moving.\(Int(hz))", value: median(cpu), unit: "ms"))
        out.append(BenchResult(name: "rx.ticks_per_s_moving.\(Int(hz))", value: median(ticks), unit: "ticks"))
    }
    return out
}
