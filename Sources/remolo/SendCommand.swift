import Foundation
import RemoloSession
import RemoloSystem
import RemoloPlayout
import RemoloSender
import RemoloInput
import RemoloDiscovery

// remolo send: a touchpad or mouse of this machine (--device), or a
// synthetic gesture for demos and tests.

let sendUsage = """
usage: remolo send [--to HOST:PORT] [--pair CODE] [--gesture circle|swipe|idle]
                   [--seconds N] [--size PIXELS] [--rate HZ] [--reconnect]
                   [--over udp|tcp] [--type TEXT] [--no-redundancy]
       remolo send [--to HOST:PORT] --device PATH|auto
                   [--grab [--keyboard PATH|auto]]
                   [--accel A] [--pointer-speed S] [--scroll-speed S]
                   [--no-natural-scroll] [--no-tap] [--frame-hz HZ]
                   [--touchpad-size WxH] [--seconds N] [--over udp|tcp]
                   [--no-redundancy] [--no-gestures]

  --to        the receiver (remolo receive --listen ...): HOST:PORT,
              [IPV6]:PORT, or a host alone (port \(defaultPort)); an IPv6
              link-local address needs its zone: [fe80::1%wlan0]:\(defaultPort).
              Without --to: the known receiver that announces itself on the
              LAN (\(RemoloService.type), see `remolo discover`)
  --pair      pair first with the code the receiver printed; then send
  --gesture   circle (default), swipe (a drag with the left button) or idle
              (heartbeats only)
  --seconds   how long (default 3; 0 with --pair: pair only, or type only)
  --type TEXT after the gesture, type TEXT on the receiver (in the
              receiver's keyboard layout; \\n is Enter, \\t is Tab); exit
              status 1 when the receiver does not take keys from this sender
  --size      circle radius / swipe length in pixels (default 200)
  --rate      frames per second, at most 120 (default 120)
  --over      udp (default): datagrams, and motion in the control channel
              (about 30 messages/s) while the receiver's receipts show that
              none get through; tcp: always the control channel
  --no-redundancy
              send 49-byte datagrams: a lost one's motion is lost. By default
              the sender asks for the redundancy feature in its hello, and
              where the receiver grants it each datagram carries the
              session's running totals (65 bytes), from which the receiver
              plays the motion of lost ones
  --no-gestures
              with a touchpad: three fingers do nothing and two always
              scroll. By default the sender asks for gestures in its hello,
              and where the receiver grants them three- and four-finger
              swipes and two-finger pinches reach its desktop as gestures
  --reconnect when the session dies (receiver restarted, network gone),
              open a new one with back-off and carry on; motion of the
              outage is dropped. Without it a dead session ends the run
              with exit status 1.

A device (`remolo devices` lists them):
  --device    an event node (/dev/input/eventN) or auto (the first touchpad,
              else the first mouse); sends until let go, or --seconds N
  --grab      take the device exclusively (EVIOCGRAB): the local pointer
              stays still while it drives the receiver's
  --keyboard  forward a keyboard too (needs --device and --grab): an event
              node, or auto (every keyboard with the letters A-Z, the
              pointer device and a receiver's own devices excepted, and
              those plugged in later). Each is grabbed once no key is held
              on it, so its keys reach only the receiver: presses and
              releases, at their kernel time; never autorepeat (the
              receiver's desktop repeats held keys). A receiver that does
              not take keys (older version, --no-keyboard, this sender not
              allowed) is said once with its reason; the keyboards are then
              not grabbed and type on this machine, and the pointer goes on
  --accel     the touch curve's strength, 0 (off) to 10 (default 1); a mouse
              moves 1:1 (the receiver's compositor accelerates it)
  --pointer-speed  pixels per point, 0.05-20 (default 1)
  --scroll-speed   two-finger scroll multiplier, 0.05-20 (default 1)
  --no-natural-scroll  fingers down scroll down (default: content follows)
  --no-tap    taps do not click
  --frame-hz  frames per second, 60-1000 (default 120)
  --touchpad-size  the touchpad's width x height in millimetres (e.g.
              100x60), for one that reports no resolution (or a wrong one);
              default: from the device's ABS_MT_POSITION resolution
  Let go: Ctrl+Alt+Esc held on any keyboard of this machine (read;
  grabbed only with --keyboard, and the Esc that completes the chord is
  never sent), or Ctrl+C / SIGTERM. Either way the grabs end and every
  held button and key is released on the receiver. With --device the
  sender always reconnects (one line says so); motion and keys of an
  outage are dropped (a key still held is pressed again on the new
  session). A device or keyboard unplugged or gone across a suspend is
  said so, its buttons or keys released, and read again when it comes
  back.

The sender pings every second; a receiver that answers nothing for 6 s, closes
the connection or says bye ends the session, and the sender says why.
"""

