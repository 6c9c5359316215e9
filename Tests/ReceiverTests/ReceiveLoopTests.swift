import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import RemoloCore
import RemoloPlayoutCore
import Testing

extension RxSuite {
    @Suite struct ReceiveLoopTests {
        @Test func probeSaysIoUringWorksHere() throws {
            try ReceiveLoop.probe()
            let rig = try LoopRig()
            #expect(rig.loop.isRunning)
            #expect(rig.stats.ringFlags != 0 || rig.stats.receiveArms == 1)
        }

        @Test func ioUringRefusalSaysHowToFix() {
            let cases: [(Int32, Int32, Int32, String)] = [
                (EPERM, 2, 0, "sysctl -w kernel.io_uring_disabled=0"),
                (EPERM, 1, 0, "io_uring_group"),
                (ENOSYS, 0, 2, "seccomp"),
                (ENOSYS, 0, 0, "CONFIG_IO_URING"),
            ]
            for (e, disabled, seccomp, fix) in cases {
                let m = ReceiverError.ioUring(errno: e, disabled: disabled, seccomp: seccomp).message
                #expect(m.contains(fix), "\(m)")
            }
        }

        /// Real-time motion at 120 Hz through UDP loopback, io_uring, the
        /// opener and the playout: every pixel sent comes out, spread over
        /// many frames, one write() each.
        @Test func motionIsConservedAndSpread() throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            var sentQ8: (Int64, Int64) = (0, 0)
            let n = 90
            var rng = SystemRandomNumberGenerator()
            for i in 0..<n {
                var dx = Int32.random(in: -3000...3000, using: &rng)
                var dy = Int32.random(in: -3000...3000, using: &rng)
                if i == n - 1 {
                    // Make the totals whole pixels, so the output must be exact.
                    dx -= Int32((sentQ8.0 + Int64(dx)) % 256)
                    dy -= Int32((sentQ8.1 + Int64(dy)) % 256)
                }
                sentQ8.0 += Int64(dx)
                sentQ8.1 += Int64(dy)
                rig.send(s.seal(.motion(dx: dx, dy: dy)))
                usleep(8_333)
            }
            rig.waitDatagrams(UInt64(n))
            #expect(rig.waitTimerStopped(), "the timer should stop once everything played")
            rig.sink.drain()
            let st = rig.stats
            #expect(st.opened == UInt64(n))
            #expect(st.dropped == 0)
            #expect(rig.sink.sum(Event.relX) == sentQ8.0 / 256)
            #expect(rig.sink.sum(Event.relY) == sentQ8.1 / 256)
            #expect(st.totalDX == sentQ8.0 / 256 && st.totalDY == sentQ8.1 / 256)
            // Spread: 90 packets of up to ~12 px become many small steps.
            #expect(rig.sink.frames.count > 2 * n, "frames: \(rig.sink.frames.count)")
            #expect(UInt64(rig.sink.frames.count) == st.frames)
            let biggest = rig.sink.events.filter { $0.type == Event.evRel }.map { abs($0.value) }.max() ?? 0
            #expect(biggest <= 12, "largest single step \(biggest) px")
            // Every frame is one write() ending in SYN_REPORT.
            for f in rig.sink.frames {
                #expect(f.last == Event(type: Event.evSyn, code: 0, value: 0))
            }
            #expect(st.ticks >= st.frames)
            #expect(st.timerStarts >= 1 && st.timerStops >= 1)
        }

        enum Hostile: String, CaseIterable {
            case forged, replayed, unknownSession, short, long, wrongKey, older
        }

