import BenchSupport
import Foundation
import Remolo
import RemoloCore
import RemoloSession
import RemoloSystem

// The receive loop (CSources/RemoloCore/rx*.c) with real loopback UDP:
// datagrams through io_uring receive, wire_open and playout_push, the
// 480 Hz drain writing frames through ptrdev (fd mode) to /dev/null.
//
//   rx.datagram_ns      wall time per datagram, this thread sending bursts
//                       of 64 (at most 3 in flight) and the loop receiving
//                       on the other core: bound by the sender's own
//                       sendto + loopback delivery (~2/3 of the samples)
//   rx.loop_cpu_ns      CPU time of every thread but this one (the loop:
//                       its io_uring_enter, the kernel's copy into the
//                       provided buffer, open, push, drain) per datagram
//   rx.allocs_per_batch heap allocations in the whole process while a
//                       batch went through (the loop allocates nothing)
func receiverBenches() -> [BenchCase] {
    [BenchCase(name: "rx.datagram") { s in receiverDatagramBench(s) }]
}

let rxKey: [UInt8] = (0..<32).map { UInt8(0x21 + $0) }
let rxID: [UInt8] = Array("rxbench!".utf8)

/// The C loop on its own thread (Remolo's RawLoop) over loopback UDP,
/// writing to /dev/null, with one session (rxKey, rxID).
final class BenchLoop {
    let raw: RawLoop
    let sock: Int32
    let sink: Int32
    let port: UInt16

    /// - rtPriority: SCHED_FIFO on the loop thread (0: off).
    /// - recordFd: the write end of a non-blocking pipe for arrival records (-1: off).
    /// - outputFD: where the frames go (an output adapter's pipe); a copy
    ///   is taken. -1: /dev/null.
    init(rtPriority: Int32 = 0, recordFd: Int32 = -1, outputFD: Int32 = -1) {
        do {
            sock = try Socket.bindUDP(host: "127.0.0.1", port: 0)
            port = try Socket.boundPort(sock)
        } catch { fatalError("rx bench: \(error)") }
        sink = outputFD >= 0 ? fcntl(outputFD, F_DUPFD_CLOEXEC, 0) : open("/dev/null", O_WRONLY | O_CLOEXEC)
        do { raw = try RawLoop(socket: sock, output: sink, realtimePriority: rtPriority, recordFD: recordFd) }
        catch { fatalError("rx bench: \(error)") }
        precondition(raw.start(wait: 2), "io_uring unavailable")
        let id = try! SessionID(bytes: rxID), key = try! DatagramKey(bytes: rxKey)
        let seq = raw.push(RawLoop.command(RX_OP_ADD_SESSION, id, key: key))
        var r: Int32?
        while r == nil { r = raw.result(seq); usleep(100) }
        precondition(r == 0, "add session: \(r!)")
    }

    var stats: rx_stats { raw.stats }

    deinit {
        raw.stop()
        close(sock)
        close(sink)
    }
}

/// A UDP socket connected to the loop's port on loopback.
func udpTo(_ port: UInt16) -> Int32 {
    do { return try Socket.connectUDP(host: "127.0.0.1", port: port) } catch { fatalError("rx bench: \(error)") }
}

private func cpuNs(_ clock: clockid_t) -> UInt64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CPU time of every thread but this one. Signed: the process clock sums
/// each thread's runtime as last accounted, which for a thread running on
/// another core can lag by up to a scheduler tick, so two readings a short
/// batch apart may even go backwards (a quick run once did, and trapped).
private func otherThreadsCPUNs() -> Int64 {
    Int64(bitPattern: cpuNs(CLOCK_PROCESS_CPUTIME_ID) &- cpuNs(CLOCK_THREAD_CPUTIME_ID))
}

private func receiverDatagramBench(_ settings: BenchSettings) -> [BenchResult] {
    precondition(wire_crypto_init() == 0)
    let loop = BenchLoop()
    let n = settings.iterations(50_000)
    let len = Int(WIRE_DATAGRAM_LEN)
    let burst = 64
    let tx = udpTo(loop.port)
    defer { close(tx) }
    var counter: UInt64 = 0
    var batch = [UInt8](repeating: 0, count: n * len)
    var samples: [Double] = []
    var allocs: [Double] = []
    var loopCPU: [Double] = []
    let t0us = UInt64(monotonicNs() / 1000)
    for _ in 0..<settings.repetitions {
        // Untimed: seal the batch (motion at 120 Hz sender times).
        batch.withUnsafeMutableBufferPointer { b in
            var pkt = playout_pkt()
            pkt.kind = UInt8(PLAYOUT_KIND_MOTION.rawValue)
            for i in 0..<n {
                pkt.a = 256
                pkt.b = -256
                pkt.tx_us = t0us + 8_333 * counter
                precondition(wire_seal(rxKey, rxID, counter, &pkt, b.baseAddress! + i * len, len) == Int32(len))
                counter += 1
            }
        }
        let base = loop.stats.datagrams
        let a0 = bench_allocations()
        let c0 = otherThreadsCPUNs()
        let t0 = monotonicNs()
        batch.withUnsafeBufferPointer { b in
            var sent = 0
            while sent < n {
                let k = min(burst, n - sent)
                for i in sent..<(sent + k) { _ = send(tx, b.baseAddress! + i * len, len, 0) }
                sent += k
                // At most three bursts in flight: the socket queue never
                // overflows and the buffer ring never runs dry.
                while loop.stats.datagrams - base + UInt64(2 * burst) < UInt64(sent) {}
            }
            while loop.stats.datagrams - base < UInt64(n) {}
        }
        let t1 = monotonicNs()
        let c1 = otherThreadsCPUNs()
        let a1 = bench_allocations()
        samples.append(Double(t1 - t0) / Double(n))
        loopCPU.append(Double(max(0, c1 - c0)) / Double(n))
        allocs.append(Double(a1 - a0))
    }
    let st = loop.stats
    precondition(st.enobufs == 0 && st.drop.4 == 0 && st.drop.5 == 0,
                 "rx bench: datagrams lost (ENOBUFS \(st.enobufs))")
    precondition(st.opened == UInt64(n * settings.repetitions), "rx bench: opened \(st.opened)")
    return [BenchResult(name: "rx.datagram_ns", value: median(samples), unit: "ns"),
            BenchResult(name: "rx.loop_cpu_ns", value: median(loopCPU), unit: "ns"),
            BenchResult(name: "rx.allocs_per_batch", value: allocs.max() ?? .nan, unit: "allocs")]
}
