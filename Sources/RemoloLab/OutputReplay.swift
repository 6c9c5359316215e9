import Foundation
import RemoloPlayout
import RemoloTrace

/// One frame the receiver wrote to its pointer (or the lab predicts it
/// writes): whole pixels, at a time on the receiver's clock (microseconds).
/// Frames that move nothing are not written, so they are not listed.
public struct OutputFrame: Sendable, Equatable {
    public var tUs: Double
    public var dx: Int32
    public var dy: Int32

    public init(tUs: Double, dx: Int32, dy: Int32) {
        self.tUs = tUs; self.dx = dx; self.dy = dy
    }
}

/// Scores of a pointer's output frames against a trace: what a real
/// receiver did (frames read back from its device) and what the lab
/// predicts it does (`LabCase.predictFrames`) go through the same rules,
/// so the two can be compared number for number.
public struct OutputScore: Sendable {
    /// M1-M5 (`Scores`) of the frames.
    public var scores: Scores
    /// Added latency of each scored movement record (index into the trace's
    /// records), microseconds.
    public var latencyUs: [Int: Double]
}

extension LabCase {
    /// Scores output frames (whole pixels, as written).
    ///
    /// - Latency: the output shows packet i once the pointer has moved to
    ///   within half a pixel of everything sent up to and including i (the
    ///   core carries the rest as a sub-pixel remainder), on each axis the
    ///   packet moves by a pixel or more, coming from the direction the
    ///   packet moves; lambda_i = that frame's time - r(s_i) - d_min. The
    ///   search only moves forward from the frame that showed the previous
    ///   packet, so a path that comes back (a circle) is not "reached" on an
    ///   earlier pass, and an axis that moves a pixel per packet is far from
    ///   turning. Packets that move less than a pixel are not scored: the
    ///   half-pixel rule "reaches" them before they play.
    /// - Cursor: the frames' running sum at each vsync (frames at or before
    ///   it), whole pixels: no sub-pixel remainder is visible in a device's
    ///   events, so predicted frames are scored the same way.
    public func scoreOutput(_ frames: [OutputFrame]) -> OutputScore {
        let recs = trace.records
        var latency: [Int: Double] = [:]
        var run = PolicyRun()
        var sent = SIMD2<Int64>(0, 0)
        var k = 0
        var shown = SIMD2<Int64>(0, 0)   // Q8 of the frames before k
        for i in recs.indices where recs[i].kind == .motion && recs[i].arriveUs != nil {
            let r = recs[i]
            let d = SIMD2(Int64(r.dx), Int64(r.dy))
            sent &+= d
            let axes = (x: abs(d.x) >= 256, y: abs(d.y) >= 256)
            guard axes.x || axes.y else { continue }
            let sign = SIMD2<Int64>(d.x >= 0 ? 1 : -1, d.y >= 0 ? 1 : -1)
            func reached(_ c: SIMD2<Int64>) -> Bool {
                (!axes.x || sign.x * (c.x - sent.x) >= -128) && (!axes.y || sign.y * (c.y - sent.y) >= -128)
            }
            // The frame that showed the previous packet may show this one too.
            var at = max(0, k - 1)
            var c = shown &- (k > 0 ? SIMD2(Int64(frames[k - 1].dx), Int64(frames[k - 1].dy)) &* 256 : .zero)
            while at < frames.count {
                c &+= SIMD2(Int64(frames[at].dx), Int64(frames[at].dy)) &* 256
                at += 1
                if reached(c) { break }
            }
            guard reached(c), at > 0 else { continue }
            k = at
            shown = c
            let l = frames[at - 1].tUs - emit[i] - clock.dminUs
            latency[i] = l
            run.lambdasUs.append(l)
            run.lambdaEmitUs.append(emit[i])
            run.arrivedMovement += 1
        }

        run.cursors = vsyncs.map { vsync in
            var pos = LabVec.zero
            var f = 0
            var cursor: [LabVec] = []
            cursor.reserveCapacity(vsync.count)
            for v in vsync {
                while f < frames.count && frames[f].tUs <= v {
                    pos += LabVec(Double(frames[f].dx), Double(frames[f].dy), 0, 0)
                    f += 1
                }
                cursor.append(pos)
            }
            return cursor
        }
        var acc = ScoreAccumulator()
        score(run, into: &acc)
        return OutputScore(scores: acc.scores, latencyUs: latency)
    }
}
