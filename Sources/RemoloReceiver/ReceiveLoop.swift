// The receive loop alone: the C hot loop (CSources/RemoloCore/rx*.c) on a
// thread of its own, reached through its command ring and statistics.

internal import CSodium
internal import Glibc
internal import RemoloCore
internal import RemoloPlayoutCore
import Foundation
import RemoloSession
import RemoloSystem
import Synchronization
import RemoloTypes
import RemoloPlayout
import RemoloDevices

/// The receive loop alone: datagrams from a bound UDP socket, played out at
/// the drain's rate (480 Hz by default) into the output. Sessions come and go through `addSession` /
/// `removeSession` (the control plane's job; see `Receiver`).
public final class ReceiveLoop: @unchecked Sendable {
    // @unchecked Sendable: all mutable state lives in the C loop, reached
    // only through its thread-safe entry points.
    private let raw: RawLoop
    private let isUinput: Bool
    private let recorder: ArrivalRecorder?
    /// The adapter the loop writes to, finished after the loop stops.
    private let adapter: (any FrameOutput)?
    /// The UDP socket's local port.
    public let port: UInt16
    /// The drain timer's rate.
    public let drain: DrainRate
    private let stopped = Mutex(false)
    /// Each live session's slot in the loop (where its receipt counts are).
    private let slots = Mutex<[SessionID: Int]>([:])
    /// Where gestures go, and the touchpad once made (the first grant). It
    /// outlives the loop thread: released only after `stop()`, its deinit
    /// lifting any finger a failed write left down.
    private let touchpadOutput: TouchpadOutput
    private let touchpad = Mutex<TouchpadDevice?>(nil)
    /// The memory each live session was given (`addSession(recall:)`), which
    /// the loop writes over when the session ends, and who hears of it.
    private let recalls = Mutex<[SessionID: RecallBuffer]>([:])
    /// Memories the loop may still read or write (a command that timed
    /// out): kept until the loop has stopped.
    private let retired = Mutex<[RecallBuffer]>([])

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
    ///   - drain: the drain timer's rate.
    ///   - touchpad: where gestures go; nil: a uinput touchpad beside a
    ///     uinput or adapter output, none beside a file descriptor.
    public init(socket: Int32, output: ReceiverOutput, playout: PlayoutConfig = .default,
                drain: DrainRate = .default,
                realtimePriority: Int32 = 0, recordArrivals: ArrivalRecorder? = nil,
                touchpad: TouchpadOutput? = nil) throws {
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
        cfg.tick_ns = drain.tickNanoseconds
        self.drain = drain
        let dev: PointerDevice
        var kbd: KeyboardDevice?
        var kbdError: KeyboardDeviceError?
        switch output {
        case .uinput(let name, let keyboard):
            dev = try PointerDevice(name: name)
            // Without a keyboard the pointer still works: the control
            // plane says "no keyboard device" to senders that ask.
            if keyboard {
                do { kbd = try KeyboardDevice(name: KeyboardDevice.name(besidePointer: name)) } catch { kbdError = error }
            }
        case .fileDescriptor(let fd, let keyboard):
            dev = try PointerDevice(fileDescriptor: fd)
            if keyboard { kbd = try KeyboardDevice(fileDescriptor: fd) }
        case .adapter(let a):
            // The keyboard's frames go through the adapter too: a backend
            // that injects keys (XTest) types them.
            dev = try PointerDevice(fileDescriptor: a.writeFD, keeping: a)
            kbd = try KeyboardDevice(fileDescriptor: a.writeFD)
        }
        keyboardError = kbdError
        if case .adapter(let a) = output { adapter = a } else { adapter = nil }
        if case .uinput = output { isUinput = true } else { isUinput = false }
        if let touchpad {
            touchpadOutput = touchpad
        } else if case .fileDescriptor = output {
            touchpadOutput = .none
        } else {
            touchpadOutput = .uinput(name: TouchpadDevice.defaultName)
        }
        do { port = try Socket.boundPort(socket) } catch {
            throw ReceiverError("the UDP socket is not usable: \(error)")
        }
        do { raw = try RawLoop(config: cfg, device: dev, keyboard: kbd) } catch {
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
    /// The keyboard's uinput node, if the loop has a uinput keyboard.
    public var keyboardDevnode: String? { isUinput ? raw.keyboard?.devnode : nil }
    /// Whether the loop has a keyboard (keys are refused without one).
    public var hasKeyboard: Bool { raw.keyboard != nil }
    /// Why the uinput keyboard could not be created (nil: it was, or was
    /// not asked for).
    public let keyboardError: KeyboardDeviceError?

    public var stats: ReceiverStats {
        ReceiverStats(raw.stats)
    }

    public var isRunning: Bool { raw.isRunning }

    /// Why a loop given no touchpad (`TouchpadOutput.none`, or nil beside a
    /// file descriptor) takes no gestures, and how to give it one.
    static let noTouchpad = "no touchpad beside this output (with `remolo receive --sink FILE`, add `--touchpad-sink FILE`)"

    /// Whether a touchpad can be made for gestures: a descriptor was given,
    /// or /dev/uinput may be opened for writing. Nil when it can; else why
    /// not and how to fix it.
    public var touchpadUnavailable: String? {
        switch touchpadOutput {
        case .none: return Self.noTouchpad
        case .fileDescriptor: return nil
        case .uinput:
            if touchpad.withLock({ $0 != nil }) { return nil }
            if access("/dev/uinput", W_OK) == 0 { return nil }
            return errno == ENOENT
                ? "/dev/uinput does not exist: load the uinput module (modprobe uinput)"
                : "/dev/uinput may not be opened for writing: run `sudo remolo install` (udev rule, input group)"
        }
    }

    /// The touchpad's uinput node, once made.
    public var touchpadDevnode: String? {
        guard case .uinput = touchpadOutput else { return nil }
        return touchpad.withLock { $0?.devnode }
    }

    /// The session's hello granted gestures: makes the touchpad if this is
    /// the first grant (the loop adopts it), then opens the session's
    /// gesture datagrams. Throws why the touchpad could not be made.
    @discardableResult
    public func grantGestures(_ id: SessionID) throws(ReceiverError) -> Bool {
        try touchpad.withLock { pad throws(ReceiverError) in
            guard pad == nil else { return }
            let made: TouchpadDevice
            do {
                switch touchpadOutput {
                case .none: throw ReceiverError(Self.noTouchpad)
                case .uinput(let name): made = try TouchpadDevice(name: name)
                case .fileDescriptor(let fd): made = try TouchpadDevice(fileDescriptor: fd)
                }
            } catch let e as ReceiverError {
                throw e
            } catch {
                throw ReceiverError("cannot make the gesture touchpad: \(error)")
            }
            var c = rx_cmd()
            c.op = UInt8(RX_OP_TOUCHPAD.rawValue)
            c.tp = made.dev
            let deadline = MonotonicClock.seconds() + Self.commandTimeout
            let r = try raw.exclusively { p throws(ReceiverError) -> Int32 in
                let seq = try Self.push(p, c, until: deadline)
                // Once queued, the loop may adopt the device even if the
                // wait below gives up on it, and would then write to freed
                // memory: from here on the device lives as long as the loop.
                pad = made
                return try Self.wait(p, seq, until: deadline)
            }
            guard r == 0 || r == -EEXIST else {
                // The loop answered and did not take it: nothing holds it.
                pad = nil
                throw ReceiverError("the receive loop did not take the touchpad: \(String(cString: strerror(-r)))")
            }
        }
        return try command(RawLoop.command(RX_OP_GESTURES, id)) == 0
    }

    /// The session's gesture end (control message 0x10): played at its
    /// sender time, after the gesture's last state. False if unknown.
    @discardableResult
    public func endGesture(_ id: SessionID, gesture: UInt8, senderTimeUs: UInt64) throws(ReceiverError) -> Bool {
        var c = RawLoop.command(RX_OP_PUSH, id)
        c.pkt.kind = UInt8(PLAYOUT_KIND_GESTURE.rawValue)
        c.pkt.tx_us = senderTimeUs
        c.pkt.g.id = gesture
        c.pkt.g.type = UInt8(PLAYOUT_GESTURE_END.rawValue)
        return try command(c) == 0
    }

    /// Runs one command on the loop thread and waits for its result.
    ///
    /// Queued and awaited under the producer lock (`RawLoop.exclusively`),
    /// so no other thread's command enters the ring before this result is
    /// read: it cannot expire (the ring keeps a result only until
    /// `REMOLO_RX_CMDQ_CAP` later commands have run, and a waiter that is
    /// descheduled long enough would otherwise sleep through them). That
    /// matters for adding a session, whose result is its slot: an expired
    /// add cannot be repaired afterwards, since it may have added the
    /// session (at a slot no later command tells) or refused it as already
    /// live (EEXIST), and removing it again would then end a session that
    /// was live before. Making expiry impossible costs little: commands of
    /// different threads run one after another instead of overlapping in
    /// the ring, each within the loop's next wake-up, and a stalled loop
    /// fails every caller after `commandTimeout` either way. An expiry
    /// seen anyway is an error, never a result.
    private func command(_ c: rx_cmd) throws(ReceiverError) -> Int32 {
        var c = c
        defer { withUnsafeMutableBytes(of: &c.key) { sodium_memzero($0.baseAddress, $0.count) } }
        let deadline = MonotonicClock.seconds() + Self.commandTimeout
        let cmd = c
        return try raw.exclusively { p throws(ReceiverError) -> Int32 in
            try Self.wait(p, try Self.push(p, cmd, until: deadline), until: deadline)
        }
    }

    /// Queues `c`, waiting for room until `deadline`.
    private static func push(_ p: RawLoop.Producer, _ c: rx_cmd,
                             until deadline: Double) throws(ReceiverError) -> Int64 {
        do { return try p.push(c, until: deadline) } catch {
            let why = error == .timedOut ? "its command ring stayed full for \(Self.commandTimeout) s" : error.message
            throw ReceiverError("the receive loop does not take commands (\(why))")
        }
    }

    /// Waits for command `seq`'s result until `deadline`.
    private static func wait(_ p: RawLoop.Producer, _ seq: Int64,
                             until deadline: Double) throws(ReceiverError) -> Int32 {
        do { return try p.wait(seq, until: deadline) } catch {
            switch error {
            case .timedOut: throw ReceiverError("the receive loop is not running (no answer in \(Self.commandTimeout) s)")
            case .stopped: throw ReceiverError("the receive loop is not running (it has stopped)")
            case .expired, .failed: throw ReceiverError(error.message)
            }
        }
    }

    /// Opens datagrams of this session from now on.
    /// - Parameters:
    ///   - recall: the memory of this sender's earlier sessions on its
    ///     network; with a playout configuration that keeps one
    ///     (`PlayoutConfig.keepsRecall`), a usable one sets the session's
    ///     first delay (docs/playout.md, "A returning sender").
    ///   - recallEnded: hears, once the session has ended (removed, or the
    ///     loop stopped), the memory it leaves: `recall` and its own packets.
    public func addSession(_ id: SessionID, key: DatagramKey, recall: DelayRecall? = nil,
                           recallEnded: (@Sendable (DelayRecall) -> Void)? = nil) throws(ReceiverError) {
        var c = RawLoop.command(RX_OP_ADD_SESSION, id, key: key)
        let buffer = recall.map { RecallBuffer($0, ended: recallEnded) }
        c.recall = buffer?.pointer
        let r: Int32
        do { r = try command(c) } catch {
            // Queued, perhaps run later: the loop may hold the pointer.
            if let buffer { retired.withLock { $0.append(buffer) } }
            throw error
        }
        if r >= 0 {
            slots.withLock { $0[id] = Int(r) }
            if let buffer { recalls.withLock { $0[id] = buffer } }
            return
        }
        switch -r {
        case EEXIST: throw ReceiverError("session \(id) is already live")
        case ENOSPC: throw ReceiverError("too many live sessions (\(DatagramOpener.capacity))")
        default: throw ReceiverError("adding session \(id): \(String(cString: strerror(-r)))")
        }
    }

    /// The session's hello granted the redundancy feature: its 65-byte
    /// datagrams (running totals) open from now on. False if unknown.
    @discardableResult
    public func grantRedundancy(_ id: SessionID) throws(ReceiverError) -> Bool {
        try command(RawLoop.command(RX_OP_REDUNDANCY, id)) == 0
    }

    /// Ends a session: what it still holds plays out at once, its buttons are
    /// released, and its datagrams are dropped from now on. False if unknown.
    @discardableResult
    public func removeSession(_ id: SessionID) throws(ReceiverError) -> Bool {
        slots.withLock { _ = $0.removeValue(forKey: id) }
        let buffer = recalls.withLock { $0.removeValue(forKey: id) }
        let removed: Bool
        do { removed = try command(RawLoop.command(RX_OP_REMOVE_SESSION, id)) == 0 } catch {
            if let buffer { retired.withLock { $0.append(buffer) } }
            throw error
        }
        // The removal has run: the loop wrote the memory and let go of it.
        if removed { buffer?.hand() }
        return removed
    }

    /// Datagrams of this session opened so far (what its receipts say);
    /// nil for a session the loop does not hold.
    public func datagramsOpened(_ id: SessionID) -> UInt64? {
        guard let slot = slots.withLock({ $0[id] }) else { return nil }
        let s = raw.stats
        return withUnsafeBytes(of: s.slot_opened) { $0.bindMemory(to: UInt64.self)[slot] }
    }

    /// What came over the control channel (a button, a key, or
    /// internet-fallback motion or scroll), played at its sender time
    /// through the session's playout like its datagrams. False if the
    /// session is unknown, or a key was refused (`key` says why).
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

    /// Key changes at one sender time (a text's keys, or one key), played
    /// in order through the session's playout at the slot that time gets,
    /// one change per key per tick. Refused changes (see `LoopKeyRefusal`)
    /// change nothing. A batch the session's key queue has no room for (2
    /// places a press, its own and its release's; a release uses the place
    /// its press kept) is refused whole, every change a flood; one that
    /// fits is refused nothing for want of room, so a release is never
    /// refused a place. Nil if the session is unknown.
    ///
    /// Any number of changes: a text of 256 characters is up to ~1600. They
    /// travel `REMOLO_RX_KEYS_PER_CMD` to a command, so ~50 commands, and
    /// the command ring takes a whole key queue's worth at once: the loop
    /// runs each in microseconds, and this waits for room only while half
    /// the ring holds commands of this call (their results must be read
    /// before the ring reuses their slots), for at most `commandTimeout`
    /// in all. Like `command`, the whole call holds the producer lock, so
    /// no other thread's command comes between: with at most half the
    /// ring's worth unread, none of this call's results can expire.
    /// Throws when the loop has no keyboard or does not answer.
    public func keys(_ id: SessionID, _ changes: [KeyChange],
                     senderTimeUs: UInt64) throws(ReceiverError) -> KeyPushResult? {
        guard hasKeyboard else {
            throw ReceiverError("the receiver has no keyboard device"
                + (keyboardError.map { ": \($0.message)" } ?? " (not asked for)"))
        }
        let per = Int(REMOLO_RX_KEYS_PER_CMD), inFlight = Int(REMOLO_RX_CMDQ_CAP) / 2
        let deadline = MonotonicClock.seconds() + Self.commandTimeout
        let changes = changes
        return try raw.exclusively { p throws(ReceiverError) -> KeyPushResult? in
            var result = KeyPushResult()
            var pending: [(seq: Int64, count: Int)] = []
            var unknown = false

            func settle(_ r: Int32, _ count: Int) throws(ReceiverError) {
                switch r {
                case 0...: result.add(commandResult: r, count: count)
                case -ENODEV: throw ReceiverError("the receiver has no keyboard device")
                default: unknown = true    // -ENOENT, -EINVAL: no such live session
                }
            }
            // Reads the oldest pending result, waiting for it.
            func collect() throws(ReceiverError) {
                let q = pending.removeFirst()
                try settle(try Self.wait(p, q.seq, until: deadline), q.count)
            }

            for start in stride(from: 0, to: changes.count, by: per) {
                let chunk = changes[start..<min(start + per, changes.count)]
                var c = RawLoop.command(RX_OP_KEYS, id)
                c.pkt.tx_us = senderTimeUs
                c.nkeys = UInt8(chunk.count)
                // The first command carries the batch's size and the room it
                // needs, 2 a press: the loop takes all of it or none
                // (remolo_rx.h, rx_cmd.whole).
                if start == 0 {
                    c.whole = UInt16(clamping: changes.count)
                    c.need = UInt16(clamping: 2 * changes.lazy.filter(\.down).count)
                }
                withUnsafeMutableBytes(of: &c.keys) { raw in
                    let k = raw.bindMemory(to: playout_key.self)
                    for (i, ch) in chunk.enumerated() { k[i] = playout_key(code: ch.code, down: ch.down ? 1 : 0) }
                }
                if pending.count >= inFlight { try collect() }
                // A ring full of earlier commands drains on its own: ours
                // cannot expire meanwhile (no one else pushes).
                pending.append((try Self.push(p, c, until: deadline), chunk.count))
                if start == 0 && changes.count > per {
                    // Whether the batch was taken decides whether the rest goes.
                    try collect()
                    if result[.flood] == chunk.count {
                        result.refused[.flood] = changes.count
                        result.accepted = 0
                        break
                    }
                }
            }
            while !pending.isEmpty { try collect() }
            return unknown ? nil : result
        }
    }

    /// One key change (see `keys`).
    public func key(_ id: SessionID, code: UInt16, down: Bool,
                    senderTimeUs: UInt64) throws(ReceiverError) -> KeyPushResult? {
        try keys(id, [KeyChange(code: code, down: down)], senderTimeUs: senderTimeUs)
    }

    /// Ends every session (flushing it) and stops the loop thread. Idempotent.
    public func stop() {
        let first = stopped.withLock { s -> Bool in defer { s = true }; return !s }
        guard first else { return }
        raw.stop()
        // The loop ended every session still live and wrote its memory; a
        // command that timed out has run by now or never will.
        let left = recalls.withLock { r in defer { r = [:] }; return Array(r.values) }
            + retired.withLock { r in defer { r = [] }; return r }
        for b in left { b.hand() }
        if let a = adapter {
            // The loop's flush released every session's buttons into the
            // pipe; a release it could not write (the pipe full) goes now,
            // then the adapter delivers the rest and lets go of everything.
            _ = try? raw.device.releaseAll()
            _ = try? raw.keyboard?.releaseAll()
            a.finish()
        }
        // The loop writes no more records: the recorder drains what is left.
        if let r = recorder {
            let s = stats
            r.finish(unrecorded: s.unrecordedArrivals + s.recordErrors)
        }
    }
}

/// One session's memory where the loop can read and write it
/// (`rx_cmd.recall`): the caller's until the session's removal has run or
/// the loop has stopped.
private final class RecallBuffer: @unchecked Sendable {
    // @unchecked Sendable: the loop thread writes the memory only before the
    // removal's result (or the loop's stop) that `hand` waits behind.
    let pointer: UnsafeMutablePointer<recall>
    private let ended: (@Sendable (DelayRecall) -> Void)?

    init(_ memory: DelayRecall, ended: (@Sendable (DelayRecall) -> Void)?) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: memory.c)
        self.ended = ended
    }

    deinit { pointer.deallocate() }

    /// Tells whoever asked what the session left.
    func hand() { ended?(DelayRecall(pointer.pointee)) }
}
