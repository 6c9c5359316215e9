import Foundation
@testable import RemoloPlayout
@testable import RemoloDevices
@testable import RemoloDesktop
@testable import RemoloReceiver
import RemoloCore
import RemoloPlayoutCore
import Synchronization
import Testing
import RemoloTypes

/// What a test backend was given, readable from the test's thread.
final class BackendRecord: Sendable {
    private let state = Mutex<(batches: [OutputBatch], releases: Int)>(([], 0))
    var batches: [OutputBatch] { state.withLock { $0.batches } }
    var releases: Int { state.withLock { $0.releases } }
    func add(_ b: OutputBatch) { state.withLock { $0.batches.append(b) } }
    func released() { state.withLock { $0.releases += 1 } }

    var dx: Int64 { batches.reduce(0) { $0 + Int64($1.dx) } }
    var dy: Int64 { batches.reduce(0) { $0 + Int64($1.dy) } }
    var transitions: [KeyChange] { batches.flatMap(\.transitions) }
}

/// A backend that records, optionally stalls in each call, and can be told
/// to lose its peer after some batches.
final class RecordingBackend: OutputBackend {
    let name: String
    let record: BackendRecord
    let stallUs: UInt32
    let loseAfter: Int?
    private var applied = 0

    init(_ record: BackendRecord, name: String = "test", stallUs: UInt32 = 0, loseAfter: Int? = nil) {
        self.record = record
        self.name = name
        self.stallUs = stallUs
        self.loseAfter = loseAfter
    }

    func apply(_ batch: OutputBatch) throws(OutputBackendError) {
        if let n = loseAfter, applied >= n { throw OutputBackendError(.disconnected, "peer gone") }
        applied += 1
        if stallUs > 0 { usleep(stallUs) }
        record.add(batch)
    }

    func releaseAll() { record.released() }
}

extension RxSuite {
    @Suite struct OutputAdapterTests {
        typealias T = KeyChange
        static let left = Event.btnLeft, right = Event.btnRight

        /// Frames written by ptrdev's own encoder (fd mode) into a pipe,
        /// read back by the decoder.
        static func encoded(_ frames: [PointerFrame]) throws -> [UInt8] {
            var p: [Int32] = [-1, -1]
            try #require(pipe(&p) == 0)
            defer { close(p[0]) }
            do {
                let d = try PointerDevice(fileDescriptor: p[1])
                for f in frames { try d.write(f) }
                _ = d  // releases nothing: every case ends with its buttons up
            }
            close(p[1])
            var out: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(p[0], &buf, buf.count)
                if n <= 0 { break }
                out += buf[0..<n]
            }
            return out
        }

        struct DecodeCase: Sendable, CustomTestStringConvertible {
            let id: Int
            let what: String
            let frames: [PointerFrame]
            let want: [OutputBatch]
            var testDescription: String { "\(id): \(what)" }
        }

        static let decodeCases: [DecodeCase] = [
            DecodeCase(id: 1, what: "motion sums into one batch", frames: [
                PointerFrame(dx: 3, dy: -1), PointerFrame(dx: 4, dy: 2), PointerFrame(dx: -2),
            ], want: [OutputBatch(dx: 5, dy: 1)]),
            DecodeCase(id: 2, what: "a drag: press, motion, release stay in order", frames: [
                PointerFrame(dx: 1, buttons: [KeyChange(code: left, down: true)]),
                PointerFrame(dx: 5, dy: 5), PointerFrame(dx: 5, dy: 5),
                PointerFrame(buttons: [KeyChange(code: left, down: false)]),
            ], want: [OutputBatch(dx: 1, transitions: [T(code: left, down: true)]),
                      OutputBatch(dx: 10, dy: 10, transitions: [T(code: left, down: false)])]),
            DecodeCase(id: 3, what: "a click within one tick (ptrdev splits it in two SYN frames)", frames: [
                PointerFrame(dx: 2, buttons: [KeyChange(code: right, down: true), KeyChange(code: right, down: false)]),
            ], want: [OutputBatch(dx: 2, transitions: [T(code: right, down: true)]),
                      OutputBatch(transitions: [T(code: right, down: false)])]),
            DecodeCase(id: 4, what: "hi-res wheel counts, its legacy notches do not count twice", frames: [
                PointerFrame(wheel: 1, wheelHiRes: 120), PointerFrame(wheelHiRes: 30),
                PointerFrame(hwheel: -1, hwheelHiRes: -150),
            ], want: [OutputBatch(wheelHiRes: 150, hwheelHiRes: -150)]),
            DecodeCase(id: 5, what: "legacy notches alone become 120 each", frames: [
                PointerFrame(wheel: -2), PointerFrame(hwheel: 1),
            ], want: [OutputBatch(wheelHiRes: -240, hwheelHiRes: 120)]),
            DecodeCase(id: 6, what: "two buttons in one frame keep their order", frames: [
                PointerFrame(buttons: [KeyChange(code: left, down: true), KeyChange(code: right, down: true)]),
                PointerFrame(buttons: [KeyChange(code: right, down: false), KeyChange(code: left, down: false)]),
            ], want: [OutputBatch(transitions: [T(code: left, down: true), T(code: right, down: true)]),
                      OutputBatch(transitions: [T(code: right, down: false), T(code: left, down: false)])]),
        ]

