import Foundation
import RemoloPlayout
import RemoloInput
import RemoloTrace
import RemoloTypes

/// The sender of the lab: a phone running the design note's trackpad. Finger
/// motion is sampled once per display frame (120 Hz by default, 60-240),
/// summed into one packet per frame stamped with the frame's time, and
/// carried in Q8 with the sub-unit remainder kept for the next frame. While
/// the trackpad is on screen and nothing moves, a heartbeat goes out every
/// 100 ms (design note, part 3); while it is off screen ("away") nothing is sent.
public struct SentEvent: Sendable, Equatable {
    /// Sender time since the start of the script, microseconds.
    public var tUs: UInt64
    public var kind: PacketKind
    public var dx: Int32
    public var dy: Int32
}

public enum GestureKind: String, Sendable, CaseIterable {
    case slowPrecise, swipe, circles, flick, stopAndGo, drag, scroll
}

public struct GestureScript: Sendable {
    public var events: [SentEvent] = []
    public var frameUs: Double
    /// Each gesture's name and start, for labelling plots.
    public var marks: [(GestureKind, UInt64)] = []

    public static let heartbeatUs: UInt64 = Framer.heartbeatIntervalUs

    /// A script of about `durationS` seconds: every gesture kind in a seeded
    /// order, separated by pauses with heartbeats, with two stretches away
    /// (3 s, beyond the core's 2 s clock reset, and under 1 s).
    public init(seed: UInt64, senderHz: Int = 120, durationS: Double = 30) {
        precondition((60...240).contains(senderHz), "sender rate 60-240 Hz")
        frameUs = 1e6 / Double(senderHz)
        var rng = LabRandom(seed: seed, stream: 1)
        var b = Builder(frameUs: frameUs)
        var round = 0
        while b.nowS < durationS {
            var order = GestureKind.allCases
            for i in stride(from: order.count - 1, to: 0, by: -1) {
                order.swapAt(i, Int(rng.next() % UInt64(i + 1)))
            }
            for (n, g) in order.enumerated() {
                marks.append((g, b.frameTimeUs))
                b.gesture(g, &rng)
                if n == 2 && round == 0 {
                    b.away(rng.uniform(2.6, 3.4))
                } else if n == 4 && round == 0 {
                    b.away(rng.uniform(0.6, 1.0))
                } else {
                    b.pause(rng.uniform(0.25, 1.0))
                }
                if b.nowS >= durationS { break }
            }
            round += 1
        }
        events = b.events
    }

    struct Builder {
        let frameUs: Double
        var frame = 0
        var events: [SentEvent] = []
        var lastSentUs: UInt64 = 0
        var carry = (0.0, 0.0)      // exact position not yet sent, px
        var q8 = (Int64(0), Int64(0))

        init(frameUs: Double) { self.frameUs = frameUs }

        var frameTimeUs: UInt64 { UInt64((Double(frame) * frameUs).rounded()) }
        var nowS: Double { Double(frame) * frameUs / 1e6 }
        var dt: Double { frameUs / 1e6 }

        mutating func send(_ kind: PacketKind, _ dx: Int32, _ dy: Int32) {
            events.append(SentEvent(tUs: frameTimeUs, kind: kind, dx: dx, dy: dy))
            lastSentUs = frameTimeUs
        }

        /// One frame of movement at velocity (vx, vy) per second: the
        /// exact position advances, the wire carries its Q8 rounding.
        mutating func move(_ vx: Double, _ vy: Double, scroll: Bool = false) {
            frame += 1
            carry.0 += vx * dt; carry.1 += vy * dt
            let nx = Int64((carry.0 * 256).rounded()), ny = Int64((carry.1 * 256).rounded())
            let dx = nx - q8.0, dy = ny - q8.1
            q8 = (nx, ny)
            if dx != 0 || dy != 0 { send(scroll ? .scroll : .motion, Int32(dx), Int32(dy)) }
        }

