import BenchSupport
import Foundation
import RemoloPlayout
import RemoloDesktop
import RemoloReceiver
import RemoloCore
import RemoloPlayoutCore
import RemoloSystem
import RemoloWeb

// The receive loop's timing, each figure next to the floor it is compared
// with, measured in the same run (docs/benchmarks.md). The loop is the real
// one (BenchLoop: io_uring on loopback UDP, ptrdev writing to /dev/null),
// fed motion at about 120 datagrams a second with intervals drawn from
// 7.3-9.3 ms, so that segments fall due at every phase of the 480 Hz tick.
//
//   rx.tick_late_us.p50/.p99     how long after its expiry the loop handled
//                                each 480 Hz tick (the loop's own histogram,
//                                rx_stats.tick_late_hist; buckets 1/4 octave,
//                                quantiles interpolated inside their bucket,
//                                the floors' samples counted alike)
//   rx.tick_late_us.floor.*      a bare timerfd read on a plain thread with
//                                the loop's thread settings (Bench/Support)
//   rx.tick_late_us.rt.*         both again under SCHED_FIFO (remolo receive
//                                --rt); NaN with the reason on stderr when
//                                the policy is refused
//   rx.tick_late_us.adapter.*    the same with the frames going to an
//                                output adapter's pipe (--output x11's
//                                path) whose backend answers at once, and
//   rx.tick_late_us.adapter_stalled.*  whose backend takes 200 ms per call
//                                (an X server or D-Bus peer that stalls);
//                                rx.adapter_stalled.failed_writes counts the
//                                loop's writes the full pipe refused (0: the
//                                pipe held every stall)
//   rx.due_to_write_us.p50/.p99  from when a segment (or button) first fell
//                                due to the return of the write() that let
//                                it out (rx_stats.due_write_hist)
//   rx.due_to_write_us.floor.*   the same for a 480 Hz drain with the bare
//                                timer's wake-ups: a due time uniform over
//                                the tick before each wake-up, so one tick's
//                                wait plus the floor's lateness
//   udp.frame_to_open_us.p50/.p99  from the sender's send() call to the
//                                loop's arrival stamp of that datagram, whose
//                                record is written only once wire_open has
//                                accepted it (the stamp is taken as the
//                                completion is reaped, just before the open:
//                                wire.open_ns later)
//   web.frame_to_open_us.p50/.p99  the same datagrams as the phone page sends
//                                them: a TLS WebSocket message to the web
//                                bridge (RemoloWeb), relayed to the loop's UDP
//                                port; from the client's SSL_write call
//   datachannel.frame_to_open_us.p50/.p99  the same datagrams on the page's
//                                data channel: one message each (unordered,
//                                PPID 53) in a DTLS 1.2 record carrying an
//                                SCTP DATA chunk, to the data-channel endpoint
//                                (RemoloWeb.DataChannelEndpoint), relayed to the
//                                loop's UDP port; from the client's send call
//                                (the chunk and its CRC32c made, then SSL_write;
//                                Bench/Support/rtc_client.c)
//   rtc.message_cpu_ns           the endpoint's CPU time per message relayed
//                                (the thread CPU clocks of the threads its
//                                start made), messages at
//                                1,500 a second so that each is a wake-up of
//                                its own, as the page's are
func timingBenches() -> [BenchCase] {
    [BenchCase(name: "rx.tick_late_us", reports: ["rx.due_to_write_us"]) { s in tickBench(s) },
     BenchCase(name: "rx.tick_late_us.adapter", reports: ["rx.adapter_stalled"]) { s in adapterTickBench(s) },
     BenchCase(name: "frame_to_open_us", reports: ["udp.frame_to_open_us", "web.frame_to_open_us",
                                                      "datachannel.frame_to_open_us", "rtc.message_cpu_ns"]) { s in frameToOpenBench(s) },
     BenchCase(name: "rx.idle_wakeups_per_s") { s in idleWakeupsBench(s) }]
}

/// The SCHED_FIFO priority of the --rt rows.
private let rtPriority: Int32 = 50

/// rx_stats' timing histograms (buckets of rx_hist_bucket).
struct Histogram {
    var counts = [UInt64](repeating: 0, count: Int(REMOLO_HIST_BUCKETS))

    init() {}

