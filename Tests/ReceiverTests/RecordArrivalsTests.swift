import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloLab
import RemoloTrace
@testable import RemoloSession
import RemoloSystem
import RemoloCore
import RemoloPlayoutCore
import Testing

/// A LoopRig whose loop records its arrivals into a trace file.
private final class RecordRig {
    let rig: LoopRig
    let recorder: ArrivalRecorder
    let path: String
    var loop: ReceiveLoop { rig.loop }
    var stats: ReceiverStats { rig.stats }

    init(pipeBytes: Int32 = ArrivalRecorder.pipeBytes, paused: Bool = false) throws {
        path = NSTemporaryDirectory() + "remolo-arrivals-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).csv"
        recorder = try ArrivalRecorder(path: path, pipeBytes: pipeBytes, paused: paused)
        rig = try LoopRig(recordArrivals: recorder)
    }

    deinit { unlink(path) }

    func send(_ bytes: [UInt8]) { rig.send(bytes) }
    func waitDatagrams(_ n: UInt64, timeout: Double = 3) { rig.waitDatagrams(n, timeout: timeout) }

    /// Stops the loop (which finishes the file) and reads the file back
    /// with the lab's reader.
    func stopAndRead() throws -> (Trace, String) {
        loop.stop()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return (try Trace.read(from: path), text)
    }
}

/// What the sender sent, as the trace should hold it.
private struct Sent {
    var record: TraceRecord
    var payload: DatagramPayload
}

extension RxSuite {
    @Suite struct RecordArrivalsTests {
        /// Every accepted datagram is one row, in order, with its kind,
        /// deltas and send time as the lab defines them; hostile datagrams
        /// leave no row; arrivals are the receiver's clock, non-decreasing
        /// and just after the real send times (loopback, one clock).
        @Test func recordsOneRowPerAcceptedDatagram() throws {
            let rig = try RecordRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let payloads: [DatagramPayload] = [
                .motion(dx: 300, dy: -77),              // 1.171875 px, -0.30078125 px
                .motion(dx: -2560, dy: 1),
                .scroll(vertical: 120 * 256, horizontal: -128),
                .button(code: 0x110, down: true),
                .motion(dx: 5, dy: 0),
                .button(code: 0x110, down: false),
                .button(code: 0x111, down: true),
                .button(code: 0x111, down: false),
                .button(code: 0x117, down: true),       // BTN_TASK, button 8
                .button(code: 0x117, down: false),
                .heartbeat,
                .motion(dx: 0, dy: 65_536),
            ]
            var sent: [Sent] = []
            var total: UInt64 = 0
            for (i, p) in payloads.enumerated() {
                let t = senderClockUs()
                rig.send(s.seal(p, at: t))
                total += 1
                let r: TraceRecord
                switch p {
                case .motion(let dx, let dy): r = TraceRecord(sendUs: t, arriveUs: nil, kind: .motion, dx: dx, dy: dy)
                case .scroll(let v, let h): r = TraceRecord(sendUs: t, arriveUs: nil, kind: .scroll, dx: h, dy: v)
                case .button(let code, let down):
                    r = TraceRecord(sendUs: t, arriveUs: nil, kind: .button, dx: Int32(code) - 0x110 + 1, dy: down ? 1 : 0)
                case .heartbeat: r = TraceRecord(sendUs: t, arriveUs: nil, kind: .heartbeat)
                case .key: Issue.record("a key is never a datagram"); continue
                }
                sent.append(Sent(record: r, payload: p))
                if i == 3 {
                    // Hostile ones in between open nothing and leave no row.
                    var forged = s.seal(.motion(dx: 25_600, dy: 0))
                    forged[40] ^= 1
                    rig.send(forged)
                    var other = TestSession()
                    rig.send(other.seal(.motion(dx: 25_600, dy: 0)))
                    total += 2
                }
                usleep(2_000)
            }
            // A button a trace cannot name (BTN_TRIGGER): opened, recorded
            // by the loop, left out of the trace and counted.
            rig.send(s.seal(.button(code: 0x120, down: true)))
            total += 1
            rig.waitDatagrams(total)
            #expect(eventually { rig.stats.recordedArrivals == UInt64(payloads.count + 1) })
            let (trace, text) = try rig.stopAndRead()
            let st = rig.stats
            #expect(st.opened == UInt64(payloads.count + 1))
            #expect(st.unrecordedArrivals == 0 && st.recordErrors == 0)

            #expect(trace.records.count == payloads.count)
            #expect(rig.recorder.rows == payloads.count)
            for (k, (got, want)) in zip(trace.records, sent).enumerated() {
                #expect(got.kind == want.record.kind, "row \(k)")
                #expect(got.dx == want.record.dx && got.dy == want.record.dy, "row \(k): \(got) for \(want.payload)")
                #expect(got.sendUs == want.record.sendUs, "row \(k)")
                // One clock on both ends: transit is small and positive.
                let a = try #require(got.arriveUs, "row \(k) has no arrival")
                #expect(a >= got.sendUs && a - got.sendUs < 200_000, "row \(k): transit \(Int64(a) - Int64(got.sendUs)) us")
            }
            let arrivals = trace.records.compactMap(\.arriveUs)
            #expect(arrivals == arrivals.sorted(), "arrivals go forwards")
            // The button mapping is the lab's own: back to the wire's codes.
            #expect(trace.records[3].packet == .button(0x110, down: true, at: sent[3].record.sendUs))
            #expect(trace.records[8].packet == .button(0x117, down: true, at: sent[8].record.sendUs))
            #expect(trace.records[2].packet == .scroll(vertical: 120 * 256, horizontal: -128, at: sent[2].record.sendUs))
            // The file says what it cannot hold, and how it ended.
            #expect(text.contains("# lost datagrams are not listed"))
            #expect(text.contains("# one session per file"))
            #expect(text.contains("# end: rows=\(payloads.count) other_sessions=0 not_recorded=0 left_out=1"))
            #expect(trace.clock == nil, "a recording has no truth: the clock map is estimated")
            #expect(rig.recorder.summary.contains("recorded \(payloads.count) arrivals"))
        }