        /// Hostile datagrams are counted by reason and move nothing; the
        /// timer never even starts.
        @Test(arguments: Hostile.allCases)
        func hostileDatagramsMoveNothing(_ kind: Hostile) throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            var expected: [DatagramDropReason: UInt64] = [:]
            var opened: UInt64 = 0
            switch kind {
            case .forged:
                var d = s.seal(.motion(dx: 25_600, dy: 0))
                d[40] ^= 1
                rig.send(d)
                expected[.badTag] = 1
            case .replayed:
                // The genuine one is a heartbeat: it opens and moves nothing.
                let d = s.seal(.heartbeat)
                rig.send(d)
                rig.send(d)
                rig.send(d)
                opened = 1
                expected[.replay] = 2
            case .unknownSession:
                var other = TestSession()
                rig.send(other.seal(.motion(dx: 25_600, dy: 0)))
                expected[.unknownSession] = 1
            case .short:
                rig.send(Array(s.seal(.motion(dx: 25_600, dy: 0)).prefix(48)))
                expected[.short] = 1
            case .long:
                rig.send(s.seal(.motion(dx: 25_600, dy: 0)) + [0])
                rig.send(s.seal(.motion(dx: 25_600, dy: 0)) + [UInt8](repeating: 7, count: 200))
                expected[.long] = 2
            case .wrongKey:
                let d = DatagramSealer.seal(Datagram(.motion(dx: 25_600, dy: 0), senderTimeUs: 1),
                                            counter: 0, key: .random(), session: s.id)
                rig.send(d)
                expected[.badTag] = 1
            case .older:
                let a = s.seal(.heartbeat)
                let b = s.seal(.motion(dx: 25_600, dy: 0))
                rig.send(a)
                // b is lost; then an older motion datagram is replayed late.
                let c = s.seal(.heartbeat)
                rig.send(c)
                rig.send(b)
                opened = 2
                expected[.replay] = 1
            }
            let total = expected.values.reduce(0, +) + opened
            rig.waitDatagrams(total)
            usleep(20_000)
            let st = rig.stats
            #expect(st.opened == opened)
            for r in DatagramDropReason.allCases {
                #expect(st[r] == expected[r] ?? 0, "\(r)")
            }
            if kind == .long { #expect(st.truncated >= 1) }
            #expect(st.timerStarts == 0)
            #expect(st.frames == 0)
            #expect(rig.sink.drain().isEmpty)
        }

