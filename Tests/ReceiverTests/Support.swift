import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import RemoloCore
import RemoloPlayoutCore
import Testing

/// Every receive-loop test runs alone: they measure timers and frames on a
/// shared 2-core machine.
@Suite(.serialized) enum RxSuite {}

func nowSeconds() -> Double { Double(senderClockUs()) / 1e6 }

/// Polls `condition` until it holds or `timeout` seconds pass.
@discardableResult
func eventually(_ timeout: Double = 3, _ condition: () -> Bool) -> Bool {
    let deadline = nowSeconds() + timeout
    while nowSeconds() < deadline {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}

/// One evdev event as the loop encodes it (struct input_event, 24 bytes on
/// LP64: timeval, type, code, value).
struct Event: Equatable, CustomStringConvertible {
    var type: UInt16
    var code: UInt16
    var value: Int32

    static let evSyn: UInt16 = 0, evKey: UInt16 = 1, evRel: UInt16 = 2
    static let relX: UInt16 = 0, relY: UInt16 = 1
    static let btnLeft: UInt16 = 0x110, btnRight: UInt16 = 0x111

    var description: String { "(\(type),\(code),\(value))" }
}

/// The loop's output through a SOCK_SEQPACKET pair: one message per write(),
/// so frame boundaries survive and "one write per tick" can be checked.
final class FrameSink {
    let readFD: Int32
    let writeFD: Int32
    private(set) var frames: [[Event]] = []

    init() throws {
        var fds: [Int32] = [-1, -1]
        let r = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        try #require(r == 0, "socketpair: \(String(cString: strerror(errno)))")
        readFD = fds[0]
        writeFD = fds[1]
        // Room for a few seconds of 480 Hz frames without a reader.
        var size: Int32 = 4 << 20
        _ = setsockopt(writeFD, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(readFD, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let fl = fcntl(readFD, F_GETFL)
        _ = fcntl(readFD, F_SETFL, fl | O_NONBLOCK)
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    /// Reads every frame written so far.
    @discardableResult
    func drain() -> [[Event]] {
        var buf = [UInt8](repeating: 0, count: 4096)
        var got: [[Event]] = []
        while true {
            let n = buf.withUnsafeMutableBytes { recv(readFD, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            var frame: [Event] = []
            buf.withUnsafeBytes { raw in
                for off in stride(from: 0, to: n, by: 24) {
                    frame.append(Event(type: raw.load(fromByteOffset: off + 16, as: UInt16.self),
                                       code: raw.load(fromByteOffset: off + 18, as: UInt16.self),
                                       value: raw.load(fromByteOffset: off + 20, as: Int32.self)))
                }
            }
            #expect(n % 24 == 0, "a write of \(n) bytes is not whole events")
            got.append(frame)
        }
        frames += got
        return got
    }

    var events: [Event] { frames.flatMap { $0 } }

    func sum(_ code: UInt16) -> Int64 {
        events.filter { $0.type == Event.evRel && $0.code == code }.reduce(0) { $0 + Int64($1.value) }
    }

    func keys() -> [Event] { events.filter { $0.type == Event.evKey } }

    /// The keyboard's frames: EV_KEY events with KEY_* codes (below the
    /// first BTN_*), written by the keyboard device on the same descriptor
    /// as the pointer's frames, each its own write.
    var keyboardFrames: [[Event]] { frames.filter { $0.contains { $0.isKeyboardKey } } }
    /// The keyboard's key changes in order.
    var keyboardKeys: [Event] { events.filter(\.isKeyboardKey) }
}

extension Event {
    /// A keyboard key (KEY_*), as opposed to a mouse button (BTN_*, 0x100 up).
    var isKeyboardKey: Bool { type == Event.evKey && code < 0x100 }
    static func key(_ code: UInt16, _ down: Bool) -> Event { Event(type: evKey, code: code, value: down ? 1 : 0) }
}

/// A receive loop on 127.0.0.1 writing into a FrameSink.
final class LoopRig {
    let sink: FrameSink
    let udp: Int32
    let loop: ReceiveLoop
    let tx: Int32
    var addr = sockaddr_in()

    init(playout: PlayoutConfig = .default, recordArrivals: ArrivalRecorder? = nil, keyboard: Bool = true) throws {
        sink = try FrameSink()
        udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
        loop = try ReceiveLoop(socket: udp, output: .fileDescriptor(sink.writeFD, keyboard: keyboard), playout: playout,
                               recordArrivals: recordArrivals)
        tx = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = loop.port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    }

    deinit {
        loop.stop()
        close(tx)
        close(udp)
    }

    func send(_ bytes: [UInt8]) {
        let n = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &addr) { a in
                a.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(tx, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        #expect(n == bytes.count, "sendto: \(String(cString: strerror(errno)))")
    }

    var stats: ReceiverStats { loop.stats }

    /// Waits until the loop has taken `n` datagrams off the socket.
    func waitDatagrams(_ n: UInt64, timeout: Double = 3) {
        #expect(eventually(timeout) { stats.datagrams >= n }, "datagrams: \(stats.datagrams) of \(n)")
    }

    /// Waits until the drain timer has stopped (every session quiet).
    func waitTimerStopped(timeout: Double = 3) -> Bool {
        eventually(timeout) { !stats.timerRunning }
    }
}

/// A session's key, id and sealer (not copyable: a copy would reuse
/// counters, that is nonces).
struct TestSession: ~Copyable {
    let id: SessionID
    let key: DatagramKey
    var sealer: DatagramSealer

    init() {
        id = .random()
        key = .random()
        sealer = DatagramSealer(key: key, session: id)
    }

    mutating func seal(_ p: DatagramPayload, at t: UInt64 = senderClockUs()) -> [UInt8] {
        try! sealer.seal(Datagram(p, senderTimeUs: t))
    }
}
