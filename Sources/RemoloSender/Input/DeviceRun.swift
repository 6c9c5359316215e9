// `remolo send --device`: one thread polls the pointer device, the
// machine's keyboards (forwarded with --keyboard, KeyboardForward.swift;
// the others watched for the let-go chord) and a signal pipe, feeds the
// samples to an InputCore and sends each frame when its time comes.
internal import CEvdev
internal import Glibc
import RemoloInput
import RemoloSession
import RemoloSystem

/// How a device run goes.
public struct DeviceRunOptions: Sendable {
    /// An event node, or nil for the first touchpad, else the first mouse.
    public var path: String?
    /// EVIOCGRAB: the local pointer does not move while sending.
    public var grab = false
    /// Stop after this long; nil: until the chord or SIGINT/SIGTERM.
    public var seconds: Double?
    public var reconnect = true
    public var transport = SenderTransport.udp
    /// Watch the keyboards for Ctrl+Alt+Esc.
    public var chord = true
    /// Keyboards whose keys go to the receiver (grabbed while it takes
    /// them); nil: none. The Sender must have asked for the keyboard
    /// (`Sender.connect(..., keyboard: true)`).
    public var keyboard: KeyboardChoice?
    public var input = InputConfig()
    /// A touchpad's size, for one that reports no resolution (or a wrong one).
    public var touchpadSizeMm: TouchpadSize?

    public init() {}
}

/// What a device run measured.
public struct DeviceRunReport: Sendable {
    public var device: InputDeviceInfo
    /// Why it ended: "time", "chord", "signal".
    public var endedBy = "time"
    public var frames: UInt64 = 0
    /// Reports (SYN_REPORT) that carried motion and went out in a datagram,
    /// and the time from each one's kernel timestamp to its datagram
    /// leaving (send returned), microseconds.
    public var samplesSent: UInt64 = 0
    public var sampleToSendUs: (p50: UInt64, p99: UInt64, max: UInt64) = (0, 0, 0)
    /// CPU (user + system) over wall time of the run, percent of one core:
    /// the whole process, and the one thread that reads the device, runs
    /// the curve and the frame clock, seals and sends (the control
    /// channel's once-a-second ping is the process's only other work).
    public var cpuPercent: Double = 0
    public var threadCPUPercent: Double = 0
    public var seconds: Double = 0
    public var unplugs: UInt64 = 0
    /// Kernel buffer overflows (SYN_DROPPED): the sender fell behind.
    public var overflows: UInt64 = 0
    /// Key messages sent (presses and releases; the releases at let-go and
    /// keys pressed again on a new session included).
    public var keysSent: UInt64 = 0
    /// Presses and releases of forwarded keyboards not sent: they came
    /// while the session was out (never sent late).
    public var keysNotSent: UInt64 = 0
    /// Autorepeat events (value 2) of forwarded keys: never sent.
    public var repeatsIgnored: UInt64 = 0
    /// Forwarded keyboards that went away (unplugged, suspended).
    public var keyboardUnplugs: UInt64 = 0
}

