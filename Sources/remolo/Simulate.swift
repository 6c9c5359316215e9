import Foundation
import RemoloPlayout
import RemoloLab
import RemoloTrace

// remolo simulate: network scenarios (or a recorded trace) through the
// playout core, scored (Sources/RemoloLab).

let simulateUsage = """
usage: remolo simulate [--scenario NAME|all] [--policy NAME|all] [--seeds N]
                       [--display-hz HZ,...] [--drain-hz auto|HZ,...]
                       [--sender-hz 60-240] [--duration SECONDS]
                       [--seed S] [--json|--markdown] [--trace FILE
                       [--gesture-from TRACE [--from SECONDS]]]
                       [--write-trace FILE] [--svg FILE]
                       [--perfect-network] [--frontier]
                       [--transport udp|redundant|tcp|both|all] [--gaps-lost]
                       [--phases N] [--full-path] [--sweep-ms MS] [--events]
                       [--returning N [--history-scenario NAME]]

  --scenario     S1..S7, a comma list, or all (default all)
  --policy       arrival, fixed:MS, seed, default, window (the default before
                 the chooser: the window's quantile), chooser (without its
                 floor), oracle (rate 0.1), oracle:RATE, a comma list, or all
                 (default all)
  --seeds        runs per scenario, pooled: seeds S..S+N-1 (default 5)
  --seed         the first seed S (default 1); --svg and --write-trace use seed S alone
  --display-hz   when the display refreshes, the cursor sampled at each (default 120):
                 a rate from 24 to 500 Hz (144, or a mode's exact 143.856); MIN-MAX,
                 variable refresh under a game whose frame rate wanders in the range
                 (48-144); cursor:MAX, variable refresh that follows the cursor's
                 frames (cursor:144); a comma list makes a drain table
  --drain-hz     the drain's rate, 120-2000 Hz, or auto: what `remolo receive
                 --drain-hz auto` picks for that display, or auto:60+144: what it
                 picks with those displays connected (default 480); a comma list
                 makes a drain table: the jitter ratio of each scenario, per
                 display and drain (the mean over the vsync phases), then its
                 spread (drain-rate.md)
  --sender-hz    the sender's frame rate (default 120)
  --duration     seconds of gestures per run (default 30)
  --json         one JSON object per row instead of the table
  --markdown     the table as Markdown
  --dump-frames FILE  per-vsync cursor and shifted ideal of the first policy (one scenario, --seed)
  --trace FILE   replay a recorded arrivals trace instead of scenarios
  --gesture-from TRACE  with --trace: FILE is a roc-streaming receiver dump (its
                 'm,RECV_NS,RTP_TS' lines, unpacked; how R1 and R2 were made):
                 its timing with TRACE's gesture laid over its send times, for
                 as long as TRACE lasts, from --from SECONDS into the dump (0)
  --write-trace FILE  save one scenario's arrivals (seed --seed) in the trace format
  --svg FILE     plots for one scenario and seed (--seed, default 1), or for --trace;
                 with --frontier, the frontier of every scenario (or the trace),
                 each point with its phases' spread, and with --perfect-network
                 each policy's floor
  --perfect-network  also replay the same send times with arrival = emission + a
                 constant (no loss): rows named "NAME perfect", each policy's floor
  --frontier     sweep fixed:0..100 ms (5 ms steps; fixed:MS is the window policy
                 with its delay pinned) and report where each other policy lies
                 against it; policies default to arrival,seed,window,default
  --gaps-lost    with --trace: a movement datagram sent 2 or more frames after the
                 previous one carries the motion of the lost ones between (a foreign
                 trace's convention); replay it as Remolo's sender would have sent
                 it: one frame's share each, all but the last lost
  --transport    a comma list of: udp (default): a lost datagram is gone;
                 redundant: udp with the redundancy feature (every datagram carries
                 the session's running totals; the receiver plays the motion of the
                 datagrams lost before one it opens), rows named "NAME redundant";
                 tcp: the same link as one TCP stream (the phone page's WebSocket):
                 every loss is retransmitted (fast retransmit after 3 duplicate
                 ACKs, else the 200 ms minimum RTO) and holds every later datagram
                 back, rows named "NAME tcp"; both = udp,tcp; all = udp,redundant,tcp
  --phases       vsync phases each run is scored at, 4-64 (default 16): phase k's
                 vsyncs start (k + 1/2)/N of a frame after the first drain tick;
                 starved, jitter and stutter are their mean, "jitter spread" the
                 smallest and largest phase's jitter, max error and max jump the
                 worst phase's (smoothness.md)
  --full-path    score against every motion the sender sent, lost datagrams'
                 included (by default the ideal path leaves out what the receiver
                 cannot know: lost motion without redundancy)
  --events       with --trace: the trace's holds (datagrams later than 50 ms at no
                 delay): how many, how long, whether the 2 s before each announced
                 it, whether one follows another sooner than at random; with
                 --policy, where each policy's frame error falls, in the holds or
                 between them, and what knowing the holds in advance could buy
                 (smoothness.md, "What a causal receiver knows of the events")
  --sweep-ms     with --frontier: the sweep's step, 1-20 ms (default 5)
  --returning    each scenario's runs are a returning sender's: N earlier sessions
                 (seeds 1000..., not scored) build the memory a policy with
                 recall_permille keeps (default, chooser), and each scored run starts
                 from what the one before left, in seed order (default 0: every
                 run is a first session)
  --history-scenario  with --returning: the earlier sessions were on this
                 scenario's network (a sender whose network changed)
"""

