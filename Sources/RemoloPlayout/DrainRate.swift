// The drain's rate: how often the receive loop lets the playout's motion out
// to the pointer. A display that refreshes at R Hz shows the cursor once per
// 1/R s; when the drain's rate is a whole multiple of R every frame carries
// the same number of ticks of motion, and when it is not, frames alternate
// between n and n+1 ticks and the cursor's speed wobbles by 1/n at every
// frame (480 Hz on a 144 Hz display: 3 or 4 ticks, a jitter ratio of 0.14
// on a quiet network against 0.007 at 576 Hz; docs/drain-rate.md).

internal import RemoloPlayoutCore

/// One connected output and the mode it shows, as the kernel's DRM reports it.
public struct DisplayMode: Sendable, Equatable {
    /// `card0-DP-1`: the card node and the connector's kernel name.
    public var connector: String
    public var width: Int
    public var height: Int
    /// The mode's exact rate: pixel clock / (htotal * vtotal), for
    /// interlace and doublescan as the kernel counts them
    /// (drm_mode_vrefresh): 143.856 for a "144 Hz" mode whose timings give that.
    public var refreshHz: Double
    /// The mode's rate rounded to whole hertz, as the kernel's vrefresh.
    public var nominalHz: Int
    /// The mode a CRTC shows now; false: the connector's preferred mode
    /// (nothing drives the output yet, e.g. before a desktop starts).
    public var inUse: Bool
    /// The connector's `vrr_capable` property (Linux 5.0).
    public var vrrCapable: Bool
    /// Its CRTC's `VRR_ENABLED` property: variable refresh is on now.
    public var vrrEnabled: Bool

    public init(connector: String, width: Int, height: Int, refreshHz: Double, nominalHz: Int,
                inUse: Bool, vrrCapable: Bool = false, vrrEnabled: Bool = false) {
        self.connector = connector; self.width = width; self.height = height
        self.refreshHz = refreshHz; self.nominalHz = nominalHz; self.inUse = inUse
        self.vrrCapable = vrrCapable; self.vrrEnabled = vrrEnabled
    }

    /// `card0-DP-1 2560x1440 143.86 Hz`
    public var summary: String {
        "\(connector) \(width)x\(height) \(DrainRate.format(refreshHz)) Hz"
            + (inUse ? "" : " (preferred mode, not shown yet)") + (vrrEnabled ? " (variable refresh on)" : "")
    }
}

/// A drain rate the receive loop accepts: REMOLO_DRAIN_HZ_MIN to
/// REMOLO_DRAIN_HZ_MAX hertz.
public struct DrainRate: Sendable, Equatable, CustomStringConvertible {
    public let hz: Double

    public static let minHz = Int(REMOLO_DRAIN_HZ_MIN)
    public static let maxHz = Int(REMOLO_DRAIN_HZ_MAX)
    /// The design note's 480 Hz: what the loop runs when nothing says otherwise.
    public static let `default` = DrainRate(checked: Double(REMOLO_TICK_HZ))

    public init?(hz: Double) {
        guard hz.isFinite, hz >= Double(Self.minHz), hz <= Double(Self.maxHz) else { return nil }
        self.hz = hz
    }

    private init(checked hz: Double) { self.hz = hz }

    /// The timerfd period in nanoseconds (rx_config.tick_ns). Rounding
    /// moves the rate by at most 2.5e-7 of itself (0.5 ns of 2 ms): a
    /// frame's share of ticks slips by one after an hour at 576 Hz.
    public var tickNanoseconds: UInt32 { UInt32((1e9 / hz).rounded()) }

    public var description: String { Self.format(hz) + " Hz" }

    /// Whole hertz bare, else two decimals: `576`, `575.42`.
    public static func format(_ v: Double) -> String {
        abs(v - v.rounded()) < 0.005 ? String(Int(v.rounded())) : String(format: "%.2f", v)
    }
}

/// What `--drain-hz auto` chose and why, in words the receiver prints.
public struct DrainChoice: Sendable, Equatable {
    public let rate: DrainRate
    public let reason: String
    /// The displays the choice was made for (none: the fallback).
    public let displays: [DisplayMode]

    /// `drain 576 Hz (auto: ...)`
    public var line: String { "drain \(rate) (auto: \(reason))" }
}

