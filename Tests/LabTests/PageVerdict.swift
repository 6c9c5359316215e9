@testable import RemoloLab

/// How docs/smoothness.md's frontier tables write a run, for the tests that
/// hold those tables to the runs.
extension FrontierReport {
    /// The verdict cell: "not dominated", or "dominated by `fixed:MS`, at
    /// every phase" / ", within the phases' spread".
    var pageVerdict: String {
        dominatedBy.map { "dominated by `\($0)`, " + (dominatedAtEveryPhase ? "at every phase" : "within the phases' spread") }
            ?? "not dominated"
    }

    /// The frontier's pins that could beat a run: a pinned delay longer than
    /// its p95 + the slack cannot (every frame it shows carries that delay).
    static func pins(couldBeat row: LabRow) -> [Policy] {
        Policy.frontierSweep.filter {
            if case .fixed(let ms) = $0 { return Double(ms) <= row.scores.latencyMsP95 + latencySlackMs }
            return false
        }
    }
}