struct SimulateOptions {
    var isDrainTable: Bool { displays.count > 1 || drains.count > 1 }
    var display: LabDisplay { displays[0] }
    var drain: LabDrain { drains[0] }
    var scenarios: [Scenario] = Scenario.allCases
    var policies: [Policy] = Policy.all
    var seeds = 5
    var seed = 1
    var displays: [LabDisplay] = [.fixed(hz: 120)]
    var drains: [LabDrain] = [.default]
    var senderHz = 120
    var duration = 30.0
    var json = false
    var markdown = false
    var trace: String?
    var gestureFrom: String?
    var fromS: Double?
    var writeTrace: String?
    var svg: String?
    var dump: String?
    var perfect = false
    var gapsLost = false
    var frontier = false
    var events = false
    var policyGiven = false
    var transports: [LabTransport] = [.udp]
    var phases = LabCase.defaultPhases
    var fullPath = false
    var sweepMs = 5
    var returning = 0
    var historyScenario: Scenario?
}

func parseSimulate(_ args: [String]) -> SimulateOptions {
    var o = SimulateOptions()
    var p = Options(args, usage: simulateUsage)
    while let flag = p.next() {
        switch flag {
        case "--scenario":
            let v = p.value()
            if v == "all" { o.scenarios = Scenario.allCases } else {
                o.scenarios = []
                for n in v.split(separator: ",") {
                    guard let s = Scenario(name: String(n)) else {
                        fail("unknown scenario '\(n)': valid are " +
                             Scenario.allCases.map { "\($0.rawValue) (\($0.title))" }.joined(separator: ", ") + ", or all")
                    }
                    o.scenarios.append(s)
                }
            }
        case "--policy":
            o.policyGiven = true
            let v = p.value()
            if v == "all" { o.policies = Policy.all } else {
                o.policies = []
                for n in v.split(separator: ",") {
                    do { o.policies.append(try Policy.parse(String(n))) } catch { fail(error.description) }
                }
            }
        case "--seeds": o.seeds = p.int(in: 1...1000)
        case "--seed": o.seed = p.int(in: 0...Int(Int32.max))
        case "--display-hz":
            do { o.displays = try p.value().split(separator: ",").map { d throws(LabDisplayError) in try LabDisplay.parse(String(d)) } }
            catch { fail("--display-hz: \(error.description)") }
            if o.displays.isEmpty { fail("--display-hz: give a rate, e.g. 144") }
        case "--drain-hz":
            do { o.drains = try p.value().split(separator: ",").map { d throws(LabDisplayError) in try LabDrain.parse(String(d)) } }
            catch { fail(error.description) }
            if o.drains.isEmpty { fail("--drain-hz: give auto or a rate, e.g. 576") }
        case "--sender-hz": o.senderHz = p.int(in: 60...240)
        case "--duration": o.duration = p.double(in: 1...3600)
        case "--json": o.json = true
        case "--markdown": o.markdown = true
        case "--dump-frames": o.dump = p.value()
        case "--trace": o.trace = p.value()
        case "--gesture-from": o.gestureFrom = p.value()
        case "--from": o.fromS = p.double(in: 0...1e6)
        case "--write-trace": o.writeTrace = p.value()
        case "--svg": o.svg = p.value()
        case "--perfect-network": o.perfect = true
        case "--gaps-lost": o.gapsLost = true
        case "--frontier": o.frontier = true
        case "--events": o.events = true
        case "--transport":
            do { o.transports = try LabTransport.parse(p.value()) } catch { fail(error.description) }
        case "--phases": o.phases = p.int(in: 4...64)
        case "--full-path": o.fullPath = true
        case "--sweep-ms": o.sweepMs = p.int(in: 1...20)
        case "--returning": o.returning = p.int(in: 0...1000)
        case "--history-scenario":
            let v = p.value()
            guard let s = Scenario(name: v) else {
                fail("unknown scenario '\(v)' for --history-scenario: valid are " + Scenario.allCases.map(\.rawValue).joined(separator: ", "))
            }
            o.historyScenario = s
        default: p.unknown()
        }
    }
    if o.gapsLost && o.trace == nil { fail("--gaps-lost reads a recorded trace: add --trace FILE") }
    if o.gestureFrom != nil && o.trace == nil { fail("--gesture-from lays a gesture over a dump's timing: add --trace DUMP") }
    if o.fromS != nil && o.gestureFrom == nil { fail("--from reads a dump from that second on: add --gesture-from TRACE") }
    if o.events && o.trace == nil { fail("--events reads a recorded trace: add --trace FILE") }
    if o.isDrainTable && (o.frontier || o.svg != nil || o.writeTrace != nil || o.dump != nil || o.perfect) {
        fail("a drain table (several --display-hz or --drain-hz) is scored alone: drop --frontier, --svg, "
             + "--write-trace, --dump-frames and --perfect-network, or give one display and one drain")
    }
    if o.historyScenario != nil && o.returning == 0 { fail("--history-scenario names the earlier sessions' network: add --returning N") }
    if o.returning > 0 && o.trace != nil { fail("--returning runs scenarios (a recorded trace is one session): drop --trace or --returning") }
    if o.isDrainTable && !o.policyGiven { o.policies = [.default] }
    if o.frontier && !o.policyGiven { o.policies = [.arrival, .seed, .window, .default] }
    if o.writeTrace != nil || (o.svg != nil && o.trace == nil && !o.frontier) {
        guard o.scenarios.count == 1 else {
            fail("--write-trace and --svg take one scenario: add --scenario S1 (or S2..S7)")
        }
    }
    return o
}