/// `--drain-hz auto`: the smallest whole multiple of the display's refresh
/// that is at least 480 Hz (480 on 60, 120 and 240 Hz displays, 576 on 144,
/// 495 on 165, 720 on 360), at the mode's exact rate.
///
/// Several displays at different rates: the rate from 480 to
/// REMOLO_DRAIN_HZ_AUTO_MAX, among the multiples of each display's rate,
/// whose worst wobble over the displays is least (the cheaper on a tie).
/// A drain of D Hz on a display of B Hz gives a frame D/B ticks; when that
/// is n + f, frames carry n or n+1 ticks, a spread of sqrt(f(1-f)) ticks
/// around n + f, so the cursor's step wobbles by (B/D) sqrt(f(1-f)) of
/// itself: 0.141 for 480 on 144 Hz, 0.048 for 990 on 144. The lab measures
/// 0.142 and 0.048 (docs/drain-rate.md, "Several displays": the formula
/// is within 0.01 of every drain and display there). So a common multiple
/// (720 for 60 + 144 Hz) wins where there is one, and 990 (0.048 on 144,
/// 0 on 165) where there is none (144 + 165 Hz; 495 would leave 0.144 on
/// the 144 Hz display). The display the pointer is on is not known to DRM
/// (a compositor may draw the cursor itself), so every display counts.
///
/// Variable refresh changes nothing: under a game's varying frame rate no
/// fixed drain divides the refreshes, the jitter falls only as the drain
/// rises (0.056 at 480, 0.026 at 1000 on a 48-144 Hz range), and a desktop
/// that refreshes with the cursor follows the drain's ticks, where the
/// mode's multiple is best (docs/drain-rate.md, "Variable refresh"). The
/// mode's rate is served as for a fixed display, and the choice says that
/// variable refresh is on.
public enum DrainRule {
    /// The least auto picks: the design note's 480 Hz.
    public static let floorHz = Int(REMOLO_TICK_HZ)
    /// The most auto picks among several displays' multiples.
    public static let autoMaxHz = Int(REMOLO_DRAIN_HZ_AUTO_MAX)
    /// Rates below this are not a display's refresh (a mode with a broken
    /// clock reads 0).
    static let plausibleHz = 24

    public static func auto(_ all: [DisplayMode]) -> DrainChoice {
        let displays = all.filter { $0.nominalHz >= plausibleHz && $0.refreshHz > 0 }
        guard !displays.isEmpty else {
            return fallback(all.isEmpty ? "no connected display" : "no display reports a usable refresh rate")
        }
        let rates = Array(Set(displays.map(\.nominalHz))).sorted(by: >)
        // Every multiple of every rate from the floor to the cap, and each
        // rate's smallest multiple from the floor even past the cap.
        var candidates = Set<Int>()
        for r in rates {
            candidates.insert(smallestMultiple(of: r))
            var d = smallestMultiple(of: r)
            while d <= autoMaxHz { candidates.insert(d); d += r }
        }
        let nominal = candidates.min { a, b in
            let wa = rates.map { wobble(drainHz: Double(a), displayHz: Double($0)) }.max()!
            let wb = rates.map { wobble(drainHz: Double(b), displayHz: Double($0)) }.max()!
            return abs(wa - wb) < 1e-9 ? a < b : wa < wb
        }!
        // The display served exactly: the fastest whose rate divides the
        // drain. Its exact rate scales the drain: a mode of 143.856 Hz gets
        // 575.42 Hz, so the ticks keep their place in its frames.
        let served = displays.filter { nominal % $0.nominalHz == 0 }
            .max { ($0.nominalHz, $0.inUse ? 1 : 0) < ($1.nominalHz, $1.inUse ? 1 : 0) }!
        let hz = Double(nominal) / Double(served.nominalHz) * served.refreshHz
        guard let rate = DrainRate(hz: hz) else {
            return fallback("\(DrainRate.format(hz)) Hz for \(served.summary) is outside "
                            + "\(DrainRate.minHz)-\(DrainRate.maxHz) Hz")
        }
        var why: String
        if displays.count == 1 {
            why = "\(nominal / served.nominalHz) x \(DrainRate.format(served.refreshHz)) Hz, \(served.summary)"
        } else if rates.count == 1 {
            why = "\(nominal / served.nominalHz) x \(DrainRate.format(served.refreshHz)) Hz, every display at "
                + "\(served.nominalHz) Hz: " + displays.map(\.summary).joined(separator: ", ")
        } else {
            let parts = displays.map { d -> String in
                let w = wobble(drainHz: Double(nominal), displayHz: Double(d.nominalHz))
                return d.summary + (w == 0 ? ": \(nominal / d.nominalHz) ticks a frame"
                                    : String(format: ": %.2f ticks a frame, wobble %.3f", Double(nominal) / Double(d.nominalHz), w))
            }
            why = "the least wobble over \(displays.count) displays: " + parts.joined(separator: "; ")
        }
        if displays.contains(where: \.vrrEnabled) {
            why += "; variable refresh is on: a game's varying frame rate is divided by no fixed drain "
                + "(--drain-hz 1000 halves the wobble there, at twice the drain's CPU)"
        }
        return DrainChoice(rate: rate, reason: why, displays: displays)
    }

    /// The design note's 480 Hz, with the reason no display decided.
    public static func fallback(_ why: String) -> DrainChoice {
        DrainChoice(rate: .default, reason: why + "; \(DrainRate.default) kept", displays: [])
    }

    /// How much a drain makes the cursor's step wobble on a display, as a
    /// fraction of the step: (B/D) sqrt(f(1-f)) with f the fractional part
    /// of D/B ticks a frame; 0 when the drain is a multiple of the refresh.
    public static func wobble(drainHz d: Double, displayHz b: Double) -> Double {
        let n = d / b, f = n - n.rounded(.down)
        guard f > 1e-9, f < 1 - 1e-9 else { return 0 }
        return (b / d) * (f * (1 - f)).squareRoot()
    }

    /// The smallest multiple of `hz` that is at least floorHz.
    static func smallestMultiple(of hz: Int) -> Int {
        max(1, (floorHz + hz - 1) / hz) * hz
    }
}
