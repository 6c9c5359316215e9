import Foundation
import RemoloPlayout
import RemoloTrace

/// Plots of one trace (a scenario and seed, or a recorded trace) as a
/// self-contained SVG: (1) cursor speed over time for the ideal path and
/// each policy, over the 3 s around the worst network event during motion;
/// (2) p95 added latency against jitter ratio for each policy, with the
/// oracle's frontier (rates 0 to 0.5) as a line.
public enum LabSVG {
    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#ff7f0e",
                         "#17becf", "#bcbd22", "#7f7f7f"]

    static func esc(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    static func f(_ v: Double) -> String { String(format: "%.1f", v) }

    /// Round axis steps: 1, 2 or 5 times a power of ten.
    static func step(_ range: Double, ticks: Double = 6) -> Double {
        let raw = max(range, 1e-9) / ticks
        let p = pow(10, floor(log10(raw)))
        for m in [1.0, 2, 5, 10] where m * p >= raw { return m * p }
        return 10 * p
    }

    public static func render(trace: Trace, title: String, policies: [Policy], displayHz: Int) -> String {
        let c = LabCase(trace: trace, displayHz: displayHz)
        let W = 960.0
        var out = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(W))" height="1000" viewBox="0 0 \(Int(W)) 1000" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="20" y="28" font-size="18" font-weight="bold">\(esc(title))</text>

        """
        guard !c.vsync.isEmpty else { return out + "<text x=\"20\" y=\"60\">no arrivals</text></svg>\n" }

        // Window: 3 s around the latest-arriving movement packet.
        var worst = 0, worstL = -Double.infinity
        for (i, r) in trace.records.enumerated() where r.isMovement {
            guard let a = r.arriveUs else { continue }
            let l = Double(a) - c.emit[i]
            if l > worstL { worstL = l; worst = i }
        }
        let t0 = max(c.vsync.first!, c.emit[worst] - 1.5e6), t1 = t0 + 3e6
        let ks = c.vsync.indices.filter { c.vsync[$0] >= t0 && c.vsync[$0] <= t1 }
        let hz = Double(displayHz)

        struct Series { let name: String; let color: String; let pts: [(Double, Double)]; let dash: Bool }
        var series: [Series] = []
        // Ideal: at its true time plus the smallest delay, sampled like the display.
        var ideal: [(Double, Double)] = []
        for k in ks.dropFirst() {
            let a = c.ideal.at(c.vsync[k] - c.clock.dminUs), b = c.ideal.at(c.vsync[k - 1] - c.clock.dminUs)
            ideal.append((c.vsync[k], norm(a - b) * hz))
        }
        series.append(Series(name: "ideal (no added latency)", color: "#000000", pts: ideal, dash: true))
        var results: [(Policy, Scores)] = []
        for (n, p) in policies.enumerated() {
            let run = c.run(p)
            var acc = ScoreAccumulator()
            c.score(run, into: &acc)
            results.append((p, acc.scores))
            var pts: [(Double, Double)] = []
            for k in ks.dropFirst() { pts.append((c.vsync[k], norm(run.cursor[k] - run.cursor[k - 1]) * hz)) }
            series.append(Series(name: p.name, color: colors[n % colors.count], pts: pts, dash: false))
        }

        // Chart 1.
        let x0 = 70.0, x1 = W - 200, y0 = 60.0, y1 = 420.0
        let vmax = max(10, series.flatMap { $0.pts.map(\.1) }.max() ?? 10) * 1.05
        func px(_ t: Double) -> Double { x0 + (t - t0) / (t1 - t0) * (x1 - x0) }
        func py(_ v: Double) -> Double { y1 - v / vmax * (y1 - y0) }
        out += "<text x=\"\(f(x0))\" y=\"\(f(y0 - 10))\" font-size=\"14\">Cursor speed (px/s, at \(displayHz) Hz vsync) around the worst delivery delay (\(f(worstL / 1000)) ms)</text>\n"
        out += axes(x0: x0, x1: x1, y0: y0, y1: y1)
        let vs = step(vmax)
        var v = 0.0
        while v <= vmax {
            out += "<line x1=\"\(f(x0))\" x2=\"\(f(x1))\" y1=\"\(f(py(v)))\" y2=\"\(f(py(v)))\" stroke=\"#eee\"/><text x=\"\(f(x0 - 6))\" y=\"\(f(py(v) + 4))\" text-anchor=\"end\">\(Int(v))</text>\n"
            v += vs
        }
        for s in stride(from: 0.0, through: 3.0, by: 0.5) {
            let x = px(t0 + s * 1e6)
            out += "<text x=\"\(f(x))\" y=\"\(f(y1 + 16))\" text-anchor=\"middle\">\(String(format: "%.1f", s)) s</text>\n"
        }
        for (n, s) in series.enumerated() {
            let d = s.pts.map { "\(f(px($0.0))),\(f(py($0.1)))" }.joined(separator: " ")
            out += "<polyline fill=\"none\" stroke=\"\(s.color)\" stroke-width=\"\(s.dash ? 2 : 1.2)\"\(s.dash ? " stroke-dasharray=\"5,3\"" : "") points=\"\(d)\"/>\n"
            let ly = y0 + 14 * Double(n)
            out += "<line x1=\"\(f(x1 + 12))\" x2=\"\(f(x1 + 32))\" y1=\"\(f(ly))\" y2=\"\(f(ly))\" stroke=\"\(s.color)\" stroke-width=\"2\"\(s.dash ? " stroke-dasharray=\"5,3\"" : "")/><text x=\"\(f(x1 + 36))\" y=\"\(f(ly + 4))\">\(esc(s.name))</text>\n"
        }

        // Chart 2: latency vs jitter, with the oracle frontier.
        var oracles: [(rate: Double, l: Double, j: Double)] = []
        for rate in [0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5] {
            var acc = ScoreAccumulator()
            c.score(c.run(.oracle(rate: rate)), into: &acc)
            oracles.append((rate, acc.scores.latencyMsP95, acc.scores.jitterRatio))
        }
        // The frontier: the oracle points no other oracle beats on both axes,
        // by latency.
        let frontier = oracles.filter { a in !oracles.contains { b in b.l <= a.l && b.j <= a.j && (b.l < a.l || b.j < a.j) } }
            .sorted { $0.l < $1.l }.map { ($0.l, $0.j) }
        let pts = results.map { ($0.1.latencyMsP95, $0.1.jitterRatio) } + oracles.map { ($0.l, $0.j) }
        let lmax = (pts.map(\.0).max() ?? 1) * 1.1 + 1, jmax = (pts.map(\.1).max() ?? 0.1) * 1.1 + 0.01
        let X0 = 70.0, X1 = W - 200, Y0 = 520.0, Y1 = 940.0
        func qx(_ l: Double) -> Double { X0 + l / lmax * (X1 - X0) }
        func qy(_ j: Double) -> Double { Y1 - j / jmax * (Y1 - Y0) }
        out += "<text x=\"\(f(X0))\" y=\"\(f(Y0 - 10))\" font-size=\"14\">p95 added latency (ms) against jitter ratio RMS(J)/RMS(|dP|); lower left is better</text>\n"
        out += axes(x0: X0, x1: X1, y0: Y0, y1: Y1)
        let ls = step(lmax), js = step(jmax)
        var l = 0.0
        while l <= lmax {
            out += "<line x1=\"\(f(qx(l)))\" x2=\"\(f(qx(l)))\" y1=\"\(f(Y0))\" y2=\"\(f(Y1))\" stroke=\"#eee\"/><text x=\"\(f(qx(l)))\" y=\"\(f(Y1 + 16))\" text-anchor=\"middle\">\(String(format: ls < 1 ? "%.1f" : "%.0f", l))</text>\n"
            l += ls
        }
        var j = 0.0
        while j <= jmax {
            out += "<line x1=\"\(f(X0))\" x2=\"\(f(X1))\" y1=\"\(f(qy(j)))\" y2=\"\(f(qy(j)))\" stroke=\"#eee\"/><text x=\"\(f(X0 - 6))\" y=\"\(f(qy(j) + 4))\" text-anchor=\"end\">\(String(format: "%.2f", j))</text>\n"
            j += js
        }
        out += "<text x=\"\(f((X0 + X1) / 2))\" y=\"\(f(Y1 + 34))\" text-anchor=\"middle\">p95 added latency, ms</text>\n"
        out += "<text x=\"20\" y=\"\(f((Y0 + Y1) / 2))\" transform=\"rotate(-90 20 \(f((Y0 + Y1) / 2)))\" text-anchor=\"middle\">jitter ratio</text>\n"
        let fr = frontier.map { "\(f(qx($0.0))),\(f(qy($0.1)))" }.joined(separator: " ")
        out += "<polyline fill=\"none\" stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\" points=\"\(fr)\"/>\n"
        for o in oracles {
            out += "<circle cx=\"\(f(qx(o.l)))\" cy=\"\(f(qy(o.j)))\" r=\"2.5\" fill=\"#000\"/><text x=\"\(f(qx(o.l) - 4))\" y=\"\(f(qy(o.j) + 14))\" font-size=\"10\" text-anchor=\"end\" fill=\"#444\">\(o.rate)</text>\n"
        }
        out += "<text x=\"\(f(X1 + 12))\" y=\"\(f(Y0 + 4))\">- - oracle frontier</text><text x=\"\(f(X1 + 12))\" y=\"\(f(Y0 + 18))\">(black dots: oracle</text><text x=\"\(f(X1 + 12))\" y=\"\(f(Y0 + 32))\">at the rate shown)</text>\n"
        for (n, r) in results.enumerated() {
            let col = colors[n % colors.count]
            let x = qx(r.1.latencyMsP95), y = qy(r.1.jitterRatio)
            // Alternate labels above and below so that close points stay legible.
            let ty = n % 2 == 0 ? y - 7 : y + 15
            out += "<circle cx=\"\(f(x))\" cy=\"\(f(y))\" r=\"5\" fill=\"\(col)\"/><text x=\"\(f(x + 7))\" y=\"\(f(ty))\" fill=\"\(col)\">\(esc(r.0.name))</text>\n"
        }
        out += "<text x=\"20\" y=\"\(f(Y1 + 54))\" fill=\"#555\">remolo simulate; M1-M5 as in the field notes. Frontier: the oracle knows every arrival and stretches playback by at most its rate.</text>\n"
        return out + "</svg>\n"
    }

    static func axes(x0: Double, x1: Double, y0: Double, y1: Double) -> String {
        "<rect x=\"\(f(x0))\" y=\"\(f(y0))\" width=\"\(f(x1 - x0))\" height=\"\(f(y1 - y0))\" fill=\"none\" stroke=\"#999\"/>\n"
    }
}
