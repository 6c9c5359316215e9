/// The sender's display clock (design note, part 2): frame `i` is due at
/// `startUs + round(i * 1e6 / rateHz)`. Times are computed from the index,
/// never by adding a rounded period, so 120 frames are exactly one second
/// and 12 frames at 120 Hz exactly 100 ms, however long the session runs.
import RemoloTypes
public struct FrameClock: Equatable, Sendable {
    public static let defaultRateHz = 120
    /// 60 Hz is the slowest display; 1000 Hz the fastest mouse report rate
    /// worth matching (the receiver drains at 480 Hz and spreads each
    /// packet over the time since the previous one).
    public static let rateRangeHz: ClosedRange<Int> = 60...1000

    public let rateHz: Int
    public let startUs: UInt64
    /// Frames already ended.
    public private(set) var index: UInt64 = 0

    public init(rateHz: Int = FrameClock.defaultRateHz, startUs: UInt64) throws(InputConfigError) {
        guard Self.rateRangeHz.contains(rateHz) else {
            throw InputConfigError("frame rate \(rateHz) Hz is outside \(Self.rateRangeHz.lowerBound)-\(Self.rateRangeHz.upperBound) Hz; use the display's refresh rate, e.g. 120")
        }
        self.rateHz = rateHz
        self.startUs = startUs
    }

    /// When frame `i` is due (frame 0 is at the start: it carries nothing
    /// that happened before).
    public func frameTimeUs(_ i: UInt64) -> UInt64 {
        let r = UInt64(rateHz)
        let (whole, part) = i.quotientAndRemainder(dividingBy: r)
        return startUs &+ whole &* 1_000_000 &+ (part * 1_000_000 + r / 2) / r
    }

    /// The time of the next frame to end.
    public var nextUs: UInt64 { frameTimeUs(index + 1) }
    /// The time of the last frame ended (the start before any).
    public var lastUs: UInt64 { frameTimeUs(index) }

    mutating func advance() { index += 1 }
}

/// A Q8 pair: 256 units per pixel (motion) or per hi-res wheel unit (scroll).
public struct Q8Delta: Equatable, Hashable, Sendable {
    public var a: Int32
    public var b: Int32
    public init(_ a: Int32, _ b: Int32) { self.a = a; self.b = b }
    public static let zero = Q8Delta(0, 0)
    public var isZero: Bool { a == 0 && b == 0 }
}

/// What one frame sends. The transport maps it onto the protocol: a motion
/// datagram (kind 1: a = dx, b = dy, Q8 pixels, right and down positive)
/// when `motion` is not zero, a scroll datagram (kind 2: a = vertical, up
/// positive; b = horizontal, right positive; Q8 hi-res units) when `scroll`
/// is not zero, a heartbeat datagram (kind 4) when `isHeartbeat`, each
/// stamped `timeUs`; and the `buttons` in order, each with its own time.
public struct Frame: Equatable, Sendable {
    /// The frame's time on the sender clock: when it was due, not when the
    /// caller got round to ending it.
    public var timeUs: UInt64
    public var motion: Q8Delta = .zero
    public var scroll: Q8Delta = .zero
    public var buttons: [ButtonChange] = []
    public var isHeartbeat = false
    /// Gesture states (datagrams of kind 6), in order, and the ends of the
    /// gestures whose last state is among them (the session's gesture end
    /// messages, sent after those states): only on a session that granted
    /// gestures, where the touchpad rules report them (GestureFrames.swift).
    public var gestures: [GestureState] = []
    public var gestureEnds: [GestureEnd] = []

    public init(timeUs: UInt64) { self.timeUs = timeUs }

    /// Nothing to send.
    public var isEmpty: Bool {
        motion.isZero && scroll.isZero && buttons.isEmpty && !isHeartbeat && gestures.isEmpty && gestureEnds.isEmpty
    }
}

/// Scroll momentum after the fingers lift (design note, part 6): the speed
/// decays exponentially, `v(t) = v0 * exp(-t / tau)`, with tau = 1 s / ln 20
/// (333.8 ms), so 95% of the speed is gone after one second, like a
/// trackpad flick. The distance of each frame is the exact integral of the
/// speed over the frame, so the frame rate does not change how far a flick
/// goes.
public struct ScrollMomentum: Equatable, Sendable {
    /// 1 s / ln 20: e^(-1 s / tau) = 0.05.
    public static let timeConstantUs: Double = 1_000_000 / 2.995_732_273_553_991
    /// Below this speed (hi-res units per second, about one notch in 12 s)
    /// the glide stops: what is left would be a fraction of a unit spread
    /// over seconds.
    public static let stopUnitsPerSecond: Double = 10

    /// Speed at `startUs`, hi-res units per second (vertical up, horizontal
    /// right positive).
    public var vertical: Double
    public var horizontal: Double
    public var startUs: UInt64

