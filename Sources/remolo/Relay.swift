import Foundation
import RemoloPlayout
import RemoloLab
import RemoloTrace

// remolo relay: forward UDP datagrams with a scenario's delays, clumps and
// losses (Sources/RemoloLab/Relay.swift).

let relayUsage = """
usage: remolo relay --scenario NAME --listen ADDR:PORT --to ADDR:PORT
                    [--seed N] [--seconds S]

  Forwards every datagram received on --listen to --to, delayed, clumped
  and lost as the scenario's Wi-Fi link would (S1..S7, see 'remolo
  simulate --help'). Stops after --seconds, or on Ctrl-C; prints counts
  at the end.
"""

@Sendable func relayCommand(_ args: [String]) {
    var scenario: Scenario?
    var listen: String?, to: String?
    var seed: UInt64 = 1
    var seconds: Double?
    var o = Options(args, usage: relayUsage)
    while let flag = o.next() {
        switch flag {
        case "--scenario": scenario = o.scenario()
        case "--listen": listen = o.value()
        case "--to": to = o.value()
        case "--seed": seed = o.int(in: 0...UInt64.max)
        case "--seconds": seconds = o.double(in: 0.001...1e9)
        default: o.unknown()
        }
    }
    guard let sc = scenario, let l = listen, let t = to else { fail("relay needs --scenario, --listen and --to\n\(relayUsage)") }
    let relay: UDPRelay
    do { relay = try UDPRelay(scenario: sc, listen: l, to: t, seed: seed) } catch { fail(error.description) }
    FileHandle.standardError.write(Data("remolo relay: \(sc.rawValue) (\(sc.title)) listening on port \(relay.listenPort), forwarding to \(t)\n".utf8))
    signal(SIGINT) { _ in exit(130) }
    relay.run(seconds: seconds)
    let s = relay.stats
    print("received \(s.received) forwarded \(s.forwarded) lost \(s.lost) overflow \(s.overflow)")
}
