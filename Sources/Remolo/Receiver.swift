// The receiver: the C hot loop (CSources/RemoloCore/rx*.c) on a thread of
// its own, the TCP control plane (handshakes, buttons, bye) around it.
//
//   UDP datagrams ---------------------> io_uring loop --> playout --> uinput
//   TCP: handshake -> add session ------> command ring ----^
//        button / bye / close ----------> command ring ----^
//
// No C type appears in this API.
internal import Glibc
internal import RemoloCore
import Foundation
import RemoloSession
import RemoloSystem
import Synchronization

/// Why the receiver could not start or act, with what to do about it.
public struct ReceiverError: Error, Equatable, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }

    init(_ message: String) { self.message = message }

    /// io_uring cannot be used here: says which of the usual causes applies.
    static func ioUring(errno e: Int32, disabled: Int32, seccomp: Int32) -> ReceiverError {
        var m = "io_uring is not available (io_uring_setup: \(String(cString: strerror(e))))"
        if disabled == 2 {
            m += ": it is disabled system-wide (/proc/sys/kernel/io_uring_disabled = 2). Fix: "
                + "`sudo sysctl -w kernel.io_uring_disabled=0` (and drop the setting from /etc/sysctl.d)."
        } else if disabled == 1 {
            m += ": it is limited to the io_uring group (/proc/sys/kernel/io_uring_disabled = 1). Fix: "
                + "run as root, add this user to the group named by /proc/sys/kernel/io_uring_group, "
                + "or `sudo sysctl -w kernel.io_uring_disabled=0`."
        } else if seccomp > 0 {
            m += ": a seccomp filter blocks it (Seccomp: \(seccomp) in /proc/self/status; containers "
                + "often do this). Fix: run outside the container, or allow io_uring_setup, "
                + "io_uring_enter and io_uring_register in its seccomp profile."
        } else if e == ENOSYS {
            m += ": the kernel was built without it (CONFIG_IO_URING). Use a kernel with io_uring (6.1 or later)."
        } else if e == ENOMEM || e == EPERM {
            m += ": the locked-memory limit may be too low. Fix: raise `ulimit -l` (memlock)."
        } else {
            m += "."
        }
        return ReceiverError(m)
    }
}

/// Where the receive loop writes its frames.
public enum ReceiverOutput: Sendable {
    /// A new uinput pointer device with this name (what the desktop sees).
    case uinput(name: String)
    /// Any file descriptor: the same encoded evdev frames (struct
    /// input_event), one write() per tick. For tests and tools; the caller
    /// owns the descriptor. This is not a pointer device.
    case fileDescriptor(Int32)
}

/// The receive loop's counters.
public struct ReceiverStats: Sendable, Equatable {
    /// Datagrams received (any content).
    public var datagrams: UInt64
    /// Datagrams that opened (authentic, fresh, for a live session).
    public var opened: UInt64
    /// Datagrams dropped, by reason.
    public var drops: [DatagramDropReason: UInt64]
    /// Longer than a receive buffer (also counted as `.long`).
    public var truncated: UInt64
    /// The provided-buffer ring ran dry (the kernel dropped datagrams).
    public var bufferRingEmpty: UInt64
    /// Times the multishot receive had to be armed (1 = never re-armed).
    public var receiveArms: UInt64
    public var receiveErrors: UInt64
    /// Packets that missed their playout slot and were replayed from now.
    public var latePackets: UInt64
    /// Packets whose deltas were over the single-packet bound (1024 px per
    /// axis, 10 notches), clamped to it.
    public var clampedPackets: UInt64
    /// The playout delay (us) of the session that last received a packet.
    public var delayUs: UInt64
    /// Drain ticks handled; ticks that found the timer had fired more than
    /// once since the last one; the expirations they missed.
    public var ticks: UInt64
    public var lateTicks: UInt64
    public var missedTicks: UInt64
    /// Frames written to the output (one write() each).
    public var frames: UInt64
    public var splitFrames: UInt64
    public var writeErrors: UInt64
    /// errno of the last failed write, 0 if none.
    public var lastWriteErrno: Int32
    public var timerStarts: UInt64
    public var timerStops: UInt64
    public var timerRunning: Bool
    public var commands: UInt64
    public var commandErrors: UInt64
    public var sessionsAdded: UInt64
    public var sessionsRemoved: UInt64
    public var liveSessions: Int
    /// Button changes pushed into playouts.
    public var buttons: UInt64
    /// Everything written, summed: REL_X, REL_Y (pixels), REL_WHEEL_HI_RES, REL_HWHEEL_HI_RES.
    public var totalDX: Int64
    public var totalDY: Int64
    public var totalWheelHiRes: Int64
    public var totalHWheelHiRes: Int64
    /// The loop thread runs SCHED_FIFO.
    public var realtime: Bool
    /// io_uring setup flags in use (IORING_SETUP_*).
    public var ringFlags: UInt32
    /// Arrival records written for `ArrivalRecorder`; records lost because
    /// its pipe was full (the loop never waits for it); other write failures.
    public var recordedArrivals: UInt64
    public var unrecordedArrivals: UInt64
    public var recordErrors: UInt64