@Sendable func sendCommand(_ args: [String]) {
    var to: (host: String, port: UInt16)?
    var code: PairingSecret?
    var shape = SyntheticGesture.Shape.circle
    var seconds = 3.0
    var size = 200.0
    var rate = 120.0
    var reconnect = false
    var transport = SenderTransport.udp
    var device: String?
    var run = DeviceRunOptions()
    var touchOptions: [(inout TouchpadConfig) -> Void] = []
    var gestureGiven = false, secondsGiven = false
    var typeText: String?
    var redundancy = true
    var gestures = true
    var o = Options(args, usage: sendUsage)
    while let flag = o.next() {
        switch flag {
        case "--to": to = o.hostPort(defaultHost: "127.0.0.1")
        case "--pair":
            let typed = o.value()
            guard let c = PairingSecret(typed: typed) else {
                fail("'\(typed)' is not a pairing code (24 symbols like 7KQ2-M9XD-...); copy it from the receiver")
            }
            code = c
        case "--gesture":
            let g = o.value()
            guard let s = SyntheticGesture.Shape(rawValue: g) else { fail("--gesture takes circle, swipe or idle, not '\(g)'") }
            shape = s
            gestureGiven = true
        case "--seconds": seconds = o.double(in: 0...86_400); secondsGiven = true
        case "--type": typeText = o.value().replacingOccurrences(of: "\\n", with: "\n").replacingOccurrences(of: "\\t", with: "\t")
        case "--device": device = o.value()
        case "--grab": run.grab = true
        case "--keyboard":
            let v = o.value()
            run.keyboard = v == "auto" ? .automatic : .node(v)
        case "--accel": run.input.acceleration = o.double(in: 0...10)
        case "--pointer-speed": run.input.pointerSpeed = o.double(in: 0.05...20)
        case "--scroll-speed": run.input.scrollSpeed = o.double(in: 0.05...20)
        case "--no-natural-scroll": run.input.naturalScrolling = false
        case "--no-tap": touchOptions.append { $0.tapToClick = false }
        case "--frame-hz": run.input.frameRateHz = o.int(in: 60...1000)
        case "--touchpad-size":
            let v = o.value()
            guard let size = TouchpadSize(v) else {
                fail("--touchpad-size takes WIDTHxHEIGHT in millimetres, 10-1000 each (e.g. 100x60), not '\(v)'")
            }
            run.touchpadSizeMm = size
        case "--size": size = o.double(in: 1...5000)
        case "--rate": rate = o.double(in: 1...120)
        case "--reconnect": reconnect = true
        case "--no-redundancy": redundancy = false
        case "--no-gestures": gestures = false
        case "--over":
            switch o.value() {
            case "udp": transport = .udp
            case "tcp": transport = .tcp
            case let v: fail("--over takes udp or tcp, not '\(v)'")
            }
        default: o.unknown()
        }
    }
    if device != nil && typeText != nil { fail("--type goes with a gesture, not --device: a device run forwards a keyboard with --keyboard") }
    if device != nil && gestureGiven { fail("--device and --gesture exclude each other: send a device's input or a synthetic gesture") }
    if device == nil && run.grab { fail("--grab needs --device PATH|auto") }
    if run.keyboard != nil && (device == nil || !run.grab) {
        fail("--keyboard needs --device PATH|auto and --grab: keys are forwarded only from a keyboard this sender "
             + "holds exclusively, next to a pointer it holds the same way (e.g. --device auto --grab --keyboard auto)")
    }
    if device == nil && run.touchpadSizeMm != nil { fail("--touchpad-size needs --device PATH|auto") }
    let (dir, identity) = loadIdentity()
    if to == nil && code != nil {
        fail("--pair needs --to HOST:PORT: a receiver not paired yet is not among the known ones "
             + "(`remolo discover` lists the receivers on the LAN with their addresses)")
    }
    var found: PublicKey?
    let (host, port): (String, UInt16)
    if let to { (host, port) = to } else { (host, port, found) = findKnownReceiver(dir) }
    let label = formatHostPort(host, port)
    // Pairing alone (`--seconds 0`, e.g. with `remolo pair`, which pairs
    // once and ends) sends nothing: no hello is said for redundancy.
    let asksRedundancy = redundancy && (device != nil || seconds > 0)
    // Gestures come from a device's touchpad only.
    let asksGestures = gestures && device != nil

    let tx: Sender
    do {
        if let code {
            tx = try Sender.pair(host: host, port: port, identity: identity, code: code,
                                 directory: dir, label: label, keyboard: run.keyboard != nil || typeText != nil,
                                 redundancy: asksRedundancy, gestures: asksGestures)
            say("paired with receiver \(tx.channel.peer.fingerprint)")
        } else {
            // A missing file is an empty list; an unreadable one is an error
            // that says how to fix it (it would hide every paired receiver).
            let known = try PeerList.load(from: dir.file(PeerList.knownReceiversFile))
            guard let receiver = found ?? known.key(labelled: label)
                    ?? (known.entries.count == 1 ? known.entries[0].key : nil) else {
                fail(known.entries.isEmpty
                     ? "not paired with any receiver: run `remolo pair` on the receiver, then `remolo send --to \(label) --pair CODE`"
                     : "not paired with \(label) (known: \(known.entries.map(\.label).joined(separator: ", "))); pair with --pair CODE",
                     code: 1)
            }
            // With --keyboard the device run says whether the receiver
            // takes keys, and why not, once.
            tx = try Sender.connect(host: host, port: port, identity: identity, receiver: receiver,
                                    keyboard: run.keyboard != nil || typeText != nil, redundancy: asksRedundancy,
                                    gestures: asksGestures,
                                    // A device run says itself, once, why keys are not taken.
                                    log: { if typeText != nil { say("remolo: \($0)") } })
        }
    } catch {
        fail("\(error)", code: 1)
    }
    if let device {
        run.path = device == "auto" ? nil : device
        run.seconds = secondsGiven ? seconds : nil
        run.transport = transport
        if !touchOptions.isEmpty {
            // Geometry comes from the device; the placeholder is replaced.
            var t = TouchpadConfig(geometry: try! TouchpadGeometry(widthMm: 100, heightMm: 60))
            for f in touchOptions { f(&t) }
            run.input.touchpad = t
        }
        sendDevice(tx, run)
    }
    var gesture = SyntheticGesture(shape, size: size)
    var typedChars = 0
    let failure = runSession(tx, typedChars: { typedChars }) {
        if seconds > 0 {
            try tx.run(&gesture, seconds: seconds, rate: rate, reconnect: reconnect, over: transport,
                       onEvent: { say("remolo: \($0)") })
        }
        if let text = typeText {
            guard try tx.type(text, at: senderClockUs()) else {
                throw SenderError("--type: the receiver does not take keys from this sender: "
                                  + (tx.receiverHello?.keyboard.description ?? "it is an older version"))
            }
            // The receiver answers what it could not type with the pong
            // that follows: wait one keepalive round for it.
            let refusedBefore = tx.keyStats.refused
            let until = MonotonicClock.seconds() + 1.5
            while MonotonicClock.seconds() < until { try tx.keepAlive(); usleep(50_000) }
            typedChars = text.count
            let refused = tx.keyStats.refused - refusedBefore
            say("typed \(text.count) character\(text.count == 1 ? "" : "s") on the receiver, in its keyboard layout"
                + (refused == 0 ? "" : "; it refused \(refused) piece\(refused == 1 ? "" : "s") (said above)"))
        }
    }
    if let failure { fail(failure, code: 1) }
}

