import Foundation
import RemoloTrace

/// A receiver dump from the roc-streaming project's measurements
/// (github.com/roc-streaming/qa, `reports/*/`: `*.csv.xz` and
/// `roc_recv.csv.xz`, unpacked), read as a trace with another trace's
/// gesture laid over its send times: the timing is the dump's, the motion
/// the gesture's. The real traces in ../shared/traces/real were made from
/// two of these dumps the same way (their README), so this reads the rest
/// of them, and the dumps of other networks, as the lab reads R1 and R2
/// (`remolo simulate --trace DUMP --gesture-from R1-good-wifi.csv`).
///
/// A dump line `m,RECV_NS,RTP_TS,...` is one packet the receiver took in:
/// its arrival on the receiver's clock in nanoseconds and its RTP
/// timestamp at 44.1 kHz (RFC 3550 section 5.1: 32 bits, wrapping; the
/// media clock stands for the sender's). Every other line kind is skipped,
/// and a timestamp seen before is a duplicate.
public enum RocDump {
    /// The RTP clock of the dumps: 44.1 kHz audio.
    public static let rtpHz = 44_100.0
    /// A packet after a gap carries at most this many frames of motion, as
    /// R2's file does (its creator's convention: a longer gap's earlier
    /// motion is gone).
    public static let carryFrames = 5.0
    /// While the gesture is still, one packet per this long is kept as a
    /// heartbeat (design note, part 3).
    public static let heartbeatUs = 100_000.0

    /// The dump's packets as (send us from the first, arrival us from the
    /// first), in sending order.
    public static func packets(_ text: String) throws(LabError) -> [(sendUs: Double, arriveUs: Double)] {
        var out: [(Double, Double)] = []
        var seen = Set<Int64>()
        var first: (rtp: Int64, recv: Double)?
        var prev: Int64 = 0, wraps: Int64 = 0
        var lineNo = 0
        for line in text.split(separator: "\n") {
            lineNo += 1
            guard line.hasPrefix("m,") else { continue }
            let f = line.split(separator: ",", omittingEmptySubsequences: false)
            guard f.count >= 3, let recv = Double(f[1]), let ts = Double(f[2]), recv.isFinite, ts >= 0, ts < 4_294_967_296 else {
                throw LabError("dump line \(lineNo): expected 'm,RECV_NS,RTP_TS,...', found '\(line.prefix(80))'")
            }
            let rtp = Int64(ts)
            // Unwrap the 32-bit timestamp against the one before.
            if first != nil && rtp - prev < -(1 << 31) { wraps += 1 << 32 }
            if first != nil && rtp - prev > (1 << 31) { wraps -= 1 << 32 }
            prev = rtp
            let r = rtp + wraps
            guard seen.insert(r).inserted else { continue }
            let f0 = first ?? (r, recv)
            first = f0
            out.append((Double(r - f0.rtp) * 1e6 / rtpHz, (recv - f0.recv) / 1000))
        }
        guard out.count >= 2 else { throw LabError("no 'm,' packet lines: not a roc-streaming receiver dump (unpack the .xz first)") }
        out.sort { $0.0 < $1.0 }
        return out
    }

    /// The gesture's path: where the finger had moved (px) by each send
    /// time of `gesture` (seconds from its first record), its movement
    /// summed; a gap's motion is spread over it.
    struct Path {
        var t: [Double] = []
        var x: [Double] = []
        var y: [Double] = []

        init(_ gesture: Trace) {
            guard let t0 = gesture.records.first?.sendUs else { return }
            var px = 0.0, py = 0.0
            for r in gesture.records where r.kind == .motion || r.kind == .heartbeat {
                if r.kind == .motion { px += Double(r.dx) / 256; py += Double(r.dy) / 256 }
                t.append(Double(r.sendUs - t0) / 1e6); x.append(px); y.append(py)
            }
        }

        var span: Double { t.last ?? 0 }

        func at(_ s: Double) -> (Double, Double) {
            guard let last = t.indices.last else { return (0, 0) }
            if s <= t[0] { return (x[0], y[0]) }
            if s >= t[last] { return (x[last], y[last]) }
            var lo = 0, hi = last
            while hi - lo > 1 { let m = (lo + hi) / 2; if t[m] <= s { lo = m } else { hi = m } }
            let w = t[hi] > t[lo] ? (s - t[lo]) / (t[hi] - t[lo]) : 0
            return (x[lo] + w * (x[hi] - x[lo]), y[lo] + w * (y[hi] - y[lo]))
        }
    }

    /// The dump from `fromS` seconds on, as long as the gesture lasts, with
    /// the gesture laid over it. Send times start at 7000 s and arrivals at
    /// 123 s, as in R1 and R2.
    public static func trace(dump text: String, gesture: Trace, fromS: Double = 0) throws(LabError) -> Trace {
        let path = Path(gesture)
        guard path.span > 0 else { throw LabError("the gesture trace has no span") }
        let all = try packets(text)
        let window = all.filter { $0.sendUs >= fromS * 1e6 && $0.sendUs <= (fromS + path.span) * 1e6 }
        guard let s0 = window.first?.sendUs, let a0 = window.first?.arriveUs, window.count >= 2 else {
            throw LabError("the dump has no packets from \(fromS) s on")
        }
        let gaps = zip(window.dropFirst(), window).map { $0.0.sendUs - $0.1.sendUs }.sorted()
        let frameUs = gaps[gaps.count / 2]
        var records: [TraceRecord] = []
        var lastS: Double?, lastBeat = -Double.infinity
        for p in window {
            let s = (p.sendUs - s0) / 1e6
            let here = path.at(s)
            let before = path.at(max(s - frameUs / 2e6, 0)), after = path.at(s + frameUs / 2e6)
            let send = UInt64(7_000_000_000 + (p.sendUs - s0).rounded())
            let arrive = UInt64(123_000_000 + (p.arriveUs - a0).rounded())
            if before != after {
                let from = path.at(max(s - carryFrames * frameUs / 1e6, lastS ?? (s - frameUs / 1e6)))
                records.append(TraceRecord(sendUs: send, arriveUs: arrive, kind: .motion,
                                           dx: Int32(((here.0 - from.0) * 256).rounded()),
                                           dy: Int32(((here.1 - from.1) * 256).rounded())))
                lastBeat = p.sendUs
            } else if p.sendUs - lastBeat >= heartbeatUs - frameUs / 2 {
                records.append(TraceRecord(sendUs: send, arriveUs: arrive, kind: .heartbeat))
                lastBeat = p.sendUs
            }
            lastS = s
        }
        return Trace(records: records, notes: ["roc-streaming receiver dump from \(fromS) s, gesture laid over"])
    }
}
