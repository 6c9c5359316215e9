import Foundation
import RemoloPlayout
import RemoloTrace

extension Trace {
    /// The same send times over a perfect network: every datagram arrives
    /// (none is lost) at its true emission time plus the smallest one-way
    /// delay, on this trace's clock map (its truth, or the estimate for a
    /// recorded trace), so the two real clocks' drift stays and the
    /// network's delay is a constant. What a policy scores here is its own
    /// cost: its floor.
    public var perfectNetwork: Trace {
        let clock = effectiveClock
        let emit = clock.emissionTimes(records)
        var recs = records
        for i in recs.indices { recs[i].arriveUs = UInt64(max(0, (emit[i] + clock.dminUs).rounded())) }
        return Trace(records: recs, clock: clock, frameUs: frameUs ?? effectiveFrameUs,
                     notes: notes + ["perfect network: arrival = emission + dmin"])
    }

    /// The trace as Remolo's sender would have made it where the recorded
    /// stream lost datagrams. A foreign trace with a gesture laid over the
    /// send times of the packets that arrived (../shared/traces/real) puts
    /// the motion of every lost packet into the next one that arrived: 200
    /// ms of a stroke in one datagram, which the ideal path moves in its
    /// last frame and a receiver plays as a jump. Remolo's sender sends
    /// each frame's own motion, and a lost delta is lost. Here a movement
    /// record sent at least 1.75 frames after the previous record, itself
    /// a movement (a still finger sends heartbeats instead), is split into
    /// the frames that fit the gap: equal shares, all but the last lost.
    /// Gaps of a second or more are left alone (a sender that went away).
    public var gapsLost: Trace {
        let f = effectiveFrameUs
        var out: [TraceRecord] = []
        out.reserveCapacity(records.count)
        var prev: TraceRecord?
        var split = 0
        for r in records {
            defer { prev = r }
            guard r.isMovement, let p = prev, p.isMovement, r.sendUs > p.sendUs else { out.append(r); continue }
            let gap = Double(r.sendUs - p.sendUs)
            let frames = Int((gap / f + 0.25).rounded(.down))
            guard frames >= 2, gap < 1e6 else { out.append(r); continue }
            let n = Int32(frames)
            for k in 1..<frames {
                let send = p.sendUs + UInt64((gap * Double(k) / Double(frames)).rounded())
                out.append(TraceRecord(sendUs: send, arriveUs: nil, kind: r.kind, dx: r.dx / n, dy: r.dy / n))
            }
            var last = r
            last.dx = r.dx - (r.dx / n) * (n - 1); last.dy = r.dy - (r.dy / n) * (n - 1)
            out.append(last)
            split += 1
        }
        return Trace(records: out, clock: clock, frameUs: frameUs ?? f,
                     notes: notes + ["gaps lost: \(split) datagrams carried lost ones' motion, split, the rest lost"])
    }
}

/// Where a policy lies against the fixed-delay frontier of one scenario or
/// trace: the same policy with its delay pinned, swept (`Policy.frontierSweep`).
public struct FrontierReport: Sendable {
    public var scenario: String
    public var policy: String
    public var latencyMsP95: Double
    public var jitterRatio: Double
    /// A pinned delay with p95 latency at most the policy's + 0.5 ms and
    /// jitter ratio (the mean over the vsync phases) at most the policy's
    /// + 2%, if any.
    public var dominatedBy: String?
    /// Whether some such pinned delay beats it at every phase: its largest
    /// phase's jitter below the policy's smallest (a verdict no vsync phase
    /// can turn).
    public var dominatedAtEveryPhase = false
    /// The frontier's jitter ratio at the policy's p95 latency (linear
    /// between the frontier's points); nil below the sweep's lowest latency.
    public var frontierJitter: Double?

    public static let latencySlackMs = 0.5
    public static let jitterSlack = 1.02

    /// The Pareto points of a sweep (lower latency and lower jitter),
    /// ordered by latency.
    public static func pareto(_ sweep: [LabRow]) -> [LabRow] {
        var best = Double.infinity
        var out: [LabRow] = []
        for r in sweep.sorted(by: { $0.scores.latencyMsP95 < $1.scores.latencyMsP95 }) where r.scores.jitterRatio < best {
            best = r.scores.jitterRatio
            out.append(r)
        }
        return out
    }

    public init(row: LabRow, sweep: [LabRow]) {
        scenario = row.scenario; policy = row.policy
        latencyMsP95 = row.scores.latencyMsP95; jitterRatio = row.scores.jitterRatio
        let under = sweep.filter {
            $0.scores.latencyMsP95 <= latencyMsP95 + Self.latencySlackMs && $0.scores.jitterRatio <= jitterRatio * Self.jitterSlack
        }
        let clear = under.first { $0.scores.jitterRatioMax < row.scores.jitterRatioMin }
        dominatedBy = (clear ?? under.first)?.policy
        dominatedAtEveryPhase = clear != nil
        let front = Self.pareto(sweep)
        frontierJitter = nil
        for (k, p) in front.enumerated() where p.scores.latencyMsP95 <= latencyMsP95 {
            if k + 1 < front.count, front[k + 1].scores.latencyMsP95 > latencyMsP95 {
                let a = p.scores, b = front[k + 1].scores
                let f = (latencyMsP95 - a.latencyMsP95) / (b.latencyMsP95 - a.latencyMsP95)
                frontierJitter = a.jitterRatio + f * (b.jitterRatio - a.jitterRatio)
            } else {
                frontierJitter = p.scores.jitterRatio
            }
        }
    }