    public init(vertical: Double, horizontal: Double, startUs: UInt64) {
        self.vertical = vertical
        self.horizontal = horizontal
        self.startUs = startUs
    }

    /// Speed, units per second, at `timeUs`.
    public func speed(atUs timeUs: UInt64) -> (vertical: Double, horizontal: Double) {
        let f = exponential(-Double(timeUs &- min(timeUs, startUs)) / Self.timeConstantUs)
        return (vertical * f, horizontal * f)
    }

    /// Units travelled between `fromUs` and `toUs` (clamped to after the start).
    public func distance(fromUs: UInt64, toUs: UInt64) -> (vertical: Double, horizontal: Double) {
        let a = max(fromUs, startUs), b = max(toUs, a)
        let tau = Self.timeConstantUs / 1_000_000
        let ea = exponential(-Double(a - startUs) / Self.timeConstantUs)
        let eb = exponential(-Double(b - startUs) / Self.timeConstantUs)
        let k = tau * (ea - eb)
        return (vertical * k, horizontal * k)
    }

    /// Whether the glide has stopped by `timeUs`.
    public func hasStopped(atUs timeUs: UInt64) -> Bool {
        let v = speed(atUs: timeUs)
        return (v.vertical * v.vertical + v.horizontal * v.horizontal).squareRoot() < Self.stopUnitsPerSecond
    }
}

/// Buttons as the receiver will see them: a press of a held button or a
/// release of a free one is dropped, so whatever the sources do (tap, drag,
/// physical click, a device that vanished), the stream alternates per
/// button and `releaseAll` knows exactly what to let go.
public struct ButtonTracker: Equatable, Sendable {
    /// Held buttons, in the order they were pressed.
    public private(set) var held: [Button] = []
    public init() {}

    /// Whether the change alters the state (and was applied).
    public mutating func apply(_ c: ButtonChange) -> Bool {
        let i = held.firstIndex(of: c.button)
        if c.isDown {
            if i != nil { return false }
            held.append(c.button)
        } else {
            guard let i else { return false }
            held.remove(at: i)
        }
        return true
    }

    /// Up events for every held button, at `timeUs`; nothing is held after.
    public mutating func releaseAll(atUs timeUs: UInt64) -> [ButtonChange] {
        defer { held.removeAll() }
        return held.reversed().map { ButtonChange($0, isDown: false, timeUs: timeUs) }
    }
}

/// Sums samples into frames on the frame clock (design note, part 2).
///
/// Samples come in with their own times and already in output units
/// (pixels for motion, hi-res wheel units for scroll). Each frame carries
/// everything stamped after the previous frame and up to its own time, so a
/// late call to `endFrame` never moves a sample into the wrong frame. The
/// Q8 rounding remainder (under 1/256 px) stays behind for the next frame:
/// the emitted frames add up to the samples' sum to within one Q8 unit, for
/// ever. While a session is open and a frame has nothing to move, a
/// heartbeat goes out if no datagram has for `heartbeatIntervalUs` (part 3).
public struct Framer: Sendable {
    /// While nothing moves, one heartbeat per this many microseconds keeps
    /// the sender's radio awake and the receiver's clock estimate fresh
    /// (design note, part 3). The receiver's lab keeps its own copy of this
    /// number; this is the sender's.
    public static let heartbeatIntervalUs: UInt64 = 100_000

    public private(set) var clock: FrameClock
    /// Heartbeats are sent only while a session is open (the trackpad is
    /// on screen, the device is grabbed).
    public var isSessionOpen = false

    struct Pending: Sendable {
        var timeUs: UInt64
        var isScroll: Bool
        var a: Double
        var b: Double
    }
    private var pending: [Pending] = []
    private var buttonQueue: [ButtonChange] = []
    public private(set) var buttons = ButtonTracker()
    /// The Q8 remainders not yet sent: motion x, y; scroll vertical, horizontal.
    public private(set) var carry: (motionX: Double, motionY: Double, vertical: Double, horizontal: Double) = (0, 0, 0, 0)
    public private(set) var momentum: ScrollMomentum?
    /// The time of the last button change accepted.
    private var lastButtonUs: UInt64 = 0
    /// When the last datagram (motion, scroll, gesture or heartbeat) went out.
    public private(set) var lastDatagramUs: UInt64?
    /// The touchpad rules' gestures, as states (GestureFrames.swift).
    public var gestures = GestureFramer()

    public init(clock: FrameClock) {
        self.clock = clock
    }

    /// The time of the next frame to end.
    public var nextFrameUs: UInt64 { clock.nextUs }

    /// Motion in pixels (x right, y down) at `timeUs`.
    public mutating func addMotion(dxPixels: Double, dyPixels: Double, atUs timeUs: UInt64) {
        guard dxPixels.isFinite, dyPixels.isFinite, dxPixels != 0 || dyPixels != 0 else { return }
        pending.append(Pending(timeUs: timeUs, isScroll: false, a: dxPixels, b: dyPixels))
    }

