import Foundation
import Glibc
@testable import RemoloReceiver
import RemoloCore
import RemoloPlayoutCore
import RemoloSession
import RemoloSystem
import Synchronization
import Testing

/// The receive loop's command ring (rxcmd.c) on a real loop: a result is
/// kept until `REMOLO_RX_CMDQ_CAP` later commands have run, and a waiter
/// that looks after that is told it expired, never handed the result of
/// the command that took its slot. Waiting blocks on the loop's signal: it
/// returns as soon as the command runs, times out on a loop that does not
/// run, and hears at once that a stopped loop never will.
@Suite struct CommandRingTests {
    /// A loop over a bound UDP socket writing its frames to /dev/null; not
    /// started.
    final class Loop: Sendable {
        let udp: Int32
        let sink: Int32
        let raw: RawLoop

        init() throws {
            udp = try Socket.bindUDP(host: "127.0.0.1", port: 0)
            sink = open("/dev/null", O_WRONLY | O_CLOEXEC)
            raw = try RawLoop(socket: udp, output: sink, keyboard: false)
        }

        deinit {
            raw.stop()
            close(udp)
            close(sink)
        }

        /// Waits for command `seq` for up to `seconds`.
        func wait(_ seq: Int64, _ seconds: Double = 5) -> Result<Int32, CommandError> {
            Result { () throws(CommandError) -> Int32 in try raw.wait(seq, until: MonotonicClock.seconds() + seconds) }
        }

        /// Queues `c`, waiting up to `seconds` for room.
        func push(_ c: rx_cmd, _ seconds: Double = 5) throws(CommandError) -> Int64 {
            let deadline = MonotonicClock.seconds() + seconds
            return try raw.exclusively { p throws(CommandError) -> Int64 in try p.push(c, until: deadline) }
        }

        var sessionsLive: UInt64 { raw.stats.sessions_live }
    }

    final class Results: Sendable {
        let m = Mutex<[Int: Result<Int32, CommandError>]>([:])
    }

    static func add(_ id: SessionID = .random()) -> rx_cmd {
        RawLoop.command(RX_OP_ADD_SESSION, id, key: .random())
    }

    static func remove(_ id: SessionID = .random()) -> rx_cmd {
        RawLoop.command(RX_OP_REMOVE_SESSION, id)
    }