        @Test(arguments: decodeCases)
        func decodesTheDrainsFrames(_ c: DecodeCase) throws {
            #expect(FrameDecoder.batches(try Self.encoded(c.frames)) == c.want)
        }

        /// Keyboard frames come on the same fd as plain EV_KEY records; the
        /// kernel's autorepeat (value 2) is left to the desktop. A record cut
        /// between two reads is put together.
        @Test func keysAndRecordsCutBetweenReads() throws {
            func rec(_ type: UInt16, _ code: UInt16, _ value: Int32) -> [UInt8] {
                var e = input_event()
                e.type = type
                e.code = code
                e.value = value
                return withUnsafeBytes(of: &e) { Array($0) }
            }
            let keyA: UInt16 = 30, shift: UInt16 = 42
            let bytes = rec(1, shift, 1) + rec(0, 0, 0) + rec(1, keyA, 1) + rec(0, 0, 0) + rec(1, keyA, 2)
                + rec(0, 0, 0) + rec(1, keyA, 0) + rec(1, shift, 0) + rec(0, 0, 0) + rec(2, 0, 7) + rec(0, 0, 0)
            let want = [OutputBatch(transitions: [T(code: shift, down: true)]),
                        OutputBatch(transitions: [T(code: keyA, down: true)]),
                        OutputBatch(transitions: [T(code: keyA, down: false), T(code: shift, down: false)]),
                        OutputBatch(dx: 7)]
            #expect(FrameDecoder.batches(bytes) == want)
            // Fed in pieces of every size, it decodes the same.
            for step in [1, 5, 23, 24, 25, 100] {
                var d = FrameDecoder()
                var got: [OutputBatch] = []
                var i = 0
                while i < bytes.count {
                    let j = min(bytes.count, i + step)
                    bytes[i..<j].withUnsafeBytes { d.feed($0, into: &got) }
                    i = j
                }
                d.flush(into: &got)
                #expect(got == want, "pieces of \(step) bytes")
            }
        }

        /// The real loop writing into an adapter: motion and a drag arrive
        /// whole and in order; stopping the loop finishes the adapter, which
        /// releases what the backend holds.
        @Test func loopFeedsTheAdapter() throws {
            let record = BackendRecord()
            let adapter = try OutputAdapter(make: { RecordingBackend(record) })
            #expect(adapter.stats.pipeBytes >= Int(REMOLO_OUTPUT_PIPE_BYTES) || adapter.stats.pipeBytes >= 65536)
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            let loop = try ReceiveLoop(socket: udp, output: .adapter(adapter))
            let rig = LoopSender(port: loop.port)
            var s = TestSession()
            try loop.addSession(s.id, key: s.key)
            rig.send(s.seal(.button(code: Self.left, down: true)))
            for _ in 0..<20 {
                rig.send(s.seal(.motion(dx: 10 * 256, dy: -5 * 256)))
                usleep(8_333)
            }
            rig.send(s.seal(.button(code: Self.left, down: false)))
            #expect(eventually(3) { record.dx == 200 && record.transitions.count == 2 }, "dx \(record.dx)")
            loop.stop()
            #expect(record.dx == 200 && record.dy == -100)
            #expect(record.transitions == [T(code: Self.left, down: true), T(code: Self.left, down: false)])
            // The press ends the first batch (with at most its own tick's
            // motion before it), the release the last batch that has a
            // transition (the last packet's motion may still play after it:
            // the release was sent right behind it).
            let b = record.batches
            #expect(b.first?.transitions.first?.down == true && (b.first?.dx ?? 99) <= 10, "\(b.prefix(2))")
            #expect(b.last(where: { !$0.transitions.isEmpty })?.transitions.last?.down == false, "\(b.suffix(3))")
            #expect(record.releases == 1)
            #expect(loop.stats.writeErrors == 0)
        }

        /// A backend that takes 200 ms per call: the pipe holds what the
        /// loop writes meanwhile (no write fails), and everything arrives.
        @Test func stalledBackendCostsTheLoopNothing() throws {
            let record = BackendRecord()
            let adapter = try OutputAdapter(make: { RecordingBackend(record, stallUs: 200_000) })
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            let loop = try ReceiveLoop(socket: udp, output: .adapter(adapter))
            let rig = LoopSender(port: loop.port)
            var s = TestSession()
            try loop.addSession(s.id, key: s.key)
            for _ in 0..<120 {
                rig.send(s.seal(.motion(dx: 4 * 256, dy: 1 * 256)))
                usleep(8_333)
            }
            #expect(eventually(5) { record.dx == 480 }, "dx \(record.dx)")
            loop.stop()
            #expect(record.dx == 480 && record.dy == 120)
            #expect(loop.stats.writeErrors == 0, "writes failed: errno \(loop.stats.lastWriteErrno)")
            #expect(loop.stats.frames > 100)
            // Each call took 200 ms, so the frames of a call's time came as one.
            #expect(record.batches.count < 20, "\(record.batches.count) batches")
        }

