internal import Glibc
import Foundation
import RemoloTypes

/// The arrivals trace: what a sender sent and when each datagram reached the
/// receiver. Written by `remolo simulate --write-trace` and by
/// `remolo receive --record-arrivals` (through `TraceWriter`), read by
/// `remolo simulate --trace`.
///
/// Format: UTF-8 CSV, one datagram per row in the order the sender sent them,
/// after a header line `send_us,arrive_us,kind,dx,dy`. Lines whose first
/// non-blank character is `#` are comments; blank lines are ignored.
///
/// - `send_us`: the sender's clock, integer microseconds.
/// - `arrive_us`: the receiver's clock, integer microseconds; empty = lost.
/// - `kind`: `move`, `scroll`, `button` or `heartbeat`.
/// - `dx,dy`: for `move`, pixels; for `scroll`, horizontal and vertical in
///   hi-res wheel units (1/120 notch, positive = right / up). Decimals are
///   allowed: the wire's integer delta is Q8, `round(v * 256)` (half away
///   from zero), so 0.5 px is 128 on the wire and anything finer than
///   1/256 px is rounded. For `button`, dx is the button (1 left, 2 right,
///   3 middle, up to 8) and dy is 1 when pressed, 0 when released. For
///   `heartbeat` both are 0 (or empty).
///
/// The two clocks may differ by an unknown offset and drift. A generated
/// trace carries the truth in comments (`# truth ...`, see `TraceClock`) so
/// that a replay scores exactly as the run that wrote it; a recorded trace
/// has none, and the clock map is estimated from the lower envelope of the
/// transit times (`TraceClock.estimate`).
public struct TraceRecord: Sendable, Equatable {
    public var sendUs: UInt64
    public var arriveUs: UInt64?
    public var kind: PacketKind
    /// Wire values: Q8 for move and scroll; button number and state for
    /// button.
    public var dx: Int32
    public var dy: Int32

    public init(sendUs: UInt64, arriveUs: UInt64?, kind: PacketKind, dx: Int32 = 0, dy: Int32 = 0) {
        self.sendUs = sendUs; self.arriveUs = arriveUs; self.kind = kind; self.dx = dx; self.dy = dy
    }

    /// Carries motion (move or scroll).
    public var isMovement: Bool { kind == .motion || kind == .scroll }

}

/// How the sender's clock maps to the receiver's: E = s + offset + ppm * 1e-6 * s
/// for the rows from `fromRow` on (until the next segment; a sender clock step
/// starts a new one), and the smallest true one-way delay.
public struct TraceClock: Sendable, Equatable {
    public struct Segment: Sendable, Equatable {
        public var fromRow: Int
        public var offsetUs: Double
        public var ppm: Double
        public init(fromRow: Int, offsetUs: Double, ppm: Double) {
            self.fromRow = fromRow; self.offsetUs = offsetUs; self.ppm = ppm
        }
    }
    public var segments: [Segment]
    public var dminUs: Double
    /// True when it came from the trace's own truth, false when estimated.
    public var isTruth: Bool

    public init(segments: [Segment], dminUs: Double, isTruth: Bool = true) {
        self.segments = segments; self.dminUs = dminUs; self.isTruth = isTruth
    }

    /// Receiver-clock time at which each row was really sent (r(s_i) of the
    /// field notes).
    public func emissionTimes(_ records: [TraceRecord]) -> [Double] {
        var out = [Double](repeating: 0, count: records.count)
        var seg = 0
        for i in records.indices {
            while seg + 1 < segments.count && segments[seg + 1].fromRow <= i { seg += 1 }
            let sgm = segments[seg]
            let s = Double(records[i].sendUs)
            out[i] = s + sgm.offsetUs + sgm.ppm * 1e-6 * s
        }
        return out
    }

    /// The clock map of a trace without truth, from the lower envelope of
    /// the transit times y_i = arrive_i - send_i: the lower convex hull of
    /// the points (s_i, y_i) bounds them from below, and the line taken is
    /// the hull edge above the mean send time, the line under every point
    /// that minimises the summed distance to them (the linear-programming
    /// skew estimate of one-way delay measurement). Its height is the
    /// fastest trip, so the smallest delay is folded into it: `dminUs` is 0
    /// and latencies count from the fastest trip. One line for the whole
    /// trace: a sender clock step inside a recorded trace is not modelled.
    public static func estimate(_ records: [TraceRecord]) -> TraceClock {
        var pts: [(Double, Double)] = []
        guard let s0 = records.first?.sendUs else {
            return TraceClock(segments: [Segment(fromRow: 0, offsetUs: 0, ppm: 0)], dminUs: 0, isTruth: false)
        }
        for r in records {
            guard let a = r.arriveUs else { continue }
            let s = Double(Int64(bitPattern: r.sendUs &- s0))
            pts.append((s, Double(Int64(bitPattern: a &- r.sendUs))))
        }
        guard !pts.isEmpty else {
            return TraceClock(segments: [Segment(fromRow: 0, offsetUs: 0, ppm: 0)], dminUs: 0, isTruth: false)
        }
        pts.sort { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }
        var hull: [(Double, Double)] = []
        for p in pts {
            if let last = hull.last, last.0 == p.0 { continue }  // keep the lowest per send time
            while hull.count >= 2 {
                let a = hull[hull.count - 2], b = hull[hull.count - 1]
                let cross = (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0)
                if cross <= 0 { hull.removeLast() } else { break }
            }
            hull.append(p)
        }
        let mean = pts.reduce(0) { $0 + $1.0 } / Double(pts.count)
        var alpha = hull[0].1, beta = 0.0
        if hull.count >= 2 {
            var k = 0
            while k + 2 < hull.count && hull[k + 1].0 < mean { k += 1 }
            let a = hull[k], b = hull[k + 1]
            beta = (b.1 - a.1) / (b.0 - a.0)
            alpha = a.1 - beta * a.0
        }
        // y = alpha + beta * (s - s0)  =>  E = s + (alpha - beta * s0) + beta * s
        let s0d = Double(s0)
        return TraceClock(segments: [Segment(fromRow: 0, offsetUs: alpha - beta * s0d, ppm: beta * 1e6)],
                          dminUs: 0, isTruth: false)
    }
}