    /// From one of rx_stats' fixed arrays (a tuple in Swift).
    init<T>(words: T) {
        counts = withUnsafeBytes(of: words) { Array($0.bindMemory(to: UInt64.self)) }
        precondition(counts.count == Int(REMOLO_HIST_BUCKETS))
    }

    mutating func add(us: UInt64) { counts[Int(rx_hist_bucket(us))] += 1 }

    static func - (a: Histogram, b: Histogram) -> Histogram {
        var d = Histogram()
        for i in d.counts.indices { d.counts[i] = a.counts[i] &- b.counts[i] }
        return d
    }

    var total: UInt64 { counts.reduce(0, +) }

    /// LatencyHistogram.quantile (the receiver's own reading of rx_stats).
    func quantile(_ q: Double) -> Double { LatencyHistogram.quantile(counts, q) }
}

/// Seals motion datagrams for the loop's session and sends them paced at
/// about 120 a second, calling `send` with each sealed datagram; returns
/// the sealed send time (tx_us, the datagram's key) -> the moment (ns) just
/// before `send` was called.
private func pacedMotion(seconds: Double, seed: UInt64, counter: inout UInt64,
                         intervalUs: ClosedRange<UInt64> = 7_333...9_333,
                         send: (UnsafeRawBufferPointer) -> Bool) -> [UInt64: UInt64] {
    var rng = BenchRandom(seed: seed)
    var sent: [UInt64: UInt64] = [:]
    var buf = [UInt8](repeating: 0, count: Int(WIRE_DATAGRAM_LEN))
    var pkt = playout_pkt()
    pkt.kind = UInt8(PLAYOUT_KIND_MOTION.rawValue)
    // Several pixels a datagram: every tick of a segment writes a frame.
    pkt.a = 10 * REMOLO_Q8_ONE
    pkt.b = -6 * REMOLO_Q8_ONE
    let end = MonotonicClock.nowUs() + UInt64(seconds * 1e6)
    var next = MonotonicClock.nowUs()
    while next < end {
        MonotonicClock.sleep(untilUs: next)
        let tx = MonotonicClock.nowUs()
        pkt.tx_us = tx
        let n = buf.withUnsafeMutableBytes {
            wire_seal(rxKey, rxID, counter, &pkt, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count)
        }
        precondition(n == Int32(WIRE_DATAGRAM_LEN))
        counter += 1
        let t = MonotonicClock.nowNs()
        if buf.withUnsafeBytes({ send($0) }) { sent[tx] = t }
        next = tx + UInt64.random(in: intervalUs, using: &rng)
    }
    return sent
}

/// A UDP socket connected to the loop's port on loopback.
private func tickBench(_ settings: BenchSettings) -> [BenchResult] {
    precondition(wire_crypto_init() == 0)
    let seconds = settings.quick ? 0.3 : 3.0
    var out: [BenchResult] = []
    for rt in [false, true] {
        let prio = rt ? rtPriority : 0
        let name = rt ? "rx.tick_late_us.rt" : "rx.tick_late_us"

        // The floor first, alone on the machine (the loop is not up yet).
        let ticks = UInt32(seconds * Double(REMOLO_TICK_HZ))
        var late = [UInt64](repeating: 0, count: Int(ticks))
        let fr = bench_timer_lateness(ticks, REMOLO_TICK_NS, prio, &late)
        var floor = Histogram()
        if fr == 0 {
            for ns in late { floor.add(us: ns / 1000) }
        } else {
            benchNote("\(name).floor: \(rt ? "SCHED_FIFO" : "the bare timer") refused: \(String(cString: strerror(-fr)))")
        }

        let loop = BenchLoop(rtPriority: prio)
        var tick = Histogram(), due = Histogram()
        if rt && loop.stats.rt != 1 {
            benchNote("\(name): the loop's SCHED_FIFO did not take effect (needs CAP_SYS_NICE)")
        } else {
            let tx = udpTo(loop.port)
            let before = loop.stats
            var counter: UInt64 = 0
            _ = pacedMotion(seconds: seconds, seed: rt ? 2 : 1, counter: &counter) { send(tx, $0.baseAddress, $0.count, 0) == $0.count }
            usleep(20_000)
            let after = loop.stats
            close(tx)
            tick = Histogram(words: after.tick_late_hist) - Histogram(words: before.tick_late_hist)
            due = Histogram(words: after.due_write_hist) - Histogram(words: before.due_write_hist)
            precondition(after.opened > before.opened && tick.total > 0, "tick bench: the loop saw no motion")
        }
        out += [BenchResult(name: name + ".p50", value: tick.quantile(0.5), unit: "us"),
                BenchResult(name: name + ".p99", value: tick.quantile(0.99), unit: "us"),
                BenchResult(name: name + ".floor.p50", value: floor.quantile(0.5), unit: "us"),
                BenchResult(name: name + ".floor.p99", value: floor.quantile(0.99), unit: "us")]
        if !rt {
            // A due time uniform over the tick before each of the floor's
            // wake-ups waits the rest of that tick plus the wake-up's lateness.
            var rng = BenchRandom(seed: 3)
            var dueFloor = Histogram()
            if fr == 0 {
                for ns in late { dueFloor.add(us: (ns + UInt64.random(in: 0..<UInt64(REMOLO_TICK_NS), using: &rng)) / 1000) }
            }
            out += [BenchResult(name: "rx.due_to_write_us.p50", value: due.quantile(0.5), unit: "us"),
                    BenchResult(name: "rx.due_to_write_us.p99", value: due.quantile(0.99), unit: "us"),
                    BenchResult(name: "rx.due_to_write_us.floor.p50", value: dueFloor.quantile(0.5), unit: "us"),
                    BenchResult(name: "rx.due_to_write_us.floor.p99", value: dueFloor.quantile(0.99), unit: "us")]
        }
    }
    return out
}