    /// Scroll in hi-res wheel units (vertical up, horizontal right) at `timeUs`.
    public mutating func addScroll(verticalUnits: Double, horizontalUnits: Double, atUs timeUs: UInt64) {
        guard verticalUnits.isFinite, horizontalUnits.isFinite, verticalUnits != 0 || horizontalUnits != 0 else { return }
        pending.append(Pending(timeUs: timeUs, isScroll: true, a: verticalUnits, b: horizontalUnits))
    }

    /// A button change; dropped (false) when it would not change the state.
    /// A change stamped before the previous one takes that one's time, so
    /// the receiver never sees a release ahead of its press.
    @discardableResult
    public mutating func addButton(_ change: ButtonChange) -> Bool {
        var c = change
        c.timeUs = max(c.timeUs, lastButtonUs)
        guard buttons.apply(c) else { return false }
        lastButtonUs = c.timeUs
        buttonQueue.append(c)
        return true
    }

    /// Starts a glide (replacing any) at `startUs`, speeds in units per second.
    public mutating func startMomentum(_ m: ScrollMomentum) {
        momentum = m.hasStopped(atUs: m.startUs) ? nil : m
    }

    /// Stops the glide at `timeUs`: what it travelled until then is still sent.
    public mutating func cancelMomentum(atUs timeUs: UInt64) {
        guard let m = momentum else { return }
        let from = max(clock.lastUs, m.startUs)
        if timeUs > from {
            let d = m.distance(fromUs: from, toUs: timeUs)
            addScroll(verticalUnits: d.vertical, horizontalUnits: d.horizontal, atUs: timeUs)
        }
        momentum = nil
    }

    /// Ends the frame due at `nextFrameUs` and returns it.
    public mutating func endFrame() -> Frame {
        let from = clock.lastUs
        let t = clock.nextUs
        clock.advance()
        var f = Frame(timeUs: t)

        var mx = 0.0, my = 0.0, sv = 0.0, sh = 0.0
        var later = false
        for p in pending {
            if p.timeUs > t { later = true; continue }
            if p.isScroll { sv += p.a; sh += p.b } else { mx += p.a; my += p.b }
        }
        // In place, keeping the capacity: a steady stream allocates nothing.
        if later { pending.removeAll { $0.timeUs <= t } } else { pending.removeAll(keepingCapacity: true) }
        if let m = momentum {
            let d = m.distance(fromUs: from, toUs: t)
            sv += d.vertical
            sh += d.horizontal
            if m.hasStopped(atUs: t) { momentum = nil }
        }
        carry.motionX += mx * InputUnits.q8PerUnit
        carry.motionY += my * InputUnits.q8PerUnit
        carry.vertical += sv * InputUnits.q8PerUnit
        carry.horizontal += sh * InputUnits.q8PerUnit
        f.motion = Q8Delta(Self.take(&carry.motionX), Self.take(&carry.motionY))
        f.scroll = Q8Delta(Self.take(&carry.vertical), Self.take(&carry.horizontal))

        let due = buttonQueue.prefix { $0.timeUs <= t }
        f.buttons = Array(due)
        buttonQueue.removeFirst(due.count)

        (f.gestures, f.gestureEnds) = gestures.frame(atUs: t)

        // A gesture state renews the radio and the receiver's clock as a
        // heartbeat would.
        if !f.motion.isZero || !f.scroll.isZero || !f.gestures.isEmpty {
            lastDatagramUs = t
        } else if isSessionOpen {
            if let last = lastDatagramUs, t &- last < Self.heartbeatIntervalUs {
                // quiet, and a datagram went out recently enough
            } else {
                f.isHeartbeat = true
                lastDatagramUs = t
            }
        }
        return f
    }

    /// The whole Q8 units of `c` (toward zero, within Int32), leaving the
    /// fraction behind.
    private static func take(_ c: inout Double) -> Int32 {
        let whole = c.rounded(.towardZero)
        let v = Int32(max(min(whole, Double(Int32.max)), Double(Int32.min)))
        c -= Double(v)
        return v
    }

    /// Device gone, grab ended or exit: returns the queued button changes
    /// not yet sent, then an up event at `timeUs` for every button still
    /// held, and stops any glide. Nothing stays pressed on the receiver,
    /// and no press can follow.
    public mutating func releaseAll(atUs timeUs: UInt64) -> [ButtonChange] {
        let queued = buttonQueue
        buttonQueue.removeAll()
        momentum = nil
        // The next frame ends an open gesture (its last state and end); a
        // session that ends first lifts the receiver's fingers itself.
        gestures.end()
        let t = max(timeUs, lastButtonUs)
        lastButtonUs = t
        return queued + buttons.releaseAll(atUs: t)
    }
}
