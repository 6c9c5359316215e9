// The C receive loop (CSources/RemoloCore/rxloop.c) and its memory, owned
// in one place: set up in place, run on a thread of its own, commands in,
// statistics out, stopped and torn down. `ReceiveLoop` builds sessions and
// Swift statistics on it; the loop's own tests and Bench drive it directly
// where they need the C side itself (a command queued before the loop runs,
// the timing histograms, a statistics read that does not allocate).

package import RemoloCore
internal import CSodium
internal import Glibc
import Foundation
import RemoloSession
import RemoloSystem
import Synchronization
import RemoloPlayout
import RemoloDevices

package final class RawLoop: @unchecked Sendable {
    // @unchecked Sendable: the loop thread owns `loop` while it runs; other
    // threads reach it only through rx_cmd_push and rx_cmd_push_wait
    // (serialised by `producer`), rx_cmd_result, rx_cmd_wait, rx_stats_read
    // and rx_loop_state, which are made for that.
    package let loop: OpaquePointer  // struct rx_loop, rx_loop_size() bytes
    /// The outputs; they live as long as the loop that writes to them.
    let device: PointerDevice
    let keyboard: KeyboardDevice?
    private let producer = Mutex(())
    private let finished = DispatchSemaphore(value: 0)
    private let started = Mutex(false)
    private let stopped = Mutex(false)

    /// Sets the loop up over `config` (its `dev` is `device`'s, its `kbd`
    /// `keyboard`'s), not yet running. Throws rx_loop_init's errno.
    package init(config: rx_config, device: PointerDevice, keyboard: KeyboardDevice? = nil) throws(SystemError) {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: rx_loop_size(),
                                                   alignment: Int(REMOLO_RX_LOOP_ALIGN))
        // The struct is large (~900 KB, mostly playout rings): zero it once
        // here, so no page is first touched on the loop thread.
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: rx_loop_size())
        var cfg = config
        cfg.dev = device.dev
        cfg.kbd = keyboard?.dev
        let r = rx_loop_init(OpaquePointer(raw), &cfg)
        guard r == 0 else {
            raw.deallocate()
            throw SystemError("rx_loop_init", errno: -r)
        }
        loop = OpaquePointer(raw)
        self.device = device
        self.keyboard = keyboard
    }

    /// The loop over `socket` with the default playout, writing its frames
    /// to `fd` (a test's sink, /dev/null), the keyboard's too unless
    /// `keyboard` is false.
    package convenience init(socket: Int32, output fd: Int32, realtimePriority: Int32 = 0,
                             recordFD: Int32 = -1, keyboard: Bool = true, drain: DrainRate = .default) throws {
        var cfg = rx_config()
        playout_config_default(&cfg.playout)
        cfg.sock = socket
        cfg.rt_priority = realtimePriority
        cfg.record_fd = recordFD
        cfg.tick_ns = drain.tickNanoseconds
        try self.init(config: cfg, device: try PointerDevice(fileDescriptor: fd),
                      keyboard: keyboard ? try KeyboardDevice(fileDescriptor: fd) : nil)
    }

    deinit {
        stop()
        rx_loop_deinit(loop)
        UnsafeMutableRawPointer(loop).deallocate()
    }

    package var state: Int32 { rx_loop_state(loop) }
    package var isRunning: Bool { state == Int32(RX_STATE_RUNNING.rawValue) }

    /// Runs the loop on a thread named `name`; with `wait`, returns once the
    /// ring is up (it is created on the loop thread) or `wait` seconds have
    /// passed, and says whether it runs.
    @discardableResult
    package func start(name: String = "remolo-rx", wait: Double = 0) -> Bool {
        started.withLock { $0 = true }
        let t = Thread { [self] in
            _ = rx_loop_run(loop)
            finished.signal()
        }
        t.name = name
        t.start()
        guard wait > 0 else { return true }
        let deadline = MonotonicClock.seconds() + wait
        while state == Int32(RX_STATE_IDLE.rawValue) && MonotonicClock.seconds() < deadline { usleep(200) }
        return isRunning
    }

    /// Queues one command: its sequence number, or -EAGAIN when the ring
    /// is full.
    package func push(_ c: rx_cmd) -> Int64 {
        var c = c
        defer { withUnsafeMutableBytes(of: &c.key) { sodium_memzero($0.baseAddress, $0.count) } }
        return producer.withLock { _ in rx_cmd_push(loop, &c) }
    }

    /// A command's result, once the loop has run it; nil before, and nil
    /// too once it has expired (see `wait`, which tells the two apart).
    package func result(_ seq: Int64) -> Int32? {
        var r: Int32 = 0
        return rx_cmd_result(loop, UInt32(truncatingIfNeeded: seq), &r) == 1 ? r : nil
    }

    /// Waits (blocking on the loop's signal, not polling) until command
    /// `seq` has run or `deadline` (`MonotonicClock.seconds()`) passes,
    /// and returns its result. Any thread; the producer lock is not needed.
    package func wait(_ seq: Int64, until deadline: Double) throws(CommandError) -> Int32 {
        try Self.wait(loop, seq, until: deadline)
    }

    /// Runs `body` holding the producer lock: no other thread queues a
    /// command until it returns, so results of commands `body` queues
    /// cannot expire while it waits for them, as long as it keeps fewer
    /// than `REMOLO_RX_CMDQ_CAP` of them unread (see `ReceiveLoop.command`).
    /// `body` must not call `push` or `stop` (the lock is not recursive):
    /// it queues through the `Producer` it is handed.
    package func exclusively<R: Sendable, E: Error>(_ body: (Producer) throws(E) -> R) throws(E) -> R {
        try producer.withLock { _ throws(E) -> R in try body(Producer(loop: loop)) }
    }

    /// The producer side while `exclusively` holds the lock; only
    /// `exclusively` makes one, and it is good only inside its body.
    /// (Not ~Copyable, which would say so to the compiler: Swift 6.3
    /// crashes on local functions that capture a borrowed one.)
    package struct Producer {
        fileprivate let loop: OpaquePointer
        fileprivate init(loop: OpaquePointer) { self.loop = loop }

        /// Queues `c`, waiting for room while the ring is full, until
        /// `deadline`: its sequence number. The command's key copy is wiped.
        package func push(_ c: rx_cmd, until deadline: Double) throws(CommandError) -> Int64 {
            var c = c
            defer { withUnsafeMutableBytes(of: &c.key) { sodium_memzero($0.baseAddress, $0.count) } }
            let r = rx_cmd_push_wait(loop, &c, RawLoop.nanoseconds(until: deadline))
            guard r >= 0 else { throw CommandError(errno: Int32(truncatingIfNeeded: -r), seq: nil) }
            return r
        }

        /// As `RawLoop.wait`.
        package func wait(_ seq: Int64, until deadline: Double) throws(CommandError) -> Int32 {
            try RawLoop.wait(loop, seq, until: deadline)
        }
    }

    private static func wait(_ loop: OpaquePointer, _ seq: Int64, until deadline: Double) throws(CommandError) -> Int32 {
        var r: Int32 = 0
        let s = UInt32(truncatingIfNeeded: seq)
        let ret = rx_cmd_wait(loop, s, &r, nanoseconds(until: deadline))
        guard ret == 1 else { throw CommandError(errno: -ret, seq: s) }
        return r
    }

    /// From now to `deadline` (`MonotonicClock.seconds()`), at least 0.
    fileprivate static func nanoseconds(until deadline: Double) -> UInt64 {
        let left = deadline - MonotonicClock.seconds()
        return left > 0 ? UInt64(min(left, 1e9) * 1e9) : 0
    }

    /// A snapshot of the loop's counters (no allocation).
    package var stats: rx_stats {
        var s = rx_stats()
        rx_stats_read(loop, &s)
        return s
    }

    /// A command for `id`; `key` for RX_OP_ADD_SESSION (the copy in the
    /// command is wiped once pushed).
    package static func command(_ op: rx_op, _ id: SessionID, key: DatagramKey? = nil) -> rx_cmd {
        var c = rx_cmd()
        c.op = UInt8(op.rawValue)
        withUnsafeMutableBytes(of: &c.id) { raw in
            for (i, b) in id.bytes.enumerated() { raw[i] = b }
        }
        key?.withPointer { k in
            withUnsafeMutableBytes(of: &c.key) { $0.baseAddress!.copyMemory(from: k, byteCount: DatagramKey.byteCount) }
        }
        return c
    }

    /// Ends every session (flushing it) and stops the loop thread, waiting
    /// for it. Idempotent; nothing to do if it never started.
    package func stop() {
        let first = stopped.withLock { s -> Bool in defer { s = true }; return !s }
        guard first, started.withLock({ $0 }) else { return }
        if state != Int32(RX_STATE_STOPPED.rawValue) {
            var c = rx_cmd()
            c.op = UInt8(RX_OP_STOP.rawValue)
            // A full ring drains within a tick; the stop then fits. A loop
            // that stopped meanwhile (-ECANCELED) needs no stop.
            producer.withLock { _ in
                while rx_cmd_push_wait(loop, &c, 1_000_000_000) == -Int64(ETIMEDOUT) {}
            }
        }
        finished.wait()
    }
}

/// Why a command queued on the loop has no result to give.
package enum CommandError: Error, Equatable, Sendable {
    /// The ring stayed full, or the command did not run, in the time given.
    case timedOut
    /// The loop has stopped: the command never runs.
    case stopped
    /// Command `seq` ran, but `REMOLO_RX_CMDQ_CAP` later commands ran
    /// before its result was read, and one of them now holds its slot.
    case expired(seq: UInt32)
    /// The system said no (errno): the loop's wake-up, the futex.
    case failed(errno: Int32)

    init(errno e: Int32, seq: UInt32?) {
        switch e {
        case ETIMEDOUT: self = .timedOut
        case ECANCELED: self = .stopped
        case ESTALE where seq != nil: self = .expired(seq: seq!)
        default: self = .failed(errno: e)
        }
    }

    package var message: String {
        switch self {
        case .timedOut: "the receive loop did not answer in time"
        case .stopped: "the receive loop has stopped"
        case .expired(let seq):
            "the result of command \(seq) expired: \(REMOLO_RX_CMDQ_CAP) later commands ran before it was read"
        case .failed(let e): "the receive loop's command ring: \(String(cString: strerror(e)))"
        }
    }
}
