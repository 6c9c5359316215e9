import Foundation
import RemoloService
import RemoloSession
import RemoloSystem
import RemoloPlayout
import RemoloWeb

// remolo pair: the receiver issues a pairing code and waits for one sender.

let pairUsage = """
usage: remolo pair [--listen ADDR:PORT] [--timeout SECONDS]
                   [--keyboard allow|deny]

Issues a one-time pairing code, prints it, and waits for one sender to pair
with it (on the sender: remolo send --to THIS-HOST:PORT --pair CODE ...).
The sender's key is then kept in authorized-senders, and what it may do in
sender-rights. Ends at once when the code is used, burned by a wrong guess,
or expires (a code lives 5 minutes).

  --listen    address and TCP port to listen on (default [::]:7420, IPv6 and
              IPv4)
  --timeout   stop waiting after this many seconds (default and at most
              300: the code's lifetime; a longer wait ends with the code)
  --keyboard  whether the sender pairing now may type on this machine, not
              only point (default allow; change it later with
              remolo peers allow-keyboard / deny-keyboard FINGERPRINT)

Pairing also works on a running receiver: remolo receive --pair.
"""

@Sendable func pairCommand(_ args: [String]) {
    var (host, port) = (defaultListenHost, defaultPort)
    var timeout = PairingAuthority.defaultLifetime
    var keyboard = KeyboardRight.allow
    var o = Options(args, usage: pairUsage)
    while let flag = o.next() {
        switch flag {
        case "--listen": (host, port) = o.hostPort(defaultHost: defaultListenHost)
        case "--timeout": timeout = o.double(in: 0.001...86_400)
        case "--keyboard": keyboard = o.keyboardRight()
        default: o.unknown()
        }
    }
    let (dir, identity) = loadIdentity()
    let trust: ReceiverTrust
    let listener: TCPListener
    do {
        trust = try ReceiverTrust(identity: identity, directory: dir)
    } catch {
        fail("\(error)", code: 1)
    }
    do {
        listener = try TCPListener(host: host, port: port)
    } catch {
        // Not a mistake in the command line (status 2): the port is taken,
        // most often by a receiver that can issue the code itself.
        fail("\(error). If it is a receiver (the service, or remolo receive), pair through it: for the service, "
             + "`pair = true` in \(ConfigDirectory.serviceDefault)/\(ReceiveConfig.fileName), `sudo systemctl restart remolo`, "
             + "and the code in `journalctl -u remolo`; else `remolo receive --pair`; or pair here on another "
             + "port with --listen :PORT", code: 1)
    }
    let outcome: PairingOutcome
    do {
        outcome = try ControlServer.pairOnce(
            listener: listener, trust: trust, wait: timeout, keyboard: keyboard,
            show: { code in
                say("receiver fingerprint: \(identity.fingerprint)")
                say("pairing code: \(code.display)")
                say("(valid 5 minutes, for one sender)")
                say("on the sender: " + senderPairCommand(host: host, port: listener.port, code: code.display))
            },
            onRejected: { e in FileHandle.standardError.write(Data("remolo: refused a connection: \(e)\n".utf8)) })
    } catch {
        fail("\(error)", code: 1)
    }
    switch outcome {
    case .paired(let k):
        let fp = k.fingerprint
        say("paired with sender \(fp): " + (trust.mayType(k) ? "may type" : "may not type (remolo peers allow-keyboard \(fp))"))
    case .burned(let lock):
        fail("a wrong code was tried, so this code is burned; pairing is locked out for \(max(1, Int(lock.rounded(.up)))) s. "
             + "Run `remolo pair` again after that and type the code carefully.", code: 1)
    case .expired: fail("the code expired (5 minutes); run `remolo pair` again for a new code", code: 1)
    case .gaveUp: fail("no sender paired within \(Int(timeout)) s; run `remolo pair` again for a new code", code: 1)
    }
}

/// The command a sender pairs with, ready to copy: this host's LAN address
/// when the receiver listens on every address.
func senderPairCommand(host: String, port: UInt16, code: String) -> String {
    let shown = host == "0.0.0.0" || host == "::" ? (WebBridge.lanAddress() ?? "<this host>") : host
    return "remolo send --to \(formatHostPort(shown, port)) --pair \(code) --seconds 0"
}
