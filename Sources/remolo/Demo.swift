// `remolo demo`: the product end to end on one machine. A real receiver and
// a synthetic sender over loopback sockets, paired with a real code and
// sealed with real keys, the datagrams passing through the lab's relay so
// that they arrive as over a chosen Wi-Fi scenario. The receiver records
// what arrived; the lab then scores this very run against on-arrival
// playout of the same arrivals.

import Foundation
import RemoloPlayout
import RemoloDevices
import RemoloKeymap
import RemoloReceiver
import RemoloSender
import RemoloLab
import RemoloTrace
import RemoloSession
import RemoloSystem
import Synchronization
internal import RemoloCore
internal import RemoloPlayoutCore
import RemoloTypes

public struct DemoOptions: Sendable {
    public var scenario: Scenario = .s2
    public var seconds: Double = 10
    public var seed: UInt64 = 1
    /// Where the cursor-speed plot goes; nil: none.
    public var svgPath: String? = "remolo-demo.svg"
    /// Try a real uinput pointer first (a recording sink when none can be made).
    public var uinput = true

    public init() {}
}

/// What the demo saw, once a second while it runs.
public struct DemoStatus: Sendable {
    public var seconds: Double
    public var delayMs: Double
    public var latePct: Double
    public var datagramsPerSecond: Double
}

public struct DemoReport: Sendable {
    /// "uinput pointer /dev/input/eventN" or "recording sink FILE".
    public var output: String
    public var sent: SenderStats
    public var relay: UDPRelay.Stats
    public var received: ReceiverStats
    /// The receiver's playout, replayed by the lab on the recorded
    /// arrivals, and on-arrival playout of the same arrivals.
    public var rows: [LabRow]
    public var recordedRows: Int
    /// What did not add up; empty when the run worked end to end.
    public var problems: [String]
    public var svgPath: String?
    /// The line the sender typed, and what the receiver's keyboard typed:
    /// its key events read back through the same layout.
    public var typed: String
    public var arrived: String
    public var keyEvents: Int
    /// "keyboard /dev/input/eventN" or "recording sink".
    public var keyboard: String
}

public enum Demo {
    /// What the demo types once the gesture is done (layout us).
    public static let line = "Hello from Remolo! 123 @#"

    /// Runs the demo; `status` is called about four times a second.
    public static func run(_ o: DemoOptions, status: (DemoStatus) -> Void = { _ in }) throws -> DemoReport {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-demo-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let rxDir = ConfigDirectory(path: root + "/receiver"), txDir = ConfigDirectory(path: root + "/sender")
        let rxID = try Identity.loadOrCreate(in: rxDir), txID = try Identity.loadOrCreate(in: txDir)
        let trust = try ReceiverTrust(identity: rxID, directory: rxDir)
        let recorder = try ArrivalRecorder(path: root + "/arrivals.csv")

        // Typed text goes through the us layout, so that what the keyboard
        // typed can be read back the same way on any machine.
        let keymap = try Keymap(.us)
        // A real pointer when the kernel gives one; else the same frames into a file.
        var rx: Receiver?
        var output = ""
        if o.uinput {
            do {
                let r = try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .uinput(name: "Remolo demo"),
                                     recordArrivals: recorder, keyboard: ReceiverKeyboard(keymap: keymap))
                output = "uinput pointer \(r.loop.devnode ?? "?")"
                rx = r
            } catch is PointerDeviceError {
                // No /dev/uinput here: fall through to the recording sink.
            }
        }
        let sinkPath = root + "/frames.bin"
        var sinkFD: Int32 = -1
        if rx == nil {
            sinkFD = open(sinkPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard sinkFD >= 0 else { throw SystemError.current("open \(sinkPath)") }
            rx = try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .fileDescriptor(sinkFD),
                              recordArrivals: recorder, keyboard: ReceiverKeyboard(keymap: keymap))
            output = "recording sink (no uinput device could be made here)"
        }
        guard let receiver = rx else { throw LabError("the receiver did not start") }
        defer { if sinkFD >= 0 { close(sinkFD) } }

        let relay = try UDPRelay(scenario: o.scenario, listen: "127.0.0.1:0", to: "127.0.0.1:\(receiver.port)", seed: o.seed)
        let relayDone = DispatchSemaphore(value: 0)
        let relayThread = Thread { relay.run(); relayDone.signal() }
        relayThread.name = "remolo-relay"
        relayThread.start()

