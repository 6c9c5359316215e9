// The receive loop alone: the C hot loop (CSources/RemoloCore/rx*.c) on a
// thread of its own, reached through its command ring and statistics.

internal import CSodium
internal import Glibc
internal import RemoloCore
import Foundation
import RemoloSession
import RemoloSystem
import Synchronization

/// The receive loop alone: datagrams from a bound UDP socket, played out at
/// 480 Hz into the output. Sessions come and go through `addSession` /
/// `removeSession` (the control plane's job; see `Receiver`).
public final class ReceiveLoop: @unchecked Sendable {
    // @unchecked Sendable: all mutable state lives in the C loop, reached
    // only through its thread-safe entry points.
    private let raw: RawLoop
    private let isUinput: Bool
    private let recorder: ArrivalRecorder?
    /// The adapter the loop writes to, finished after the loop stops.
    private let adapter: OutputAdapter?
    /// The UDP socket's local port.
    public let port: UInt16
    private let stopped = Mutex(false)
    /// Each live session's slot in the loop (where its receipt counts are).
    private let slots = Mutex<[SessionID: Int]>([:])

    /// How long a command may wait for the loop (it runs within a tick).
    static let commandTimeout = 2.0

    /// Says whether io_uring can be used here, and if not why and how to fix it.
    public static func probe() throws(ReceiverError) {
        var r = rx_probe_result()
        if rx_probe(&r) < 0 {
            throw ReceiverError.ioUring(errno: r.setup_errno, disabled: r.disabled, seccomp: r.seccomp)
        }
    }

    /// Starts the loop on its own thread over `socket` (a bound UDP socket
    /// the caller keeps open until after `stop()`).
    /// - Parameters:
    ///   - realtimePriority: SCHED_FIFO priority for the loop thread (needs
    ///     CAP_SYS_NICE; ignored without it); 0 keeps the default policy.
    ///   - recordArrivals: records every accepted datagram's arrival into
    ///     this recorder's trace; `stop()` finishes the trace.
    public init(socket: Int32, output: ReceiverOutput, playout: PlayoutConfig = .default,
                realtimePriority: Int32 = 0, recordArrivals: ArrivalRecorder? = nil) throws {
        try Self.probe()
        // The loop's own check would only say EINVAL: name the broken rule.
        if let why = playout.problem {
            throw ReceiverError("invalid playout configuration: \(why)")
        }
        var cfg = rx_config()
        cfg.playout = playout.c
        cfg.sock = socket
        cfg.rt_priority = realtimePriority
        cfg.record_fd = recordArrivals?.writeFD ?? -1
        let dev: PointerDevice
        switch output {
        case .uinput(let name): dev = try PointerDevice(name: name)
        case .fileDescriptor(let fd): dev = try PointerDevice(fileDescriptor: fd)
        case .adapter(let a): dev = try PointerDevice(fileDescriptor: a.writeFD, keeping: a)
        }
        if case .adapter(let a) = output { adapter = a } else { adapter = nil }
        if case .uinput = output { isUinput = true } else { isUinput = false }
        do { port = try Socket.boundPort(socket) } catch {
            throw ReceiverError("the UDP socket is not usable: \(error)")
        }
        do { raw = try RawLoop(config: cfg, device: dev) } catch {
            throw ReceiverError("cannot set up the receive loop: \(error.message)")
        }
        recorder = recordArrivals
        if !raw.start(wait: Self.commandTimeout) {
            let e = rx_loop_run_error(raw.loop)
            stop()
            var p = rx_probe_result()
            _ = rx_probe(&p)
            throw ReceiverError.ioUring(errno: e < 0 ? -e : ETIMEDOUT, disabled: p.disabled, seccomp: p.seccomp)
        }
    }

    deinit { stop() }

    /// The uinput node the loop writes to, if it writes to a device.
    public var devnode: String? { isUinput ? raw.device.devnode : nil }