/// Every arrival record waiting in the pipe: tx_us -> rx_us.
private func drainRecords(_ fd: Int32) -> [UInt64: UInt64] {
    var out: [UInt64: UInt64] = [:]
    var recs = [rx_record](repeating: rx_record(), count: 256)
    while true {
        let n = recs.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        for r in recs.prefix(n / Int(REMOLO_RX_RECORD_LEN)) where r.kind == UInt8(PLAYOUT_KIND_MOTION.rawValue) {
            out[r.tx_us] = r.rx_us
        }
    }
    return out
}

/// Send moment (ns) to the loop's stamp (us) of each recorded datagram, in us.
private func tripsUs(sent: [UInt64: UInt64], records: [UInt64: UInt64]) -> [Double] {
    sent.compactMap { tx, t in records[tx].map { (Double($0) * 1000 - Double(t)) / 1000 } }
}

private func frameToOpenBench(_ settings: BenchSettings) -> [BenchResult] {
    precondition(wire_crypto_init() == 0)
    let seconds = settings.quick ? 0.3 : 2.0
    var p: [Int32] = [-1, -1]
    precondition(pipe(&p) == 0)
    for fd in p {
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }
    defer { close(p[0]); close(p[1]) }
    let loop = BenchLoop(recordFd: p[1])

    // Plain UDP on loopback.
    let tx = udpTo(loop.port)
    var counter: UInt64 = 0
    let udpSent = pacedMotion(seconds: seconds, seed: 4, counter: &counter) { send(tx, $0.baseAddress, $0.count, 0) == $0.count }
    close(tx)
    usleep(20_000)
    let udp = tripsUs(sent: udpSent, records: drainRecords(p[0]))
    precondition(udp.count == udpSent.count, "frame_to_open: \(udpSent.count - udp.count) UDP datagrams not opened")

    // The phone page's path: TLS WebSocket -> bridge -> the same UDP port.
    var web: [Double] = []
    do {
        web = try webTrips(loop: loop, seconds: seconds, records: p[0], counter: &counter)
    } catch {
        benchNote("web.frame_to_open_us: \(error)")
    }

    // The same on the page's data channel.
    var channel: [Double] = [], cpuNs = Double.nan
    do {
        (channel, cpuNs) = try dataChannelTrips(loop: loop, seconds: seconds, messages: settings.quick ? 300 : 3000,
                                                records: p[0], counter: &counter)
    } catch {
        benchNote("datachannel.frame_to_open_us: \(error)")
    }
    return [BenchResult(name: "udp.frame_to_open_us.p50", value: quantile(udp, 0.5), unit: "us"),
            BenchResult(name: "udp.frame_to_open_us.p99", value: quantile(udp, 0.99), unit: "us"),
            BenchResult(name: "web.frame_to_open_us.p50", value: quantile(web, 0.5), unit: "us"),
            BenchResult(name: "web.frame_to_open_us.p99", value: quantile(web, 0.99), unit: "us"),
            BenchResult(name: "datachannel.frame_to_open_us.p50", value: quantile(channel, 0.5), unit: "us"),
            BenchResult(name: "datachannel.frame_to_open_us.p99", value: quantile(channel, 0.99), unit: "us"),
            BenchResult(name: "rtc.message_cpu_ns", value: cpuNs, unit: "ns")]
}

