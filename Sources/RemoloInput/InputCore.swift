/// The sender's settings.
import RemoloTypes
public struct InputConfig: Equatable, Sendable {
    /// Pixels per point at low speed (the curve's `pointerSpeed`).
    public var pointerSpeed: Double = 1
    /// The curve's strength for touch input; 0 turns it off.
    public var acceleration: Double = 1
    /// A mouse moves 1:1 unless this is set: the compositor or the game on
    /// the receiver applies its own acceleration, and twice is too much.
    public var accelerateMouse = false
    public var frameRateHz = FrameClock.defaultRateHz
    /// Content follows the fingers (a finger moving down scrolls up), as on
    /// a phone or a Mac trackpad.
    public var naturalScrolling = true
    /// Multiplies two-finger scrolling and its momentum.
    public var scrollSpeed: Double = 1
    /// The touch surface, if any.
    public var touchpad: TouchpadConfig?

    /// Hi-res wheel units per point of two-finger travel at scroll speed 1:
    /// a notch (120 units) per 30 pt, about 4.8 mm of finger travel.
    public static let wheelUnitsPerPoint: Double = 4

    public init(touchpad: TouchpadConfig? = nil) { self.touchpad = touchpad }

    public static let scrollSpeedRange: ClosedRange<Double> = 0.05...20
}

/// The sender's input core: touchpad contacts, clickpad button, mouse
/// motion, buttons and wheel in; one frame per tick of the frame clock out.
///
/// Every sample carries its own time (sender clock, microseconds); the core
/// never reads a clock. The caller ends a frame when `nextFrameUs` comes
/// (`while core.nextFrameUs <= now { send(core.endFrame()) }`), so a late
/// wake-up still produces frames stamped with their own times.
public struct InputCore: Sendable {
    public let config: InputConfig
    public private(set) var framer: Framer
    public private(set) var touchpad: TouchpadRecognizer?
    private let touchAccelerator: PointerAccelerator
    private let mouseAccelerator: PointerAccelerator
    private var lastMouseUs: UInt64?

    public init(config: InputConfig, startUs: UInt64) throws(InputConfigError) {
        let touchCurve = try AccelerationCurve(pointerSpeed: config.pointerSpeed, acceleration: config.acceleration)
        let mouseCurve = config.accelerateMouse ? touchCurve : try AccelerationCurve.flat(pointerSpeed: config.pointerSpeed)
        guard config.scrollSpeed.isFinite, InputConfig.scrollSpeedRange.contains(config.scrollSpeed) else {
            throw InputConfigError("scroll speed \(config.scrollSpeed) is outside \(InputConfig.scrollSpeedRange.lowerBound)-\(InputConfig.scrollSpeedRange.upperBound); 1 is the default")
        }
        self.config = config
        framer = Framer(clock: try FrameClock(rateHz: config.frameRateHz, startUs: startUs))
        touchpad = try config.touchpad.map { c throws(InputConfigError) in try TouchpadRecognizer(config: c) }
        touchAccelerator = PointerAccelerator(curve: touchCurve)
        mouseAccelerator = PointerAccelerator(curve: mouseCurve)
    }

    /// When the next frame is due.
    public var nextFrameUs: UInt64 { framer.nextFrameUs }

    /// Heartbeats go out only while a session is open.
    public var isSessionOpen: Bool {
        get { framer.isSessionOpen }
        set { framer.isSessionOpen = newValue }
    }

    /// Buttons the receiver will see held once the queued frames are sent.
    public var heldButtons: [Button] { framer.buttons.held }

    // MARK: - Touchpad

    /// One contact sample of the touchpad (ignored when none is configured).
    public mutating func contact(_ s: ContactSample) {
        // Optional chaining mutates in place (a copy would copy its arrays).
        guard let events = touchpad?.contact(s) else { return }
        apply(events)
    }

    /// The clickpad's physical button.
    public mutating func clickpadButton(isDown: Bool, atUs timeUs: UInt64) {
        guard let events = touchpad?.physicalButton(isDown: isDown, atUs: timeUs) else { return }
        apply(events)
    }