        /// The backend's peer goes away: the fall-back takes the following
        /// batches, nothing is replayed, and the log says so once.
        @Test func lostBackendFallsBack() throws {
            let first = BackendRecord(), second = BackendRecord()
            let lines = Mutex<[String]>([])
            let adapter = try OutputAdapter(make: { RecordingBackend(first, name: "x11", loseAfter: 2) },
                                            fallback: { RecordingBackend(second, name: "uinput") },
                                            onEvent: { l in lines.withLock { $0.append(l) } })
            let d = try PointerDevice(fileDescriptor: adapter.writeFD)
            for i in 1...5 {
                try d.write(PointerFrame(dx: Int32(i), buttons: [KeyChange(code: Self.left, down: i % 2 == 1)]))
                #expect(eventually(2) { first.batches.count + second.batches.count == min(i, 2) + max(0, i - 3) })
            }
            adapter.finish()
            #expect(first.batches.map(\.dx) == [1, 2])
            // Batch 3 failed on the lost backend and is not replayed.
            #expect(second.batches.map(\.dx) == [4, 5])
            #expect(first.releases == 1 && second.releases == 1)
            #expect(adapter.stats.backend == "uinput" && adapter.stats.fallbacks == 1)
            let l = lines.withLock { $0 }
            #expect(l.count == 1 && l[0].contains("x11 output was lost") && l[0].contains("continuing on uinput"), "\(l)")
        }

        /// No fall-back: delivery stops and says how to go on.
        @Test func lostBackendWithoutFallbackStops() throws {
            let first = BackendRecord()
            let stopped = Mutex<[String]>([])
            let adapter = try OutputAdapter(make: { RecordingBackend(first, name: "x11", loseAfter: 1) },
                                            onStop: { l in stopped.withLock { $0.append(l) } })
            let d = try PointerDevice(fileDescriptor: adapter.writeFD)
            for i in 1...3 {
                try d.write(PointerFrame(dx: Int32(i)))
                usleep(20_000)
            }
            #expect(eventually(2) { adapter.stats.droppedBatches >= 1 })
            adapter.finish()
            #expect(first.batches.map(\.dx) == [1])
            let s = stopped.withLock { $0 }
            #expect(s.count == 1 && s[0].contains("--output"), "\(s)")
            #expect(adapter.stats.stopped != nil)
        }

        /// A backend that cannot start fails the adapter's init with its own
        /// message.
        @Test func backendThatCannotStartSaysWhy() {
            #expect(throws: OutputBackendError(.failed, "no X")) {
                _ = try OutputAdapter(make: { () throws(OutputBackendError) -> any OutputBackend in
                    throw OutputBackendError(.failed, "no X")
                })
            }
        }

        /// An adapter whose backend cannot start closes each of its fds
        /// once. A second close of a number the process has handed out again
        /// closes another part's fd under it (a receiver's socket, a test's
        /// pipe): here a thread keeps opening sockets while adapters fail,
        /// and every socket must still be its own when it looks.
        @Test func backendThatCannotStartClosesEachFdOnce() {
            let stop = Mutex(false), lost = Mutex(0), checks = Mutex(0)
            let done = DispatchSemaphore(value: 0)
            let victim = Thread {
                while !stop.withLock({ $0 }) {
                    let s = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                    guard s >= 0 else { continue }
                    var mine = true
                    for _ in 0..<20 {
                        var type: Int32 = 0
                        var len = socklen_t(MemoryLayout<Int32>.size)
                        if getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != Int32(SOCK_DGRAM.rawValue) {
                            mine = false
                            break
                        }
                    }
                    checks.withLock { $0 += 1 }
                    // Not ours any more: closing it would close another's.
                    if mine { close(s) } else { lost.withLock { $0 += 1 } }
                }
                done.signal()
            }
            victim.start()
            for _ in 0..<300 {
                _ = try? OutputAdapter(make: { () throws(OutputBackendError) -> any OutputBackend in
                    throw OutputBackendError(.failed, "no X")
                })
            }
            stop.withLock { $0 = true }
            done.wait()
            #expect(checks.withLock { $0 } > 0)
            #expect(lost.withLock { $0 } == 0, "sockets closed under their owner: \(lost.withLock { $0 }) of \(checks.withLock { $0 })")
        }
    }
}

/// Sends datagrams to a loop on 127.0.0.1.
final class LoopSender {
    let fd: Int32
    var addr = sockaddr_in()

    init(port: UInt16) {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &addr) { a in
                a.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }
}