        // Real pairing: the receiver's code, the sender's XXpsk3 handshake.
        let code = try trust.pairing.issue()
        let tx = try Sender.pair(host: "127.0.0.1", port: receiver.port, identity: txID, code: code,
                                 directory: txDir, label: "demo", datagramsTo: ("127.0.0.1", relay.listenPort),
                                 keyboard: true)
        // The keyboard device's own node, read from before the line is typed.
        let kbdNode = receiver.loop.keyboardDevnode
        let kbdFD = kbdNode.map { open($0, O_RDONLY | O_NONBLOCK | O_CLOEXEC) } ?? -1
        defer { if kbdFD >= 0 { close(kbdFD) } }
        let sendError = Mutex<String?>(nil)
        let sent = Mutex(SenderStats())
        let sending = DispatchSemaphore(value: 0)
        let seconds = o.seconds
        nonisolated(unsafe) let sender = tx
        let t = Thread {
            var g = SyntheticGesture(.circle, size: 150)
            do {
                try sender.run(&g, seconds: seconds)
                if !(try sender.type(Demo.line, at: senderClockUs())) {
                    sendError.withLock { $0 = "the receiver did not take keys: \(sender.receiverHello?.keyboard.description ?? "no hello")" }
                }
            } catch { sendError.withLock { $0 = "\(error)" } }
            sent.withLock { $0 = sender.stats }
            sending.signal()
        }
        t.name = "remolo-demo-sender"
        t.start()
        let t0 = MonotonicClock.seconds()
        var last = (t: t0, opened: UInt64(0))
        while sending.wait(timeout: .now() + 0.25) == .timedOut {
            let s = receiver.stats
            let now = MonotonicClock.seconds()
            let rate = Double(s.opened - last.opened) / max(0.001, now - last.t)
            last = (now, s.opened)
            status(DemoStatus(seconds: now - t0, delayMs: Double(s.delayUs) / 1000,
                              latePct: s.opened > 0 ? 100 * Double(s.latePackets) / Double(s.opened) : 0,
                              datagramsPerSecond: rate))
        }
        // Let the relay deliver what it still holds (a scenario's stall is
        // at most a few hundred ms), then end the session.
        usleep(1_000_000)
        tx.close()
        relay.stop()
        relayDone.wait()
        usleep(100_000)
        receiver.stop()

        let trace = try Trace.read(from: recorder.path)
        let rows = Lab.replay(trace: trace, name: "demo \(o.scenario.rawValue)", policies: [.default, .arrival], displayHz: 120)
        var svg: String?
        if let path = o.svgPath {
            let title = "remolo demo: \(o.scenario.rawValue) \(o.scenario.title), this run's arrivals"
            try LabSVG.render(trace: trace, title: title, policies: [.default, .arrival], displayHz: 120)
                .write(toFile: path, atomically: true, encoding: .utf8)
            svg = path
        }

        // End to end: everything sent went through the relay, everything the
        // relay passed on opened, every opened datagram was recorded, and
        // the pointer moved by exactly what arrived.
        let st = receiver.stats, rs = relay.stats, s = sent.withLock { $0 }
        var problems: [String] = []
        // What the keyboard typed: its key events, from the device's node or
        // from the sink (keyboard frames share it), read back through us.
        let keys = kbdFD >= 0 ? Self.keyEvents(fd: kbdFD) : (try? Self.keyEvents(file: sinkPath)) ?? []
        let arrived = keymap.text(typedBy: keys)
        if arrived != Demo.line {
            problems.append("typed \(Demo.line.debugDescription) but the keyboard typed \(arrived.debugDescription) (\(keys.count) key events)")
        }
        if let e = sendError.withLock({ $0 }) { problems.append("the sender failed: \(e)") }
        let datagrams = Int(s.motionDatagrams + s.heartbeats)
        if datagrams == 0 { problems.append("nothing was sent") }
        if rs.received != datagrams { problems.append("the relay got \(rs.received) of \(datagrams) datagrams") }
        if Int(st.opened) != rs.forwarded { problems.append("the receiver opened \(st.opened) of \(rs.forwarded) forwarded") }
        if st.dropped > 0 { problems.append("the receiver dropped \(st.dropped) datagrams: \(st.summary)") }
        if recorder.rows != Int(st.opened) { problems.append("recorded \(recorder.rows) of \(st.opened) arrivals") }
        let arrivedX = trace.records.filter { $0.kind == .motion && $0.arriveUs != nil }.reduce(Int64(0)) { $0 + Int64($1.dx) }
        let arrivedY = trace.records.filter { $0.kind == .motion && $0.arriveUs != nil }.reduce(Int64(0)) { $0 + Int64($1.dy) }
        if abs(st.totalDX * 256 - arrivedX) > 128 || abs(st.totalDY * 256 - arrivedY) > 128 {
            problems.append("the pointer moved \(st.totalDX),\(st.totalDY) px for \(arrivedX),\(arrivedY) Q8 that arrived")
        }
        return DemoReport(output: output, sent: s, relay: rs, received: st, rows: rows, recordedRows: recorder.rows,
                          problems: problems, svgPath: svg, typed: Demo.line, arrived: arrived, keyEvents: keys.count,
                          keyboard: kbdNode.map { "keyboard \($0)" } ?? "recording sink")
    }

    /// The keyboard keys (KEY_* codes, below BTN_MISC) in a run of struct
    /// input_event records, repeats left out.
    static func keyEvents(in bytes: [UInt8]) -> [KeyChange] {
        let size = MemoryLayout<input_event>.size
        var out: [KeyChange] = []
        bytes.withUnsafeBytes { raw in
            for off in stride(from: 0, through: raw.count - size, by: size) {
                let e = raw.loadUnaligned(fromByteOffset: off, as: input_event.self)
                if e.type == 1, e.code < 0x100, e.value == 0 || e.value == 1 {
                    out.append(KeyChange(code: e.code, down: e.value == 1))
                }
            }
        }
        return out
    }

    static func keyEvents(file path: String) throws -> [KeyChange] {
        keyEvents(in: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    static func keyEvents(fd: Int32) -> [KeyChange] {
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buf, buf.count)
            guard n > 0 else { break }
            bytes += buf[0..<n]
        }
        return keyEvents(in: bytes)
    }
}
