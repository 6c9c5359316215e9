import BenchSupport
import Foundation
import RemoloPlayout
import RemoloReceiver
import RemoloCore
import RemoloPlayoutCore
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
//   rx.key_to_write_us  one key change pushed as a command (RX_OP_KEYS, the
//     .p50/.p99         control channel's path) until its keyboard frame is
//                       read from the loop's fd-mode sink (a SOCK_SEQPACKET
//                       pair; the reader's wake-up is included): the
//                       playout delay (2 ms at start) plus the wait for the
//                       next 480 Hz tick, pushes spread over the tick's
//                       phases
func receiverBenches() -> [BenchCase] {
    [BenchCase(name: "rx.datagram") { s in receiverDatagramBench(s) },
     BenchCase(name: "rx.key_to_write_us") { s in keyToWriteBench(s) }]
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
    /// - drain: the drain timer's rate.
    /// - output: where the frames go (an output adapter's pipe, a test's sink); a copy
    ///   is taken. nil: /dev/null.
    init(rtPriority: Int32 = 0, recordFd: Int32 = -1, output: Int32? = nil, drain: DrainRate = .default) {
        do {
            sock = try Socket.bindUDP(host: "127.0.0.1", port: 0)
            port = try Socket.boundPort(sock)
        } catch { fatalError("rx bench: \(error)") }
        sink = output.map { fcntl($0, F_DUPFD_CLOEXEC, 0) } ?? open("/dev/null", O_WRONLY | O_CLOEXEC)
        do { raw = try RawLoop(socket: sock, output: sink, realtimePriority: rtPriority, recordFD: recordFd, drain: drain) }
        catch { fatalError("rx bench: \(error)") }
        precondition(raw.start(wait: 2), "io_uring unavailable")
        let id = try! SessionID(bytes: rxID), key = try! DatagramKey(bytes: rxKey)
        let seq = raw.push(RawLoop.command(RX_OP_ADD_SESSION, id, key: key))
        // The command ring's own wait (rx_cmd_wait): blocks until the loop ran it.
        let r = try! raw.wait(seq, until: MonotonicClock.seconds() + 2)
        precondition(r == 0, "add session: \(r)")
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

/// Reads the loop's frames from a SOCK_SEQPACKET sink on a thread of its
/// own and stamps each keyboard frame (KEY_* codes, below the first BTN_*)
/// as it is read.
private final class KeyFrameClock: @unchecked Sendable {
    // @unchecked Sendable: `stamps` is behind its lock; the fds are fixed.
    let read: Int32, write: Int32
    private let lock = NSLock()
    private var stamps: [UInt64] = []
    private let done = DispatchSemaphore(value: 0)

    init() {
        var fds: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        (read, write) = (fds[0], fds[1])
        let t = Thread { [self] in
            var buf = [UInt8](repeating: 0, count: 4096)
            let size = MemoryLayout<input_event>.stride
            while true {
                let n = buf.withUnsafeMutableBytes { recv(read, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                let now = monotonicNs()
                let keys = buf.withUnsafeBytes { raw in
                    stride(from: 0, to: n, by: size).contains { off in
                        let e = raw.load(fromByteOffset: off, as: input_event.self)
                        return e.type == UInt16(EV_KEY) && e.code < 0x100
                    }
                }
                if keys { lock.withLock { stamps.append(now) } }
            }
            done.signal()
        }
        t.name = "bench-keys"
        t.start()
    }

    var count: Int { lock.withLock { stamps.count } }
    func stamp(_ i: Int) -> UInt64 { lock.withLock { stamps[i] } }

    /// After the loop stopped (its write end closed with the sink's dup).
    func finish() {
        shutdown(write, Int32(SHUT_WR))
        done.wait()
        close(read)
        close(write)
    }
}

private func keyToWriteBench(_ settings: BenchSettings) -> [BenchResult] {
    precondition(wire_crypto_init() == 0)
    let clock = KeyFrameClock()
    var lat: [Double] = []
    do {
        let loop = BenchLoop(output: clock.write)
        let id = try! SessionID(bytes: rxID)
        let n = settings.quick ? 20 : 400
        var rng = BenchRandom(seed: 7)
        for i in 0..<n {
            var c = RawLoop.command(RX_OP_KEYS, id)
            c.nkeys = 1
            c.keys.0 = playout_key(code: 30, down: i % 2 == 0 ? 1 : 0)     // KEY_A
            let before = clock.count
            let t0 = monotonicNs()
            c.pkt.tx_us = t0 / 1000
            let seq = loop.raw.push(c)
            precondition(seq >= 0, "rx.key_to_write: the command ring refused (\(seq))")
            let deadline = t0 + 1_000_000_000
            while clock.count == before && monotonicNs() < deadline { sched_yield() }
            precondition(clock.count > before, "rx.key_to_write: no keyboard frame within 1 s")
            precondition(loop.raw.result(seq) == 0, "rx.key_to_write: key refused")
            lat.append(Double(clock.stamp(before) - t0) / 1000)
            // The next push at another phase of the 480 Hz tick.
            usleep(UInt32(3_000 + rng.next() % 5_000))
        }
    }
    clock.finish()
    return [BenchResult(name: "rx.key_to_write_us.p50", value: quantile(lat, 0.5), unit: "us"),
            BenchResult(name: "rx.key_to_write_us.p99", value: quantile(lat, 0.99), unit: "us")]
}
