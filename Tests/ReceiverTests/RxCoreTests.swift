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
    @Suite struct RxCoreTests {
        /// Datagrams already queued when the ring comes up, twice what the
        /// provided-buffer ring holds: none is lost. A command queued before
        /// the loop ran is run before the first datagram is opened.
        @Test func backlogLargerThanBufferRing() throws {
            let sink = try FrameSink()
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            var big: Int32 = 8 << 20
            try #require(setsockopt(udp, SOL_SOCKET, SO_RCVBUFFORCE, &big, socklen_t(MemoryLayout<Int32>.size)) == 0
                         || setsockopt(udp, SOL_SOCKET, SO_RCVBUF, &big, socklen_t(MemoryLayout<Int32>.size)) == 0)
            let loop = try RawLoop(socket: udp, output: sink.writeFD)
            var s = TestSession()
            let c = RawLoop.command(RX_OP_ADD_SESSION, s.id, key: s.key)
            let seq = loop.push(c)
            #expect(seq == 0)

            var addr = sockaddr_in()
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(udp, $0, &len) } }
            let tx = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(tx) }
            let n = 2 * Int(REMOLO_RX_BUFS) + 17
            let t = senderClockUs()
            for i in 0..<n {
                let d = s.seal(.motion(dx: 256, dy: 0), at: t + UInt64(i) * 50)
                let r = d.withUnsafeBytes { b in
                    withUnsafePointer(to: &addr) { a in
                        a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(tx, b.baseAddress, b.count, 0, $0, len) }
                    }
                }
                try #require(r == d.count)
            }
            loop.start()
            #expect(eventually(3) { loop.stats.datagrams == UInt64(n) }, "datagrams \(loop.stats.datagrams) of \(n)")
            #expect(loop.result(0) == 0)
            #expect(eventually(3) { loop.stats.timer_armed == 0 })
            let st = loop.stats
            #expect(st.opened == UInt64(n))
            // Whether the ring runs dry depends on the kernel: since 6.x a
            // multishot receive hands over at most 32 datagrams per round
            // of task work, and the loop recycles buffers between rounds.
            // When it does run dry, the receive must have been re-armed.
            if st.enobufs > 0 { #expect(st.recv_arms >= 2, "re-armed after -ENOBUFS") }
            sink.drain()
            #expect(sink.sum(Event.relX) == Int64(n))
            print("backlog: \(n) datagrams, ENOBUFS \(st.enobufs), arms \(st.recv_arms)")
        }

        /// The timing histograms' buckets: each holds the values from its
        /// lower bound to the next one's, at most a quarter of that bound
        /// wide past the exact part, in order, the last one open-ended.
        @Test func histogramBuckets() {
            let last = REMOLO_HIST_BUCKETS - 1
            var prev: UInt32 = 0
            for v in Array(0..<UInt64(5000)) + stride(from: UInt64(5000), to: 300_000, by: 7).map({ $0 }) {
                let b = rx_hist_bucket(v)
                #expect(b >= prev && b <= last)
                prev = b
                #expect(rx_hist_lower_us(b) <= v)
                if b < last {
                    #expect(v < rx_hist_lower_us(b + 1), "\(v) in bucket \(b)")
                    if v >= UInt64(REMOLO_HIST_LINEAR) {
                        #expect((rx_hist_lower_us(b + 1) - rx_hist_lower_us(b)) * 4 <= rx_hist_lower_us(b))
                    }
                }
            }
            #expect(rx_hist_bucket(UInt64.max) == last)
            #expect(rx_hist_lower_us(REMOLO_HIST_BUCKETS) == 1 << 17)
        }

        /// Every tick the loop handles counts its lateness; each frame that
        /// lets out motion for the first time counts its due-to-write time.
        @Test func timingHistograms() throws {
            let sink = try FrameSink()
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            let loop = try RawLoop(socket: udp, output: sink.writeFD)
            var s = TestSession()
            let c = RawLoop.command(RX_OP_ADD_SESSION, s.id, key: s.key)
            loop.start()
            let seq = loop.push(c)
            #expect(eventually(3) { loop.result(seq) != nil } && loop.result(seq) == 0)

            var addr = sockaddr_in()
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(udp, $0, &len) } }
            let tx = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(tx) }
            let n = 30
            for _ in 0..<n {
                let d = s.seal(.motion(dx: 10 * 256, dy: 0))
                _ = d.withUnsafeBytes { b in
                    withUnsafePointer(to: &addr) { a in
                        a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(tx, b.baseAddress, b.count, 0, $0, len) }
                    }
                }
                usleep(8_000)
            }
            #expect(eventually(5) { loop.stats.timer_stops >= 1 && loop.stats.timer_armed == 0 })
            let st = loop.stats
            let ticks = withUnsafeBytes(of: st.tick_late_hist) { $0.bindMemory(to: UInt64.self).reduce(0, +) }
            let dues = withUnsafeBytes(of: st.due_write_hist) { $0.bindMemory(to: UInt64.self).reduce(0, +) }
            #expect(st.opened == UInt64(n))
            #expect(ticks == st.ticks && ticks > 0)
            // At most one first-due segment per datagram, and only in frames
            // that went out.
            #expect(dues > 0 && dues <= UInt64(n) && dues <= st.frames, "due-to-write counted \(dues) of \(n)")
        }

        /// One output, always a ptrdev (uinput or an fd), initialised.
        @Test func initRefusesBadConfig() {
            let l = OpaquePointer(UnsafeMutableRawPointer.allocate(byteCount: rx_loop_size(), alignment: Int(REMOLO_RX_LOOP_ALIGN)))
            let dev = UnsafeMutablePointer<ptrdev>.allocate(capacity: 1)
            defer { UnsafeMutableRawPointer(l).deallocate(); dev.deallocate() }
            var cfg = rx_config()
            playout_config_default(&cfg.playout)
            cfg.sock = 0
            #expect(rx_loop_init(l, &cfg) == -EINVAL)       // no output
            #expect(ptrdev_init_fd(dev, -1) == -EBADF)
            cfg.dev = dev
            #expect(rx_loop_init(l, &cfg) == -EINVAL)       // a device that failed init
            #expect(ptrdev_init_fd(dev, 1) == 0)
            cfg.sock = -1
            #expect(rx_loop_init(l, &cfg) == -EINVAL)       // no socket
            cfg.sock = 0
            cfg.playout.delay_min_us = 100_000_000
            #expect(rx_loop_init(l, &cfg) == -EINVAL)       // bad playout
        }

        /// Commands beyond the ring's capacity are refused, not lost or
        /// overwritten, while the loop is not draining.
        @Test func commandRingRefusesWhenFull() throws {
            let sink = try FrameSink()
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            let loop = try RawLoop(socket: udp, output: sink.writeFD)
            var c = rx_cmd()
            c.op = UInt8(RX_OP_REMOVE_SESSION.rawValue)
            for i in 0..<Int(REMOLO_RX_CMDQ_CAP) { #expect(loop.push(c) == Int64(i)) }
            #expect(loop.push(c) == -Int64(EAGAIN))
            loop.start()
            #expect(eventually(2) { loop.result(Int64(REMOLO_RX_CMDQ_CAP) - 1) != nil })
            #expect(loop.result(Int64(REMOLO_RX_CMDQ_CAP) - 1) == -ENOENT)
            #expect(loop.push(c) == Int64(REMOLO_RX_CMDQ_CAP))
        }
    }
}