    public var dropped: UInt64 { drops.values.reduce(0, +) }
    public subscript(reason: DatagramDropReason) -> UInt64 { drops[reason] ?? 0 }

    init(_ s: rx_stats) {
        datagrams = s.datagrams
        opened = s.opened
        var d: [DatagramDropReason: UInt64] = [:]
        withUnsafeBytes(of: s.drop) { raw in
            let counts = raw.bindMemory(to: UInt64.self)
            for r in DatagramDropReason.allCases { d[r] = counts[r.rawValue] }
        }
        drops = d
        truncated = s.truncated
        bufferRingEmpty = s.enobufs
        receiveArms = s.recv_arms
        receiveErrors = s.recv_errors
        latePackets = s.pushed_late
        clampedPackets = s.clamped
        delayUs = s.delay_us
        ticks = s.ticks
        lateTicks = s.late_ticks
        missedTicks = s.missed_ticks
        frames = s.frames
        splitFrames = s.frames_split
        writeErrors = s.write_errors
        lastWriteErrno = Int32(truncatingIfNeeded: s.last_write_errno)
        timerStarts = s.timer_starts
        timerStops = s.timer_stops
        timerRunning = s.timer_armed != 0
        commands = s.commands
        commandErrors = s.command_errors
        sessionsAdded = s.sessions_added
        sessionsRemoved = s.sessions_removed
        liveSessions = Int(s.sessions_live)
        buttons = s.buttons
        totalDX = Int64(bitPattern: s.sum_dx)
        totalDY = Int64(bitPattern: s.sum_dy)
        totalWheelHiRes = Int64(bitPattern: s.sum_wheel_hires)
        totalHWheelHiRes = Int64(bitPattern: s.sum_hwheel_hires)
        realtime = s.rt != 0
        ringFlags = UInt32(truncatingIfNeeded: s.setup_flags)
        recordedArrivals = s.records
        unrecordedArrivals = s.record_dropped
        recordErrors = s.record_errors
    }

