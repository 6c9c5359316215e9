import Foundation
import RemoloPlayout
import RemoloLab
import RemoloTrace

// remolo demo: the product on one machine, scored (Sources/remolo/Demo.swift).

let demoUsage = """
usage: remolo demo [--scenario S1..S7] [--seconds N] [--seed N]
                   [--svg FILE|none] [--no-uinput]

A real receiver and a synthetic sender on this machine: real pairing, sealed
datagrams over loopback UDP through a relay that delays, clumps and loses
them as the scenario's Wi-Fi would, the pointer moved through uinput when a
device can be made (else into a recording sink, said so). Then the lab's
scores for this run beside on-arrival playout of the same arrivals, and a
plot of cursor speed for both. Then the sender types a line, and the demo
reads back what the receiver's keyboard typed. Exit status 0 only if the run worked end to
end (everything sent was relayed, opened, recorded and played).

  --scenario  S1 quiet home .. S7 clocks (default S2, the office)
  --seconds   how long the sender moves (default 10)
  --seed      the relay's random seed (default 1)
  --svg       the cursor-speed plot (default remolo-demo.svg; none: no plot)
  --no-uinput use the recording sink even where uinput works
"""

@Sendable func demoCommand(_ args: [String]) {
    var d = DemoOptions()
    var o = Options(args, usage: demoUsage)
    while let flag = o.next() {
        switch flag {
        case "--scenario": d.scenario = o.scenario()
        case "--seconds": d.seconds = o.double(in: 1...3600)
        case "--seed": d.seed = o.int(in: 0...UInt64.max)
        case "--svg": let v = o.value(); d.svgPath = v == "none" ? nil : v
        case "--no-uinput": d.uinput = false
        default: o.unknown()
        }
    }
    let tty = isatty(1) != 0
    say("remolo demo: \(d.scenario.rawValue) (\(d.scenario.title)) for \(Int(d.seconds)) s: receiver and sender on loopback, "
        + "paired with a fresh code, datagrams through the scenario's relay")
    let report: DemoReport
    do {
        report = try Demo.run(d) { s in
            guard tty else { return }
            let line = String(format: "  %4.1f s  delay %5.1f ms  late %5.2f %%  %4.0f datagrams/s", s.seconds, s.delayMs,
                              s.latePct, s.datagramsPerSecond)
            print("\r" + line, terminator: "")
            fflush(nil)
        }
    } catch {
        if tty { print("") }
        fail("the demo could not run: \(error)", code: 1)
    }
    if tty { print("") }
    let s = report.sent, r = report.relay, st = report.received
    say("output: \(report.output)")
    say("sent \(s.motionDatagrams) motion + \(s.heartbeats) heartbeats; relay lost \(r.lost), passed \(r.forwarded); "
        + "receiver opened \(st.opened), late \(st.latePackets), pointer moved \(st.totalDX),\(st.totalDY) px")
    say("")
    say("this run's arrivals, scored by the lab (default = what the receiver played; arrival = on-arrival playout):")
    print(tableText(report.rows), terminator: "")
    if let svg = report.svgPath { say("cursor speed, both playouts: \(svg)") }
    say("typed \(report.typed.debugDescription): the receiver's \(report.keyboard) typed "
        + "\(report.arrived.debugDescription) (\(report.keyEvents) key events, layout us)")
    if !report.problems.isEmpty {
        for p in report.problems { FileHandle.standardError.write(Data("remolo demo: \(p)\n".utf8)) }
        fail("the run did not work end to end", code: 1)
    }
}