    /// Touchpad events into pixels and wheel units.
    public mutating func apply(_ events: [TouchpadEvent]) {
        for e in events {
            switch e {
            case let .motion(dx, dy, interval, t):
                let px = touchAccelerator.accelerate(dxPoints: InputUnits.points(millimetres: dx),
                                                     dyPoints: InputUnits.points(millimetres: dy),
                                                     intervalUs: interval)
                framer.addMotion(dxPixels: px.x, dyPixels: px.y, atUs: t)
            case let .scroll(dx, dy, t):
                let u = wheelUnits(dxMm: dx, dyMm: dy)
                framer.addScroll(verticalUnits: u.vertical, horizontalUnits: u.horizontal, atUs: t)
            case let .button(c):
                framer.addButton(c)
            case let .glide(vx, vy, t):
                let u = wheelUnits(dxMm: vx, dyMm: vy)
                framer.startMomentum(ScrollMomentum(vertical: u.vertical, horizontal: u.horizontal, startUs: t))
            case let .touchDown(t):
                framer.cancelMomentum(atUs: t)
            // Reported only when asked (TouchpadConfig.gestures), which a
            // sender turns on where the receiver granted gestures.
            case let .gestureBegin(kind, fingers, _):
                framer.gestures.begin(kind: kind, fingers: fingers)
            case let .gestureUpdate(dx, dy, scale, angle, _):
                framer.gestures.update(dxMm: dx, dyMm: dy, scale: scale, angle: angle)
            case .gestureEnd:
                framer.gestures.end()
            }
        }
    }

    /// Finger travel (mm, x right, y down) as wheel units (vertical up,
    /// horizontal right). Natural: the content follows the fingers, so
    /// fingers moving down scroll up and fingers moving right scroll left.
    public func wheelUnits(dxMm: Double, dyMm: Double) -> (vertical: Double, horizontal: Double) {
        let k = InputUnits.pointsPerMillimetre * InputConfig.wheelUnitsPerPoint * config.scrollSpeed
        let sign: Double = config.naturalScrolling ? 1 : -1
        return (sign * dyMm * k, -sign * dxMm * k)
    }

    // MARK: - Mouse

    /// Relative motion in the mouse's counts (one count a pixel, as the
    /// compositor would take it), curved only if `accelerateMouse` (speed in
    /// counts per second, read as points per second).
    public mutating func mouseMotion(dx: Int32, dy: Int32, atUs timeUs: UInt64) {
        let interval = lastMouseUs.map { timeUs - min(timeUs, $0) } ?? 0
        lastMouseUs = timeUs
        let px = mouseAccelerator.accelerate(dxPoints: Double(dx), dyPoints: Double(dy), intervalUs: interval)
        framer.addMotion(dxPixels: px.x, dyPixels: px.y, atUs: timeUs)
    }

    public mutating func mouseButton(_ b: Button, isDown: Bool, atUs timeUs: UInt64) {
        framer.addButton(ButtonChange(b, isDown: isDown, timeUs: timeUs))
    }

    /// A wheel in hi-res units (`REL_WHEEL_HI_RES`: up positive;
    /// `REL_HWHEEL_HI_RES`: right positive), passed on as it is.
    public mutating func mouseWheel(verticalUnits: Int32, horizontalUnits: Int32, atUs timeUs: UInt64) {
        framer.addScroll(verticalUnits: Double(verticalUnits), horizontalUnits: Double(horizontalUnits), atUs: timeUs)
    }

    // MARK: - Frames

    /// Ends the frame due at `nextFrameUs`: the touchpad's timeouts up to
    /// that time fire first, so a tap's release lands in the right frame.
    public mutating func endFrame() -> Frame {
        let t = framer.nextFrameUs
        if let events = touchpad?.advance(toUs: t) { apply(events) }
        return framer.endFrame()
    }

    /// Device gone, grab ended or exit: the button changes not yet sent,
    /// then an up event for every button still held, all to be sent now.
    /// Tap and drag states, the clickpad button and momentum are forgotten,
    /// so no press can follow; fingers still down are ignored until they
    /// lift.
    /// The gesture states and ends due now, outside the frame clock (the
    /// last frame before the sender lets go).
    public mutating func gestureFrame(atUs timeUs: UInt64) -> ([GestureState], [GestureEnd]) {
        framer.gestures.frame(atUs: timeUs)
    }

    public mutating func releaseAll(atUs timeUs: UInt64) -> [ButtonChange] {
        touchpad?.reset()
        lastMouseUs = nil
        return framer.releaseAll(atUs: timeUs)
    }
}
