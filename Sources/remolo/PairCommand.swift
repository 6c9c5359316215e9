import Foundation
import Remolo

// remolo pair: the receiver issues a pairing code and waits for one sender.

let pairUsage = """
usage: remolo pair [--listen ADDR:PORT] [--timeout SECONDS]

Issues a one-time pairing code, prints it, and waits for one sender to pair
with it (on the sender: remolo send --to THIS-HOST:PORT --pair CODE ...).
The sender's key is then kept in authorized-senders.

  --listen    address and TCP port to listen on (default 0.0.0.0:7420)
  --timeout   give up after this many seconds (default 300, the code's lifetime)

Pairing also works on a running receiver: remolo receive --pair.
"""

@Sendable func pairCommand(_ args: [String]) {
    var listen = "0.0.0.0:\(defaultPort)"
    var timeout = PairingAuthority.defaultLifetime
    var i = 0
    while i < args.count {
        switch args[i] {
        case "-h", "--help": say(pairUsage); exit(0)
        case "--listen": i += 1; listen = optionValue(args, i, "--listen")
        case "--timeout":
            i += 1
            guard let t = Double(optionValue(args, i, "--timeout")), t > 0 else { fail("--timeout takes seconds > 0") }
            timeout = t
        default: fail("unknown option \(args[i])\n\(pairUsage)")
        }
        i += 1
    }
    let (host, port) = parseHostPort(listen, what: "--listen")
    let (dir, identity) = loadIdentity()
    let trust: ReceiverTrust
    let listener: TCPListener
    do {
        trust = try ReceiverTrust(identity: identity, directory: dir,
                                  pairing: PairingAuthority(lifetime: timeout))
        listener = try TCPListener(host: host, port: port)
    } catch {
        fail("\(error)")
    }
    let paired = DispatchSemaphore(value: 0)
    let server = ReceiverServer(
        listener: listener, trust: trust,
        onRejected: { e in FileHandle.standardError.write(Data("remolo: refused a connection: \(e)\n".utf8)) },
        onSession: { channel in
            if channel.result.isPairing {
                say("paired with sender \(channel.peer.fingerprint)")
                paired.signal()
            }
            channel.close(saying: .normal)
        })
    let code = trust.pairing.issue()
    say("receiver fingerprint: \(identity.fingerprint)")
    say("pairing code: \(code.display)")
    say("on the sender: remolo send --to <this host>:\(listener.port) --pair \(code.display) --seconds 0")
    Thread { server.run() }.start()
    let ok = paired.wait(timeout: .now() + timeout) == .success
    server.stop()
    if !ok { fail("no sender paired within \(Int(timeout)) s; run `remolo pair` again for a new code", code: 1) }
}