        /// The timer runs only while something plays: it stops after the
        /// idle time, heartbeats do not restart it, motion does.
        @Test func timerStopsWhenIdleAndRestarts() throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            #expect(!rig.stats.timerRunning)
            for _ in 0..<5 {
                rig.send(s.seal(.motion(dx: 512, dy: 256)))
                usleep(8_333)
            }
            #expect(eventually(1) { rig.stats.timerRunning })
            let t0 = nowSeconds()
            #expect(rig.waitTimerStopped(timeout: 3))
            let stoppedAfter = nowSeconds() - t0
            // The idle time is 0.5 s after the last movement.
            #expect(stoppedAfter > 0.3, "stopped after \(stoppedAfter) s")
            let ticks = rig.stats.ticks
            #expect(rig.stats.timerStarts == 1 && rig.stats.timerStops == 1)
            // Heartbeats while idle keep it stopped.
            for _ in 0..<6 {
                rig.send(s.seal(.heartbeat))
                usleep(100_000)
            }
            rig.waitDatagrams(11)
            #expect(!rig.stats.timerRunning)
            #expect(rig.stats.timerStarts == 1)
            #expect(rig.stats.ticks - ticks <= 1, "ticks while idle: \(rig.stats.ticks - ticks)")
            // Movement restarts it.
            rig.send(s.seal(.motion(dx: 2560, dy: 0)))
            #expect(eventually(1) { rig.stats.timerStarts == 2 })
            #expect(rig.waitTimerStopped())
            rig.sink.drain()
            #expect(rig.sink.sum(Event.relX) == 10 + 10)
            #expect(rig.sink.sum(Event.relY) == 5)
        }

        enum ButtonPath: String, CaseIterable { case controlChannel, datagram }

        /// A session that ends with a button down releases it: nothing sticks.
        @Test(arguments: ButtonPath.allCases)
        func buttonsNeverStickAfterSessionEnds(_ path: ButtonPath) throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let t = senderClockUs()
            switch path {
            case .controlChannel:
                #expect(try rig.loop.button(s.id, code: Event.btnLeft, down: true, senderTimeUs: t))
                #expect(try rig.loop.button(s.id, code: Event.btnRight, down: true, senderTimeUs: t + 1))
            case .datagram:
                rig.send(s.seal(.button(code: Event.btnLeft, down: true), at: t))
                rig.send(s.seal(.button(code: Event.btnRight, down: true), at: t + 1))
            }
            rig.send(s.seal(.motion(dx: 2560, dy: 0), at: t + 8333))
            // Datagrams and commands race (the control plane waits for a
            // session's last datagrams before removing it; see Receiver).
            rig.waitDatagrams(path == .datagram ? 3 : 1)
            // Ended while the buttons are still queued (inside the delay)
            // or already down: either way they come out and go up.
            #expect(try rig.loop.removeSession(s.id))
            #expect(eventually(1) { rig.sink.drain().count > 0 || rig.sink.frames.count > 0 })
            usleep(50_000)
            rig.sink.drain()
            let keys = rig.sink.keys()
            for code in [Event.btnLeft, Event.btnRight] {
                let k = keys.filter { $0.code == code }.map(\.value)
                #expect(k.last == 0, "\(path): button \(code) ends \(k)")
            }
            #expect(rig.stats.liveSessions == 0)
            #expect(rig.stats.sessionsRemoved == 1)
        }

        /// Sessions come and go through the command ring; datagrams follow.
        @Test func sessionsAddAndRemoveThroughCommands() throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            #expect(throws: ReceiverError.self) { try rig.loop.addSession(s.id, key: s.key) }
            rig.send(s.seal(.motion(dx: 2560, dy: 0)))
            rig.waitDatagrams(1)
            #expect(rig.stats.opened == 1)
            #expect(try rig.loop.removeSession(s.id))
            #expect(try !rig.loop.removeSession(s.id))
            // Its motion was flushed out at removal: nothing lost.
            rig.sink.drain()
            #expect(rig.sink.sum(Event.relX) == 10)
            rig.send(s.seal(.motion(dx: 2560, dy: 0)))
            rig.waitDatagrams(2)
            #expect(rig.stats[.unknownSession] == 1)
            // Buttons for a gone session are refused.
            #expect(try !rig.loop.button(s.id, code: Event.btnLeft, down: true, senderTimeUs: 1))
            // A new session under the same id starts with fresh counters.
            s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            rig.send(s.seal(.motion(dx: 0, dy: 2560)))
            rig.waitDatagrams(3)
            #expect(rig.stats.opened == 2)
            // The table holds REMOLO_SESSIONS_MAX sessions.
            var ids = [s.id]
            for _ in 1..<DatagramOpener.capacity {
                let t = TestSession()
                try rig.loop.addSession(t.id, key: t.key)
                ids.append(t.id)
            }
            #expect(rig.stats.liveSessions == DatagramOpener.capacity)
            let extra = TestSession()
            #expect(throws: ReceiverError.self) { try rig.loop.addSession(extra.id, key: extra.key) }
            for id in ids { #expect(try rig.loop.removeSession(id)) }
            #expect(rig.stats.liveSessions == 0)
            // Refused: the duplicate, the unknown remove, the button, the 33rd.
            #expect(rig.stats.commandErrors == 4)
        }

        /// A burst three times the provided-buffer ring, sent as fast as
        /// the socket takes it: every datagram the socket kept is opened and
        /// played, and the multishot receive (with a CQ that holds a
        /// completion per buffer) never has to be re-armed.
        @Test func floodLosesNothing() throws {
            let rig = try LoopRig()
            var big: Int32 = 8 << 20
            // Root may exceed rmem_max; otherwise the kernel caps it.
            if setsockopt(rig.udp, SOL_SOCKET, SO_RCVBUFFORCE, &big, socklen_t(MemoryLayout<Int32>.size)) != 0 {
                _ = setsockopt(rig.udp, SOL_SOCKET, SO_RCVBUF, &big, socklen_t(MemoryLayout<Int32>.size))
            }
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let n = 3 * Int(REMOLO_RX_BUFS)
            let t = senderClockUs()
            let batch = (0..<n).map { i in s.seal(.motion(dx: 256, dy: -256), at: t + UInt64(i) * 100) }
            for d in batch { rig.send(d) }
            // The socket may drop some if its queue is full; the loop loses none.
            _ = eventually(3) { rig.stats.datagrams >= UInt64(n) }
            let got = rig.stats.datagrams
            #expect(got >= UInt64(Int(REMOLO_RX_BUFS) + 1), "only \(got) of \(n) arrived")
            #expect(rig.waitTimerStopped())
            rig.sink.drain()
            let st = rig.stats
            #expect(st.opened == got && st.dropped == 0, "\(st.summary)")
            #expect(rig.sink.sum(Event.relX) == Int64(got) && rig.sink.sum(Event.relY) == -Int64(got))
            #expect(st.bufferRingEmpty > 0 || st.receiveArms == 1, "\(st.summary)")
            print("flood: \(n) sent, \(got) received, ENOBUFS \(st.bufferRingEmpty), arms \(st.receiveArms)")
        }

        /// The drain timer runs at 480 Hz: over a second of motion the
        /// timerfd expirations (handled ticks plus missed ones) number ~480.
        @Test func timerRunsAt480Hz() throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let t0 = nowSeconds()
            let before = rig.stats
            while nowSeconds() - t0 < 1.0 {
                rig.send(s.seal(.motion(dx: 300, dy: 0)))
                usleep(8_333)
            }
            #expect(rig.waitTimerStopped())
            let st = rig.stats
            let running = nowSeconds() - t0   // the timer ran at most this long
            let expirations = Double(st.ticks - before.ticks + st.missedTicks - before.missedTicks)
            // From the first motion to the stop: 1 s of motion, the delay,
            // then 0.5 s idle (the timer's start and stop bound it).
            #expect(expirations >= 1.4 * 480 && expirations <= running * 480 + 10,
                    "\(expirations) expirations in \(running) s")
            print("480 Hz: \(st.ticks) ticks, \(st.lateTicks) late, \(st.missedTicks) missed, \(st.frames) frames")
        }

        /// SCHED_FIFO on the loop thread when asked and allowed; the timer
        /// still drains (the loop blocks in io_uring_enter, never spins).
        @Test(arguments: [Int32(0), 10])
        func realtimeWhenAllowed(_ priority: Int32) throws {
            let sink = try FrameSink()
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            let loop = try ReceiveLoop(socket: udp, output: .fileDescriptor(sink.writeFD), realtimePriority: priority)
            defer { loop.stop() }
            #expect(loop.stats.realtime == (priority > 0 && Self.fifoAllowed()))
            var s = TestSession()
            try loop.addSession(s.id, key: s.key)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = loop.port.bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let d = s.seal(.motion(dx: 256 * 5, dy: 0))
            let tx = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(tx) }
            _ = d.withUnsafeBytes { b in
                withUnsafePointer(to: &addr) { a in
                    a.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(tx, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            #expect(eventually(2) { loop.stats.totalDX == 5 })
        }

        /// Whether this process may use SCHED_FIFO (CAP_SYS_NICE or an
        /// RLIMIT_RTPRIO), tried on a thread of its own.
        static func fifoAllowed() -> Bool {
            var p = sched_param()
            p.sched_priority = 1
            var t = pthread_t()
            let ok = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
            defer { ok.deallocate() }
            ok.pointee = -1
            _ = pthread_create(&t, nil, { arg in
                var p = sched_param()
                p.sched_priority = 1
                arg!.assumingMemoryBound(to: Int32.self).pointee = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p)
                return nil
            }, ok)
            pthread_join(t, nil)
            return ok.pointee == 0
        }

        /// Two senders at once: their motion adds up in the same frames.
        @Test func twoSessionsMerge() throws {
            let rig = try LoopRig()
            var a = TestSession(), b = TestSession()
            try rig.loop.addSession(a.id, key: a.key)
            try rig.loop.addSession(b.id, key: b.key)
            for _ in 0..<20 {
                rig.send(a.seal(.motion(dx: 1024, dy: 0)))
                rig.send(b.seal(.motion(dx: 0, dy: -1024)))
                usleep(8_333)
            }
            rig.waitDatagrams(40)
            #expect(rig.waitTimerStopped())
            rig.sink.drain()
            #expect(rig.sink.sum(Event.relX) == 80)
            #expect(rig.sink.sum(Event.relY) == -80)
        }

        /// Stopping the loop ends every session: held buttons come up.
        @Test func stopReleasesButtons() throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            rig.send(s.seal(.button(code: Event.btnLeft, down: true)))
            rig.waitDatagrams(1)
            // Let it play (the delay is at most 60 ms).
            #expect(eventually(1) { rig.sink.drain(); return !rig.sink.keys().isEmpty })
            rig.loop.stop()
            rig.sink.drain()
            #expect(rig.sink.keys().map(\.value) == [1, 0])
            #expect(!rig.loop.isRunning)
        }
    }
}