/// Runs `body` on the session and closes it, then prints the `sent:` line
/// every run ends with (the tests read its fields by name). Returns what
/// failed, if anything.
private func runSession(_ tx: Sender, typedChars: () -> Int = { 0 }, _ body: () throws -> Void) -> String? {
    var failure: String?
    do {
        try body()
        tx.close()
    } catch let e as SessionError {
        failure = "session lost: \(e)"
    } catch {
        // The sender's own failure (no device, a refused --type): the
        // receiver did nothing wrong, so the bye says the sender is going
        // away rather than blaming the protocol.
        tx.close(.shuttingDown)
        failure = "sending: \(error)"
    }
    let s = tx.stats
    say("sent: motion \(s.motionDatagrams) heartbeats \(s.heartbeats) buttons \(s.buttonsDown) down \(s.buttonsUp) up"
          + " dx_q8 \(s.totalDX) dy_q8 \(s.totalDY) scroll \(s.scrollDatagrams) scroll_v_q8 \(s.totalScrollV)"
          + " scroll_h_q8 \(s.totalScrollH) errors \(s.sendErrors + s.sessionsLost)"
          + " sessions_lost \(s.sessionsLost) reconnects \(s.reconnects) frames_dropped \(s.framesDropped)"
          + " fallback \(s.fallbackMessages) fallback_dx_q8 \(s.fallbackDX) fallback_dy_q8 \(s.fallbackDY)"
          + " to_tcp \(s.switchesToTCP) to_udp \(s.switchesToUDP) keys \(tx.keyStats.sent) keys_refused \(tx.keyStats.refused)"
          + " text_chars \(typedChars())"
          + " datagram_bytes \(tx.datagramBytes)")
    return failure
}