    public var text: String {
        let fj = frontierJitter.map { String(format: "%.3f", $0) } ?? "none (below the sweep)"
        let dom = dominatedBy.map { "DOMINATED by \($0)" + (dominatedAtEveryPhase ? " (at every phase)" : " (within the phases' spread)") }
            ?? "not dominated"
        return "\(scenario) \(policy): p95 \(String(format: "%.2f", latencyMsP95)) ms, jitter \(String(format: "%.3f", jitterRatio)); frontier jitter at that latency \(fj); \(dom)"
    }
}

extension LabSVG {
    /// The fixed-delay frontier of each scenario or trace (p95 latency
    /// against jitter ratio, the `fixed:MS` sweep as a line) with the other
    /// policies as points; one panel per scenario. Each point's jitter is
    /// the mean over the vsync phases, its bar the smallest to the largest
    /// phase's. `floors` (rows of "NAME perfect", `--perfect-network`)
    /// mark each policy's perfect-network floor as a hollow point, the
    /// default's also as a dashed line. Every point carries its numbers in
    /// a `<title>` (`LabSVG.points` reads them back).
    public static func frontier(rows: [LabRow], floors: [LabRow] = [], title: String) -> String {
        var order: [String] = []
        for r in rows where !order.contains(r.scenario) { order.append(r.scenario) }
        // One panel (a trace) gets the width of two.
        let cols = min(3, max(1, order.count)), pw = order.count == 1 ? 700.0 : 320.0, ph = order.count == 1 ? 400.0 : 240.0
        let W = Double(cols) * pw + 40, H = Double((order.count + cols - 1) / cols) * ph + 90 + (floors.isEmpty ? 0 : 16)
        var out = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(W))" height="\(Int(H))" viewBox="0 0 \(Int(W)) \(Int(H))" font-family="sans-serif" font-size="11">
        <rect width="100%" height="100%" fill="white"/>
        <text x="20" y="26" font-size="16" font-weight="bold">\(esc(title))</text>
        <text x="20" y="44">x: p95 added latency (ms), y: jitter ratio (mean of 16 vsync phases; bar: smallest to largest phase)</text>

