import Foundation
import RemoloPlayout
import RemoloSender
import RemoloSession
import RemoloSystem

// rx.idle_wakeups_per_s: how often a receiver with nothing to do wakes.
// The real `remolo receive` (the binary beside Bench, frames to /dev/null)
// runs as a child process; its wake-ups are the context switches
// (voluntary and not) summed over every thread in /proc/PID/task, counted
// over a window that begins after a spell of silence.
//
//   rx.idle_wakeups_per_s               no session at all
//   rx.idle_wakeups_per_s.floor         a bare process (sleep) over the same window
//   rx.idle_wakeups_per_s.sender        a paired sender connected and idle:
//                                       heartbeats and keepalive pings only
//   rx.idle_wakeups_per_s.sender.floor  what that sender sent per second
//                                       (heartbeats + pings), one wake-up each
//                                       at best
//   rx.idle_wakeups_per_s.web           a second receiver with --web: the web
//                                       bridge and the data-channel endpoint
//                                       started, no page, no peer (floor: .floor)
private func contextSwitches(_ pid: pid_t) -> UInt64? {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
    var sum: UInt64 = 0
    for t in tasks {
        guard let s = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/status", encoding: .utf8) else { continue }
        // voluntary_ctxt_switches:\tN and nonvoluntary_ctxt_switches:\tN
        for line in s.split(separator: "\n") where line.contains("ctxt_switches:") {
            sum += line.split(separator: "\t").last.flatMap { UInt64($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        }
    }
    return sum
}

private func executableDirectory() -> String? {
    var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buf, buf.count - 1)
    guard n > 0 else { return nil }
    let path = String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return (path as NSString).deletingLastPathComponent
}

private func freeLoopbackPort() throws -> UInt16 {
    let l = try TCPListener(host: "127.0.0.1", port: 0)
    defer { l.close() }
    return l.port
}

func idleWakeupsBench(_ settings: BenchSettings) -> [BenchResult] {
    let silence = settings.quick ? 0.5 : 1.0
    let window = settings.quick ? 0.5 : 3.0
    let names = ["rx.idle_wakeups_per_s", "rx.idle_wakeups_per_s.floor",
                 "rx.idle_wakeups_per_s.sender", "rx.idle_wakeups_per_s.sender.floor", "rx.idle_wakeups_per_s.web"]
    func results(_ v: [Double]) -> [BenchResult] {
        zip(names, v).map { BenchResult(name: $0, value: $1, unit: "/s") }
    }
    do {
        return results(try idleWakeups(silence: silence, window: window))
    } catch {
        benchNote("rx.idle_wakeups_per_s: \(error)")
        return results([.nan, .nan, .nan, .nan, .nan])
    }
}

private func idleWakeups(silence: Double, window: Double) throws -> [Double] {
    guard let dir = executableDirectory(), FileManager.default.isExecutableFile(atPath: dir + "/remolo") else {
        throw BenchFailure("no remolo binary beside Bench (swift build -c release builds it)")
    }
    // A paired receiver and sender, each with its own config directory.
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-bench-idle-\(getpid())").path
    defer { try? FileManager.default.removeItem(atPath: root) }
    let rxDir = ConfigDirectory(path: root + "/rx"), txDir = ConfigDirectory(path: root + "/tx")
    let rxID = try Identity.loadOrCreate(in: rxDir), txID = try Identity.loadOrCreate(in: txDir)
    var senders = PeerList()
    senders.add(txID.publicKey, label: "bench sender")
    try senders.save(to: rxDir.file(PeerList.authorizedSendersFile))

    let port = try freeLoopbackPort()
    let rx = try startReceiver(dir + "/remolo", config: rxDir, log: root + "/receive.log",
                               arguments: ["--listen", "127.0.0.1:\(port)"], upWhen: "listening on")
    defer {
        if rx.isRunning { rx.terminate() }
        rx.waitUntilExit()
    }
    let pid = rx.processIdentifier

    // The floor: a bare process, sleeping over the same window.
    let bare = Process()
    bare.executableURL = URL(fileURLWithPath: "/bin/sleep")
    bare.arguments = ["60"]
    try bare.run()
    defer { bare.terminate(); bare.waitUntilExit() }

    usleep(UInt32(silence * 1e6))
    guard let r0 = contextSwitches(pid), let b0 = contextSwitches(bare.processIdentifier) else {
        throw BenchFailure("no /proc/PID/task for the receiver")
    }
    let t0 = MonotonicClock.seconds()
    usleep(UInt32(window * 1e6))
    guard let r1 = contextSwitches(pid), let b1 = contextSwitches(bare.processIdentifier) else {
        throw BenchFailure("the receiver exited")
    }
    let t1 = MonotonicClock.seconds()
    let noSession = Double(r1 - r0) / (t1 - t0)
    let bareRate = Double(b1 - b0) / (t1 - t0)

    // With the phone page's parts started: the web bridge (TCP) and the
    // data-channel endpoint (UDP, the same port number), nobody using them.
    // A config directory of its own (the bridge writes its certificate there).
    let webDir = ConfigDirectory(path: root + "/web")
    _ = try Identity.loadOrCreate(in: webDir)
    let webRx = try startReceiver(dir + "/remolo", config: webDir, log: root + "/receive-web.log",
                                  arguments: ["--listen", "127.0.0.1:\(try freeLoopbackPort())",
                                              "--web", "127.0.0.1:\(try freeLoopbackPort())", "--no-announce"],
                                  upWhen: "data channel: UDP port")
    defer {
        if webRx.isRunning { webRx.terminate() }
        webRx.waitUntilExit()
    }
    usleep(UInt32(silence * 1e6))
    guard let w0 = contextSwitches(webRx.processIdentifier) else { throw BenchFailure("no /proc/PID/task for the web receiver") }
    let tw0 = MonotonicClock.seconds()
    usleep(UInt32(window * 1e6))
    guard let w1 = contextSwitches(webRx.processIdentifier) else { throw BenchFailure("the web receiver exited") }
    let withWeb = Double(w1 - w0) / (MonotonicClock.seconds() - tw0)
    webRx.terminate()

    // An idle sender: a heartbeat every Sender.heartbeatUs and a ping every
    // keepalive interval, as `remolo send` keeps a still session alive.
    let sender = try Sender.connect(host: "127.0.0.1", port: port, identity: txID, receiver: rxID.publicKey)
    defer { sender.close() }
    let limits = SessionLimits()
    // keepAlive pings when a keepalive interval has passed since the last
    // ping (the first counts from the connection): the same rule, followed
    // here to count the pings in the window.
    var lastPing = MonotonicClock.seconds()
    var pingsInWindow = 0
    let start = MonotonicClock.nowUs()
    let windowStart = start + UInt64(silence * 1e6), windowEnd = windowStart + UInt64(window * 1e6)
    var next = start
    var s0: UInt64?, s1: UInt64?
    var beatsInWindow = 0
    while next < windowEnd {
        MonotonicClock.sleep(untilUs: next)
        let now = MonotonicClock.nowUs()
        if s0 == nil && now >= windowStart { s0 = contextSwitches(pid) }
        try sender.send(.heartbeat, at: now)
        if s0 != nil { beatsInWindow += 1 }
        try sender.keepAlive()
        if MonotonicClock.seconds() - lastPing >= limits.keepaliveInterval {
            lastPing = MonotonicClock.seconds()
            if s0 != nil { pingsInWindow += 1 }
        }
        next += Sender.heartbeatUs
    }
    MonotonicClock.sleep(untilUs: windowEnd)
    s1 = contextSwitches(pid)
    guard let s0, let s1 else { throw BenchFailure("the receiver exited") }
    let span = Double(windowEnd - windowStart) / 1e6
    let withSender = Double(s1 - s0) / span
    let sentRate = Double(beatsInWindow + pingsInWindow) / span
    return [noSession, bareRate, withSender, sentRate, withWeb]
}

/// `remolo receive` (frames to /dev/null) with its config in `config`, its
/// output in `log`; returns once the log says `upWhen` (not by connecting:
/// a probe would be a connection in its handshake, waking it later on its
/// deadline).
private func startReceiver(_ binary: String, config: ConfigDirectory, log: String, arguments: [String],
                           upWhen: String) throws -> Process {
    guard FileManager.default.createFile(atPath: log, contents: nil) else { throw BenchFailure("cannot create \(log)") }
    let rx = Process()
    rx.executableURL = URL(fileURLWithPath: binary)
    rx.arguments = ["receive"] + arguments + ["--sink", "/dev/null"]
    rx.environment = ProcessInfo.processInfo.environment.merging(["REMOLO_CONFIG_DIR": config.path]) { $1 }
    let logHandle = FileHandle(forWritingAtPath: log)
    rx.standardOutput = logHandle
    rx.standardError = logHandle
    try rx.run()
    let deadline = MonotonicClock.seconds() + 10
    while !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains(upWhen) {
        guard rx.isRunning, MonotonicClock.seconds() < deadline else {
            if rx.isRunning { rx.terminate() }
            rx.waitUntilExit()
            throw BenchFailure("remolo receive \(arguments.joined(separator: " ")) did not start: "
                               + ((try? String(contentsOfFile: log, encoding: .utf8)) ?? ""))
        }
        usleep(10_000)
    }
    return rx
}
