import Foundation
import Synchronization
import RemoloSession
import RemoloSystem
import RemoloPlayout
import RemoloDevices
import RemoloKeymap
import RemoloDesktop
import RemoloReceiver
import RemoloService
import RemoloWeb
import RemoloDiscovery

// remolo receive: the receiver. TCP control and UDP datagrams on one port;
// the pointer moves through a uinput device, or through XTest on an X11
// session (--output; docs/desktop.md).

let defaultPort: UInt16 = 7420

/// Where the receiver listens by default: every IPv6 and IPv4 address (one
/// dual-stack socket each for TCP and UDP), or every IPv4 one on a host
/// without IPv6.
let defaultListenHost = Socket.ipv6Available ? "::" : "0.0.0.0"

// The options, their values and descriptions come from the key table
// (ReceiveConfig.keys): the config file takes the same keys.
let receiveUsage = ReceiveConfig.synopsis + "\n\n" + ReceiveConfig.optionItems + """


Senders must be paired first (remolo pair, or --pair here). Needs io_uring,
and /dev/uinput for the uinput output (remolo install sets it up). Every
option may also be set in $REMOLO_CONFIG_DIR/config, one `key = value` per
line (`web = 8443`, `ca = true`); the command line wins (CONFIGURATION FILE).
"""

/// What `remolo receive` was asked for: the config file's options, then
/// the command line's.
struct ReceiveOptions {
    var host = defaultListenHost
    var port = defaultPort
    var announce = true
    var statsEvery: Double?
    var statsJSON = false
    var pair = false
    var keyboard = KeyboardRight.allow
    var keymapArg: String?
    var typing = true
    var redundancy = true
    var gestures = true
    var rt: Int32 = 0
    var name = PointerDevice.defaultName
    var seconds: Double?
    var recordPath: String?
    var sinkPath: String?
    var touchpadSinkPath: String?
    var web: (host: String, port: UInt16)?
    var authority = false
    var drain: (rate: DrainRate, line: String) = (.default, "")
    var outputKind = OutputKind.auto
    var playout = PlayoutConfig.default
}

/// The receiver's web page, if --web: its server, the data channel beside
/// it, and the page's address.
struct ReceiveWeb {
    var bridge: WebBridge?
    var channels: DataChannelEndpoint?
    var pageURL = ""
}

@Sendable func receiveCommand(_ args: [String]) {
    let o = parseReceiveOptions(args)
    let (dir, identity) = loadIdentity()
    var sigs = blockStopSignals()
    // After the mask: the recorder's drain thread inherits it too.
    var recorder: ArrivalRecorder?
    if let path = o.recordPath {
        do { recorder = try ArrivalRecorder(path: path) } catch { fail("--record-arrivals: \(error)", code: 1) }
    }
    let session = DesktopSession()
    let stopReason = StopReason()
    let (output, outputLine) = receiveOutput(o, session: session, stopReason: stopReason, dir: dir)
    let rx = startReceiver(o, identity: identity, dir: dir, output: output, recorder: recorder)
    sayStarted(o, rx: rx, identity: identity, session: session, outputLine: outputLine)
    let web = o.web.map { startWeb($0, o, rx: rx, dir: dir) } ?? ReceiveWeb()
    if o.pair { offerPairing(o, rx: rx, web: web) }
    let announcer = o.announce ? startAnnouncing(identity: identity, host: o.host, port: rx.port) : nil
    runUntilStopped(o, rx: rx, signals: &sigs)
    announcer?.stop()
    web.bridge?.stop()
    rx.stop()
    if let why = stopReason.value { fail(why, code: 1) }
    if let b = web.bridge { say("web: \(b.stats.json)") }
    if let c = web.channels { say("datachannel: \(c.json)") }
    say(o.statsJSON ? rx.statsJSON : "final: \(rx.stats.summary) | dx \(rx.stats.totalDX) dy \(rx.stats.totalDY)")
    if let r = recorder { say(r.summary) }
}