        /// The whole receiver with the Swift sender on loopback: the trace
        /// holds every motion datagram and heartbeat the sender sent, with
        /// its deltas (buttons travel on the control channel, not as
        /// datagrams, and are not arrivals).
        @Test func receiverRecordsTheSendersDatagrams() throws {
            let p = try ReceiverTests.Pair()
            let sink = try FrameSink()
            let path = NSTemporaryDirectory() + "remolo-arrivals-rx-\(getpid()).csv"
            defer { unlink(path) }
            let recorder = try ArrivalRecorder(path: path)
            let rx = try p.receiver(into: sink, recordArrivals: recorder)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let tx = try p.connect(to: rx)
            var g = SyntheticGesture(.circle, size: 150)
            try tx.run(&g, seconds: 0.5)
            let sent = tx.stats
            tx.close()
            #expect(eventually(3) { rx.stats.sessionsRemoved == 1 })
            rx.stop()
            let trace = try Trace.read(from: path)
            let moves = trace.records.filter { $0.kind == .motion }
            #expect(UInt64(moves.count) == sent.motionDatagrams)
            #expect(UInt64(trace.records.filter { $0.kind == .heartbeat }.count) == sent.heartbeats)
            #expect(UInt64(trace.records.count) == rx.stats.opened)
            #expect(moves.reduce(Int64(0)) { $0 + Int64($1.dx) } == sent.totalDX)
            #expect(moves.reduce(Int64(0)) { $0 + Int64($1.dy) } == sent.totalDY)
            #expect(recorder.rows == trace.records.count)
        }

        /// One sender clock per file: a second session's datagrams are
        /// counted, not mixed in.
        @Test func onlyTheFirstSessionIsRecorded() throws {
            let rig = try RecordRig()
            var a = TestSession(), b = TestSession()
            try rig.loop.addSession(a.id, key: a.key)
            try rig.loop.addSession(b.id, key: b.key)
            // b speaks first: the first session is the first one heard.
            rig.send(b.seal(.heartbeat))
            for i in 0..<10 {
                rig.send(b.seal(.motion(dx: 256, dy: 0)))
                rig.send(a.seal(.motion(dx: Int32(i), dy: 0)))
                usleep(1_000)
            }
            rig.waitDatagrams(21)
            #expect(eventually { rig.stats.recordedArrivals == 21 })
            let (trace, text) = try rig.stopAndRead()
            #expect(trace.records.count == 11)
            #expect(trace.records.first?.kind == .heartbeat)
            #expect(trace.records.dropFirst().allSatisfy { $0.kind == .motion && $0.dx == 256 })
            #expect(text.contains("other_sessions=10"))
        }