/// The device run, then the same `sent:` line as a gesture run and a
/// `device:` line with what was measured.
func sendDevice(_ tx: Sender, _ options: DeviceRunOptions) -> Never {
    var report: DeviceRunReport?
    let failure = runSession(tx) { report = try tx.runDevice(options, say: say) }
    if let r = report {
        say("device: ended_by \(r.endedBy) frames \(r.frames) samples_sent \(r.samplesSent)"
              + " sample_to_send_us_p50 \(r.sampleToSendUs.p50) sample_to_send_us_p99 \(r.sampleToSendUs.p99)"
              + " sample_to_send_us_max \(r.sampleToSendUs.max) cpu_pct \(String(format: "%.3f", r.cpuPercent))"
              + " thread_cpu_pct \(String(format: "%.3f", r.threadCPUPercent))"
              + " seconds \(String(format: "%.1f", r.seconds)) unplugs \(r.unplugs) overflows \(r.overflows)"
              + " keys_sent \(r.keysSent) keys_not_sent \(r.keysNotSent) repeats_ignored \(r.repeatsIgnored)"
              + " keyboard_unplugs \(r.keyboardUnplugs)")
    }
    if let failure { fail(failure, code: 1) }
    exit(0)
}

/// Without --to: browses the LAN for a few seconds and picks the receiver
/// whose announced fingerprint is in known-receivers. The announcement only
/// says where to go; the handshake then proves the key (Noise IK with the
/// key stored at pairing), so a false announcement cannot get a session.
private func findKnownReceiver(_ dir: ConfigDirectory) -> (String, UInt16, PublicKey) {
    let known: PeerList
    do { known = try PeerList.load(from: dir.file(PeerList.knownReceiversFile)) } catch { fail("\(error)", code: 1) }
    guard !known.entries.isEmpty else {
        fail("not paired with any receiver: run `remolo pair` on the receiver, then "
             + "`remolo send --to HOST:PORT --pair CODE`", code: 1)
    }
    let seen: [DiscoveredReceiver]
    do {
        seen = try Browser.browse(seconds: discoverSeconds, settle: true)
    } catch {
        fail("cannot look for receivers on the LAN: \(error); or give the receiver with --to HOST:PORT", code: 1)
    }
    // Known receivers seen, by key: one receiver may be seen several
    // times (each interface, IPv4 and IPv6).
    var byKey: [(entry: PeerList.Entry, seen: [DiscoveredReceiver])] = []
    for e in known.entries {
        let mine = seen.filter { $0.matches(fingerprint: e.key.fingerprint) }
        if !mine.isEmpty { byKey.append((e, mine)) }
    }
    guard !byKey.isEmpty else {
        let others = seen.isEmpty ? "no receiver announces itself"
            : "\(seen.count) announcement\(seen.count == 1 ? "" : "s") seen, none from a known receiver"
        fail("no known receiver found on the LAN within \(formatSeconds(discoverSeconds)) s (\(others)); check that "
             + "`remolo receive` runs there (without --no-announce) and avahi-daemon runs on both machines, "
             + "or give the receiver with --to HOST:PORT", code: 1)
    }
    guard byKey.count == 1 else {
        let list = byKey.map { "\($0.entry.label) (\($0.entry.key.fingerprint)) at \($0.seen[0].address)" }
        fail("several known receivers on the LAN: \(list.joined(separator: "; ")); pick one with --to HOST:PORT", code: 1)
    }
    let (entry, mine) = byKey[0]
    if let v = mine.first?.protocolVersion, v != RemoloProtocol.version {
        fail("receiver \(entry.label) speaks protocol version \(v), this sender \(RemoloProtocol.version): "
             + "update the older end", code: 1)
    }
    // IPv4 first (it works with any listener), then routable IPv6, then
    // link-local IPv6 (with its zone): the network without a router.
    func rank(_ r: DiscoveredReceiver) -> Int { !r.isIPv6 ? 0 : (r.host.contains("%") ? 2 : 1) }
    let best = mine.min { rank($0) < rank($1) }!
    say("found receiver \(entry.label) (\(entry.key.fingerprint)) at \(best.address) on \(best.interface)")
    return (best.host, best.port, entry.key)
}
