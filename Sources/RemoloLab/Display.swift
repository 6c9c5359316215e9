import Foundation
import RemoloPlayout

/// The display the lab samples the cursor on: when it refreshes.
///
/// - `fixed`: a refresh every 1/hz (hz may be fractional: a mode's exact
///   rate, 143.856 Hz, against a drain set from its rounded 144).
/// - `vrrGame`: variable refresh (FreeSync, G-Sync, VESA Adaptive-Sync)
///   under a game: the display refreshes when the game presents a frame,
///   and the game's frame rate wanders between `minHz` and `maxHz` (each
///   frame's time is the last one's times exp(0.04 N(0,1)), reflected at
///   the range's ends: about 10 seconds to sweep the range), so the drain
///   ticks fall at every phase of the refreshes.
/// - `vrrCursor`: variable refresh on a desktop that refreshes when the
///   cursor moves: the first drain tick at least 1/maxHz after the previous
///   refresh (the compositor shows the frame the tick wrote, and waits for
///   the panel's minimum interval). The refreshes then follow the drain.
public enum LabDisplay: Sendable, Equatable, CustomStringConvertible {
    case fixed(hz: Double)
    case vrrGame(minHz: Double, maxHz: Double)
    case vrrCursor(maxHz: Double)

    /// The highest rate the display refreshes at (the mode's).
    public var maxHz: Double {
        switch self {
        case .fixed(let hz): return hz
        case .vrrGame(_, let m), .vrrCursor(let m): return m
        }
    }

    public var isVariable: Bool { if case .fixed = self { return false } else { return true } }

    public var description: String {
        func n(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(format: "%.3f", v) }
        switch self {
        case .fixed(let hz): return "\(n(hz)) Hz"
        case .vrrGame(let lo, let hi): return "VRR \(n(lo))-\(n(hi)) Hz, game"
        case .vrrCursor(let hi): return "VRR <=\(n(hi)) Hz, cursor"
        }
    }

    /// `144`, `143.856`, `48-144` (vrrGame) or `cursor:144` (vrrCursor),
    /// each rate from 24 to 500 Hz.
    public static func parse(_ s: String) throws(LabDisplayError) -> LabDisplay {
        func hz(_ t: Substring) throws(LabDisplayError) -> Double {
            guard let v = Double(t), v >= 24, v <= 500 else {
                throw LabDisplayError("'\(t)' is not a refresh rate from 24 to 500 Hz")
            }
            return v
        }
        if s.hasPrefix("cursor:") { return .vrrCursor(maxHz: try hz(s.dropFirst("cursor:".count))) }
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        if parts.count == 2 {
            let lo = try hz(parts[0]), hi = try hz(parts[1])
            guard lo < hi else { throw LabDisplayError("a variable-refresh range goes low to high: '\(s)'") }
            return .vrrGame(minHz: lo, maxHz: hi)
        }
        guard parts.count == 1 else {
            throw LabDisplayError("'\(s)': write a rate (144), a variable-refresh range (48-144) or cursor:144")
        }
        return .fixed(hz: try hz(parts[0]))
    }

    /// What a receiver would read from DRM for this display: the mode's
    /// rate (rounded, as the kernel's vrefresh) and whether variable
    /// refresh is on.
    public var mode: DisplayMode {
        DisplayMode(connector: "lab", width: 1920, height: 1080, refreshHz: maxHz,
                    nominalHz: Int(maxHz.rounded()), inUse: true, vrrCapable: isVariable, vrrEnabled: isVariable)
    }

    /// Refresh times from `start` to `end` (receiver clock, microseconds);
    /// `vrrCursor` needs the drain's rate.
    func refreshes(start: Double, end: Double, drainHz: Double, seed: UInt64 = 1) -> [Double] {
        var v: [Double] = []
        switch self {
        case .fixed(let hz):
            let period = 1e6 / hz
            var k = 0.0
            while start + k * period <= end { v.append(start + k * period); k += 1 }
        case .vrrGame(let lo, let hi):
            var rng = LabRandom(seed: seed, stream: 0x5652_5247)
            let fmin = 1e6 / hi, fmax = 1e6 / lo
            var f = (fmin * fmax).squareRoot(), t = start
            while t <= end {
                v.append(t)
                f *= Foundation.exp(0.04 * rng.normal())
                if f < fmin { f = fmin * fmin / f }
                if f > fmax { f = fmax * fmax / f }
                f = min(max(f, fmin), fmax)
                t += f
            }
        case .vrrCursor(let hi):
            // `start` is the phase's first vsync ((k + 1/2)/P of a frame
            // after tick 0, LabCase): refreshes stay as far after the tick
            // whose frame they show, whole ticks apart.
            let tick = 1e6 / drainHz, minGap = 1e6 / hi
            var t = start
            while t <= end {
                v.append(t)
                t += (minGap / tick - 1e-9).rounded(.up) * tick
            }
        }
        return v
    }
}

public struct LabDisplayError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ d: String) { description = d }
}

/// The drain rate a lab run uses: a rate, or what `remolo receive
/// --drain-hz auto` picks (DrainRule) for the display scored, or for a set
/// of displays connected at once (`auto:60+144`: the same drain on each).
public enum LabDrain: Sendable, Equatable, CustomStringConvertible {
    case hz(Double)
    case auto
    case autoFor([Double])

    public static let `default` = LabDrain.hz(DrainRate.default.hz)

    public func hz(for display: LabDisplay) -> Double {
        switch self {
        case .hz(let v): return v
        case .auto: return DrainRule.auto([display.mode]).rate.hz
        case .autoFor(let rates):
            return DrainRule.auto(rates.map { LabDisplay.fixed(hz: $0).mode }).rate.hz
        }
    }

    public var isAuto: Bool { if case .hz = self { return false } else { return true } }

    public var description: String {
        func n(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(format: "%.2f", v) }
        switch self {
        case .hz(let v): return n(v)
        case .auto: return "auto"
        case .autoFor(let rates): return "auto:" + rates.map(n).joined(separator: "+")
        }
    }

    /// `auto`, `auto:60+144`, or a rate within the receiver's bounds.
    public static func parse(_ s: String) throws(LabDisplayError) -> LabDrain {
        if s == "auto" { return .auto }
        if s.hasPrefix("auto:") {
            var rates: [Double] = []
            for r in s.dropFirst("auto:".count).split(separator: "+") {
                guard let v = Double(r), v >= 24, v <= 500 else {
                    throw LabDisplayError("'\(s)': auto:RATE+RATE... takes refresh rates from 24 to 500 Hz")
                }
                rates.append(v)
            }
            guard !rates.isEmpty else { throw LabDisplayError("'\(s)': name the displays, e.g. auto:60+144") }
            return .autoFor(rates)
        }
        guard let v = Double(s), let r = DrainRate(hz: v) else {
            throw LabDisplayError("--drain-hz is auto, auto:RATE+RATE... or \(DrainRate.minHz)-\(DrainRate.maxHz) Hz, not '\(s)'")
        }
        return .hz(r.hz)
    }
}