    /// (case, commands run after the waiter's before it first looks,
    /// whether its result is still there). A resident session takes slot
    /// 0, the waiter's own add slot 1; the later commands add a session
    /// (slot 2) and remove it again (0) by turns, so the old ring would
    /// have handed the waiter 2 or 0, another command's result, never 1.
    @Test("1: a waiter that sleeps through later commands gets its own result, or expired once 64 have run", arguments: [
        (1, 0, true), (2, 1, true), (3, 63, true), (4, 64, false), (5, 65, false), (6, 200, false),
    ])
    func sleepThrough(_ n: Int, _ later: Int, _ kept: Bool) throws {
        let l = try Loop()
        try #require(l.raw.start(wait: 5), "case \(n): the loop runs")
        #expect(l.wait(try l.push(Self.add())) == .success(0), "case \(n): the resident session")
        let own = try l.push(Self.add())
        var last = own
        var other = SessionID.random()
        for i in 0..<later {
            if i % 2 == 0 { other = .random() }
            last = try l.push(i % 2 == 0 ? Self.add(other) : Self.remove(other))
        }
        // Every later command has run before the waiter first looks.
        if later > 0 { #expect(l.wait(last) == .success(later % 2 == 1 ? 2 : 0), "case \(n): the last one ran") }
        let got = l.wait(own)
        var v: Int32 = -1
        let peek = rx_cmd_result(l.raw.loop, UInt32(own), &v)
        if kept {
            #expect(got == .success(1), "case \(n): its own slot")
            #expect(peek == 1 && v == 1, "case \(n): rx_cmd_result says the same")
        } else {
            #expect(got == .failure(.expired(seq: UInt32(own))), "case \(n): expired, not another's result")
            #expect(peek == -ESTALE && v == -1, "case \(n): rx_cmd_result says -ESTALE and sets nothing")
        }
        // The add ran either way: the session is live.
        #expect(l.sessionsLive == UInt64(2 + later % 2), "case \(n): sessions live")
    }

    /// Waiters blocked in rx_cmd_wait while hundreds of other commands run
    /// in full-ring batches, behind a ring that was full before the loop
    /// started: each wakes to its own slot number or to "expired"
    /// (whichever the scheduler makes of it), never to another command's
    /// result (the others say -ENOENT).
    @Test("2: blocked waiters on a busy ring: their own result or expired, never another's", arguments: [
        (1, 4, 300), (2, 8, 600),
    ])
    func blockedWaiters(_ n: Int, _ waiters: Int, _ others: Int) throws {
        let l = try Loop()
        var own: [Int64] = []
        for _ in 0..<waiters { own.append(try l.push(Self.add())) }
        for _ in waiters..<Int(REMOLO_RX_CMDQ_CAP) { _ = try l.push(Self.remove()) }
        let results = Results()
        let done = DispatchSemaphore(value: 0)
        for (i, seq) in own.enumerated() {
            let t = Thread { [l] in
                let r = l.wait(seq, 10)
                results.m.withLock { $0[i] = r }
                done.signal()
            }
            t.start()
        }
        usleep(50_000)   // the waiters block first (the loop is not running)
        let producer = Thread { [l] in
            for _ in 0..<others { _ = try? l.push(Self.remove(), 10) }
            done.signal()
        }
        try #require(l.raw.start(wait: 5), "case \(n): the loop runs")
        producer.start()
        for _ in 0...waiters { #expect(done.wait(timeout: .now() + 20) == .success, "case \(n): every thread returns") }
        var expired = 0
        for (i, seq) in own.enumerated() {
            switch results.m.withLock({ $0[i] }) {
            case .success(let slot): #expect(slot == Int32(i), "case \(n): waiter \(i) got its own slot")
            case .failure(let e):
                #expect(e == .expired(seq: UInt32(seq)), "case \(n): waiter \(i): \(e.message)")
                expired += 1
            case nil: Issue.record("case \(n): waiter \(i) did not return")
            }
        }
        #expect(l.sessionsLive == UInt64(waiters), "case \(n): every add ran")
        print("command ring case \(n): \(waiters) waiters behind \(others) commands, \(expired) expired")
    }

    /// The blocking wait (rx_cmd_wait, rx_cmd_push_wait):
    /// 1. a waiter blocked on a loop not yet running returns promptly once
    ///    the loop runs its command;
    /// 2. on a loop that is not running it times out, after its timeout;
    /// 3. on a loop that has stopped it says so at once;
    /// 4. a waiter blocked when the loop stops before its command (queued
    ///    after the stop) hears at once that it never runs;
    /// 5. a full ring on a loop not running: pushing times out, and a push
    ///    blocked on it goes in once the loop runs.
    @Test("3: the blocking wait returns when the command runs, times out when the loop does not run", arguments: 1...5)
    func blockingWait(_ n: Int) throws {
        let l = try Loop()
        let t0 = MonotonicClock.seconds()
        func later(_ seconds: Double, _ body: @escaping @Sendable () -> Void) {
            Thread { usleep(UInt32(seconds * 1e6)); body() }.start()
        }
        switch n {
        case 1:
            let seq = try l.push(Self.add())
            later(0.2) { [l] in l.raw.start() }
            #expect(l.wait(seq, 10) == .success(0))
            // Started 0.2 s in: blocked until then, and woken soon after.
            let t = MonotonicClock.seconds() - t0
            #expect(t >= 0.19 && t < 1.2, "returned \(t) s in")
        case 2:
            let seq = try l.push(Self.add())
            #expect(l.wait(seq, 0.2) == .failure(.timedOut))
            let t = MonotonicClock.seconds() - t0
            #expect(t >= 0.19 && t < 2, "timed out after \(t) s")
            #expect(l.wait(seq, 0) == .failure(.timedOut), "a zero timeout looks once")
        case 3:
            try #require(l.raw.start(wait: 5))
            l.raw.stop()
            let seq = try l.push(Self.add())
            let t1 = MonotonicClock.seconds()
            #expect(l.wait(seq, 10) == .failure(.stopped))
            #expect(MonotonicClock.seconds() - t1 < 1)
        case 4:
            var stop = rx_cmd()
            stop.op = UInt8(RX_OP_STOP.rawValue)
            #expect(try l.push(stop) == 0)
            let seq = try l.push(Self.add())
            later(0.2) { [l] in l.raw.start() }
            #expect(l.wait(seq, 10) == .failure(.stopped))
            let t = MonotonicClock.seconds() - t0
            #expect(t >= 0.19 && t < 2, "heard it \(t) s in")
            #expect(l.wait(0) == .success(0), "the stop itself ran")
        default:
            for i in 0..<Int(REMOLO_RX_CMDQ_CAP) { #expect(try l.push(Self.remove()) == Int64(i)) }
            #expect(throws: CommandError.timedOut) { try l.push(Self.remove(), 0.2) }
            #expect(MonotonicClock.seconds() - t0 >= 0.19)
            let t1 = MonotonicClock.seconds()
            later(0.2) { [l] in l.raw.start() }
            #expect(try l.push(Self.remove(), 10) == Int64(REMOLO_RX_CMDQ_CAP))
            let t = MonotonicClock.seconds() - t1
            #expect(t >= 0.19 && t < 2, "went in \(t) s later")
            #expect(l.wait(Int64(REMOLO_RX_CMDQ_CAP)) == .success(-ENOENT), "and ran")
        }
    }
}