func fmt(_ v: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", v) }

/// One row as one line of JSON (snake_case names, nulls for scores that
/// could not be computed).
func jsonRow(_ r: LabRow) -> String {
    let e = JSONEncoder()
    e.keyEncodingStrategy = .convertToSnakeCase
    e.outputFormatting = [.sortedKeys]
    guard let d = try? e.encode(r) else { fail("cannot encode the row of \(r.scenario) \(r.policy)", code: 1) }
    return String(decoding: d, as: UTF8.self)
}

func tableText(_ rows: [LabRow]) -> String {
    let head = ["scenario", "policy", "lat p50", "lat p95", "late%", "starved%", "lost%", "jitter", "spread", "J p99",
                "stutter%", "stut max%", "max err", "max jump", "short px", "recov p95"]
    var cells = [head]
    for r in rows {
        let s = r.scores
        cells.append([r.scenario, r.policy, fmt(s.latencyMsP50), fmt(s.latencyMsP95), fmt(s.latePct), fmt(s.starvedPct),
                      fmt(s.lostPct), fmt(s.jitterRatio, 3), spread(s), fmt(s.jitterPxP99), fmt(s.stutterPctMean),
                      fmt(s.stutterPctMax), fmt(s.maxErrorPx, 1), fmt(s.maxJumpRatio, 1), short(s), recovered(s)])
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
    out += "frame scores: mean over \(rows.first?.scores.phases ?? 0) vsync phases, spread = smallest-largest phase's jitter, max err and max jump the worst phase's; short px = how far each stroke ends short of the finger, mean/max; recov p95 = latency of the motion recovered for lost datagrams (redundancy), ms\n"
    return out
}

/// The smallest and largest phase's jitter ratio.
func spread(_ s: Scores) -> String { "\(fmt(s.jitterRatioMin, 3))-\(fmt(s.jitterRatioMax, 3))" }

/// The recovered datagrams' p95 latency (redundancy), "-" without.
func recovered(_ s: Scores) -> String { s.recovered > 0 ? fmt(s.recoveredMsP95) : "-" }

/// Px short at the end of a stroke, mean/max.
func short(_ s: Scores) -> String { "\(fmt(s.shortPxMean, 1))/\(fmt(s.shortPxMax, 1))" }

func markdownText(_ rows: [LabRow]) -> String {
    var out = "| scenario | policy | latency p50 ms | latency p95 ms | late % | starved % | lost % | jitter ratio | jitter spread | J p99 px | stutter % mean | stutter % max | max error px | max jump | short px mean/max | recovered p95 ms |\n"
    out += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
    for r in rows {
        let s = r.scores
        let bold = r.policy == "default"
        let name = bold ? "**default**" : r.policy
        out += "| \(r.scenario) | \(name) | \(fmt(s.latencyMsP50)) | \(fmt(s.latencyMsP95)) | \(fmt(s.latePct)) | \(fmt(s.starvedPct)) | \(fmt(s.lostPct)) | \(fmt(s.jitterRatio, 3)) | \(spread(s)) | \(fmt(s.jitterPxP99)) | \(fmt(s.stutterPctMean)) | \(fmt(s.stutterPctMax)) | \(fmt(s.maxErrorPx, 1)) | \(fmt(s.maxJumpRatio, 1)) | \(short(s)) | \(recovered(s)) |\n"
    }
    return out
}

/// Rows for each transport, scenario by scenario: a scenario's udp rows,
/// then its redundant and tcp rows (named "NAME redundant", "NAME tcp").
func byTransport(_ transports: [LabTransport], _ rows: (LabTransport) -> [LabRow]) -> [LabRow] {
    var order: [String] = []
    var blocks: [String: [LabRow]] = [:]
    for t in transports {
        for r in rows(t) {
            if blocks[r.scenario] == nil { order.append(r.scenario) }
            blocks[r.scenario, default: []].append(t == .udp ? r : LabRow(scenario: r.scenario + " " + t.rawValue, policy: r.policy, scores: r.scores))
        }
    }
    return order.flatMap { blocks[$0] ?? [] }
}

/// The policies to run: the requested ones, plus the sweep for --frontier.
func runPolicies(_ o: SimulateOptions) -> [Policy] {
    guard o.frontier else { return o.policies }
    let sweep = Policy.frontierSweep(stepMs: o.sweepMs)
    return o.policies.filter { $0.fixedMs == nil || !sweep.contains($0) } + sweep
}

/// Rows of one scenario set or trace, real network then (with
/// --perfect-network) the perfect one, scenario by scenario.
func interleave(_ real: [LabRow], _ perfect: [LabRow]) -> [LabRow] {
    guard !perfect.isEmpty else { return real }
    var out: [LabRow] = []
    var order: [String] = []
    for r in real where !order.contains(r.scenario) { order.append(r.scenario) }
    for sc in order {
        out += real.filter { $0.scenario == sc }
        out += perfect.filter { $0.scenario == sc + " perfect" }
    }
    return out
}

func frontierReports(_ rows: [LabRow]) -> [FrontierReport] {
    var order: [String] = []
    for r in rows where !order.contains(r.scenario) { order.append(r.scenario) }
    var out: [FrontierReport] = []
    for sc in order {
        let mine = rows.filter { $0.scenario == sc }
        let sweep = mine.filter { $0.policy.hasPrefix("fixed:") }
        for r in mine where !r.policy.hasPrefix("fixed:") && !r.policy.hasPrefix("oracle") {
            out.append(FrontierReport(row: r, sweep: sweep))
        }
    }
    return out
}

/// `--events`: the trace's holds, and with `--policy` where each policy's
/// frame error falls, in the holds or between them.
func eventsReport(_ o: SimulateOptions, trace: Trace) {
    let holds = LatenessEvents(trace: trace)
    print(holds.summary, terminator: "")
    guard o.policyGiven, !holds.events.isEmpty else { return }
    let lab = LabCase(trace: trace, display: o.display, drainHz: o.drain.hz(for: o.display), phases: o.phases,
                      fullPath: o.fullPath)
    let runs = o.policies.filter { !$0.isOracle }.map { lab.holdJitter($0, holds: holds) }
    print("\nJ^2 (M3's squared frame error, every vsync phase) in the holds (100 ms before the first late datagram's sending to 1 s after the last's arrival) and between them:")
    for r in runs {
        let total = r.inHolds + r.outside
        print("\(r.policy): p95 \(fmt(r.latencyMsP95)) ms, jitter \(fmt(r.jitter, 3)) (pooled); in holds \(fmt(r.inHolds, 0)) (\(fmt(100 * r.inHolds / max(total, 1e-9), 0))%), between \(fmt(r.outside, 0))")
    }
    guard let base = runs.first, runs.count > 1 else { return }
    if let b = HoldBound(runs), let floor = Lab.replay(trace: trace, name: "floor", policies: [o.policies[0]], display: o.display,
                                                       drain: o.drain, perfectNetwork: true, phases: o.phases).first {
        let f = floor.scores.jitterRatio
        print("knowing when each hold comes, at no cost: \(b.inHolds.policy) in the holds (\(fmt(b.inHolds.inHolds, 0))), "
              + "\(b.between.policy) between them (\(fmt(b.between.outside, 0)), p95 \(fmt(b.between.latencyMsP95)) ms): jitter "
              + "\(fmt(b.jitter, 4)), \(fmt(b.jitter / f, 3))x \(base.policy)'s floor (\(fmt(f, 4)))")
    }
    for r in runs.dropFirst() {
        let diff = zip(r.perHold, base.perHold).map { $0 - $1 }
        let close = zip(r.perHold, base.perHold).filter { abs($0 - $1) <= 0.2 * max($0, $1) }.count
        let worst = diff.indices.max { abs(diff[$0]) < abs(diff[$1]) } ?? 0
        print("\(r.policy) - \(base.policy): in holds \(fmt(r.inHolds - base.inHolds, 0)), between \(fmt(r.outside - base.outside, 0)); "
              + "\(close) of \(diff.count) holds within 20% of each other; the largest difference \(fmt(diff[worst], 0)) at hold \(worst + 1) (sent "
              + "\(fmt(Double(holds.events[worst].startUs - (trace.records.first?.sendUs ?? 0)) / 1e6, 1)) s in)")
    }
}

@Sendable func simulateCommand(_ args: [String]) {
    let o = parseSimulate(args)
    if o.isDrainTable { return drainTable(o) }
    var rows: [LabRow] = []
    if let path = o.trace {
        var trace: Trace
        do {
            if let g = o.gestureFrom {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { fail("\(path): cannot read it as text") }
                trace = try RocDump.trace(dump: text, gesture: try Trace.read(from: g), fromS: o.fromS ?? 0)
            } else {
                trace = try Trace.read(from: path)
            }
        } catch let e as Trace.ParseError {
            fail("\(o.gestureFrom ?? path): \(e.description)")
        } catch { fail("\(path): \(error)") }
        guard trace.records.contains(where: { $0.arriveUs != nil }) else { fail("\(path): no datagram arrived: nothing to replay") }
        var name = (path as NSString).lastPathComponent
        if let from = o.fromS { name += " from \(Int(from)) s" }
        if o.gapsLost { trace = trace.gapsLost; name += " gaps-lost" }
        if o.events { return eventsReport(o, trace: trace) }
        rows = byTransport(o.transports) { t in
            Lab.replay(trace: trace, name: name, policies: runPolicies(o), display: o.display, drain: o.drain, transport: t,
                       phases: o.phases, fullPath: o.fullPath)
        }
        if o.perfect {
            rows = interleave(rows, Lab.replay(trace: trace, name: name + " perfect", policies: runPolicies(o),
                                               display: o.display, drain: o.drain, perfectNetwork: true, phases: o.phases))
        }
        if let d = o.dump {
            try? LabCase(trace: trace, display: o.display, drainHz: o.drain.hz(for: o.display)).dump(o.policies[0]).write(toFile: d, atomically: true, encoding: .utf8)
        }
        if let svg = o.svg, !o.frontier {
            do { try LabSVG.render(trace: trace, title: name, policies: o.policies, displayHz: Int(o.display.maxHz.rounded())).write(toFile: svg, atomically: true, encoding: .utf8) }
            catch { fail("cannot write \(svg): \(error)") }
        }
    } else {
        if let w = o.writeTrace {
            let t = LabRun.generate(scenario: o.scenarios[0], seed: UInt64(o.seed), senderHz: o.senderHz, durationS: o.duration)
            do { try t.write(to: w) } catch { fail("cannot write \(w): \(error)") }
        }
        if let svg = o.svg, !o.frontier {
            let t = LabRun.generate(scenario: o.scenarios[0], seed: UInt64(o.seed), senderHz: o.senderHz, durationS: o.duration)
            let title = "\(o.scenarios[0].rawValue) \(o.scenarios[0].title), seed \(o.seed)"
            do { try LabSVG.render(trace: t, title: title, policies: o.policies, displayHz: Int(o.display.maxHz.rounded())).write(toFile: svg, atomically: true, encoding: .utf8) }
            catch { fail("cannot write \(svg): \(error)") }
        }
        if let d = o.dump {
            let t = LabRun.generate(scenario: o.scenarios[0], seed: UInt64(o.seed), senderHz: o.senderHz, durationS: o.duration)
            try? LabCase(trace: t, display: o.display, drainHz: o.drain.hz(for: o.display), seed: UInt64(o.seed)).dump(o.policies[0]).write(toFile: d, atomically: true, encoding: .utf8)
        }
        // Writing a run's file alone: score just that seed's run.
        let seeds = o.writeTrace != nil || (o.svg != nil && !o.frontier) ? 1 : o.seeds
        rows = byTransport(o.transports) { t in
            Lab.simulate(scenarios: o.scenarios, policies: runPolicies(o), seeds: seeds, display: o.display, drain: o.drain,
                         senderHz: o.senderHz, durationS: o.duration, firstSeed: o.seed, transport: t, phases: o.phases,
                         fullPath: o.fullPath, returning: o.returning, historyScenario: o.historyScenario)
        }
        if o.perfect {
            let p = Lab.simulate(scenarios: o.scenarios, policies: runPolicies(o), seeds: seeds, display: o.display, drain: o.drain,
                                 senderHz: o.senderHz, durationS: o.duration, firstSeed: o.seed, perfectNetwork: true,
                                 phases: o.phases)
            rows = interleave(rows, p.map { LabRow(scenario: $0.scenario + " perfect", policy: $0.policy, scores: $0.scores) })
        }
    }
    if o.frontier {
        let real = rows.filter { !$0.scenario.hasSuffix(" perfect") }
        if let svg = o.svg {
            let title = o.trace.map {
                ($0 as NSString).lastPathComponent + (o.gapsLost ? ", read as Remolo's sender sends it (--gaps-lost)" : ", as recorded (folded: a stress case)")
            } ?? "scenarios, seeds \(o.seed)-\(o.seed + o.seeds - 1)"
            let floors = rows.filter { $0.scenario.hasSuffix(" perfect") }
            do { try LabSVG.frontier(rows: real, floors: floors, title: "Fixed-delay frontier: \(title)").write(toFile: svg, atomically: true, encoding: .utf8) }
            catch { fail("cannot write \(svg): \(error)") }
        }
        // The table keeps the requested policies; the sweep goes to the report.
        let reports = frontierReports(real)
        rows = rows.filter { r in !r.policy.hasPrefix("fixed:") || o.policies.contains { $0.name == r.policy } }
        if o.json {
            print(rows.map(jsonRow).joined(separator: "\n"))
            for f in reports {
                print("{\"scenario\":\"\(f.scenario)\",\"policy\":\"\(f.policy)\",\"frontier_jitter\":\(f.frontierJitter.map { String(format: "%.4f", $0) } ?? "null"),\"dominated_by\":\(f.dominatedBy.map { "\"\($0)\"" } ?? "null"),\"dominated_at_every_phase\":\(f.dominatedAtEveryPhase)}")
            }
            return
        }
        print(o.markdown ? markdownText(rows) : tableText(rows), terminator: "")
        print("\nAgainst the fixed-delay frontier (fixed:0..100 ms every \(o.sweepMs) ms; dominated = some fixed:MS has p95 <= +0.5 ms and phase-mean jitter <= +2%; at every phase = its largest phase's jitter below the policy's smallest):")
        // Which sessions these are: the default's first sessions and its
        // returning ones differ (docs/playout.md, "A returning sender").
        if o.trace != nil {
            print("(a trace is one session: a first session, with no memory of its network)")
        } else if o.returning == 0 {
            print("(every run is a first session on its network, with no memory of it; --returning N scores a sender's sessions after N earlier ones there)")
        } else {
            print("(every run is a returning sender's session, after \(o.returning) earlier ones on "
                  + (o.historyScenario.map { "\($0.rawValue)'s network" } ?? "the same network") + ")")
        }
        for f in reports { print(o.markdown ? "- " + f.text : f.text) }
        return
    }
    if o.json {
        print(rows.map(jsonRow).joined(separator: "\n"))
    } else if o.markdown {
        print(markdownText(rows), terminator: "")
    } else {
        print(tableText(rows), terminator: "")
    }
}