        """
        var others: [String] = []
        for r in rows where !r.policy.hasPrefix("fixed:") && !others.contains(r.policy) { others.append(r.policy) }
        for (n, sc) in order.enumerated() {
            let ox = 20 + Double(n % cols) * pw, oy = 60 + Double(n / cols) * ph
            let x0 = ox + 40, x1 = ox + pw - 20, y0 = oy + 20, y1 = oy + ph - 40
            let mine = rows.filter { $0.scenario == sc }
            let floor = floors.filter { $0.scenario == sc + " perfect" && !$0.policy.hasPrefix("fixed:") }
            let sweep = mine.filter { $0.policy.hasPrefix("fixed:") }.sorted { $0.scores.latencyMsP95 < $1.scores.latencyMsP95 }
            let lmax = max(1, (mine + floor).map(\.scores.latencyMsP95).max() ?? 1) * 1.05
            let jmax = max(0.01, (mine + floor).map { max($0.scores.jitterRatio, $0.scores.jitterRatioMax) }.max() ?? 0.01) * 1.1
            func qx(_ l: Double) -> Double { x0 + l / lmax * (x1 - x0) }
            func qy(_ j: Double) -> Double { y1 - j / jmax * (y1 - y0) }
            /// The phases' spread as a vertical bar with caps.
            func bar(_ s: Scores, _ color: String, _ w: Double, _ cap: Double) -> String {
                guard s.phases > 1, s.jitterRatioMax > s.jitterRatioMin else { return "" }
                let x = qx(s.latencyMsP95), a = qy(s.jitterRatioMin), b = qy(s.jitterRatioMax)
                return "<path d=\"M\(f(x)),\(f(a))V\(f(b))M\(f(x - cap)),\(f(a))H\(f(x + cap))M\(f(x - cap)),\(f(b))H\(f(x + cap))\" stroke=\"\(color)\" stroke-width=\"\(w)\" fill=\"none\"/>\n"
            }
            out += "<text x=\"\(f(ox + 40))\" y=\"\(f(oy + 12))\" font-weight=\"bold\">\(esc(sc))</text>\n"
            out += axes(x0: x0, x1: x1, y0: y0, y1: y1)
            let sx = step(lmax, ticks: 4), sy = step(jmax, ticks: 4)
            var v = 0.0
            while v <= lmax { out += "<text x=\"\(f(qx(v)))\" y=\"\(f(y1 + 14))\" text-anchor=\"middle\">\(Int(v))</text>\n"; v += sx }
            v = 0
            while v <= jmax { out += "<text x=\"\(f(x0 - 4))\" y=\"\(f(qy(v) + 4))\" text-anchor=\"end\">\(String(format: "%.2f", v))</text>\n"; v += sy }
            if let d = floor.first(where: { $0.policy == "default" }) {
                let y = qy(d.scores.jitterRatio)
                out += "<line x1=\"\(f(x0))\" x2=\"\(f(x1))\" y1=\"\(f(y))\" y2=\"\(f(y))\" stroke=\"\(colors[(others.firstIndex(of: "default") ?? 0) % colors.count])\" stroke-width=\"0.8\" stroke-dasharray=\"4,3\"/><text x=\"\(f(x0 + 3))\" y=\"\(f(y + 10))\" font-size=\"9\" fill=\"#555\">default's floor</text>\n"
            }
            let pts = sweep.map { "\(f(qx($0.scores.latencyMsP95))),\(f(qy($0.scores.jitterRatio)))" }.joined(separator: " ")
            out += "<polyline points=\"\(pts)\" fill=\"none\" stroke=\"#7f7f7f\" stroke-width=\"1.5\"/>\n"
            for r in sweep {
                out += bar(r.scores, "#aaaaaa", 0.8, 1.5)
                out += "<circle cx=\"\(f(qx(r.scores.latencyMsP95)))\" cy=\"\(f(qy(r.scores.jitterRatio)))\" r=\"2\" fill=\"#7f7f7f\">\(pointTitle(sc, r))</circle>\n"
            }
            for (k, p) in others.enumerated() {
                let c = colors[k % colors.count]
                if let r = floor.first(where: { $0.policy == p }) {
                    out += bar(r.scores, c, 0.8, 2.5)
                    out += "<circle cx=\"\(f(qx(r.scores.latencyMsP95)))\" cy=\"\(f(qy(r.scores.jitterRatio)))\" r=\"3.5\" fill=\"white\" stroke=\"\(c)\" stroke-width=\"1.5\">\(pointTitle(r.scenario, r))</circle>\n"
                }
                guard let r = mine.first(where: { $0.policy == p }) else { continue }
                out += bar(r.scores, c, 1.2, 3)
                out += "<circle cx=\"\(f(qx(r.scores.latencyMsP95)))\" cy=\"\(f(qy(r.scores.jitterRatio)))\" r=\"4.5\" fill=\"\(c)\">\(pointTitle(sc, r))</circle>\n"
            }
        }
        // Legend.
        var lx = 20.0
        let ly = H - (floors.isEmpty ? 12 : 28)
        out += "<line x1=\"\(f(lx))\" y1=\"\(f(ly - 4))\" x2=\"\(f(lx + 18))\" y2=\"\(f(ly - 4))\" stroke=\"#7f7f7f\" stroke-width=\"1.5\"/><text x=\"\(f(lx + 22))\" y=\"\(f(ly))\">fixed:MS</text>\n"
        lx += 90
        for (k, p) in others.enumerated() {
            out += "<circle cx=\"\(f(lx + 5))\" cy=\"\(f(ly - 4))\" r=\"4.5\" fill=\"\(colors[k % colors.count])\"/><text x=\"\(f(lx + 14))\" y=\"\(f(ly))\">\(esc(p))</text>\n"
            lx += 30 + Double(p.count) * 7
        }
        if !floors.isEmpty {
            out += "<circle cx=\"25\" cy=\"\(f(H - 16))\" r=\"3.5\" fill=\"white\" stroke=\"#555\" stroke-width=\"1.5\"/><text x=\"34\" y=\"\(f(H - 12))\">hollow: the same policy on a perfect network (its floor: the same send times, nothing lost)</text>\n"
        }
        return out + "</svg>\n"
    }

    static func pointTitle(_ scenario: String, _ r: LabRow) -> String {
        let s = r.scores
        return "<title>\(esc(scenario)) \(esc(r.policy)): p95 \(String(format: "%.2f", s.latencyMsP95)) ms, jitter \(String(format: "%.3f", s.jitterRatio)) (phases \(String(format: "%.3f", s.jitterRatioMin))-\(String(format: "%.3f", s.jitterRatioMax)))</title>"
    }

    /// The points a frontier figure was drawn from, read back from their
    /// titles: scenario and policy, p95 ms, jitter ratio, the phases'
    /// smallest and largest jitter.
    public static func points(svg: String) -> [(name: String, p95: Double, jitter: Double, min: Double, max: Double)] {
        var out: [(name: String, p95: Double, jitter: Double, min: Double, max: Double)] = []
        for line in svg.split(separator: "\n") {
            guard let a = line.range(of: "<title>"), let b = line.range(of: "</title>") else { continue }
            let t = line[a.upperBound..<b.lowerBound]
            guard let c = t.range(of: ": p95 ", options: .backwards) else { continue }
            let name = String(t[..<c.lowerBound]).replacingOccurrences(of: "&amp;", with: "&")
            let nums = t[c.upperBound...].split(whereSeparator: { " (),-".contains($0) }).compactMap { Double($0) }
            guard nums.count == 4 else { continue }
            out.append((name, nums[0], nums[1], nums[2], nums[3]))
        }
        return out
    }
}