public struct Trace: Sendable, Equatable {
    public var records: [TraceRecord]
    /// The truth when known (generated traces), nil for recorded ones.
    public var clock: TraceClock?
    /// The sender's frame interval when known.
    public var frameUs: Double?
    /// Free text written as leading comments.
    public var notes: [String]

    public init(records: [TraceRecord], clock: TraceClock? = nil, frameUs: Double? = nil, notes: [String] = []) {
        self.records = records; self.clock = clock; self.frameUs = frameUs; self.notes = notes
    }

    /// The clock map used for scoring: the truth, else the estimate.
    public var effectiveClock: TraceClock { clock ?? TraceClock.estimate(records) }

    /// The sender's frame interval: as written, else the median interval
    /// between consecutive movement packets (below 50 ms), else 120 Hz.
    public var effectiveFrameUs: Double {
        if let f = frameUs { return f }
        var gaps: [UInt64] = []
        var prev: UInt64?
        for r in records {
            if r.isMovement, let p = prev, r.sendUs > p, r.sendUs - p < 50_000 { gaps.append(r.sendUs - p) }
            prev = r.isMovement ? r.sendUs : nil
        }
        guard !gaps.isEmpty else { return 1e6 / 120 }
        gaps.sort()
        return Double(gaps[gaps.count / 2])
    }

    public static let header = "send_us,arrive_us,kind,dx,dy"

    // MARK: writing

    /// Q8 as an exact decimal: 1/256 = 0.00390625, so eight digits suffice.
    public static func formatQ8(_ v: Int32) -> String {
        let m = Int64(v).magnitude
        let whole = m / 256, frac = m % 256
        var s = (v < 0 ? "-" : "") + String(whole)
        if frac != 0 {
            var digits = String(frac * 390_625)
            digits = String(repeating: "0", count: 8 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            s += "." + digits
        }
        return s
    }

    /// The whole trace as text.
    public func csv() -> String {
        var out = Self.headerText(notes: notes, clock: clock, frameUs: frameUs)
        out.reserveCapacity(out.utf8.count + records.count * 32)
        for r in records { out += Self.row(r) + "\n" }
        return out
    }

    /// Everything before the first row: the leading comments and the header
    /// line (shared by `csv()` and `TraceWriter`).
    public static func headerText(notes: [String], clock: TraceClock?, frameUs: Double?) -> String {
        var out = "# remolo arrivals trace: send_us,arrive_us,kind,dx,dy (see Sources/RemoloTrace/Trace.swift)\n"
        for n in notes { out += "# \(n)\n" }
        if let c = clock {
            out += "# truth dmin_us=\(c.dminUs)\n"
            for sg in c.segments {
                out += "# truth map from_row=\(sg.fromRow) offset_us=\(sg.offsetUs) ppm=\(sg.ppm)\n"
            }
        }
        if let f = frameUs { out += "# frame_us=\(f)\n" }
        out += header + "\n"
        return out
    }

    public static func row(_ r: TraceRecord) -> String {
        let arrive = r.arriveUs.map { String($0) } ?? ""
        switch r.kind {
        case .motion, .scroll:
            return "\(r.sendUs),\(arrive),\(r.kind.traceName),\(formatQ8(r.dx)),\(formatQ8(r.dy))"
        case .button:
            return "\(r.sendUs),\(arrive),button,\(r.dx),\(r.dy)"
        case .heartbeat:
            return "\(r.sendUs),\(arrive),heartbeat,0,0"
        }
    }

    public func write(to path: String) throws {
        try csv().write(toFile: path, atomically: true, encoding: .utf8)
    }

    // MARK: reading

    public struct ParseError: Error, CustomStringConvertible, Equatable {
        public let line: Int
        public let column: Int
        public let message: String
        public var description: String {
            column > 0 ? "line \(line), column \(column): \(message)" : "line \(line): \(message)"
        }
    }

    static let columns = ["send_us", "arrive_us", "kind", "dx", "dy"]

    public static func read(from path: String) throws -> Trace {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ParseError(line: 0, column: 0, message: "cannot read trace file '\(path)'")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ParseError(line: 0, column: 0, message: "'\(path)' is not UTF-8 text")
        }
        return try parse(text)
    }