        /// A recording replays through the lab, the code behind
        /// `remolo simulate --trace`: every row counted, every policy scored.
        @Test func recordingReplaysThroughTheLab() throws {
            let rig = try RecordRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let n = 150
            for i in 0..<n {
                // A circle at 120 Hz, a click in the middle.
                let phase = Double(i) * 0.08
                if i == n / 2 { rig.send(s.seal(.button(code: 0x110, down: true))) }
                if i == n / 2 + 10 { rig.send(s.seal(.button(code: 0x110, down: false))) }
                rig.send(s.seal(.motion(dx: Int32((cos(phase) * 1500).rounded()), dy: Int32((sin(phase) * 1500).rounded()))))
                usleep(8_333)
            }
            rig.send(s.seal(.heartbeat))
            let total = UInt64(n + 3)
            rig.waitDatagrams(total)
            #expect(eventually { rig.stats.recordedArrivals == total })
            let (trace, _) = try rig.stopAndRead()
            #expect(trace.records.count == Int(total))
            #expect(trace.records.filter(\.isMovement).count == n)
            // The sender's frame comes out of the rows: about 8.3 ms.
            #expect(abs(trace.effectiveFrameUs - 8_333) < 2_000, "frame \(trace.effectiveFrameUs) us")

            let policies = [Policy.arrival, .seed, .default]
            let rows = Lab.replay(trace: trace, name: "recorded", policies: policies, displayHz: 120)
            #expect(rows.count == policies.count)
            for r in rows {
                let sc = r.scores
                #expect(sc.latencyMsP50.isFinite && sc.latencyMsP95.isFinite && sc.jitterRatio.isFinite, "\(r.policy)")
                #expect(sc.lostPct == 0, "a recording lists no lost datagram")
                #expect(sc.latencyMsP95 >= 0 && sc.latencyMsP95 < 100, "\(r.policy): p95 \(sc.latencyMsP95) ms")
            }
            let c = LabCase(trace: trace, displayHz: 120)
            var acc = ScoreAccumulator()
            c.score(c.run(.default), into: &acc)
            #expect(acc.sent == Int(total))
            #expect(acc.arrived == n)
            #expect(acc.lost == 0)
        }

        /// Recording off: no record counter moves, and the loop's other
        /// counters read as with recording on for the same input.
        @Test func recordingOffCostsNothingVisible() throws {
            func run(recording: Bool) throws -> ReceiverStats {
                var s = TestSession()
                let n = 20
                if recording {
                    let rig = try RecordRig()
                    try rig.loop.addSession(s.id, key: s.key)
                    for _ in 0..<n { rig.send(s.seal(.motion(dx: 512, dy: -256))); usleep(1_000) }
                    rig.waitDatagrams(UInt64(n))
                    _ = try rig.stopAndRead()
                    return rig.stats
                }
                let rig = try LoopRig()
                try rig.loop.addSession(s.id, key: s.key)
                for _ in 0..<n { rig.send(s.seal(.motion(dx: 512, dy: -256))); usleep(1_000) }
                rig.waitDatagrams(UInt64(n))
                rig.loop.stop()
                return rig.stats
            }
            let off = try run(recording: false)
            let on = try run(recording: true)
            #expect(off.recordedArrivals == 0 && off.unrecordedArrivals == 0 && off.recordErrors == 0)
            #expect(!off.summary.contains("recorded"))
            #expect(on.recordedArrivals == 20 && on.unrecordedArrivals == 0)
            #expect(off.datagrams == on.datagrams && off.opened == on.opened && off.dropped == on.dropped)
            #expect(off.totalDX == on.totalDX && off.totalDY == on.totalDY)
            #expect(off.totalDX == 40 && off.totalDY == -20)
            #expect(off.writeErrors == 0 && on.writeErrors == 0)
        }

