/// Gestures as the wire carries them (docs/protocol.md, "Gestures (feature
/// bit 3)"): absolute states, one per frame while the gesture changes and
/// at least one every 100 ms while it lasts, the last one flagged, then an
/// end on the session. Absolute, so a lost datagram costs the receiver a
/// step of the gesture, never a drift.

/// One gesture state, since the gesture began.
public struct GestureState: Equatable, Sendable {
    public var id: UInt8
    public var kind: TouchpadGestureKind
    public var fingers: Int
    /// The centroid's offset, micrometres (x right, y down).
    public var xUm: Int32
    public var yUm: Int32
    /// Q16 (65536 = 1): the fingers' spread over their spread at the start.
    public var scaleQ16: Int32
    /// Microradians, counter-clockwise on screen.
    public var angleUrad: Int32
    /// The gesture's final state: the receiver lifts its fingers after it.
    public var isLast: Bool

    public init(id: UInt8, kind: TouchpadGestureKind, fingers: Int, xUm: Int32 = 0, yUm: Int32 = 0,
                scaleQ16: Int32 = GestureState.scaleOne, angleUrad: Int32 = 0, isLast: Bool = false) {
        self.id = id; self.kind = kind; self.fingers = fingers; self.xUm = xUm; self.yUm = yUm
        self.scaleQ16 = scaleQ16; self.angleUrad = angleUrad; self.isLast = isLast
    }

    /// The wire's bounds (remolo_limits.h): what a receiver refuses is never
    /// made here.
    public static let scaleOne: Int32 = 65_536
    public static let maxOffsetUm: Int32 = 500_000
    public static let scaleRangeQ16: ClosedRange<Int32> = 1_024...4_194_304
    public static let maxAngleUrad: Int32 = 25_132_741
}

/// The end of a gesture on the session: its id and the time of its last state.
public struct GestureEnd: Equatable, Sendable {
    public var id: UInt8
    public var timeUs: UInt64
    public init(id: UInt8, timeUs: UInt64) { self.id = id; self.timeUs = timeUs }
}

/// The touchpad rules' gesture events summed into states, frame by frame.
public struct GestureFramer: Sendable {
    /// A gesture still open is renewed at least this often: the receiver
    /// ends one it has not heard of for 1 s, and a still hand must not
    /// look like a forgotten gesture (the heartbeat's period).
    public static let renewUs: UInt64 = 100_000

    struct Open: Sendable {
        var id: UInt8
        var kind: TouchpadGestureKind
        var fingers: Int
        var xMm = 0.0, yMm = 0.0, scale = 1.0, angle = 0.0
    }

    private var open: Open?
    private var changed = false
    private var lastSentUs: UInt64?
    /// Ended since the last frame: their final states, in order.
    private var ended: [Open] = []
    private var nextId: UInt8 = 0

    public init() {}

    /// A gesture is open (its fingers are down on the receiver's pad).
    public var isOpen: Bool { open != nil }

    public mutating func begin(kind: TouchpadGestureKind, fingers: Int) {
        if open != nil { end() }
        open = Open(id: nextId, kind: kind, fingers: fingers)
        nextId &+= 1
        changed = true
        lastSentUs = nil
    }

    /// The rules' update: the centroid moved by dx, dy (mm); a pinch's
    /// scale and angle are since the gesture began.
    public mutating func update(dxMm: Double, dyMm: Double, scale: Double, angle: Double) {
        guard var g = open, dxMm.isFinite, dyMm.isFinite, scale.isFinite, angle.isFinite else { return }
        g.xMm += dxMm
        g.yMm += dyMm
        g.scale = scale
        g.angle = angle
        open = g
        changed = true
    }

    public mutating func end() {
        guard let g = open else { return }
        ended.append(g)
        open = nil
        changed = false
    }

    /// This frame's states and ends, at `timeUs`: every gesture that ended
    /// since the last frame, last-flagged, with its end; then the open one's
    /// state when it changed or has not been sent for `renewUs`.
    public mutating func frame(atUs timeUs: UInt64) -> (states: [GestureState], ends: [GestureEnd]) {
        var states: [GestureState] = []
        var ends: [GestureEnd] = []
        for g in ended {
            states.append(Self.state(g, isLast: true))
            ends.append(GestureEnd(id: g.id, timeUs: timeUs))
        }
        ended.removeAll(keepingCapacity: true)
        if let g = open, changed || lastSentUs.map({ timeUs &- $0 >= Self.renewUs }) ?? true {
            states.append(Self.state(g, isLast: false))
            changed = false
            lastSentUs = timeUs
        }
        return (states, ends)
    }

    static func state(_ g: Open, isLast: Bool) -> GestureState {
        func clamp(_ v: Double, _ r: ClosedRange<Int32>) -> Int32 {
            Int32(max(Double(r.lowerBound), min(Double(r.upperBound), v.rounded())))
        }
        let off = -GestureState.maxOffsetUm...GestureState.maxOffsetUm
        let pinch = g.kind == .pinch
        return GestureState(id: g.id, kind: g.kind, fingers: g.fingers,
                            xUm: clamp(g.xMm * 1000, off), yUm: clamp(g.yMm * 1000, off),
                            scaleQ16: pinch ? clamp(g.scale * 65_536, GestureState.scaleRangeQ16) : GestureState.scaleOne,
                            angleUrad: pinch ? clamp(g.angle * 1e6, -GestureState.maxAngleUrad...GestureState.maxAngleUrad) : 0,
                            isLast: isLast)
    }
}
