import Foundation
import Synchronization
import RemoloSession
import RemoloSystem
import Remolo
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

let receiveUsage = """
usage: remolo receive [--listen ADDR:PORT] [--stats SECONDS] [--stats-json] [--pair] [--keyboard allow|deny] [--rt PRIORITY]
                      [--output uinput|x11|portal|auto] [--name NAME] [--sink FILE] [--seconds N]
                      [--record-arrivals FILE] [--web [ADDR:]PORT] [--ca] [--no-announce] [--keymap LAYOUT[:VARIANT]]
                      [--no-keyboard] [--drain-hz auto|HZ] [--no-redundancy]

  --listen    address and port for TCP (handshakes, buttons) and UDP (pointer
              datagrams) (default [::]:\(defaultPort): IPv6 and IPv4; 0.0.0.0
              for IPv4 only; a link-local address takes its zone,
              [fe80::1%wlan0]:\(defaultPort))
  --stats     print the loop's counters every SECONDS
  --stats-json  print them as one JSON object per line (drop reasons as in
              docs/protocol.md: short, long, unknown_session, replay,
              bad_tag, bad_kind, bad_field)
  --pair      also issue a pairing code now and print it (with --web: as
              the page's URL and a QR code for the phone's camera)
  --keyboard allow|deny
              whether the sender pairing with --pair's code may type on
              this machine, not only point (default allow; change it later
              with remolo peers allow-keyboard / deny-keyboard FINGERPRINT)
  --web [ADDR:]PORT
              serve the phone page over HTTPS on this port (e.g. 8443; the
              address defaults to --listen's): the phone's browser becomes
              the trackpad, speaking the same sealed protocol through a
              WebSocket. The self-signed certificate is made on first use
              (web-cert.pem, web-key.pem in the config directory)
  --ca        with --web: a certificate issued by this receiver's own
              certificate authority instead of the self-signed one. The
              authority is made on first use (web-ca.pem, web-ca-key.pem)
              and served at /ca.crt (Android) and /remolo.mobileconfig
              (iPhone): installed once, the phone trusts the page without a
              warning (docs/certificates.md)
  --rt        run the drain loop SCHED_FIFO at PRIORITY (1-99; needs CAP_SYS_NICE)
  --output    where the pointer moves (default auto; docs/desktop.md):
              uinput  a virtual mouse (/dev/uinput): consoles, login screens,
                      services, games reading evdev. A desktop's libinput
                      accelerates it a second time unless its profile is
                      flat: the receiver says so, and sets it flat where it
                      can for this device alone (sway, KDE Plasma, X11)
              x11     XTest on $DISPLAY: not accelerated; falls back to
                      uinput if the X server goes away
              portal  the RemoteDesktop portal (a Wayland session: GNOME,
                      KDE): not accelerated; the desktop asks once to allow it
              auto    portal on a Wayland session that offers it, x11 on an
                      X11 session with XTest, else uinput; one line says which
  --name      the pointer device's name (default "\(PointerDevice.defaultName)")
  --sink FILE write the pointer's evdev frames (struct input_event, one
              write per drain tick) to FILE instead of a uinput device:
              a recording sink for machines without /dev/uinput
  --seconds   stop after N seconds (default: until SIGINT/SIGTERM)
  --record-arrivals FILE
              record every datagram's send and arrival time in the lab's
              trace format (the first session's only); replay your own
              network with `remolo simulate --trace FILE`
  --keymap LAYOUT[:VARIANT]
              the keyboard layout text from senders is typed in (e.g. us,
              de, fr:bepo; default: XKBLAYOUT and XKBVARIANT of
              /etc/default/keyboard, else us)
  --no-keyboard
              take no keys or text from any sender (they are told why); no
              "Remolo keyboard" device is made
  --no-redundancy
              grant no sender the redundancy feature: its datagrams stay 49
              bytes and the motion of a lost one is lost (by default a sender
              that asks sends the session's running totals in each datagram,
              65 bytes, and the motion of lost ones is played from the next)
  --no-announce
              do not announce this receiver on the LAN (by default it does,
              as \(RemoloService.type) through avahi-daemon, so that
              `remolo send` finds it without --to)
  --drain-hz auto|HZ
              how often motion is let out to the pointer (default auto): a
              whole multiple of the display's refresh, so that every frame
              shows as many steps (576 Hz for 144 Hz, 495 for 165, 720 for
              360; with several displays the rate that suits all best). auto
              reads the connected displays' modes from /dev/dri (DRM) and
              keeps 480 Hz, saying why, when it cannot; HZ sets it, from
              \(DrainRate.minHz) to \(DrainRate.maxHz) (docs/drain-rate.md)

Senders must be paired first (remolo pair, or --pair here). Needs io_uring, and
/dev/uinput for the uinput output (modprobe uinput, plus a udev rule for
non-root users). Options
may also be set in $REMOLO_CONFIG_DIR/config, one `key = value` per line
(`listen = :7420`, `stats-json = true`); the command line wins.
"""