    public var stats: ReceiverStats {
        ReceiverStats(raw.stats)
    }

    public var isRunning: Bool { raw.isRunning }

    /// Runs one command on the loop thread and waits for its result.
    private func command(_ c: rx_cmd) throws(ReceiverError) -> Int32 {
        var c = c
        defer { withUnsafeMutableBytes(of: &c.key) { sodium_memzero($0.baseAddress, $0.count) } }
        let deadline = MonotonicClock.seconds() + Self.commandTimeout
        var seq: Int64 = -1
        while true {
            seq = raw.push(c)
            if seq >= 0 || seq != -Int64(EAGAIN) || MonotonicClock.seconds() > deadline { break }
            usleep(500)
        }
        guard seq >= 0 else { throw ReceiverError("the receive loop does not take commands (\(seq))") }
        while true {
            if let r = raw.result(seq) { return r }
            guard isRunning, MonotonicClock.seconds() < deadline else {
                throw ReceiverError("the receive loop is not running")
            }
            usleep(100)
        }
    }

    /// Opens datagrams of this session from now on.
    public func addSession(_ id: SessionID, key: DatagramKey) throws(ReceiverError) {
        let r = try command(RawLoop.command(RX_OP_ADD_SESSION, id, key: key))
        if r >= 0 {
            slots.withLock { $0[id] = Int(r) }
            return
        }
        switch -r {
        case EEXIST: throw ReceiverError("session \(id) is already live")
        case ENOSPC: throw ReceiverError("too many live sessions (\(DatagramOpener.capacity))")
        default: throw ReceiverError("adding session \(id): \(String(cString: strerror(-r)))")
        }
    }

    /// Ends a session: what it still holds plays out at once, its buttons are
    /// released, and its datagrams are dropped from now on. False if unknown.
    @discardableResult
    public func removeSession(_ id: SessionID) throws(ReceiverError) -> Bool {
        slots.withLock { _ = $0.removeValue(forKey: id) }
        return try command(RawLoop.command(RX_OP_REMOVE_SESSION, id)) == 0
    }

    /// Datagrams of this session opened so far (what its receipts say);
    /// nil for a session the loop does not hold.
    public func datagramsOpened(_ id: SessionID) -> UInt64? {
        guard let slot = slots.withLock({ $0[id] }) else { return nil }
        let s = raw.stats
        return withUnsafeBytes(of: s.slot_opened) { $0.bindMemory(to: UInt64.self)[slot] }
    }

    /// What came over the control channel (a button, or internet-fallback
    /// motion or scroll), played at its sender time through the session's
    /// playout like its datagrams. False if the session is unknown.
    @discardableResult
    public func push(_ id: SessionID, _ datagram: Datagram) throws(ReceiverError) -> Bool {
        var c = RawLoop.command(RX_OP_PUSH, id)
        c.pkt = datagram.packet
        return try command(c) == 0
    }

    /// A button change from the control channel (see `push`).
    @discardableResult
    public func button(_ id: SessionID, code: UInt16, down: Bool,
                       senderTimeUs: UInt64) throws(ReceiverError) -> Bool {
        try push(id, Datagram(.button(code: code, down: down), senderTimeUs: senderTimeUs))
    }

    /// Ends every session (flushing it) and stops the loop thread. Idempotent.
    public func stop() {
        let first = stopped.withLock { s -> Bool in defer { s = true }; return !s }
        guard first else { return }
        raw.stop()
        if let a = adapter {
            // The loop's flush released every session's buttons into the
            // pipe; a release it could not write (the pipe full) goes now,
            // then the adapter delivers the rest and lets go of everything.
            _ = try? raw.device.releaseAll()
            a.finish()
        }
        // The loop writes no more records: the recorder drains what is left.
        if let r = recorder {
            let s = stats
            r.finish(unrecorded: s.unrecordedArrivals + s.recordErrors)
        }
    }
}