    /// One JSON object on one line (`remolo receive --stats-json`): every
    /// counter, drops under the README's reason names.
    public var json: String {
        var fields: [(String, String)] = [
            ("datagrams", "\(datagrams)"), ("opened", "\(opened)"), ("dropped", "\(dropped)"),
        ]
        let drops = DatagramDropReason.allCases.map { "\"\($0.name)\":\(self[$0])" }.joined(separator: ",")
        fields.append(("drops", "{" + drops + "}"))
        fields += [
            ("truncated", "\(truncated)"), ("buffer_ring_empty", "\(bufferRingEmpty)"),
            ("receive_arms", "\(receiveArms)"), ("receive_errors", "\(receiveErrors)"),
            ("late_packets", "\(latePackets)"), ("clamped_packets", "\(clampedPackets)"), ("delay_us", "\(delayUs)"),
            ("ticks", "\(ticks)"), ("late_ticks", "\(lateTicks)"), ("missed_ticks", "\(missedTicks)"),
            ("frames", "\(frames)"), ("split_frames", "\(splitFrames)"), ("write_errors", "\(writeErrors)"),
            ("last_write_errno", "\(lastWriteErrno)"), ("timer_starts", "\(timerStarts)"),
            ("timer_stops", "\(timerStops)"), ("timer_running", "\(timerRunning)"),
            ("commands", "\(commands)"), ("command_errors", "\(commandErrors)"),
            ("sessions_added", "\(sessionsAdded)"), ("sessions_removed", "\(sessionsRemoved)"),
            ("live_sessions", "\(liveSessions)"), ("buttons", "\(buttons)"),
            ("total_dx", "\(totalDX)"), ("total_dy", "\(totalDY)"),
            ("total_wheel_hires", "\(totalWheelHiRes)"), ("total_hwheel_hires", "\(totalHWheelHiRes)"),
            ("realtime", "\(realtime)"), ("ring_flags", "\(ringFlags)"),
            ("recorded_arrivals", "\(recordedArrivals)"), ("unrecorded_arrivals", "\(unrecordedArrivals)"),
            ("record_errors", "\(recordErrors)"),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// One line for logs.
    public var summary: String {
        var s = "datagrams \(datagrams) opened \(opened) dropped \(dropped)"
        let reasons = DatagramDropReason.allCases.compactMap { r in self[r] > 0 ? "\(r.name) \(self[r])" : nil }
        if !reasons.isEmpty { s += " (" + reasons.joined(separator: ", ") + ")" }
        s += " | late packets \(latePackets) clamped \(clampedPackets)"
        s += " | ticks \(ticks) late \(lateTicks) missed \(missedTicks) | frames \(frames)"
        s += " | timer \(timerRunning ? "on" : "off") (starts \(timerStarts)) | sessions \(liveSessions)"
        s += " | io_uring flags 0x" + String(ringFlags, radix: 16) + (realtime ? " | SCHED_FIFO" : "")
        if bufferRingEmpty > 0 { s += " | ENOBUFS \(bufferRingEmpty)" }
        if writeErrors > 0 { s += " | write errors \(writeErrors) (errno \(lastWriteErrno))" }
        if recordedArrivals + unrecordedArrivals + recordErrors > 0 {
            s += " | recorded \(recordedArrivals)"
            if unrecordedArrivals + recordErrors > 0 { s += " (not recorded \(unrecordedArrivals + recordErrors))" }
        }
        return s
    }
}

/// Owns the C loop's memory; shared with the loop thread.
private final class LoopStorage: @unchecked Sendable {
    // @unchecked Sendable: the loop thread owns `loop` while it runs; other
    // threads reach it only through rx_cmd_push (serialised by `producer`),
    // rx_cmd_result, rx_stats_read and rx_loop_state, which are made for that.
    let loop: UnsafeMutablePointer<rx_loop>
    let producer = Mutex(())
    let finished = DispatchSemaphore(value: 0)

    init() {
        loop = .allocate(capacity: 1)
        // The struct is large (~300 KB, mostly playout rings): zero it once
        // here, so no page is first touched on the loop thread.
        UnsafeMutableRawPointer(loop).initializeMemory(as: UInt8.self, repeating: 0,
                                                       count: MemoryLayout<rx_loop>.size)
    }

    deinit { loop.deallocate() }
}

/// The receive loop alone: datagrams from a bound UDP socket, played out at
/// 480 Hz into the output. Sessions come and go through `addSession` /
/// `removeSession` (the control plane's job; see `Receiver`).
public final class ReceiveLoop: @unchecked Sendable {
    // @unchecked Sendable: all mutable state lives in the C loop, reached
    // only through its thread-safe entry points.
    private let storage: LoopStorage
    private let device: LoopDevice?
    private let recorder: ArrivalRecorder?
    /// The UDP socket's local port.
    public let port: UInt16
    private let stopped = Mutex(false)
    /// Each live session's slot in the loop (where its receipt counts are).
    private let slots = Mutex<[DatagramSessionID: Int]>([:])

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
        cfg.sink_fd = -1
        cfg.rt_priority = realtimePriority
        cfg.record_fd = recordArrivals?.writeFD ?? -1
        var dev: LoopDevice?
        switch output {
        case .uinput(let name):
            dev = try LoopDevice(name: name)
        case .fileDescriptor(let fd):
            cfg.sink_fd = fd
        }
        do { port = try Socket.boundPort(socket) } catch {
            throw ReceiverError("the UDP socket is not usable: \(error)")
        }
        let st = LoopStorage()
        cfg.dev = dev?.dev
        let r = rx_loop_init(st.loop, &cfg)
        guard r == 0 else { throw ReceiverError("cannot set up the receive loop: \(String(cString: strerror(-r)))") }
        storage = st
        device = dev
        recorder = recordArrivals
        let t = Thread {
            _ = rx_loop_run(st.loop)
            st.finished.signal()
        }
        t.name = "remolo-rx"
        t.start()
        // Wait until the ring is up (it is created on the loop thread).
        let deadline = MonotonicClock.seconds() + Self.commandTimeout
        while rx_loop_state(st.loop) == Int32(RX_STATE_IDLE.rawValue) && MonotonicClock.seconds() < deadline {
            usleep(200)
        }
        if rx_loop_state(st.loop) != Int32(RX_STATE_RUNNING.rawValue) {
            let e = rx_loop_run_error(st.loop)
            stop()
            var p = rx_probe_result()
            _ = rx_probe(&p)
            throw ReceiverError.ioUring(errno: e < 0 ? -e : ETIMEDOUT, disabled: p.disabled, seccomp: p.seccomp)
        }
    }

    deinit {
        stop()
        rx_loop_deinit(storage.loop)
    }

    /// The uinput node the loop writes to, if it writes to a device.
    public var devnode: String? { device?.devnode }

    public var stats: ReceiverStats {
        var s = rx_stats()
        rx_stats_read(storage.loop, &s)
        return ReceiverStats(s)
    }

    public var isRunning: Bool { rx_loop_state(storage.loop) == Int32(RX_STATE_RUNNING.rawValue) }

    /// Runs one command on the loop thread and waits for its result.
    private func command(_ c: rx_cmd) throws(ReceiverError) -> Int32 {
        var c = c
        let deadline = MonotonicClock.seconds() + Self.commandTimeout
        var seq: Int64 = -1
        while true {
            seq = storage.producer.withLock { _ in rx_cmd_push(storage.loop, &c) }
            if seq >= 0 || seq != -Int64(EAGAIN) || MonotonicClock.seconds() > deadline { break }
            usleep(500)
        }
        withUnsafeMutableBytes(of: &c.key) { _ = sodium_wipe($0) }
        guard seq >= 0 else { throw ReceiverError("the receive loop does not take commands (\(seq))") }
        var result: Int32 = 0
        while rx_cmd_result(storage.loop, UInt32(truncatingIfNeeded: seq), &result) == 0 {
            guard isRunning, MonotonicClock.seconds() < deadline else {
                throw ReceiverError("the receive loop is not running")
            }
            usleep(100)
        }
        return result
    }

    private static func cmd(_ op: rx_op, _ id: DatagramSessionID) -> rx_cmd {
        var c = rx_cmd()
        c.op = UInt8(op.rawValue)
        withUnsafeMutableBytes(of: &c.id) { raw in
            for (i, b) in id.bytes.enumerated() { raw[i] = b }
        }
        return c
    }

    /// Opens datagrams of this session from now on.
    public func addSession(_ id: DatagramSessionID, key: DatagramKey) throws(ReceiverError) {
        var c = Self.cmd(RX_OP_ADD_SESSION, id)
        key.withPointer { k in
            withUnsafeMutableBytes(of: &c.key) { raw in
                raw.baseAddress!.copyMemory(from: k, byteCount: DatagramKey.byteCount)
            }
        }
        let r = try command(c)
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
    public func removeSession(_ id: DatagramSessionID) throws(ReceiverError) -> Bool {
        slots.withLock { _ = $0.removeValue(forKey: id) }
        return try command(Self.cmd(RX_OP_REMOVE_SESSION, id)) == 0
    }

    /// Datagrams of this session opened so far (what its receipts say);
    /// nil for a session the loop does not hold.
    public func datagramsOpened(_ id: DatagramSessionID) -> UInt64? {
        guard let slot = slots.withLock({ $0[id] }) else { return nil }
        var s = rx_stats()
        rx_stats_read(storage.loop, &s)
        return withUnsafeBytes(of: s.slot_opened) { $0.bindMemory(to: UInt64.self)[slot] }
    }

    /// What came over the control channel (a button, or internet-fallback
    /// motion or scroll), played at its sender time through the session's
    /// playout like its datagrams. False if the session is unknown.
    @discardableResult
    public func push(_ id: DatagramSessionID, _ datagram: Datagram) throws(ReceiverError) -> Bool {
        var c = Self.cmd(RX_OP_PUSH, id)
        c.pkt = datagram.packet
        return try command(c) == 0
    }

    /// A button change from the control channel (see `push`).
    @discardableResult
    public func button(_ id: DatagramSessionID, code: UInt16, down: Bool,
                       senderTimeMicros: UInt64) throws(ReceiverError) -> Bool {
        try push(id, Datagram(.button(code: code, down: down), senderTimeMicros: senderTimeMicros))
    }

    /// Ends every session (flushing it) and stops the loop thread. Idempotent.
    public func stop() {
        let first = stopped.withLock { s -> Bool in defer { s = true }; return !s }
        guard first else { return }
        if rx_loop_state(storage.loop) != Int32(RX_STATE_STOPPED.rawValue) {
            var c = rx_cmd()
            c.op = UInt8(RX_OP_STOP.rawValue)
            // A full ring drains within a tick; the stop then fits.
            while storage.producer.withLock({ _ in rx_cmd_push(storage.loop, &c) }) == -Int64(EAGAIN) {
                usleep(500)
            }
        }
        storage.finished.wait()
        // The loop writes no more records: the recorder drains what is left.
        if let r = recorder {
            let s = stats
            r.finish(unrecorded: s.unrecordedArrivals + s.recordErrors)
        }
    }
}

@inline(__always)
private func sodium_wipe(_ raw: UnsafeMutableRawBufferPointer) -> Int {
    if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
    return raw.count
}

/// The loop's own uinput device: written only by the loop thread, destroyed
/// (buttons released) after the loop has stopped.
private final class LoopDevice: @unchecked Sendable {
    // @unchecked Sendable: after init only the loop thread touches it.
    let device: PointerDevice
    var dev: UnsafeMutablePointer<ptrdev> { device.dev }
    var devnode: String { device.devnode }

    init(name: String) throws(PointerDeviceError) { device = try PointerDevice(name: name) }
}

/// The whole receiver: a UDP receive loop and a TCP control server on the
/// same address and port. Each confirmed session registers its datagram key
/// with the loop; buttons from its control channel go into the loop; its
/// end (bye, close, idle timeout) removes it, releasing its buttons.
public final class Receiver: @unchecked Sendable {
    // @unchecked Sendable: immutable after init except `sessions`, which is
    // behind a Mutex; the loop and the server are thread-safe.
    public let loop: ReceiveLoop
    public let server: ControlServer
    public let trust: ReceiverTrust
    /// The TCP and UDP port.
    public let port: UInt16
    private let udp: Int32
    private let udpClosed = Mutex(false)
    private let sessions = SessionTable()
    private let serverDone = DispatchSemaphore(value: 0)
    private let onEvent: @Sendable (String) -> Void

    /// Time a session's last datagrams get to land after its bye: the bye
    /// travels over TCP and may overtake them.
    static let endGrace: UInt32 = 50_000

    /// - Parameters:
    ///   - host, port: where to listen (TCP and UDP); port 0 picks one.
    ///   - recordArrivals: records datagram arrivals as a lab trace; `stop()`
    ///     finishes it.
    ///   - onEvent: one line per session event (for logs).
    public init(host: String = "0.0.0.0", port: UInt16, trust: ReceiverTrust, output: ReceiverOutput,
                playout: PlayoutConfig = .default, realtimePriority: Int32 = 0,
                limits: SessionLimits = SessionLimits(), recordArrivals: ArrivalRecorder? = nil,
                onEvent: @escaping @Sendable (String) -> Void = { _ in }) throws {
        try ReceiveLoop.probe()
        let listener = try TCPListener(host: host, port: port)
        let udp: Int32
        do {
            udp = try Self.bindUDP(host: host, port: listener.port)
        } catch {
            listener.close()
            throw error
        }
        do {
            loop = try ReceiveLoop(socket: udp, output: output, playout: playout, realtimePriority: realtimePriority,
                                   recordArrivals: recordArrivals)
        } catch {
            listener.close()
            close(udp)
            throw error
        }
        self.udp = udp
        self.port = listener.port
        self.trust = trust
        self.onEvent = onEvent
        let loop = self.loop
        let sessions = self.sessions
        server = ControlServer(
            listener: listener, trust: trust, limits: limits,
            onRejected: { e in onEvent("refused a connection: \(e)") },
            onConfirmed: { result throws(SessionError) in
                let id: DatagramSessionID
                do {
                    id = try DatagramSessionID(bytes: result.keys.sessionID.bytes)
                    try loop.addSession(id, key: DatagramKey(secret: result.keys.datagramKey))
                } catch {
                    throw .io("cannot register the session: \(error)")
                }
                // One sender drives one session: a new session from the same
                // key replaces the old one (bye 4), whose datagrams stop
                // counting now and whose buttons are released.
                let replaced = sessions.register(id, peer: result.peer)
                for (old, ender) in replaced {
                    _ = try? loop.removeSession(old)
                    ender?.end(.replaced)
                    onEvent("session \(old) replaced by \(id)")
                }
            },
            onAbandoned: { result in
                guard let id = try? DatagramSessionID(bytes: result.keys.sessionID.bytes) else { return }
                _ = try? loop.removeSession(id)
                sessions.forget(id)
            },
            onSession: { channel in Receiver.serve(channel, loop: loop, sessions: sessions, onEvent: onEvent) })
        let server = self.server
        let done = serverDone
        let t = Thread {
            server.run()
            done.signal()
        }
        t.name = "remolo-accept"
        t.start()
    }

    deinit { stop() }

    public var stats: ReceiverStats { loop.stats }
    public var liveSessions: Int { sessions.count }

    /// One live session, for status views.
    public struct SessionInfo: Sendable {
        public var id: DatagramSessionID
        public var peer: PublicKey
        /// Datagrams of this session opened so far.
        public var opened: UInt64
    }

    /// The live sessions, oldest first by id order.
    public var sessionInfo: [SessionInfo] {
        sessions.snapshot().map { SessionInfo(id: $0.0, peer: $0.1, opened: loop.datagramsOpened($0.0) ?? 0) }
            .sorted { $0.id.description < $1.id.description }
    }

    /// A small table for a person: the loop's delay and lateness, drops by
    /// reason, and one row per session (`remolo receive --stats` on a terminal).
    public var statusTable: String {
        let s = stats
        var out = "remolo receive  port \(port)  sessions \(liveSessions)  delay \(String(format: "%.1f", Double(s.delayUs) / 1000)) ms"
        out += "  late packets \(s.latePackets) of \(s.opened)  ticks late \(s.lateTicks) missed \(s.missedTicks)\n"
        out += "datagrams \(s.datagrams)  opened \(s.opened)  dropped \(s.dropped)"
        for r in DatagramDropReason.allCases { out += "  \(r.name) \(s[r])" }
        out += "\n\n  session           sender fingerprint                         opened\n"
        for i in sessionInfo {
            out += "  \(i.id)  \(i.peer.fingerprint)  \(i.opened)\n"
        }
        if liveSessions == 0 { out += "  (no session)\n" }
        return out
    }

    /// How long `stop()` waits for sessions to say bye before the loop goes.
    static let byeWait = 1.0

    /// Stops accepting, ends every session (bye 3, shutting down) and the
    /// loop. Idempotent.
    public func stop() {
        if !server.listener.isClosed {
            server.stop()
            serverDone.wait()
        }
        // Each session's own thread wakes, says bye and removes its session.
        sessions.endAll(.shuttingDown)
        let deadline = MonotonicClock.seconds() + Self.byeWait
        while sessions.serving > 0 && MonotonicClock.seconds() < deadline { usleep(2000) }
        loop.stop()
        // The loop's ring is gone: nothing reads the socket any more.
        udpClosed.withLock { closed in
            if !closed { close(udp); closed = true }
        }
    }

    /// Runs on the connection's thread until the session ends.
    private static func serve(_ channel: ControlChannel, loop: ReceiveLoop,
                              sessions: SessionTable,
                              onEvent: @Sendable (String) -> Void) {
        guard let id = try? DatagramSessionID(bytes: channel.keys.sessionID.bytes) else { return }
        // Replaced (or the receiver stopping) between key confirmation and here.
        guard sessions.attach(id, channel.ender) else {
            channel.close(saying: sessions.isStopping ? .shuttingDown : .replaced)
            return
        }
        defer { sessions.detach() }
        onEvent("session \(id) from \(channel.peer.fingerprint)\(channel.result.isPairing ? " (newly paired)" : "")")
        var why = "closed"
        var grace = true
        channel.afterPong = { .receipt(loop.datagramsOpened(id) ?? 0) }
        loop: while true {
            do throws(SessionError) {
                let m = try channel.receive()
                if case .pong = m { continue }   // nothing asked for it; it renewed the idle deadline
                guard let d = played(m) else {
                    // Settings belong to the sender (the curve runs where the
                    // samples are); a receiver that took them would apply
                    // acceleration twice. Unsupported: the session ends.
                    channel.close(saying: .protocolError)
                    why = "unsupported control message \(m); said bye (protocol error)"
                    break loop
                }
                _ = try? loop.push(id, d)
            } catch {
                why = "\(error)"
                if case .ended = error { grace = false }
                if case .timedOut = error { grace = false }
                break loop
            }
        }
        // After the sender's own end (bye or close), its last datagrams may
        // still be in flight behind the faster TCP segment: they count for
        // `endGrace` more (README, Protocol, "Timeouts and limits").
        if grace { usleep(endGrace) }
        _ = try? loop.removeSession(id)
        sessions.forget(id)
        onEvent("session \(id) ended: \(why)")
    }

    /// The playout packet for what a control message asks to play; nil for
    /// a message the receiver does not accept. Sender times are ns on the
    /// wire and us in the playout: converted here, once.
    static func played(_ m: ControlMessage) -> Datagram? {
        switch m {
        case .button(let b):
            return Datagram(.button(code: b.button.evdevCode, down: b.isDown), senderTimeMicros: b.senderTimeNs / 1000)
        case .motion(let e):
            return Datagram(.motion(dx: e.dx, dy: e.dy), senderTimeMicros: e.senderTimeNs / 1000)
        case .scroll(let e):
            // dx horizontal (right positive), dy vertical (up positive), Q8 hi-res units.
            return Datagram(.scroll(vertical: e.dy, horizontal: e.dx), senderTimeMicros: e.senderTimeNs / 1000)
        case .settings, .receipt, .ping, .pong, .bye:
            return nil
        }
    }

    /// A UDP socket bound to host:port (IPv4 or IPv6 literal, or a name).
    static func bindUDP(host: String, port: UInt16) throws(ReceiverError) -> Int32 {
        do { return try Socket.bindUDP(host: host, port: port) } catch { throw ReceiverError(error.description) }
    }
}

/// The sessions the control plane has registered, by datagram session id:
/// whose they are and how to end them from another thread.
private final class SessionTable: Sendable {
    struct Entry {
        let peer: PublicKey
        var ender: ChannelEnder?
    }
    struct State {
        var entries: [DatagramSessionID: Entry] = [:]
        var serving = 0
        var stopping = false
    }
    let state = Mutex(State())

    var count: Int { state.withLock { $0.entries.count } }

    func snapshot() -> [(DatagramSessionID, PublicKey)] { state.withLock { $0.entries.map { ($0.key, $0.value.peer) } } }
    var serving: Int { state.withLock { $0.serving } }
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Adds a confirmed session; returns the sessions of the same peer it replaces.
    func register(_ id: DatagramSessionID, peer: PublicKey) -> [(DatagramSessionID, ChannelEnder?)] {
        state.withLock { st in
            let old = st.entries.filter { $0.value.peer == peer }.map { ($0.key, $0.value.ender) }
            for (o, _) in old { st.entries[o] = nil }
            st.entries[id] = Entry(peer: peer)
            return old
        }
    }

    /// The session's thread starts serving it; false if it was replaced
    /// (or the receiver is stopping) in the meantime.
    func attach(_ id: DatagramSessionID, _ ender: ChannelEnder) -> Bool {
        state.withLock { st in
            guard !st.stopping, st.entries[id] != nil else { return false }
            st.entries[id]?.ender = ender
            st.serving += 1
            return true
        }
    }

    func detach() { state.withLock { $0.serving -= 1 } }

    func forget(_ id: DatagramSessionID) { state.withLock { _ = $0.entries.removeValue(forKey: id) } }

    /// Asks every session's thread to end its session with `reason`.
    func endAll(_ reason: ByeReason) {
        let enders = state.withLock { st -> [ChannelEnder] in
            st.stopping = true
            return st.entries.values.compactMap(\.ender)
        }
        for e in enders { e.end(reason) }
    }
}

extension MouseButton {
    /// The Linux BTN_* code.
    public var evdevCode: UInt16 {
        switch self {
        case .left: 0x110
        case .right: 0x111
        case .middle: 0x112
        case .back: 0x113
        case .forward: 0x114
        }
    }
}

/// Records what really arrived as a lab trace (`Sources/Remolo/Lab/Trace.swift`),
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
/// `heartbeat`. One sender clock per trace: only the first session's
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
    /// button outside BTN_LEFT..BTN_TASK, an unknown kind).
    static func traceRecord(_ r: rx_record) -> TraceRecord? {
        switch UInt32(r.kind) {
        case PLAYOUT_KIND_MOTION.rawValue:
            return TraceRecord(sendUs: r.tx_us, arriveUs: r.rx_us, kind: .move, dx: r.a, dy: r.b)
        case PLAYOUT_KIND_SCROLL.rawValue:
            // The wire's scroll is (vertical, horizontal); the trace's is (dx, dy).
            return TraceRecord(sendUs: r.tx_us, arriveUs: r.rx_us, kind: .scroll, dx: r.b, dy: r.a)
        case PLAYOUT_KIND_BUTTON.rawValue:
            // The trace numbers buttons 1 (BTN_LEFT = 0x110) to 8 (BTN_TASK).
            guard (Self.btnLeft...Self.btnLeft + 7).contains(r.a) else { return nil }
            return TraceRecord(sendUs: r.tx_us, arriveUs: r.rx_us, kind: .button, dx: r.a - Self.btnLeft + 1,
                               dy: r.b != 0 ? 1 : 0)
        case PLAYOUT_KIND_HEARTBEAT.rawValue:
            return TraceRecord(sendUs: r.tx_us, arriveUs: r.rx_us, kind: .heartbeat)
        default:
            return nil
        }
    }

    static let btnLeft: Int32 = 0x110

    /// The drain thread's state.
    private final class Drain: @unchecked Sendable {
        // @unchecked Sendable: used by one thread at a time (see above).
        let fd: Int32
        let writer: TraceWriter
        var session: UInt32?
        var otherSessions: UInt64 = 0
        var leftOut: UInt64 = 0         // buttons a trace cannot name
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