extension Sender {
    /// Sends a touchpad's or a mouse's input, and with `options.keyboard`
    /// the keys of keyboards, until `options.seconds` pass, Ctrl+Alt+Esc is
    /// held on any keyboard, or SIGINT/SIGTERM comes. Every way out
    /// releases the grabs and every button and key held (on the receiver
    /// too). A device that goes away (unplugged, or removed across a
    /// suspend) is said so, its buttons or keys released, and read again
    /// when it comes back.
    public func runDevice(_ options: DeviceRunOptions, say: @escaping (String) -> Void) throws -> DeviceRunReport {
        let info = try options.path.map { p throws(InputDeviceError) -> InputDeviceInfo in
            let i = InputDevices.probe(p, touchpadSizeMm: options.touchpadSizeMm)
            guard i.isPointer else {
                throw InputDeviceError("\(p) (\(i.name)) is not a touchpad or mouse: \(i.note); `remolo devices` lists usable ones")
            }
            return i
        } ?? InputDevices.automatic(touchpadSizeMm: options.touchpadSizeMm)
        var source: PointerSource? = try PointerSource(path: info.path, grab: options.grab, touchpadSizeMm: options.touchpadSizeMm)
        var config = options.input
        if let g = source?.geometry {
            var t = config.touchpad ?? TouchpadConfig(geometry: g)
            t.geometry = g
            // Three- and four-finger swipes and pinches only where the
            // receiver takes them; elsewhere three fingers do nothing and
            // two scroll, as before gestures.
            t.gestures = gesturesGranted
            config.touchpad = t
        } else {
            config.touchpad = nil
        }
        var core = try InputCore(config: config, startUs: senderClockUs())
        core.isSessionOpen = true
        var report = DeviceRunReport(device: info)

        // SIGINT and SIGTERM only write their number to a pipe, read in the
        // same poll: the way out runs on this thread, after the current
        // frame, and always releases (acting in the handler could cut a
        // frame in half).
        let sfd = SignalPipe.install()
        defer { SignalPipe.uninstall() }

        let forwarded = try options.keyboard.map { c throws(InputDeviceError) in
            try ForwardedKeyboards(c, pointer: info, chord: options.chord, say: say)
        }
        let keysAtStart = keyStats.sent
        var keyboards: [ChordWatcher] = options.chord
            ? InputDevices.nodes().filter { $0 != info.path && forwarded?.paths.contains($0) != true }.compactMap { ChordWatcher(path: $0) } : []
        let what = "\(info.path) (\(info.name), \(info.kind?.rawValue ?? "?"): \(info.note))"
        say("reading \(what)\(options.grab ? ", grabbed" : "")"
            + (forwarded.map { "; keys of \($0.count) keyboard\($0.count == 1 ? "" : "s") to the receiver\($0.count > 0 ? ": " + $0.names : "")" } ?? "")
            + (options.chord ? "; let go with Ctrl+Alt+Esc (\(keyboards.count + (forwarded?.count ?? 0)) keyboards watched) or Ctrl+C" : "; let go with Ctrl+C"))
        try forwarded?.maintain(self, strict: true)

        let startWall = MonotonicClock.seconds()
        let startCPU = Self.cpuSeconds(CLOCK_PROCESS_CPUTIME_ID)
        let startThreadCPU = Self.cpuSeconds(CLOCK_THREAD_CPUTIME_ID)
        let deadline = options.seconds.map { startWall + $0 }
        var latencies: [UInt32] = []
        latencies.reserveCapacity(1 << 16)
        var nextProbe = 0.0
        // Keyboards plugged in later are watched too (looked for every 2 s).
        var nextKeyboardScan = MonotonicClock.seconds() + 2
        let onEvent = { (s: String) in say("remolo: \(s)") }

        /// Sends what the core has queued and the releases of every held
        /// button, now.
        func releaseEverything() throws {
            let now = senderClockUs()
            while core.nextFrameUs <= now { try send(frame: core.endFrame(), over: options.transport, reconnect: options.reconnect, onEvent: onEvent) }
            var f = Frame(timeUs: now)
            f.buttons = core.releaseAll(atUs: now)
            // An open gesture ends here, last state and end message.
            (f.gestures, f.gestureEnds) = core.gestureFrame(atUs: now)
            if !f.isEmpty { try send(frame: f, over: options.transport, reconnect: options.reconnect, onEvent: onEvent) }
        }

        loop: while true {
            let now = senderClockUs()
            while core.nextFrameUs <= now {
                let f = core.endFrame()
                report.frames += 1
                let sent = try send(frame: f, over: options.transport, reconnect: options.reconnect, onEvent: onEvent)
                if let s = source, !s.motionTimes.isEmpty, !f.motion.isZero || !f.scroll.isZero {
                    // Reports stamped up to this frame's time rode in its datagram.
                    let left = Self.latency(of: &s.motionTimes, upTo: f.timeUs, sent: sent)
                    for l in left where latencies.count < (1 << 20) { latencies.append(l) }
                }
            }
            core.isSessionOpen = isConnected
            try forwarded?.maintain(self)
            let wall = MonotonicClock.seconds()
            if let deadline, wall >= deadline { report.endedBy = "time"; break }

            var fds: [pollfd] = []
            if let s = source { fds.append(pollfd(fd: s.fd, events: Int16(POLLIN), revents: 0)) }
            let fwBase = fds.count
            for fd in forwarded?.fds ?? [] { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            let kbBase = fds.count
            for k in keyboards { fds.append(pollfd(fd: k.fd, events: Int16(POLLIN), revents: 0)) }
            if sfd >= 0 { fds.append(pollfd(fd: sfd, events: Int16(POLLIN), revents: 0)) }
            let untilFrame = Int64(core.nextFrameUs) - Int64(senderClockUs())
            var timeoutMs = Int32(max(0, (untilFrame + 999) / 1000))
            if let deadline { timeoutMs = min(timeoutMs, Int32(max(0, (deadline - wall) * 1000))) }
            if source == nil { timeoutMs = min(timeoutMs, 250) }
            _ = poll(&fds, nfds_t(fds.count), timeoutMs)

            if sfd >= 0, let last = fds.last, last.revents != 0 {
                var sig: UInt8 = 0
                _ = Glibc.read(sfd, &sig, 1)
                report.endedBy = "signal"
                say("remolo: \(Int32(sig) == SIGINT ? "SIGINT" : "SIGTERM"): letting go")
                break loop
            }
            if let f = forwarded {
                // Backwards: a keyboard that is gone leaves the list.
                for i in (0..<(kbBase - fwBase)).reversed() where fds[fwBase + i].revents != 0 {
                    if try f.read(i, self) { report.endedBy = "chord"; break loop }
                }
            }
            for (i, k) in keyboards.enumerated() where fds[kbBase + i].revents != 0 {
                let r = k.read()
                if r.chord {
                    report.endedBy = "chord"
                    say("remolo: Ctrl+Alt+Esc on \(k.handle.name): letting go")
                    break loop
                }
                if r.gone { keyboards.removeAll { $0 === k } }
            }
            if let s = source, fds[0].revents != 0 {
                let before = s.overflows
                let r = s.read(into: &core)
                if s.overflows > before {
                    report.overflows += s.overflows - before
                    if report.overflows == 1 { say("remolo: the kernel dropped events of \(info.path): this sender fell behind (CPU starved?); motion was lost") }
                }
                if case .gone(let e) = r {
                    report.unplugs += 1
                    try releaseEverything()
                    s.handle.ungrab()
                    source = nil
                    say("remolo: \(info.path) (\(info.name)) is gone (\(e == ENODEV ? "unplugged or suspended" : String(cString: strerror(e)))); buttons released; waiting for it to come back")
                    nextProbe = 0
                }
            }
            if (options.chord || forwarded != nil) && MonotonicClock.seconds() >= nextKeyboardScan {
                // A forwarded keyboard that went away is looked for as
                // often as the pointer device.
                nextKeyboardScan = MonotonicClock.seconds() + (forwarded?.lost.isEmpty == false ? 0.25 : 2)
                let watched = Set(keyboards.map(\.handle.path)).union(forwarded?.paths ?? [])
                for node in InputDevices.nodes() where node != source?.path && !watched.contains(node) {
                    if forwarded?.claims(node) == true { continue }
                    if options.chord, let k = ChordWatcher(path: node) {
                        keyboards.append(k)
                    }
                }
            }
            if source == nil && MonotonicClock.seconds() >= nextProbe {
                nextProbe = MonotonicClock.seconds() + 0.25
                if let back = Self.findAgain(info, touchpadSizeMm: options.touchpadSizeMm) {
                    if let s = try? PointerSource(path: back, grab: options.grab, touchpadSizeMm: options.touchpadSizeMm) {
                        source = s
                        say("remolo: \(info.name) is back at \(back)\(options.grab ? ", grabbed" : "")")
                    }
                }
            }
        }
        try releaseEverything()
        try forwarded?.letGo(self)
        source?.handle.ungrab()
        source = nil
        if let f = forwarded {
            report.keysSent = keyStats.sent - keysAtStart
            report.keysNotSent = f.notSent
            report.repeatsIgnored = f.repeatsIgnored
            report.keyboardUnplugs = f.unplugs
        }

        report.seconds = MonotonicClock.seconds() - startWall
        if report.seconds > 0 {
            report.cpuPercent = 100 * (Self.cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - startCPU) / report.seconds
            report.threadCPUPercent = 100 * (Self.cpuSeconds(CLOCK_THREAD_CPUTIME_ID) - startThreadCPU) / report.seconds
        }
        latencies.sort()
        report.samplesSent = UInt64(latencies.count)
        if !latencies.isEmpty {
            let q = { (p: Double) in UInt64(latencies[min(latencies.count - 1, Int((p * Double(latencies.count)).rounded(.up)) - 1)]) }
            report.sampleToSendUs = (q(0.5), q(0.99), UInt64(latencies.last!))
        }
        return report
    }

    /// The times from `times` up to `upTo` as latencies until now, removed.
    private static func latency(of times: inout [UInt64], upTo t: UInt64, sent: Bool) -> [UInt32] {
        let now = senderClockUs()
        var out: [UInt32] = []
        var n = 0
        for s in times where s <= t {
            n += 1
            if sent { out.append(UInt32(clamping: now &- min(now, s))) }
        }
        times.removeFirst(n)
        return out
    }

    /// The device again after it went away: the same node if it has the
    /// same name, else the first node with that name.
    private static func findAgain(_ info: InputDeviceInfo, touchpadSizeMm: TouchpadSize?) -> String? {
        let same = InputDevices.probe(info.path, touchpadSizeMm: touchpadSizeMm)
        if same.name == info.name && same.isPointer { return info.path }
        return InputDevices.list(touchpadSizeMm: touchpadSizeMm).first { $0.name == info.name && $0.isPointer }?.path
    }

    private static func cpuSeconds(_ clock: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// SIGINT and SIGTERM as bytes in a pipe (the self-pipe trick: a handler
/// may only do async-signal-safe things, and write(2) is one).
private enum SignalPipe {
    nonisolated(unsafe) static var fds: (r: Int32, w: Int32) = (-1, -1)
    nonisolated(unsafe) static var saved: (int: sigaction, term: sigaction) = (sigaction(), sigaction())

    static func install() -> Int32 {
        var p: [Int32] = [-1, -1]
        guard pipe(&p) == 0 else { return -1 }
        for f in p {
            _ = fcntl(f, F_SETFL, fcntl(f, F_GETFL) | O_NONBLOCK)
            _ = fcntl(f, F_SETFD, FD_CLOEXEC)
        }
        fds = (p[0], p[1])
        var sa = sigaction()
        sa.__sigaction_handler.sa_handler = { sig in
            var b = UInt8(truncatingIfNeeded: sig)
            _ = Glibc.write(SignalPipe.fds.w, &b, 1)
        }
        sigemptyset(&sa.sa_mask)
        sa.sa_flags = SA_RESTART
        sigaction(SIGINT, &sa, &saved.int)
        sigaction(SIGTERM, &sa, &saved.term)
        // A parent may have started this process with them blocked (the
        // mask is inherited across exec): then Ctrl+C would never let go.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        return p[0]
    }

    static func uninstall() {
        sigaction(SIGINT, &saved.int, nil)
        sigaction(SIGTERM, &saved.term, nil)
        if fds.r >= 0 { Glibc.close(fds.r); Glibc.close(fds.w) }
        fds = (-1, -1)
    }
}
