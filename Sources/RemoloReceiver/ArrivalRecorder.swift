// `remolo receive --record-arrivals`: the loop's arrival records, drained
// into the lab's trace format.

internal import Glibc
internal import RemoloCore
internal import RemoloPlayoutCore
import Foundation
import RemoloSession
import RemoloSystem
import Synchronization
import RemoloTrace
import RemoloPlayout

/// Records what really arrived as a lab trace (`Sources/RemoloTrace/Trace.swift`),
/// for `remolo receive --record-arrivals FILE` and a later
/// `remolo simulate --trace FILE` over the user's own network.
///
/// The loop writes one fixed-size record (`struct rx_record`) per datagram
/// that opened for a live session into a pipe, without ever waiting: when
/// the pipe is full the record is lost and counted
/// (`ReceiverStats.unrecordedArrivals`). A thread of the recorder drains the
/// pipe into a `TraceWriter`.
///
/// Rows: `move` (Q8 dx, dy as sent), `scroll` (dx horizontal, dy vertical,
/// as the trace defines them), `button` (1 = BTN_LEFT .. 8 = BTN_TASK, 1/0),
/// `heartbeat`. A gesture state (kind 6) is no row: the trace replays a
/// pointer, and a gesture moves none; it is counted in the closing
/// comment's `left_out`, like a button the trace cannot name. One sender
/// clock per trace: only the first session's
/// datagrams become rows; later sessions' are counted in the closing comment
/// (record again to capture another sender).
public final class ArrivalRecorder: @unchecked Sendable {
    // @unchecked Sendable: the drain thread owns `drain` until it signals
    // `drained`; `finish` reads it only after that, under `finished`.
    public let path: String
    /// The pipe's write end, for the loop (non-blocking).
    let writeFD: Int32
    private let drain: Drain
    private let drained = DispatchSemaphore(value: 0)
    private let resume = DispatchSemaphore(value: 0)
    private let finished = Mutex(false)

    /// The pipe's size: at 32 bytes a record, 8192 records, over a minute of
    /// 120 Hz input, should the disk stall the drain thread.
    static let pipeBytes: Int32 = 256 << 10
    /// F_SETPIPE_SZ (<linux/fcntl.h>, F_LINUX_SPECIFIC_BASE + 7).
    static let setPipeSize: Int32 = 1031

    /// The leading comments of a recorded trace.
    static let notes = [
        "recorded by remolo receive --record-arrivals: send_us is the sender's clock, arrive_us the receiver's CLOCK_MONOTONIC",
        "lost datagrams are not listed: the receiver never learns a lost datagram's send time, so no row has an empty arrive_us (lost% reads 0)",
        "one session per file: rows are the first session's datagrams that opened (authentic, fresh); later sessions are only counted at the end",
        "gesture states and buttons a trace cannot name are not rows: they are counted at the end (left_out)",
    ]

    /// Creates (or truncates) the trace file and the pipe, and starts the
    /// drain thread. Throws, saying how to fix it, when the file cannot be
    /// created.
    public convenience init(path: String) throws {
        try self.init(path: path, pipeBytes: Self.pipeBytes, paused: false)
    }

