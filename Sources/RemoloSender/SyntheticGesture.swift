// Synthetic motion for demos and tests: what `remolo send --gesture` plays.

import Foundation
import RemoloSession

/// One display frame of a motion source: movement in Q8 pixels (256 per
/// pixel) and the button changes that happen at the start of the frame.
public struct MotionFrame: Sendable, Equatable {
    public var dx: Int32
    public var dy: Int32
    public var buttons: [(button: MouseButton, down: Bool)]

    public init(dx: Int32 = 0, dy: Int32 = 0, buttons: [(button: MouseButton, down: Bool)] = []) {
        self.dx = dx
        self.dy = dy
        self.buttons = buttons
    }

    public static func == (a: MotionFrame, b: MotionFrame) -> Bool {
        a.dx == b.dx && a.dy == b.dy && a.buttons.elementsEqual(b.buttons) { $0 == $1 }
    }
}

/// Produces the movement of each frame.
public protocol MotionSource {
    /// Frame `index` (0, 1, ...) of `count`, at `seconds` since the start.
    mutating func frame(index: Int, of count: Int, seconds: Double) -> MotionFrame
}

/// Synthetic gestures for demos and tests. Positions are rounded on the
/// Q8 grid and frames carry their differences, so the frames sum exactly to
/// the path's end point.
public struct SyntheticGesture: MotionSource, Sendable {
    public enum Shape: String, CaseIterable, Sendable {
        /// A circle of `size` pixels radius, one turn per second.
        case circle
        /// A drag: left button down, `size` pixels right and a third of it
        /// down with an ease-in-out, button up.
        case swipe
        /// No movement: heartbeats only.
        case idle
    }

    public var shape: Shape
    public var size: Double
    private var last: (x: Int64, y: Int64) = (0, 0)

    public init(_ shape: Shape, size: Double = 200) {
        self.shape = shape
        self.size = size
    }

    private func position(_ t: Double, progress p: Double) -> (Double, Double) {
        switch shape {
        case .circle:
            let a = 2 * Double.pi * t
            return (size * (cos(a) - 1), size * sin(a))
        case .swipe:
            let e = p < 0.5 ? 2 * p * p : 1 - pow(-2 * p + 2, 2) / 2
            return (size * e, size / 3 * e)
        case .idle:
            return (0, 0)
        }
    }

    public mutating func frame(index: Int, of count: Int, seconds: Double) -> MotionFrame {
        let p = count > 1 ? Double(index) / Double(count - 1) : 1
        let (x, y) = position(seconds, progress: p)
        let q = (x: Int64((x * 256).rounded()), y: Int64((y * 256).rounded()))
        var f = MotionFrame(dx: Int32(q.x - last.x), dy: Int32(q.y - last.y))
        last = q
        if shape == .swipe {
            if index == 0 { f.buttons.append((.left, true)) }
            if index == count - 1 { f.buttons.append((.left, false)) }
        }
        return f
    }
}

