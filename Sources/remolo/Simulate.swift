import Foundation
import Remolo

// remolo simulate: network scenarios (or a recorded trace) through the
// playout core, scored (Sources/Remolo/Lab).

let simulateUsage = """
usage: remolo simulate [--scenario NAME|all] [--policy NAME|all] [--seeds N]
                       [--display-hz 60|120|144] [--sender-hz 60-240] [--duration SECONDS]
                       [--seed S] [--json|--markdown] [--trace FILE] [--write-trace FILE] [--svg FILE]

  --scenario     S1..S7, a comma list, or all (default all)
  --policy       arrival, fixed:MS, seed, default, oracle (rate 0.1), oracle:RATE,
                 a comma list, or all (default all)
  --seeds        runs per scenario, pooled: seeds S..S+N-1 (default 5)
  --seed         the first seed S (default 1); --svg and --write-trace use seed S alone
  --display-hz   vsync rate the cursor is sampled at (default 120)
  --sender-hz    the sender's frame rate (default 120)
  --duration     seconds of gestures per run (default 30)
  --json         one JSON object per row instead of the table
  --markdown     the table as Markdown
  --dump-frames FILE  per-vsync cursor and shifted ideal of the first policy (one scenario, --seed)
  --trace FILE   replay a recorded arrivals trace instead of scenarios
  --write-trace FILE  save one scenario's arrivals (seed --seed) in the trace format
  --svg FILE     plots for one scenario and seed (--seed, default 1), or for --trace
"""

struct SimulateOptions {
    var scenarios: [Scenario] = Scenario.allCases
    var policies: [Policy] = Policy.all
    var seeds = 5
    var seed = 1
    var displayHz = 120
    var senderHz = 120
    var duration = 30.0
    var json = false
    var markdown = false
    var trace: String?
    var writeTrace: String?
    var svg: String?
    var dump: String?
}

func parseSimulate(_ args: [String]) throws(LabError) -> SimulateOptions {
    var o = SimulateOptions()
    var i = 0
    func value(_ flag: String) throws(LabError) -> String {
        i += 1
        guard i < args.count else { throw LabError("\(flag) needs a value\n\(simulateUsage)") }
        return args[i]
    }
    func int(_ flag: String, _ range: ClosedRange<Int>) throws(LabError) -> Int {
        let v = try value(flag)
        guard let n = Int(v), range.contains(n) else { throw LabError("\(flag) takes a whole number in \(range.lowerBound)...\(range.upperBound), not '\(v)'") }
        return n
    }
    while i < args.count {
        let a = args[i]
        switch a {
        case "-h", "--help": print(simulateUsage); exit(0)
        case "--scenario":
            let v = try value(a)
            if v == "all" { o.scenarios = Scenario.allCases } else {
                o.scenarios = []
                for n in v.split(separator: ",") {
                    guard let s = Scenario(name: String(n)) else {
                        throw LabError("unknown scenario '\(n)': valid are " +
                                       Scenario.allCases.map { "\($0.rawValue) (\($0.title))" }.joined(separator: ", ") + ", or all")
                    }
                    o.scenarios.append(s)
                }
            }
        case "--policy":
            let v = try value(a)
            if v == "all" { o.policies = Policy.all } else {
                o.policies = []
                for n in v.split(separator: ",") { o.policies.append(try Policy.parse(String(n))) }
            }
        case "--seeds": o.seeds = try int(a, 1...1000)
        case "--seed": o.seed = try int(a, 0...Int(Int32.max))
        case "--display-hz":
            o.displayHz = try int(a, 1...1000)
            guard [60, 120, 144].contains(o.displayHz) else { throw LabError("--display-hz is 60, 120 or 144, not \(o.displayHz)") }
        case "--sender-hz": o.senderHz = try int(a, 60...240)
        case "--duration":
            let v = try value(a)
            guard let d = Double(v), d >= 1, d <= 3600 else { throw LabError("--duration takes seconds, 1...3600, not '\(v)'") }
            o.duration = d
        case "--json": o.json = true
        case "--markdown": o.markdown = true
        case "--dump-frames": o.dump = try value(a)
        case "--trace": o.trace = try value(a)
        case "--write-trace": o.writeTrace = try value(a)
        case "--svg": o.svg = try value(a)
        default: throw LabError("unknown option '\(a)'\n\(simulateUsage)")
        }
        i += 1
    }
    if o.writeTrace != nil || (o.svg != nil && o.trace == nil) {
        guard o.scenarios.count == 1 else {
            throw LabError("--write-trace and --svg take one scenario: add --scenario S1 (or S2..S7)")
        }
    }
    return o
}