    public static func parse(_ text: String) throws -> Trace {
        var records: [TraceRecord] = []
        var sawHeader = false
        var dmin: Double?
        var segments: [TraceClock.Segment] = []
        var frame: Double?
        var notes: [String] = []
        var lineNo = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNo += 1
            var line = Substring(raw)
            if line.hasSuffix("\r") { line.removeLast() }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            if trimmed.hasPrefix("#") {
                let body = trimmed.dropFirst().trimmingCharacters(in: .whitespaces)
                if body.hasPrefix("truth ") || body.hasPrefix("frame_us=") {
                    let kv = keyValues(body)
                    if body.hasPrefix("frame_us=") {
                        guard let f = kv["frame_us"].flatMap(Double.init), f > 0 else {
                            throw ParseError(line: lineNo, column: 0, message: "bad frame_us comment")
                        }
                        frame = f
                    } else if let d = kv["dmin_us"] {
                        guard let v = Double(d) else { throw ParseError(line: lineNo, column: 0, message: "bad dmin_us '\(d)'") }
                        dmin = v
                    } else if body.hasPrefix("truth map") {
                        guard let r = kv["from_row"].flatMap(Int.init), let o = kv["offset_us"].flatMap(Double.init),
                              let p = kv["ppm"].flatMap(Double.init) else {
                            throw ParseError(line: lineNo, column: 0, message: "a truth map comment needs from_row=, offset_us= and ppm=")
                        }
                        segments.append(.init(fromRow: r, offsetUs: o, ppm: p))
                    }
                } else if !body.hasPrefix("remolo arrivals trace") && !body.isEmpty {
                    notes.append(body)
                }
                continue
            }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if !sawHeader {
                guard fields == columns else {
                    throw ParseError(line: lineNo, column: 0,
                                     message: "expected the header line '\(header)', found '\(line)'")
                }
                sawHeader = true
                continue
            }
            guard fields.count == 5 else {
                throw ParseError(line: lineNo, column: min(fields.count, 5) + (fields.count < 5 ? 1 : 0),
                                 message: "expected 5 fields (\(header)), found \(fields.count)")
            }
            records.append(try parseRow(fields, line: lineNo))
        }
        guard sawHeader else {
            throw ParseError(line: max(lineNo, 1), column: 0, message: "no header line '\(header)'")
        }
        var clock: TraceClock?
        if let d = dmin, !segments.isEmpty {
            segments.sort { $0.fromRow < $1.fromRow }
            clock = TraceClock(segments: segments, dminUs: d)
        }
        return Trace(records: records, clock: clock, frameUs: frame, notes: notes)
    }

    static func keyValues(_ s: String) -> [String: String] {
        var out: [String: String] = [:]
        for part in s.split(separator: " ") {
            let kv = part.split(separator: "=", maxSplits: 1)
            if kv.count == 2 { out[String(kv[0])] = String(kv[1]) }
        }
        return out
    }

    static func parseRow(_ f: [String], line: Int) throws -> TraceRecord {
        func err(_ col: Int, _ msg: String) -> ParseError {
            ParseError(line: line, column: col, message: "\(columns[col - 1]): \(msg)")
        }
        guard let send = UInt64(f[0]) else { throw err(1, "'\(f[0])' is not a whole number of microseconds") }
        var arrive: UInt64?
        if !f[1].isEmpty {
            guard let a = UInt64(f[1]) else { throw err(2, "'\(f[1])' is not a whole number of microseconds (leave it empty for a lost datagram)") }
            arrive = a
        }
        guard let kind = PacketKind(traceName: f[2]) else {
            throw err(3, "unknown kind '\(f[2])' (move, scroll, button or heartbeat)")
        }
        func q8(_ col: Int) throws -> Int32 {
            let s = f[col - 1]
            if s.isEmpty && kind == .heartbeat { return 0 }
            guard let v = Double(s), v.isFinite else { throw err(col, "'\(s)' is not a number") }
            let q = (v * 256).rounded(.toNearestOrAwayFromZero)
            guard abs(q) <= Double(Int32.max) else { throw err(col, "\(s) is out of range") }
            return Int32(q)
        }
        switch kind {
        case .motion, .scroll, .heartbeat:
            return TraceRecord(sendUs: send, arriveUs: arrive, kind: kind, dx: try q8(4), dy: try q8(5))
        case .button:
            guard let b = Int32(f[3]), (1...8).contains(b) else { throw err(4, "a button is 1 (left) to 8, found '\(f[3])'") }
            guard let d = Int32(f[4]), d == 0 || d == 1 else { throw err(5, "a button state is 1 (pressed) or 0, found '\(f[4])'") }
            return TraceRecord(sendUs: send, arriveUs: arrive, kind: .button, dx: b, dy: d)
        }
    }
}

/// Why a trace file could not be written, with what to do about it.