        /// Idle frames: heartbeats every 100 ms when on screen.
        mutating func pause(_ s: Double, heartbeats: Bool = true) {
            let end = frame + Int((s * 1e6 / frameUs).rounded())
            while frame < end {
                frame += 1
                if heartbeats && frameTimeUs >= lastSentUs + GestureScript.heartbeatUs {
                    send(.heartbeat, 0, 0)
                }
            }
        }

        mutating func away(_ s: Double) { pause(s, heartbeats: false) }

        mutating func bell(_ T: Double, _ t: Double) -> Double {
            let x = Foundation.sin(Double.pi * min(max(t / T, 0), 1))
            return x * x
        }

        mutating func gesture(_ g: GestureKind, _ rng: inout LabRandom) {
            switch g {
            case .slowPrecise:
                let T = rng.uniform(1.5, 2.5), v = rng.uniform(15, 60), a0 = rng.uniform(0, 2 * .pi)
                var t = 0.0
                while t < T {
                    let a = a0 + 1.5 * Foundation.sin(2 * .pi * t / T)
                    let s = v * (0.6 + 0.4 * Foundation.sin(7 * t))
                    move(s * Foundation.cos(a), s * Foundation.sin(a)); t += dt
                }
            case .swipe:
                let T = rng.uniform(0.25, 0.6), peak = rng.uniform(800, 2500), a = rng.uniform(0, 2 * .pi)
                var t = 0.0
                while t < T { let s = peak * bell(T, t); move(s * Foundation.cos(a), s * Foundation.sin(a)); t += dt }
            case .circles:
                let T = rng.uniform(1.5, 2.5), r = rng.uniform(80, 200), w = 2 * .pi * rng.uniform(0.7, 1.5)
                var t = 0.0
                while t < T { move(-r * w * Foundation.sin(w * t), r * w * Foundation.cos(w * t)); t += dt }
            case .flick:
                let v0 = rng.uniform(1500, 4000), tau = rng.uniform(0.08, 0.15), a = rng.uniform(0, 2 * .pi)
                var t = 0.0
                while true {
                    let s = v0 * min(1, t / 0.03) * Foundation.exp(-max(0, t - 0.03) / tau)
                    if t > 0.03 && s < 20 { break }
                    move(s * Foundation.cos(a), s * Foundation.sin(a)); t += dt
                }
            case .stopAndGo:
                for _ in 0..<3 {
                    let T = rng.uniform(0.3, 0.6), peak = rng.uniform(200, 600), a = rng.uniform(0, 2 * .pi)
                    var t = 0.0
                    while t < T { let s = peak * bell(T, t); move(s * Foundation.cos(a), s * Foundation.sin(a)); t += dt }
                    pause(rng.uniform(0.55, 1.0))     // pauses longer than 0.5 s
                }
            case .drag:
                pause(0.05); send(.button, 1, 1)
                pause(0.05)
                let T = rng.uniform(0.6, 1.2), peak = rng.uniform(300, 900), a = rng.uniform(0, 2 * .pi)
                var t = 0.0
                while t < T { let s = peak * bell(T, t); move(s * Foundation.cos(a), s * Foundation.sin(a)); t += dt }
                pause(0.05); send(.button, 1, 0)
            case .scroll:
                // Two fingers, then momentum computed on the phone: about
                // 95% of the speed gone after a second (design note, part 6).
                // Units: hi-res wheel units (1/120 notch) per second.
                let T = rng.uniform(0.2, 0.4), v0 = rng.uniform(300, 1200) * rng.sign()
                carry = (0, 0); q8 = (0, 0)
                var t = 0.0
                while t < T { move(0, v0 * min(1, t / 0.05), scroll: true); t += dt }
                var m = 0.0
                while m < 1.5 {
                    let v = v0 * Foundation.exp(-3 * m)
                    if abs(v) < 5 { break }
                    move(0, v, scroll: true); m += dt
                }
                carry = (0, 0); q8 = (0, 0)
            }
        }
    }
}