func fmt(_ v: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", v) }

func jsonRow(_ r: LabRow) -> String {
    let s = r.scores
    func n(_ v: Double) -> String { v.isFinite ? String(format: "%.4f", v) : "null" }
    return "{\"scenario\":\"\(r.scenario)\",\"policy\":\"\(r.policy)\",\"latency_ms_p50\":\(n(s.latencyMsP50)),"
        + "\"latency_ms_p95\":\(n(s.latencyMsP95)),\"late_pct\":\(n(s.latePct)),\"starved_pct\":\(n(s.starvedPct)),"
        + "\"lost_pct\":\(n(s.lostPct)),\"jitter_ratio\":\(n(s.jitterRatio)),\"jitter_px_p99\":\(n(s.jitterPxP99)),"
        + "\"stutter_pct_mean\":\(n(s.stutterPctMean)),\"stutter_pct_max\":\(n(s.stutterPctMax)),"
        + "\"max_error_px\":\(n(s.maxErrorPx)),\"max_jump_ratio\":\(n(s.maxJumpRatio))}"
}

func tableText(_ rows: [LabRow]) -> String {
    let head = ["scenario", "policy", "lat p50", "lat p95", "late%", "starved%", "lost%", "jitter", "J p99",
                "stutter%", "stut max%", "max err", "max jump"]
    var cells = [head]
    for r in rows {
        let s = r.scores
        cells.append([r.scenario, r.policy, fmt(s.latencyMsP50), fmt(s.latencyMsP95), fmt(s.latePct), fmt(s.starvedPct),
                      fmt(s.lostPct), fmt(s.jitterRatio, 3), fmt(s.jitterPxP99), fmt(s.stutterPctMean), fmt(s.stutterPctMax),
                      fmt(s.maxErrorPx, 1), fmt(s.maxJumpRatio, 1)])
    }
    var widths = [Int](repeating: 0, count: head.count)
    for row in cells { for (k, c) in row.enumerated() { widths[k] = max(widths[k], c.count) } }
    var out = ""
    for (n, row) in cells.enumerated() {
        out += row.enumerated().map { k, c in
            k < 2 ? c.padding(toLength: widths[k], withPad: " ", startingAt: 0)
                  : String(repeating: " ", count: widths[k] - c.count) + c
        }.joined(separator: "  ") + "\n"
        if n == 0 { out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n" }
    }
    out += "latency ms (added, M1); jitter = RMS(J)/RMS(|dP|), J p99 px (M3); stutter = bad frames per 64-frame window (M4); max err px, max jump = max |dC|/max(|dP|,1px) (M5)\n"
    return out
}

func markdownText(_ rows: [LabRow]) -> String {
    var out = "| scenario | policy | latency p50 ms | latency p95 ms | late % | starved % | lost % | jitter ratio | J p99 px | stutter % mean | stutter % max | max error px | max jump |\n"
    out += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
    for r in rows {
        let s = r.scores
        let bold = r.policy == "default"
        let name = bold ? "**default**" : r.policy
        out += "| \(r.scenario) | \(name) | \(fmt(s.latencyMsP50)) | \(fmt(s.latencyMsP95)) | \(fmt(s.latePct)) | \(fmt(s.starvedPct)) | \(fmt(s.lostPct)) | \(fmt(s.jitterRatio, 3)) | \(fmt(s.jitterPxP99)) | \(fmt(s.stutterPctMean)) | \(fmt(s.stutterPctMax)) | \(fmt(s.maxErrorPx, 1)) | \(fmt(s.maxJumpRatio, 1)) |\n"
    }
    return out
}

@Sendable func simulateCommand(_ args: [String]) {
    let o: SimulateOptions
    do { o = try parseSimulate(args) } catch { fail(error.description) }
    var rows: [LabRow] = []
    if let path = o.trace {
        let trace: Trace
        do { trace = try Trace.read(from: path) } catch let e as Trace.ParseError {
            fail("\(path): \(e.description)")
        } catch { fail("\(path): \(error)") }
        guard trace.records.contains(where: { $0.arriveUs != nil }) else { fail("\(path): no datagram arrived: nothing to replay") }
        let name = (path as NSString).lastPathComponent
        rows = Lab.replay(trace: trace, name: name, policies: o.policies, displayHz: o.displayHz)
        if let d = o.dump {
            try? LabCase(trace: trace, displayHz: o.displayHz).dump(o.policies[0]).write(toFile: d, atomically: true, encoding: .utf8)
        }
        if let svg = o.svg {
            do { try LabSVG.render(trace: trace, title: name, policies: o.policies, displayHz: o.displayHz).write(toFile: svg, atomically: true, encoding: .utf8) }
            catch { fail("cannot write \(svg): \(error)") }
        }
    } else {
        if let w = o.writeTrace {
            let t = LabRun.generate(scenario: o.scenarios[0], seed: UInt64(o.seed), senderHz: o.senderHz, durationS: o.duration)
            do { try t.write(to: w) } catch { fail("cannot write \(w): \(error)") }
        }
        if let svg = o.svg {
            let t = LabRun.generate(scenario: o.scenarios[0], seed: UInt64(o.seed), senderHz: o.senderHz, durationS: o.duration)
            let title = "\(o.scenarios[0].rawValue) \(o.scenarios[0].title), seed \(o.seed)"
            do { try LabSVG.render(trace: t, title: title, policies: o.policies, displayHz: o.displayHz).write(toFile: svg, atomically: true, encoding: .utf8) }
            catch { fail("cannot write \(svg): \(error)") }
        }
        if let d = o.dump {
            let t = LabRun.generate(scenario: o.scenarios[0], seed: UInt64(o.seed), senderHz: o.senderHz, durationS: o.duration)
            try? LabCase(trace: t, displayHz: o.displayHz).dump(o.policies[0]).write(toFile: d, atomically: true, encoding: .utf8)
        }
        if o.writeTrace != nil || o.svg != nil {
            // Writing a file alone: score just that seed's run.
            rows = Lab.simulate(scenarios: o.scenarios, policies: o.policies, seeds: 1, displayHz: o.displayHz,
                                senderHz: o.senderHz, durationS: o.duration, firstSeed: o.seed)
        } else {
            rows = Lab.simulate(scenarios: o.scenarios, policies: o.policies, seeds: o.seeds, displayHz: o.displayHz,
                                senderHz: o.senderHz, durationS: o.duration, firstSeed: o.seed)
        }
    }
    if o.json {
        print(rows.map(jsonRow).joined(separator: "\n"))
    } else if o.markdown {
        print(markdownText(rows), terminator: "")
    } else {
        print(tableText(rows), terminator: "")
    }
}