    /// `pipeBytes`: the pipe's capacity (the kernel rounds it up to pages);
    /// `paused`: the drain thread waits for `resumeDrain()` (tests of a
    /// full pipe).
    init(path: String, pipeBytes: Int32, paused: Bool) throws {
        let writer = try TraceWriter(path: path, notes: Self.notes)
        var fds: [Int32] = [-1, -1]
        // pipe2 and F_SETPIPE_SZ sit behind _GNU_SOURCE, which Swift's
        // Glibc module does not define: pipe, then the flags one by one.
        guard pipe(&fds) == 0 else {
            let e = errno
            try? writer.close()
            throw ReceiverError("cannot record arrivals: pipe: \(String(cString: strerror(e)))")
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // Only the loop's end is non-blocking: the drain thread sleeps in
        // read() until records come or the loop's end closes.
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        _ = fcntl(fds[1], Self.setPipeSize, pipeBytes)  // best effort: the default 64 KiB also works
        self.path = path
        writeFD = fds[1]
        drain = Drain(fd: fds[0], writer: writer)
        let d = drain, done = drained, go = resume
        let t = Thread {
            // Paused (tests): waits for resumeDrain() or finish().
            if paused { go.wait() }
            d.run()
            done.signal()
        }
        t.name = "remolo-record"
        t.start()
    }

    deinit { finish(unrecorded: 0) }

    /// Lets a paused drain thread run.
    func resumeDrain() { resume.signal() }

    /// Ends the recording once the loop writes no more records: drains the
    /// pipe to its end, adds the closing comment, flushes and closes the
    /// file. Idempotent. `unrecorded`: records the loop could not write.
    func finish(unrecorded: UInt64) {
        finished.withLock { done in
            guard !done else { return }
            done = true
            close(writeFD)
            resume.signal()  // a paused drain thread runs to the pipe's end
            drained.wait()
            close(drain.fd)
            drain.unrecorded = unrecorded
            let w = drain.writer
            do throws(TraceWriteError) {
                try w.comment("end: rows=\(w.rows) other_sessions=\(drain.otherSessions) "
                              + "not_recorded=\(unrecorded) left_out=\(drain.leftOut)")
                try w.close()
            } catch {
                if drain.error == nil { drain.error = error }
                try? w.close()
            }
        }
    }

    /// Rows written (after the receiver stopped; 0 before).
    public var rows: Int { finished.withLock { $0 ? drain.writer.rows : 0 } }

    /// The first write error, if writing the file failed (after stop).
    public var error: TraceWriteError? { finished.withLock { $0 ? drain.error : nil } }

    /// One line for the end of a run (after the receiver stopped).
    public var summary: String {
        finished.withLock { done in
            guard done else { return "recording arrivals to \(path)" }
            if let e = drain.error { return "arrivals not fully recorded: \(e)" }
            var s = "recorded \(drain.writer.rows) arrivals to \(path)"
            if drain.otherSessions > 0 { s += " (\(drain.otherSessions) of later sessions left out: one sender per file)" }
            if drain.unrecorded > 0 { s += " (\(drain.unrecorded) lost: the recording fell behind)" }
            return s + "; replay: remolo simulate --trace \(path)"
        }
    }

    /// The trace row for one record, nil for what a trace cannot hold (a
    /// button outside BTN_LEFT..BTN_TASK, a gesture state, an unknown kind).
    static func traceRecord(_ r: rx_record) -> TraceRecord? {
        switch UInt32(r.kind) {
        case PLAYOUT_KIND_MOTION.rawValue:
            return TraceRecord(sendUs: r.tx_us, arriveUs: r.rx_us, kind: .motion, dx: r.a, dy: r.b)
        case PLAYOUT_KIND_SCROLL.rawValue:
            // The wire's scroll is (vertical, horizontal); the trace's is (dx, dy).
            return TraceRecord(sendUs: r.tx_us, arriveUs: r.rx_us, kind: .scroll, dx: r.b, dy: r.a)
        case PLAYOUT_KIND_BUTTON.rawValue:
            guard let n = EvdevButton.traceNumber(code: r.a) else { return nil }
            return TraceRecord(sendUs: r.tx_us, arriveUs: r.rx_us, kind: .button, dx: n, dy: r.b != 0 ? 1 : 0)
        case PLAYOUT_KIND_HEARTBEAT.rawValue:
            return TraceRecord(sendUs: r.tx_us, arriveUs: r.rx_us, kind: .heartbeat)
        default:
            return nil
        }
    }

    /// The drain thread's state.
    private final class Drain: @unchecked Sendable {
        // @unchecked Sendable: used by one thread at a time (see above).
        let fd: Int32
        let writer: TraceWriter
        var session: UInt32?
        var otherSessions: UInt64 = 0
        var leftOut: UInt64 = 0         // buttons a trace cannot name, gesture states
        var unrecorded: UInt64 = 0
        var error: TraceWriteError?

        init(fd: Int32, writer: TraceWriter) { self.fd = fd; self.writer = writer }

        /// Reads records until the loop's end of the pipe closes.
        func run() {
            let size = Int(REMOLO_RX_RECORD_LEN)
            var buf = [UInt8](repeating: 0, count: size * 256)
            var have = 0
            while true {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress! + have, $0.count - have) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                have += n
                // Writes are whole records, but a read may still end inside one.
                let whole = have - have % size
                buf.withUnsafeBytes { raw in
                    for off in stride(from: 0, to: whole, by: size) {
                        take(raw.loadUnaligned(fromByteOffset: off, as: rx_record.self))
                    }
                }
                if whole < have { buf.replaceSubrange(0..<(have - whole), with: buf[whole..<have]) }
                have -= whole
            }
        }

        private func take(_ r: rx_record) {
            let first = session ?? r.session
            session = first
            guard r.session == first else { otherSessions += 1; return }
            guard let row = ArrivalRecorder.traceRecord(r) else { leftOut += 1; return }
            // After a write error the pipe is still drained (the loop must
            // not fill it), the rows go nowhere.
            guard error == nil else { return }
            do throws(TraceWriteError) { try writer.append(row) } catch { self.error = error }
        }
    }
}
