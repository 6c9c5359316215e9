import Foundation
import RemoloSession
import RemoloSystem
import Remolo

// remolo send: a synthetic sender for demos and tests.

let sendUsage = """
usage: remolo send --to HOST:PORT [--pair CODE] [--gesture circle|swipe|idle]
                   [--seconds N] [--size PIXELS] [--rate HZ] [--reconnect]

  --to        the receiver (remolo receive --listen ...)
  --pair      pair first with the code the receiver printed; then send
  --gesture   circle (default), swipe (a drag with the left button) or idle
              (heartbeats only)
  --seconds   how long (default 3; 0 with --pair: pair only)
  --size      circle radius / swipe length in pixels (default 200)
  --rate      frames per second, at most 120 (default 120)
  --reconnect when the session dies (receiver restarted, network gone),
              open a new one with back-off and carry on; motion of the
              outage is dropped. Without it a dead session ends the run
              with exit status 1.

The sender pings every 10 s; a receiver that answers nothing for 15 s, closes
the connection or says bye ends the session, and the sender says why.
"""

@Sendable func sendCommand(_ args: [String]) {
    var to: String?
    var code: PairingSecret?
    var shape = SyntheticGesture.Shape.circle
    var seconds = 3.0
    var size = 200.0
    var rate = 120.0
    var reconnect = false
    var i = 0
    while i < args.count {
        switch args[i] {
        case "-h", "--help": say(sendUsage); exit(0)
        case "--to": i += 1; to = optionValue(args, i, "--to")
        case "--pair":
            i += 1
            let typed = optionValue(args, i, "--pair")
            guard let c = PairingSecret(typed: typed) else {
                fail("'\(typed)' is not a pairing code (24 symbols like 7KQ2-M9XD-...); copy it from the receiver")
            }
            code = c
        case "--gesture":
            i += 1
            let g = optionValue(args, i, "--gesture")
            guard let s = SyntheticGesture.Shape(rawValue: g) else { fail("--gesture takes circle, swipe or idle") }
            shape = s
        case "--seconds":
            i += 1
            guard let v = Double(optionValue(args, i, "--seconds")), v >= 0 else { fail("--seconds takes N >= 0") }
            seconds = v
        case "--size":
            i += 1
            guard let v = Double(optionValue(args, i, "--size")), v > 0, v <= 5000 else { fail("--size takes 1-5000") }
            size = v
        case "--rate":
            i += 1
            guard let v = Double(optionValue(args, i, "--rate")), v >= 1, v <= 120 else { fail("--rate takes 1-120") }
            rate = v
        case "--reconnect": reconnect = true
        default: fail("unknown option \(args[i])\n\(sendUsage)")
        }
        i += 1
    }
    guard let to else { fail("send needs --to HOST:PORT\n\(sendUsage)") }
    let (host, port) = parseHostPort(to, what: "--to", defaultHost: "127.0.0.1")
    let (dir, identity) = loadIdentity()

    let tx: Sender
    do {
        if let code {
            tx = try Sender.pair(host: host, port: port, identity: identity, code: code,
                                 directory: dir, label: "\(host):\(port)")
            say("paired with receiver \(tx.channel.peer.fingerprint)")
        } else {
            // A missing file is an empty list; an unreadable one is an error
            // that says how to fix it (it would hide every paired receiver).
            let known = try PeerList.load(from: dir.file(PeerList.knownReceiversFile))
            guard let receiver = known.key(labelled: "\(host):\(port)") ?? (known.entries.count == 1 ? known.entries[0].key : nil) else {
                fail(known.entries.isEmpty
                     ? "not paired with any receiver: run `remolo pair` on the receiver, then `remolo send --to \(to) --pair CODE`"
                     : "not paired with \(host):\(port) (known: \(known.entries.map(\.label).joined(separator: ", "))); pair with --pair CODE",
                     code: 1)
            }
            tx = try Sender.connect(host: host, port: port, identity: identity, receiver: receiver)
        }
    } catch {
        fail("\(error)", code: 1)
    }
    var gesture = SyntheticGesture(shape, size: size)
    var failure: String?
    do {
        if seconds > 0 {
            try tx.run(&gesture, seconds: seconds, rate: rate, reconnect: reconnect, onEvent: { say("remolo: \($0)") })
        }
        tx.close()
    } catch let e as SessionError {
        failure = "session lost: \(e)"
    } catch {
        tx.close(.protocolError)
        failure = "sending: \(error)"
    }
    let s = tx.stats
    say("sent: motion \(s.motionDatagrams) heartbeats \(s.heartbeats) buttons \(s.buttonsDown) down \(s.buttonsUp) up"
          + " dx_q8 \(s.totalDX) dy_q8 \(s.totalDY) errors \(s.sendErrors + s.sessionsLost)"
          + " sessions_lost \(s.sessionsLost) reconnects \(s.reconnects) frames_dropped \(s.framesDropped)")
    if let failure { fail(failure, code: 1) }
}
