import Foundation
import RemoloSession
import RemoloSystem
import Remolo

// remolo send: a synthetic sender for demos and tests.

let sendUsage = """
usage: remolo send --to HOST:PORT [--pair CODE] [--gesture circle|swipe|idle]
                   [--seconds N] [--size PIXELS] [--rate HZ] [--reconnect] [--over udp|tcp]

  --to        the receiver (remolo receive --listen ...)
  --pair      pair first with the code the receiver printed; then send
  --gesture   circle (default), swipe (a drag with the left button) or idle
              (heartbeats only)
  --seconds   how long (default 3; 0 with --pair: pair only)
  --size      circle radius / swipe length in pixels (default 200)
  --rate      frames per second, at most 120 (default 120)
  --over      udp (default): datagrams, and motion in the control channel
              (about 30 messages/s) while the receiver's receipts show that
              none get through; tcp: always the control channel
  --reconnect when the session dies (receiver restarted, network gone),
              open a new one with back-off and carry on; motion of the
              outage is dropped. Without it a dead session ends the run
              with exit status 1.

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
        case "--seconds": seconds = o.double(in: 0...86_400)
        case "--size": size = o.double(in: 1...5000)
        case "--rate": rate = o.double(in: 1...120)
        case "--reconnect": reconnect = true
        case "--over":
            switch o.value() {
            case "udp": transport = .udp
            case "tcp": transport = .tcp
            case let v: fail("--over takes udp or tcp, not '\(v)'")
            }
        default: o.unknown()
        }
    }
    guard let (host, port) = to else { fail("send needs --to HOST:PORT\n\(sendUsage)") }
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
                     ? "not paired with any receiver: run `remolo pair` on the receiver, then `remolo send --to \(host):\(port) --pair CODE`"
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
            try tx.run(&gesture, seconds: seconds, rate: rate, reconnect: reconnect, over: transport,
                       onEvent: { say("remolo: \($0)") })
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
          + " sessions_lost \(s.sessionsLost) reconnects \(s.reconnects) frames_dropped \(s.framesDropped)"
          + " fallback \(s.fallbackMessages) fallback_dx_q8 \(s.fallbackDX) fallback_dy_q8 \(s.fallbackDY)"
          + " to_tcp \(s.switchesToTCP) to_udp \(s.switchesToUDP)")
    if let failure { fail(failure, code: 1) }
}
