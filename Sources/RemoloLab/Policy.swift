import Foundation
import RemoloPlayout
import RemoloTrace
internal import RemoloPlayoutCore

/// A playout policy of the lab. Every policy but the oracle runs through the
/// real core (`Playout`), configured:
/// - `arrival`: what every peer does, each delta applied at the first drain
///   tick after it arrives: delay 0 (min = max = start = 0), segments and
///   late replays of length 0. With a zero delay every packet is either on
///   its slot (the arrival itself) or late and replayed from its arrival;
///   a zero-length segment is due whole at the first tick after its start.
/// - `fixed:MS`: the `window` policy with its delay pinned at MS
///   milliseconds (min = max = start; the default's spreading, offset and
///   stretching), so that against the default only the delay differs.
///   (The window's rule: the delay, its only choice, is the pin.)
/// - `seed`: the design note's policy exactly (`PlayoutConfig.seed`).
/// - `default`: what the receiver runs (`PlayoutConfig.default`): the
///   delay chosen by replaying the recent past at candidate delays
///   (docs/playout.md, "How the delay is chosen"), never below the lesser
///   of the window's target and the session's own reading of its knee
///   ("The floor under the chooser"), within the 60 ms clamp; and a
///   returning sender's memory (`recall_permille`; only `--returning`
///   gives it one).
/// - `window`: the default before the chooser (`PlayoutConfig.window`):
///   the window's quantile plus margin, with the same memory. Kept for
///   comparison.
/// - `chooser`: the chooser without its floor, clamped at 100 ms
///   (`PlayoutConfig.chooser`). Kept for comparison: docs/smoothness.md,
///   "The chooser against the frontier".
/// - `oracle:RATE`: the field notes' oracle, computed in Swift from every
///   arrival (see `Oracle`); `oracle` is rate 0.1.
/// - `seed+field=value+...` / `default+...`: a variant for tuning, with the
///   core's config field names (e.g. `default+delay_max_us=120000`).
public enum Policy: Sendable, Equatable {
    case arrival
    case fixed(ms: Int)
    case seed
    case `default`
    case window
    case chooser
    case oracle(rate: Double)
    case custom(name: String, config: PlayoutConfig)

    public static let all: [Policy] = [.arrival, .fixed(ms: 8), .fixed(ms: 12), .fixed(ms: 20), .fixed(ms: 40),
                                       .seed, .default, .window, .chooser, .oracle(rate: 0), .oracle(rate: 0.1)]

    public var name: String {
        switch self {
        case .arrival: return "arrival"
        case .fixed(let ms): return "fixed:\(ms)"
        case .seed: return "seed"
        case .default: return "default"
        case .window: return "window"
        case .chooser: return "chooser"
        case .oracle(let r): return r == 0 ? "oracle:0" : "oracle:\(r)"
        case .custom(let n, _): return n
        }
    }

    public var isOracle: Bool { if case .oracle = self { return true } else { return false } }

    public static func arrivalConfig() -> PlayoutConfig {
        var c = PlayoutConfig.seed
        c.delayMinUs = 0; c.delayMaxUs = 0; c.delayStartUs = 0; c.delayMarginUs = 0
        c.segMinUs = 0; c.segMaxUs = 0; c.lateMinUs = 0; c.lateMaxUs = 0
        return c
    }

    public var config: PlayoutConfig? {
        switch self {
        case .arrival: return Self.arrivalConfig()
        case .fixed(let ms): return Self.pinned(.window, delayUs: UInt32(ms * 1000))
        case .seed: return .seed
        case .default: return .default
        case .window: return .window
        case .chooser: return .chooser
        case .oracle: return nil
        case .custom(_, let c): return c
        }
    }

    /// `base` with its delay pinned: min = max = start, and no memory (a
    /// held delay is not bound by the window's clamp).
    public static func pinned(_ base: PlayoutConfig, delayUs: UInt32) -> PlayoutConfig {
        var c = base
        c.delayMinUs = delayUs; c.delayMaxUs = delayUs; c.delayStartUs = delayUs
        c.recallPermille = 0
        return c
    }

    /// The fixed-delay frontier's sweep: `fixed:0` to `fixed:100` in 5 ms steps.
    public static let frontierSweep: [Policy] = frontierSweep(stepMs: 5)

    /// fixed:0..100 ms every `stepMs` (`--sweep-ms`): 5 ms for the docs'
    /// tables and figures, 1 ms to look for a pinned delay between them.
    public static func frontierSweep(stepMs: Int) -> [Policy] {
        stride(from: 0, through: 100, by: max(1, stepMs)).map { .fixed(ms: $0) }
    }

    public var fixedMs: Int? { if case .fixed(let ms) = self { return ms } else { return nil } }

    public static var names: String {
        "arrival, fixed:MS, seed, default, window, chooser, oracle (= oracle:0.1), oracle:RATE, all, or seed+FIELD=VALUE+... / default+FIELD=VALUE+... (also window+, chooser+)"
    }

    /// Parses one policy name; throws a message naming the valid ones.
    public static func parse(_ s: String) throws(LabError) -> Policy {
        switch s {
        case "arrival": return .arrival
        case "seed": return .seed
        case "default": return .default
        case "window": return .window
        case "chooser": return .chooser
        case "oracle": return .oracle(rate: 0.1)
        default: break
        }
        if s.hasPrefix("fixed:"), let ms = Int(s.dropFirst(6)), (0...1000).contains(ms) { return .fixed(ms: ms) }
        if s.hasPrefix("oracle:"), let r = Double(s.dropFirst(7)), r >= 0, r < 1 { return .oracle(rate: r) }
        let parts = s.split(separator: "+").map(String.init)
        let bases: [String: PlayoutConfig] = ["seed": .seed, "default": .default, "window": .window, "chooser": .chooser]
        if parts.count >= 2, var c = bases[parts[0]] {
            for p in parts.dropFirst() {
                let kv = p.split(separator: "=", maxSplits: 1).map(String.init)
                guard kv.count == 2, let v = Int64(kv[1]) else {
                    throw LabError("bad policy field '\(p)' in '\(s)': write FIELD=VALUE, FIELD one of \(PlayoutConfig.fieldNames.joined(separator: ", "))")
                }
                do { try c.set(kv[0], v) } catch { throw LabError("policy '\(s)': \(error.description)") }
            }
            if let why = c.problem { throw LabError("policy '\(s)': \(why)") }
            return .custom(name: s, config: c)
        }
        throw LabError("unknown policy '\(s)': valid are \(names)")
    }
}

public struct LabError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ d: String) { description = d }
}