/// Several displays or drain rates: the jitter ratio (M3) of each scenario
/// for every display and drain, one table per policy; rows of JSON with
/// --json (scenario named "S1 144 Hz drain 576"). With --trace, the trace
/// is the one scenario.
func drainTable(_ o: SimulateOptions) {
    var trace: Trace?
    var names = o.scenarios.map(\.rawValue)
    if let path = o.trace {
        do { trace = try Trace.read(from: path) } catch { fail("\(path): \(error)") }
        if o.gapsLost { trace = trace!.gapsLost }
        names = [(path as NSString).lastPathComponent]
    }
    var cells: [[[LabRow]]] = []   // [display][drain] -> rows (scenario x policy)
    for d in o.displays {
        cells.append(o.drains.map { drain in
            byTransport(o.transports) { t in
                if let trace {
                    return Lab.replay(trace: trace, name: names[0], policies: o.policies, display: d, drain: drain, transport: t,
                                      phases: o.phases)
                }
                return Lab.simulate(scenarios: o.scenarios, policies: o.policies, seeds: o.seeds, display: d, drain: drain,
                                    senderHz: o.senderHz, durationS: o.duration, firstSeed: o.seed, transport: t,
                                    phases: o.phases)
            }
        })
    }
    if o.json {
        for (i, d) in o.displays.enumerated() {
            for (j, drain) in o.drains.enumerated() {
                let hz = DrainRate.format(drain.hz(for: d))
                for r in cells[i][j] {
                    print(jsonRow(LabRow(scenario: "\(r.scenario) \(d) drain \(hz)", policy: r.policy, scores: r.scores)))
                }
            }
        }
        return
    }
    let scen = cells[0][0].map(\.scenario).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
    for p in o.policies {
        let head = ["display"] + o.drains.map { "drain \($0)\($0.isAuto ? "" : " Hz"): " + scen.joined(separator: " / ") }
        var table = [head]
        for (i, d) in o.displays.enumerated() {
            var row = [d.description]
            for (j, drain) in o.drains.enumerated() {
                let v = scen.map { sc in
                    cells[i][j].first { $0.scenario == sc && $0.policy == p.name }.map { fmt($0.scores.jitterRatio, 3) } ?? "-"
                }.joined(separator: " / ")
                row.append(drain.isAuto ? "\(v) (\(DrainRate.format(drain.hz(for: d))))" : v)
            }
            table.append(row)
        }
        // The phases' spread, cell for cell: the smallest-largest phase's jitter.
        var spreadTable = [head]
        for (i, d) in o.displays.enumerated() {
            var row = [d.description]
            for j in o.drains.indices {
                row.append(scen.map { sc in
                    cells[i][j].first { $0.scenario == sc && $0.policy == p.name }.map { spread($0.scores) } ?? "-"
                }.joined(separator: " / "))
            }
            spreadTable.append(row)
        }
        let seeds = "seeds \(o.seed)-\(o.seed + o.seeds - 1), \(Int(o.duration)) s each"
        print("policy \(p.name), jitter ratio (M3, the mean over \(o.phases) vsync phases), \(seeds):")
        printTable(table, markdown: o.markdown)
        print("\npolicy \(p.name), jitter spread (the smallest-largest phase's jitter ratio), \(seeds):")
        printTable(spreadTable, markdown: o.markdown)
    }
}

func printTable(_ table: [[String]], markdown: Bool) {
    let head = table[0]
    if markdown {
        print("| " + head.joined(separator: " | ") + " |")
        print("|---|" + String(repeating: "--:|", count: head.count - 1))
        for r in table.dropFirst() { print("| " + r.joined(separator: " | ") + " |") }
    } else {
        var w = [Int](repeating: 0, count: head.count)
        for r in table { for (k, c) in r.enumerated() { w[k] = max(w[k], c.count) } }
        for r in table {
            print(r.enumerated().map { k, c in k == 0 ? c.padding(toLength: w[k], withPad: " ", startingAt: 0)
                : String(repeating: " ", count: w[k] - c.count) + c }.joined(separator: "  "))
        }
    }
}