/// This process's kernel thread ids.
private func threadIDs() -> Set<Int32> {
    Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { Int32($0) })
}

/// The phone page's data channel into the loop: the endpoint relaying to
/// the loop's port, and a client doing what a browser does (its STUN check,
/// DTLS, SCTP, DCEP: Bench/Support/rtc_client.c, which says why its SCTP is
/// its own). Returns the trips of paced motion and the endpoint thread's
/// CPU per message over `messages` more.
private func dataChannelTrips(loop: BenchLoop, seconds: Double, messages: Int, records: Int32,
                              counter: inout UInt64) throws -> ([Double], Double) {
    let before = threadIDs()
    let endpoint = try DataChannelEndpoint(host: "127.0.0.1", port: 0, receiverHost: "127.0.0.1", receiverPort: loop.port)
    // The threads remolo_rtc_start made: the endpoint's, and usrsctp's
    // "SCTP iterator" (usrsctp_init_nothreads runs no timer thread, but
    // this one waits on a condition for association-wide tasks).
    let threads = threadIDs().subtracting(before)
    var ufrag = [CChar](repeating: 0, count: Int(BENCH_RTC_UFRAG_LEN) + 1)
    var pwd = [CChar](repeating: 0, count: Int(BENCH_RTC_PWD_LEN) + 1)
    var fingerprint = [UInt8](repeating: 0, count: 32)
    guard let client = bench_rtc_client_new(&ufrag, &pwd, &fingerprint) else { throw BenchFailure("client: OpenSSL failed") }
    defer { bench_rtc_client_free(client) }
    func text(_ c: [CChar]) -> String { String(decoding: c.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    let answer: DataChannelCredentials
    do {
        answer = try endpoint.add(session: rxID, ufrag: text(ufrag), password: text(pwd),
                                  fingerprint: fingerprint)
    } catch { throw BenchFailure("the endpoint refused the offer: \(error)") }
    let rc = bench_rtc_client_connect(client, answer.port, answer.ufrag, answer.password)
    guard rc == 0 else {
        throw BenchFailure("no channel: \(String(cString: strerror(-rc))) (endpoint: \(endpoint.json))")
    }
    let send = { (d: UnsafeRawBufferPointer) -> Bool in
        let ok = bench_rtc_client_send(client, d.baseAddress!.assumingMemoryBound(to: UInt8.self), d.count) == 0
        _ = bench_rtc_client_poll(client)   // the endpoint's SACKs, after the timed send
        return ok
    }
    let sent = pacedMotion(seconds: seconds, seed: 9, counter: &counter, send: send)
    usleep(50_000)
    let trips = tripsUs(sent: sent, records: drainRecords(records))
    guard trips.count == sent.count else {
        throw BenchFailure("\(sent.count - trips.count) of \(sent.count) datagrams sent on the data channel were not opened "
                       + "(endpoint: \(endpoint.json))")
    }

    // CPU per message: the endpoint's threads' clocks around `messages` more,
    // below the endpoint's flood bound (REMOLO_RTC_FLOOD_RATE). The loop's
    // records are drained on the way (the pipe holds ~2,000).
    func cpu() -> Int64 { threads.reduce(0) { $0 + max(0, bench_thread_cpu_ns($1)) } }
    let relayed0 = endpoint.peer(session: rxID)?.relayed ?? 0
    let cpu0 = cpu()
    var n = 0
    _ = pacedMotion(seconds: Double(messages) / 1500, seed: 10, counter: &counter, intervalUs: 667...667) { d in
        n += 1
        if n % 500 == 0 { _ = drainRecords(records) }
        return send(d)
    }
    usleep(50_000)
    let cpu1 = cpu()
    _ = drainRecords(records)
    let relayed = (endpoint.peer(session: rxID)?.relayed ?? 0) - relayed0
    guard !threads.isEmpty, relayed > 0 else {
        benchNote("rtc.message_cpu_ns: \(threads.count) threads started with the endpoint, \(relayed) messages relayed")
        return (trips, .nan)
    }
    return (trips, Double(cpu1 - cpu0) / Double(relayed))
}

private func webTrips(loop: BenchLoop, seconds: Double, records: Int32, counter: inout UInt64) throws -> [Double] {
    // The bridge opens a TCP connection to the receiver's control port at
    // each upgrade: a listener on the loop's port number takes it (the
    // kernel completes it from the backlog; nothing is read or written).
    let control: TCPListener
    do { control = try TCPListener(host: "127.0.0.1", port: loop.port) } catch {
        throw BenchFailure("control port \(loop.port): \(error)")
    }
    defer { control.close() }
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-bench-web-\(getpid())").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                            attributes: [.posixPermissions: 0o700])
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let bridge = try WebBridge(host: "127.0.0.1", port: 0, receiverHost: "127.0.0.1", receiverPort: loop.port,
                               configDirectory: dir)
    defer { bridge.stop() }
    let client = try WebSocketClient(port: bridge.port)
    var message = [UInt8](repeating: 0, count: 1 + Int(WIRE_DATAGRAM_LEN))
    message[0] = 0x01 // REMOLO_WEB_TAG_DATAGRAM
    var rng = BenchRandom(seed: 5)
    let sent = pacedMotion(seconds: seconds, seed: 6, counter: &counter) { d in
        message.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: 1).copyMemory(from: d.baseAddress!, byteCount: d.count) }
        return message.withUnsafeBytes { client.send($0, mask: UInt32.random(in: 0...UInt32.max, using: &rng)) }
    }
    usleep(50_000)
    let trips = tripsUs(sent: sent, records: drainRecords(records))
    guard trips.count == sent.count else {
        throw BenchFailure("\(sent.count - trips.count) of \(sent.count) datagrams sent through the bridge were not opened "
                       + "(bridge: \(bridge.stats.json))")
    }
    return trips
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// An output backend that only counts, after `stallUs` in every call.
private final class StallingBackend: OutputBackend {
    let name = "bench"
    let stallUs: UInt32
    init(stallUs: UInt32) { self.stallUs = stallUs }
    func apply(_ batch: OutputBatch) throws(OutputBackendError) { if stallUs > 0 { usleep(stallUs) } }
    func releaseAll() {}
}

/// The loop's tick lateness with its frames going through an output
/// adapter, once with a backend that answers at once and once with one that
/// stalls 200 ms in every call: the drain must not notice the difference.
private func adapterTickBench(_ settings: BenchSettings) -> [BenchResult] {
    precondition(wire_crypto_init() == 0)
    let seconds = settings.quick ? 0.5 : 3.0
    var out: [BenchResult] = []
    for (name, stall) in [("rx.tick_late_us.adapter", UInt32(0)), ("rx.tick_late_us.adapter_stalled", UInt32(200_000))] {
        let adapter: OutputAdapter
        do {
            adapter = try OutputAdapter(make: { () throws(OutputBackendError) -> any OutputBackend in
                StallingBackend(stallUs: stall)
            })
        } catch { fatalError("adapter bench: \(error)") }
        let loop = BenchLoop(output: adapter.writeFD)
        let tx = udpTo(loop.port)
        let before = loop.stats
        var counter: UInt64 = 0
        _ = pacedMotion(seconds: seconds, seed: stall == 0 ? 7 : 8, counter: &counter) { send(tx, $0.baseAddress, $0.count, 0) == $0.count }
        usleep(20_000)
        let after = loop.stats
        close(tx)
        let tick = Histogram(words: after.tick_late_hist) - Histogram(words: before.tick_late_hist)
        precondition(after.opened > before.opened && tick.total > 0, "adapter bench: the loop saw no motion")
        out += [BenchResult(name: name + ".p50", value: tick.quantile(0.5), unit: "us"),
                BenchResult(name: name + ".p99", value: tick.quantile(0.99), unit: "us")]
        if stall > 0 {
            out.append(BenchResult(name: "rx.adapter_stalled.failed_writes",
                                   value: Double(after.write_errors - before.write_errors), unit: "writes"))
        }
        withExtendedLifetime(loop) {}
        adapter.finish()
    }
    return out
}