/// The options, the config file's first: the command line's come later and win.
func parseReceiveOptions(_ args: [String]) -> ReceiveOptions {
    var r = ReceiveOptions()
    var webArg: String?
    var drainArg = "auto"
    var o = Options(receiveConfigWords(args) + args, usage: receiveUsage)
    while let flag = o.next() {
        switch flag {
        case "--listen": (r.host, r.port) = o.hostPort(defaultHost: defaultListenHost)
        case "--stats": r.statsEvery = o.double(in: 0.001...86_400)
        case "--stats-json": r.statsJSON = true
        case "--pair": r.pair = true
        case "--keyboard": r.keyboard = o.keyboardRight()
        case "--rt": r.rt = o.int(in: 1...99)
        case "--name": r.name = o.value()
        case "--output":
            let v = o.value()
            guard let k = OutputKind(rawValue: v) else {
                fail("--output takes \(OutputKind.allCases.map(\.rawValue).joined(separator: ", ")), not '\(v)'")
            }
            r.outputKind = k
        case "--seconds": r.seconds = o.double(in: 0.001...1e9)
        case "--record-arrivals": r.recordPath = o.value()
        case "--sink": r.sinkPath = o.value()
        case "--touchpad-sink": r.touchpadSinkPath = o.value()
        case "--web": webArg = o.value()
        case "--ca": r.authority = true
        case "--no-announce": r.announce = false
        case "--keymap": r.keymapArg = o.value()
        case "--no-keyboard": r.typing = false
        case "--no-redundancy": r.redundancy = false
        case "--no-gestures": r.gestures = false
        case "--drain-hz": drainArg = o.value()
        case "--delay":
            switch o.value() {
            case "default": r.playout = .default
            case "window": r.playout = .window
            case "chooser": r.playout = .chooser
            case let v: fail("--delay takes default, window or chooser, not '\(v)'")
            }
        default: o.unknown()
        }
    }
    if r.statsJSON && r.statsEvery == nil { r.statsEvery = 1 }
    r.drain = drainChoice(drainArg)
    r.web = webArg.map { parseHostPort($0, what: "--web", defaultHost: r.host) }
    if r.authority && r.web == nil {
        fail("--ca is the phone page's certificate authority: add --web PORT (e.g. --web 8443 --ca)")
    }
    return r
}

/// SIGINT/SIGTERM end the receiver cleanly (sessions flushed, buttons
/// released): blocked here, so every thread started later inherits the
/// mask, and waited for by runUntilStopped.
func blockStopSignals() -> sigset_t {
    var sigs = sigset_t()
    sigemptyset(&sigs)
    sigaddset(&sigs, SIGINT)
    sigaddset(&sigs, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &sigs, nil)
    return sigs
}

