import Foundation
import Remolo

// remolo relay: forward UDP datagrams with a scenario's delays, clumps and
// losses (Sources/Remolo/Lab/Relay.swift).

let relayUsage = """
usage: remolo relay --scenario NAME --listen ADDR:PORT --to ADDR:PORT [--seed N] [--seconds S]

  Forwards every datagram received on --listen to --to, delayed, clumped and
  lost as the scenario's Wi-Fi link would (S1..S7, see 'remolo simulate --help').
  Stops after --seconds, or on Ctrl-C; prints counts at the end.
"""

@Sendable func relayCommand(_ args: [String]) {
    var scenario: Scenario?
    var listen: String?, to: String?
    var seed: UInt64 = 1
    var seconds: Double?
    var i = 0
    func value() -> String {
        i += 1
        guard i < args.count else { fail("\(args[i - 1]) needs a value\n\(relayUsage)") }
        return args[i]
    }
    while i < args.count {
        switch args[i] {
        case "-h", "--help": print(relayUsage); exit(0)
        case "--scenario":
            let v = value()
            guard let s = Scenario(name: v) else {
                fail("unknown scenario '\(v)': valid are " + Scenario.allCases.map { "\($0.rawValue) (\($0.title))" }.joined(separator: ", "))
            }
            scenario = s
        case "--listen": listen = value()
        case "--to": to = value()
        case "--seed":
            let v = value()
            guard let n = UInt64(v) else { fail("--seed takes a whole number, not '\(v)'") }
            seed = n
        case "--seconds":
            let v = value()
            guard let d = Double(v), d > 0 else { fail("--seconds takes a positive number, not '\(v)'") }
            seconds = d
        default: fail("unknown option '\(args[i])'\n\(relayUsage)")
        }
        i += 1
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