@Sendable func receiveCommand(_ args: [String]) {
    var (host, port) = (defaultListenHost, defaultPort)
    var announce = true
    var statsEvery: Double?
    var statsJSON = false
    var pair = false
    var keyboard = KeyboardRight.allow
    var keymapArg: String?
    var typing = true
    var redundancy = true
    var rt: Int32 = 0
    var name = PointerDevice.defaultName
    var seconds: Double?
    var recordPath: String?
    var sinkPath: String?
    var webArg: String?
    var authority = false
    var drainArg = "auto"
    var outputKind = OutputKind.auto
    // The config file's options first: the command line's come later and win.
    var o = Options(receiveConfigWords(args) + args, usage: receiveUsage)
    while let flag = o.next() {
        switch flag {
        case "--listen": (host, port) = o.hostPort(defaultHost: defaultListenHost)
        case "--stats": statsEvery = o.double(in: 0.001...86_400)
        case "--stats-json": statsJSON = true
        case "--pair": pair = true
        case "--keyboard": keyboard = o.keyboardRight()
        case "--rt": rt = o.int(in: 1...99)
        case "--name": name = o.value()
        case "--output":
            let v = o.value()
            guard let k = OutputKind(rawValue: v) else {
                fail("--output takes \(OutputKind.allCases.map(\.rawValue).joined(separator: ", ")), not '\(v)'")
            }
            outputKind = k
        case "--seconds": seconds = o.double(in: 0.001...1e9)
        case "--record-arrivals": recordPath = o.value()
        case "--sink": sinkPath = o.value()
        case "--web": webArg = o.value()
        case "--ca": authority = true
        case "--no-announce": announce = false
        case "--keymap": keymapArg = o.value()
        case "--no-keyboard": typing = false
        case "--no-redundancy": redundancy = false
        case "--drain-hz": drainArg = o.value()
        default: o.unknown()
        }
    }
    if statsJSON && statsEvery == nil { statsEvery = 1 }
    let drain = drainChoice(drainArg)
    let web = webArg.map { parseHostPort($0, what: "--web", defaultHost: host) }
    if authority && web == nil {
        fail("--ca is the phone page's certificate authority: add --web PORT (e.g. --web 8443 --ca)")
    }
    let (dir, identity) = loadIdentity()

    // SIGINT/SIGTERM end the receiver cleanly (sessions flushed, buttons
    // released); blocked here so every thread started later inherits it.
    var sigs = sigset_t()
    sigemptyset(&sigs)
    sigaddset(&sigs, SIGINT)
    sigaddset(&sigs, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &sigs, nil)

    // After the mask: the recorder's drain thread inherits it too.
    var recorder: ArrivalRecorder?
    if let path = recordPath {
        do { recorder = try ArrivalRecorder(path: path) } catch { fail("--record-arrivals: \(error)", code: 1) }
    }

    var output = ReceiverOutput.uinput(name: name)
    let session = DesktopSession()
    let stopReason = StopReason()
    var outputLine = ""
    if let path = sinkPath {
        if outputKind != .auto && outputKind != .uinput {
            fail("--sink writes the frames to a file instead of any output: leave out --output \(outputKind.rawValue)")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { fail("--sink \(path): \(String(cString: strerror(errno))); pick a writable path", code: 1) }
        output = .fileDescriptor(fd)
    } else {
        (output, outputLine) = chooseOutput(outputKind, session: session, name: name, stopReason: stopReason,
                                            portalToken: dir.file(PortalBackend.tokenFileName))
    }
    if !typing {
        // --no-keyboard: no "Remolo keyboard" device either.
        switch output {
        case .uinput(let n, _): output = .uinput(name: n, keyboard: false)
        case .fileDescriptor(let fd, _): output = .fileDescriptor(fd, keyboard: false)
        case .adapter: break   // refused keys never reach it
        }
    }
    let keymap = typing ? loadKeymap(keymapArg) : nil
    let rx: Receiver
    do {
        let trust = try ReceiverTrust(identity: identity, directory: dir)
        if trust.authorizedSenders.entries.isEmpty && !pair {
            FileHandle.standardError.write(Data(("remolo: no sender is paired yet: run `remolo pair` "
                + "(or `remolo receive --pair`) and `remolo send --to HOST:PORT --pair CODE` on the sender, or `remolo receive --pair --web 8443` for a phone\n").utf8))
        }
        rx = try Receiver(host: host, port: port, trust: trust, output: output, drain: drain.rate,
                          realtimePriority: rt, recordArrivals: recorder,
                          keyboard: typing ? ReceiverKeyboard(enabled: true, keymap: keymap) : .off, redundancy: redundancy,
                          onEvent: { say($0) })
    } catch let e as PointerDeviceError where e.operation == "create" && e.errno == ENOENT {
        // After modprobe, a user other than root also needs access to it.
        fail("\(e.message) Then, to run as a normal user: add the udev rule `\(PointerDeviceError.udevRule)` "
             + "(/etc/udev/rules.d/60-remolo-uinput.rules) and join the input group.", code: 1)
    } catch {
        fail("\(error)", code: 1)
    }
    let target = sinkPath.map { "frames to \($0)" } ?? rx.loop.devnode.map { "pointer \($0)" }
        ?? "XTest on \(session.xDisplay ?? "?")"
    say("receiver \(identity.fingerprint) listening on \(formatHostPort(host, rx.port)) (tcp+udp), \(target)")
    if sinkPath == nil { say("output: \(outputLine)") }
    say(drain.line)
    say(rx.receiveBuffer.description)
    if let node = rx.loop.devnode, session.desktop != .none {
        // Off the start-up path: the desktop takes the device a moment
        // after uinput made it, and asking it may take a few seconds.
        let id = PointerIdentity(name: name, devnode: node)
        let t = Thread { if let line = DesktopAcceleration.settle(session, id) { say(line) } }
        t.name = "remolo-desktop"
        t.start()
    }
    if rt > 0 && !rx.stats.realtime {
        say("note: SCHED_FIFO not granted (needs CAP_SYS_NICE); running with the default policy")
    }
    var bridge: WebBridge?
    var pageURL = ""
    if let web {
        // The bridge reaches the receiver on loopback when it listens on
        // every address, else on the very address it listens on.
        let target = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
        do {
            bridge = try WebBridge(host: web.host, port: web.port, receiverHost: target, receiverPort: rx.port,
                                   configDirectory: dir.path, authority: authority)
        } catch {
            rx.stop()
            fail("--web: \(error)", code: 1)
        }
        let shown = web.host == "0.0.0.0" || web.host == "::" ? (WebBridge.lanAddress() ?? "127.0.0.1") : web.host
        pageURL = "https://\(shown.contains(":") ? "[\(shown)]" : shown):\(bridge!.port)/"
        if let ca = bridge!.authority {
            say("phone page: \(pageURL) (https; certificate SHA-256 \(bridge!.certificateFingerprint)"
                + (bridge!.certificateCreated ? ", issued now" : "") + " by \(ca.name))")
            say("certificate authority: \(pageURL.dropLast())\(WebAuthority.profilePath) (iPhone), "
                + "\(pageURL.dropLast())\(WebAuthority.certificatePath) (Android); SHA-256 \(ca.fingerprint)"
                + (ca.created ? ", made now" : "") + " (compare it on the phone: docs/certificates.md)")
            // One page for both phones (ca.html picks the download that
            // fits); its QR only when no pairing QR follows, so the
            // terminal shows one code to scan.
            let caPage = pageURL + "ca.html"
            say("install the authority on a phone: \(caPage)")
            if !pair, let qr = WebBridge.qrCode(caPage) { print(qr, terminator: ""); fflush(nil) }
            if !ca.leftOut.isEmpty {
                say("note: the page's certificate leaves out \(ca.leftOut.joined(separator: ", ")): the authority "
                    + "may vouch only for this host's names and private addresses; reach the page by one of those")
            }
        } else {
            say("phone page: \(pageURL) (https; certificate SHA-256 \(bridge!.certificateFingerprint)"
                + (bridge!.certificateCreated ? ", made now" : "") + ")")
        }
    }
    if pair {
        do {
            let code = try rx.trust.pairing.issue(keyboard: keyboard).display
            say("pairing code: \(code)")
            say("(valid 5 minutes, for one sender)")
            if bridge != nil {
                // The code rides in the fragment, which the browser never
                // sends over the network (RFC 3986 section 3.5).
                let url = pageURL + "#pair=" + code
                say("pair a phone: \(url)")
                if let qr = WebBridge.qrCode(url) { print(qr, terminator: ""); fflush(nil) }
                say(bridge!.authority == nil
                    ? "(the browser warns once about the self-signed certificate: see docs/phone-page.md)"
                    : "(the browser warns unless the phone has the certificate authority installed: see docs/certificates.md)")
            }
        } catch {
            say("no pairing code: \(error)")
        }
    }
    let announcer = announce ? startAnnouncing(identity: identity, host: host, port: rx.port) : nil
    let tty = isatty(1) != 0
    let start = Date()
    var lastStats = Date()
    while true {
        // With nothing to print and no end time, sleep until a signal: an
        // idle receiver's threads all block (docs/benchmarks.md:
        // rx.idle_wakeups_per_s).
        guard statsEvery != nil || seconds != nil else {
            var sig: Int32 = 0
            if sigwait(&sigs, &sig) == 0 && (sig == SIGINT || sig == SIGTERM) { break }
            continue
        }
        var wait = 86_400.0
        if let s = statsEvery { wait = min(wait, s) }
        if let s = seconds { wait = min(wait, max(0.001, s - Date().timeIntervalSince(start))) }
        var ts = timespec(tv_sec: Int(wait), tv_nsec: Int((wait - Double(Int(wait))) * 1e9))
        let sig = sigtimedwait(&sigs, nil, &ts)
        if sig == SIGINT || sig == SIGTERM { break }
        if let s = statsEvery, Date().timeIntervalSince(lastStats) >= s {
            if statsJSON {
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
        if let s = seconds, Date().timeIntervalSince(start) >= s { break }
    }
    announcer?.stop()
    bridge?.stop()
    rx.stop()
    if let why = stopReason.value { fail(why, code: 1) }
    if let b = bridge { say("web: \(b.stats.json)") }
    say(statsJSON ? rx.statsJSON : "final: \(rx.stats.summary) | dx \(rx.stats.totalDX) dy \(rx.stats.totalDY)")
    if let r = recorder { say(r.summary) }
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