/// Where the frames go (--sink, --output, --no-keyboard), and the line
/// that says so.
func receiveOutput(_ o: ReceiveOptions, session: DesktopSession, stopReason: StopReason,
                   dir: ConfigDirectory) -> (ReceiverOutput, String) {
    var output = ReceiverOutput.uinput(name: o.name)
    var outputLine = ""
    if let path = o.sinkPath {
        if o.outputKind != .auto && o.outputKind != .uinput {
            fail("--sink writes the frames to a file instead of any output: leave out --output \(o.outputKind.rawValue)")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { fail("--sink \(path): \(String(cString: strerror(errno))); pick a writable path", code: 1) }
        output = .fileDescriptor(fd)
    } else {
        (output, outputLine) = chooseOutput(o.outputKind, session: session, name: o.name, stopReason: stopReason,
                                            portalToken: dir.file(PortalBackend.tokenFileName))
    }
    if !o.typing {
        // --no-keyboard: no "Remolo keyboard" device either.
        switch output {
        case .uinput(let n, _): output = .uinput(name: n, keyboard: false)
        case .fileDescriptor(let fd, _): output = .fileDescriptor(fd, keyboard: false)
        case .adapter: break   // refused keys never reach it
        }
    }
    return (output, outputLine)
}

/// Where gestures go: --touchpad-sink's file, else the loop's choice (a
/// uinput touchpad beside a device, none beside --sink).
func touchpadOutput(_ o: ReceiveOptions) -> TouchpadOutput? {
    guard let path = o.touchpadSinkPath else { return nil }
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { fail("--touchpad-sink \(path): \(String(cString: strerror(errno))); pick a writable path", code: 1) }
    return .fileDescriptor(fd)
}

/// The receiver itself, on its port, with its trust and keyboard; a
/// failure stops the command with what to do about it.
func startReceiver(_ o: ReceiveOptions, identity: Identity, dir: ConfigDirectory, output: ReceiverOutput,
                   recorder: ArrivalRecorder?) -> Receiver {
    let keymap = o.typing ? loadKeymap(o.keymapArg) : nil
    do {
        let trust = try ReceiverTrust(identity: identity, directory: dir)
        if trust.authorizedSenders.entries.isEmpty && !o.pair {
            FileHandle.standardError.write(Data(("remolo: no sender is paired yet: run `remolo pair` "
                + "(or `remolo receive --pair`) and `remolo send --to HOST:PORT --pair CODE` on the sender, or `remolo receive --pair --web 8443` for a phone\n").utf8))
        }
        return try Receiver(host: o.host, port: o.port, trust: trust, output: output, playout: o.playout, drain: o.drain.rate,
                            realtimePriority: o.rt, recordArrivals: recorder,
                            keyboard: o.typing ? ReceiverKeyboard(enabled: true, keymap: keymap) : .off,
                            redundancy: o.redundancy, gestures: o.gestures, touchpad: touchpadOutput(o),
                            delayMemory: DelayMemory(in: dir), onEvent: { say($0) })
    } catch let e as PointerDeviceError where e.operation == "create" && e.errno == ENOENT {
        // After modprobe, a user other than root also needs access to it.
        fail("\(e.message) Then, to run as a normal user: the udev rule `\(PointerDeviceError.udevRule)` "
             + "in \(ServiceFiles.udevRulePath) (`sudo remolo install` writes it) and group "
             + "\(ServiceFiles.uinputGroup) (`sudo usermod -aG \(ServiceFiles.uinputGroup) $USER`, then log in again). "
             + "Without a device: --sink FILE (`sink = FILE` in the config file) records the frames instead.", code: 1)
    } catch {
        fail("\(error)", code: 1)
    }
}

/// The start-up lines: where it listens and writes, the drain, the socket,
/// the desktop's acceleration (on a thread of its own), the scheduling.
func sayStarted(_ o: ReceiveOptions, rx: Receiver, identity: Identity, session: DesktopSession, outputLine: String) {
    let target = o.sinkPath.map { "frames to \($0)" } ?? rx.loop.devnode.map { "pointer \($0)" }
        ?? "XTest on \(session.xDisplay ?? "?")"
    say("receiver \(identity.fingerprint) listening on \(formatHostPort(o.host, rx.port)) (tcp+udp), \(target)")
    if o.sinkPath == nil { say("output: \(outputLine)") }
    say(o.drain.line)
    if o.playout.keepsRecall {
        say("delay: " + (o.playout.stallWeight != 0 ? "chosen by replaying the last seconds" : "the recent lateness's p95 plus a margin")
            + "; a returning sender starts from its network's memory (\(DelayMemory.directoryName)/ in the config directory)")
    }
    say(rx.receiveBuffer.description)
    if let node = rx.loop.devnode, session.desktop != .none {
        // Off the start-up path: the desktop takes the device a moment
        // after uinput made it, and asking it may take a few seconds.
        let id = PointerIdentity(name: o.name, devnode: node)
        let t = Thread { if let line = DesktopAcceleration.settle(session, id) { say(line) } }
        t.name = "remolo-desktop"
        t.start()
    }
    if o.rt > 0 && !rx.stats.realtime {
        say("note: SCHED_FIFO not granted (needs CAP_SYS_NICE); running with the default policy")
    }
}

/// --web: the page's server, the data channel beside it, and the lines
/// that tell a phone how to get there.
func startWeb(_ web: (host: String, port: UInt16), _ o: ReceiveOptions, rx: Receiver, dir: ConfigDirectory) -> ReceiveWeb {
    // The bridge reaches the receiver on loopback when it listens on
    // every address, else on the very address it listens on.
    let host = o.host
    let target = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
    let bridge: WebBridge
    do {
        bridge = try WebBridge(host: web.host, port: web.port, receiverHost: target, receiverPort: rx.port,
                               configDirectory: dir.path, authority: o.authority)
    } catch {
        rx.stop()
        fail("--web: \(error)", code: 1)
    }
    // A page's session reaches the receiver from the bridge: its delay
    // memory is kept under the phone's network, not the bridge's.
    rx.attachRelay { [bridge] in bridge.client(relayedFrom: $0) }
    let channels = startDataChannels(rx, webHost: web.host, webPort: bridge.port, target: target, say: say)
    let shown = web.host == "0.0.0.0" || web.host == "::" ? (WebBridge.lanAddress() ?? "127.0.0.1") : web.host
    let pageURL = "https://\(shown.contains(":") ? "[\(shown)]" : shown):\(bridge.port)/"
    if let ca = bridge.authority {
        say("phone page: \(pageURL) (https; certificate SHA-256 \(bridge.certificateFingerprint)"
            + (bridge.certificateCreated ? ", issued now" : "") + " by \(ca.name))")
        say("certificate authority: \(pageURL.dropLast())\(WebAuthority.profilePath) (iPhone), "
            + "\(pageURL.dropLast())\(WebAuthority.certificatePath) (Android); SHA-256 \(ca.fingerprint)"
            + (ca.created ? ", made now" : "") + " (compare it on the phone: certificates.md, man remolo SEE ALSO)")
        // One page for both phones (ca.html picks the download that
        // fits); its QR only when no pairing QR follows, so the
        // terminal shows one code to scan.
        let caPage = pageURL + "ca.html"
        say("install the authority on a phone: \(caPage)")
        if !o.pair, let qr = WebBridge.qrCode(caPage) { print(qr, terminator: ""); fflush(nil) }
        if !ca.leftOut.isEmpty {
            say("note: the page's certificate leaves out \(ca.leftOut.joined(separator: ", ")): the authority "
                + "may vouch only for this host's names and private addresses; reach the page by one of those")
        }
    } else {
        say("phone page: \(pageURL) (https; certificate SHA-256 \(bridge.certificateFingerprint)"
            + (bridge.certificateCreated ? ", made now" : "") + ")")
    }
    return ReceiveWeb(bridge: bridge, channels: channels, pageURL: pageURL)
}

/// --pair: a code for one sender, and with the page its link and QR code.
func offerPairing(_ o: ReceiveOptions, rx: Receiver, web: ReceiveWeb) {
    do {
        let code = try rx.trust.pairing.issue(keyboard: o.keyboard).display
        say("pairing code: \(code)")
        say("(valid 5 minutes, for one sender)")
        say("on the sender: " + senderPairCommand(host: o.host, port: rx.port, code: code))
        if let bridge = web.bridge {
            // The code rides in the fragment, which the browser never
            // sends over the network (RFC 3986 section 3.5).
            let url = web.pageURL + "#pair=" + code
            say("pair a phone: \(url)")
            if let qr = WebBridge.qrCode(url) { print(qr, terminator: ""); fflush(nil) }
            say(bridge.authority == nil
                ? "(the browser warns once about the self-signed certificate: phone-page.md, man remolo SEE ALSO)"
                : "(the browser warns unless the phone has the certificate authority installed: certificates.md, man remolo SEE ALSO)")
        }
    } catch {
        say("no pairing code: \(error)")
    }
}

/// Runs until SIGINT, SIGTERM or --seconds, printing --stats on the way.
func runUntilStopped(_ o: ReceiveOptions, rx: Receiver, signals sigs: inout sigset_t) {
    let tty = isatty(1) != 0
    let start = Date()
    var lastStats = Date()
    while true {
        // With nothing to print and no end time, sleep until a signal: an
        // idle receiver's threads all block (docs/benchmarks.md:
        // rx.idle_wakeups_per_s).
        guard o.statsEvery != nil || o.seconds != nil else {
            var sig: Int32 = 0
            if sigwait(&sigs, &sig) == 0 && (sig == SIGINT || sig == SIGTERM) { break }
            continue
        }
        var wait = 86_400.0
        if let s = o.statsEvery { wait = min(wait, s) }
        if let s = o.seconds { wait = min(wait, max(0.001, s - Date().timeIntervalSince(start))) }
        var ts = timespec(tv_sec: Int(wait), tv_nsec: Int((wait - Double(Int(wait))) * 1e9))
        let sig = sigtimedwait(&sigs, nil, &ts)
        if sig == SIGINT || sig == SIGTERM { break }
        if let s = o.statsEvery, Date().timeIntervalSince(lastStats) >= s {
            if o.statsJSON {
                say(rx.statsJSON)
            } else if tty {
                // A table that refreshes in place: home, clear, redraw.
                print("\u{1B}[H\u{1B}[2J" + rx.statusTable, terminator: "")
                fflush(nil)
            } else {
                say("stats: \(rx.stats.summary)")
            }
            lastStats = Date()
        }
        if let s = o.seconds, Date().timeIntervalSince(start) >= s { break }
    }
}

/// The layout text is typed in: --keymap, else the system's, else us; says
/// which and why. A layout that does not compile stops the receiver.
func loadKeymap(_ arg: String?) -> Keymap {
    let name: KeymapName
    var source = "--keymap"
    if let arg {
        do { name = try KeymapName(parsing: arg) } catch { fail("--keymap: \(error)", code: 2) }
    } else {
        (name, source) = KeymapName.systemDefault()
    }
    do {
        let k = try Keymap(name)
        say("keyboard layout for typed text: \(name) (\(source))")
        return k
    } catch {
        fail("keyboard layout \(name) (\(source)): \(error)", code: 1)
    }
}

/// `--drain-hz`: auto (the displays DRM reports, or 480 Hz and why) or a
/// rate. The line it prints starts `drain N Hz (`.
func drainChoice(_ arg: String) -> (rate: DrainRate, line: String) {
    if arg == "auto" {
        let c = Displays.autoDrain()
        guard c.displays.isEmpty else { return (c.rate, c.line) }
        return (c.rate, c.line.dropLast() + "; if this receiver's screen is known, set its multiple: "
                + "--drain-hz 576 for 144 Hz, or `drain-hz = 576` in the config file)")
    }
    guard let hz = Double(arg), let r = DrainRate(hz: hz) else {
        fail("--drain-hz is auto or a rate from \(DrainRate.minHz) to \(DrainRate.maxHz) Hz "
             + "(a multiple of the display's refresh: 576 for 144 Hz, 495 for 165), not '\(arg)'")
    }
    let w = [60.0, 120, 144, 165, 240, 360].filter { DrainRule.wobble(drainHz: r.hz, displayHz: $0) == 0 }
    return (r, "drain \(r) (--drain-hz; a whole multiple of "
            + (w.isEmpty ? "none of 60, 120, 144, 165, 240, 360 Hz" : w.map { DrainRate.format($0) }.joined(separator: ", ") + " Hz")
            + ")")
}

/// Announces the receiver on the LAN, or says in one line why not; never
/// fails the receiver. A loopback-only receiver is not announced: no other
/// machine could reach it.
func startAnnouncing(identity: Identity, host: String, port: UInt16) -> Announcer? {
    if host == "localhost" || host == "::1" || host.hasPrefix("127.") { return nil }
    // Announce the addresses a sender can use: IPv4 only for an IPv4
    // listener, both for `::`, and only the listener's interface for a
    // specific address.
    let family: Int32 = host.contains(":") ? (host == "::" ? AF_UNSPEC : AF_INET6)
        : (host.allSatisfy { $0.isNumber || $0 == "." } ? AF_INET : AF_UNSPEC)
    let wildcard = host == "::" || host == "0.0.0.0"
    var name = "Remolo"
    var buf = [CChar](repeating: 0, count: 256)
    if gethostname(&buf, buf.count - 1) == 0 {
        name = "Remolo on " + buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
    do {
        return try Announcer(name: name, port: port,
                             txt: ServiceTXT(fingerprint: identity.fingerprint, protocolVersion: RemoloProtocol.version),
                             family: family, interfaceIndex: wildcard ? 0 : Socket.interfaceIndex(holding: host),
                             onEvent: { say($0) })
    } catch {
        say("note: \(error), so this receiver is not announced on the LAN; senders need --to HOST:PORT")
        return nil
    }
}

/// Why the receiver must stop on its own (its output was lost with no way
/// on): set from the output adapter's thread, read once the loop is down.
final class StopReason: Sendable {
    private let reason = Mutex<String?>(nil)
    var value: String? { reason.withLock { $0 } }

    /// Records the reason and asks the main thread to stop (it waits for
    /// SIGTERM in sigwait/sigtimedwait).
    func stop(_ why: String) {
        reason.withLock { $0 = $0 ?? why }
        kill(getpid(), SIGTERM)
    }
}

/// The receive loop's output for `--output`, and the line that says what
/// was chosen and why. Exits with a message when the output asked for
/// cannot be used.
func chooseOutput(_ kind: OutputKind, session: DesktopSession, name: String,
                  stopReason: StopReason, portalToken: String) -> (ReceiverOutput, String) {
    /// One portal session for the receiver's whole life: every new one asks
    /// the person again (docs/portal.md). Made on the adapter's thread,
    /// where it waits for the consent dialog's answer.
    func portal() throws(OutputBackendError) -> OutputAdapter {
        try OutputAdapter(make: { () throws(OutputBackendError) -> any OutputBackend in
                              try PortalBackend(PortalOptions(tokenFile: portalToken), log: { say($0) })
                          },
                          fallback: { () throws(OutputBackendError) -> any OutputBackend in try UinputBackend(name: name) },
                          onEvent: { say($0) },
                          onStop: { stopReason.stop($0) })
    }
    /// mutter's own RemoteDesktop API: GNOME, where the portal cannot
    /// remember consent (MutterBackend.swift).
    func mutter() throws(OutputBackendError) -> OutputAdapter {
        try OutputAdapter(make: { () throws(OutputBackendError) -> any OutputBackend in
                              try MutterBackend(PortalOptions(), log: { say($0) })
                          },
                          fallback: { () throws(OutputBackendError) -> any OutputBackend in try UinputBackend(name: name) },
                          onEvent: { say($0) },
                          onStop: { stopReason.stop($0) })
    }
    func x11() throws(OutputBackendError) -> OutputAdapter {
        try OutputAdapter(make: { () throws(OutputBackendError) -> any OutputBackend in try X11Backend() },
                          fallback: { () throws(OutputBackendError) -> any OutputBackend in try UinputBackend(name: name) },
                          onEvent: { say($0) },
                          onStop: { stopReason.stop($0) })
    }
    let xtest = "XTest on \(session.xDisplay ?? "?"): not accelerated"
    switch kind {
    case .uinput:
        return (.uinput(name: name), "uinput (asked for)")
    case .x11:
        do { return (.adapter(try x11()), "x11, " + xtest) } catch {
            fail("--output x11: \(error.message)", code: 1)
        }
    case .portal:
        do { return (.adapter(try portal()), "portal, the RemoteDesktop portal: not accelerated") } catch {
            fail("--output portal: \(error.message)", code: 1)
        }
    case .auto:
        let plan = OutputPlan.auto(for: session, portalAvailable: true)
        var why = ["\(session)"] + plan.skipped
        for k in plan.order {
            switch k {
            case .x11:
                do { return (.adapter(try x11()), "x11 (auto: \(session), \(xtest))") } catch {
                    why.append("x11 unusable: \(error.message)")
                }
            case .uinput:
                return (.uinput(name: name), "uinput (auto: " + why.joined(separator: "; ") + ")")
            case .portal:
                // GNOME with a portal that would ask at every start (version
                // 1): mutter's own API, which asks nobody.
                if session.desktop == .gnome && MutterBackend.preferred() {
                    do {
                        return (.adapter(try mutter()), "mutter (auto: \(session), the portal cannot remember consent: "
                                + "GNOME's own RemoteDesktop API, which asks nothing; not accelerated)")
                    } catch {
                        why.append("mutter unusable: \(error.message)")
                    }
                }
                do { return (.adapter(try portal()), "portal (auto: \(session), the RemoteDesktop portal: not accelerated)") } catch {
                    why.append("portal unusable: \(error.message)")
                }
            case .auto:
                continue
            }
        }
        return (.uinput(name: name), "uinput (auto: " + why.joined(separator: "; ") + ")")
    }
}