        /// A reader that falls behind fills the pipe: the loop counts the
        /// records it cannot write and goes on playing; the file holds what
        /// fit, and says how many did not.
        @Test func fullPipeCountsDropsInsteadOfBlocking() throws {
            // One page: 128 records; the drain thread does not read yet.
            let rig = try RecordRig(pipeBytes: 4096, paused: true)
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let n = 400
            for _ in 0..<n {
                rig.send(s.seal(.motion(dx: 256, dy: 0)))
                usleep(200)
            }
            rig.waitDatagrams(UInt64(n))
            #expect(eventually { rig.stats.recordedArrivals + rig.stats.unrecordedArrivals == UInt64(n) })
            var st = rig.stats
            #expect(st.opened == UInt64(n))
            #expect(st.unrecordedArrivals > 0, "the pipe never filled")
            #expect(st.recordedArrivals > 0 && st.recordedArrivals < UInt64(n))
            #expect(st.recordErrors == 0)
            // Still live: commands run and every pixel plays out.
            var other = TestSession()
            try rig.loop.addSession(other.id, key: other.key)
            rig.send(other.seal(.motion(dx: 2560, dy: 0)))
            rig.waitDatagrams(UInt64(n + 1))
            #expect(eventually { rig.stats.totalDX == Int64(n) + 10 }, "output \(rig.stats.totalDX)")
            st = rig.stats
            let recorded = Int(st.recordedArrivals)
            rig.recorder.resumeDrain()
            let (trace, text) = try rig.stopAndRead()
            // The other session's record, if it fit, is counted, not a row.
            let mine = trace.records.count
            #expect(mine == recorded || mine == recorded - 1, "rows \(mine), records \(recorded)")
            #expect(text.contains("not_recorded=\(rig.stats.unrecordedArrivals)"))
            #expect(rig.recorder.summary.contains("lost: the recording fell behind"))
        }

        /// The C side takes only a pipe's non-blocking write end: anything
        /// else could stall the loop or split records.
        @Test func loopRefusesARecordFdThatCouldBlock() throws {
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            let sink = try FrameSink()
            var fds: [Int32] = [-1, -1]
            try #require(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            func initWith(_ fd: Int32) -> Int32 {
                do { _ = try RawLoop(socket: udp, output: sink.writeFD, recordFD: fd); return 0 }
                catch let e as SystemError { return -e.errno }
                catch { return Int32.min }
            }
            #expect(initWith(fds[1]) == -EINVAL, "a blocking pipe")
            _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
            #expect(initWith(fds[0]) == -EINVAL, "a read end")
            _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
            #expect(initWith(sink.writeFD) == -EINVAL, "a socket, not a pipe")
            #expect(initWith(-2) == -EINVAL)
            #expect(initWith(1_000_000) == -EBADF)
            #expect(initWith(fds[1]) == 0)
            #expect(initWith(-1) == 0)
            #expect(initWith(0) == 0, "a zeroed config records nothing")
        }

        /// Creating the file fails with what to do about it.
        @Test func unwritablePathSaysHowToFix() {
            do {
                _ = try ArrivalRecorder(path: "/nonexistent-remolo-dir/arrivals.csv")
                Issue.record("created a file in a missing directory")
            } catch {
                #expect("\(error)".contains("cannot create the trace file '/nonexistent-remolo-dir/arrivals.csv'"))
                #expect("\(error)".contains("Fix: create its directory first"))
            }
            do {
                _ = try ArrivalRecorder(path: NSTemporaryDirectory())
                Issue.record("created a file over a directory")
            } catch {
                #expect("\(error)".contains("Fix: that is a directory"))
            }
        }

        /// The streaming writer writes exactly what `Trace.csv()` does.
        @Test func streamingWriterMatchesCsv() throws {
            let records = [
                TraceRecord(sendUs: 10, arriveUs: 2_000, kind: .motion, dx: 300, dy: -77),
                TraceRecord(sendUs: 20, arriveUs: nil, kind: .scroll, dx: -128, dy: 30_720),
                TraceRecord(sendUs: 30, arriveUs: 2_100, kind: .button, dx: 2, dy: 1),
                TraceRecord(sendUs: 40, arriveUs: 2_200, kind: .heartbeat),
            ]
            let clock = TraceClock(segments: [.init(fromRow: 0, offsetUs: 1_990, ppm: 15)], dminUs: 500)
            let t = Trace(records: records, clock: clock, frameUs: 8_333, notes: ["a note"])
            let path = NSTemporaryDirectory() + "remolo-stream-\(getpid()).csv"
            defer { unlink(path) }
            let w = try TraceWriter(path: path, notes: t.notes, clock: t.clock, frameUs: t.frameUs)
            for r in records { try w.append(r) }
            try w.close()
            try w.close()
            #expect(try String(contentsOfFile: path, encoding: .utf8) == t.csv())
            #expect(try Trace.read(from: path) == t)
        }
    }
}
