// What the touchpad recognizer (Touchpad.swift) takes and gives: the pad's
// geometry and thresholds, contact samples in, gesture events out.
import RemoloTypes

public struct TouchpadGeometry: Equatable, Sendable {
    public var widthMm: Double
    public var heightMm: Double
    /// Device units per millimetre and the device's minimum, per axis (the
    /// kernel's ABS resolution and minimum); 1 and 0 when the samples are
    /// already in millimetres.
    public var unitsPerMmX: Double = 1
    public var unitsPerMmY: Double = 1
    public var originX: Int32 = 0
    public var originY: Int32 = 0

    /// A surface measured in millimetres (a phone screen, a test).
    public init(widthMm: Double, heightMm: Double) throws(InputConfigError) {
        guard widthMm.isFinite, heightMm.isFinite, widthMm >= 10, heightMm >= 10, widthMm <= 1000, heightMm <= 1000 else {
            throw InputConfigError("touch surface \(widthMm) x \(heightMm) mm is not a touchpad; give its size in millimetres, 10-1000 each way (e.g. 100 x 60)")
        }
        self.widthMm = widthMm
        self.heightMm = heightMm
    }

    /// A touchpad as the kernel describes it: `ABS_MT_POSITION_X/Y` minimum,
    /// maximum and resolution (units per millimetre).
    public init(xMinimum: Int32, xMaximum: Int32, xResolution: Int32,
                yMinimum: Int32, yMaximum: Int32, yResolution: Int32) throws(InputConfigError) {
        guard xResolution > 0, yResolution > 0 else {
            throw InputConfigError("the touchpad reports no resolution (units per mm); without it distances are unknown: give its size in millimetres (remolo send --touchpad-size WIDTHxHEIGHT, e.g. 100x60)")
        }
        guard xMaximum > xMinimum, yMaximum > yMinimum else {
            throw InputConfigError("the touchpad's range \(xMinimum)...\(xMaximum) x \(yMinimum)...\(yMaximum) is empty; check the device's ABS_MT_POSITION ranges")
        }
        try self.init(widthMm: Double(Int64(xMaximum) - Int64(xMinimum)) / Double(xResolution),
                      heightMm: Double(Int64(yMaximum) - Int64(yMinimum)) / Double(yResolution))
        unitsPerMmX = Double(xResolution)
        unitsPerMmY = Double(yResolution)
        originX = xMinimum
        originY = yMinimum
    }

    /// A touchpad whose size the user gave (it reports no resolution, or a
    /// wrong one): its `ABS_MT_POSITION_X/Y` ranges span `widthMm` x
    /// `heightMm`.
    public init(xMinimum: Int32, xMaximum: Int32, yMinimum: Int32, yMaximum: Int32,
                widthMm: Double, heightMm: Double) throws(InputConfigError) {
        guard xMaximum > xMinimum, yMaximum > yMinimum else {
            throw InputConfigError("the touchpad's range \(xMinimum)...\(xMaximum) x \(yMinimum)...\(yMaximum) is empty; check the device's ABS_MT_POSITION ranges")
        }
        try self.init(widthMm: widthMm, heightMm: heightMm)
        unitsPerMmX = Double(Int64(xMaximum) - Int64(xMinimum)) / widthMm
        unitsPerMmY = Double(Int64(yMaximum) - Int64(yMinimum)) / heightMm
        originX = xMinimum
        originY = yMinimum
    }

    /// A position in device units, in millimetres from the top-left corner.
    public func millimetres(x: Int32, y: Int32) -> (x: Double, y: Double) {
        (Double(Int64(x) - Int64(originX)) / unitsPerMmX, Double(Int64(y) - Int64(originY)) / unitsPerMmY)
    }
}

/// How the touchpad's gestures are told apart. The thresholds are
/// libinput's (src/evdev-mt-touchpad-tap.c, -buttons.c, -thumb.c), so a
/// pad feels the same here as under a Linux desktop.
public struct TouchpadConfig: Equatable, Sendable {
    public var geometry: TouchpadGeometry
    public var tapToClick = true
    /// Tap, then touch again and move: the button stays down while the
    /// finger moves.
    public var tapAndDrag = true
    /// After a tap-and-drag lifts, the button stays down this much longer so
    /// the finger can be put back down to carry on.
    public var dragLock = true

    /// A tap: every finger lifts within this time of the last one touching.
    /// libinput: DEFAULT_TAP_TIMEOUT_PERIOD, 180 ms.
    public var tapTimeoutUs: UInt64 = 180_000
    /// ... and no finger moves further than this from where it touched.
    /// Older libinput used TP_MM_TO_DPI_NORMALIZED(3), 3 mm; current libinput
    /// uses 1.3 mm (DEFAULT_TAP_MOVE_THRESHOLD); 3 mm suits a glass surface with
    /// no pressure threshold, where the contact's centre wanders as the
    /// fingertip flattens. Motion is held back (not lost) while a tap is
    /// still possible, and sent as soon as it is not.
    public var tapMoveThresholdMm: Double = 3
    /// After an n-finger tap, a touch within base + n * per-finger starts a
    /// drag (libinput: DEFAULT_DRAG_TIMEOUT_PERIOD_BASE 160 ms,
    /// _PERFINGER 20 ms: 180 ms after a one-finger tap). The tap's release
    /// is sent when this runs out.
    public var dragTimeoutBaseUs: UInt64 = 160_000
    public var dragTimeoutPerFingerUs: UInt64 = 20_000
    /// libinput: DEFAULT_DRAGLOCK_TIMEOUT_PERIOD, 300 ms.
    public var dragLockTimeoutUs: UInt64 = 300_000
    /// The button area along the bottom edge, as a fraction of the height.
    /// A contact that lands there is a resting thumb or palm: it neither
    /// moves the pointer nor counts as a finger for taps and scrolling,
    /// until it moves up out of the area. libinput's soft buttons take the
    /// bottom 15% (at most 10 mm) and its thumb lines sit at 85% and 92% of
    /// the height; 12% is between the two.
    public var buttonAreaFraction: Double = 0.12
    /// A click with a finger in the button area right of this fraction of
    /// the width is a right click (libinput's soft buttons: the right half).
    public var rightButtonLeftFraction: Double = 0.5
    /// The scrolling speed at lift is the motion of this last stretch.
    public var glideWindowUs: UInt64 = 50_000
    /// A lift slower than this (finger space) is a placement, not a flick:
    /// no momentum.
    public var glideMinimumMmPerSecond: Double = 10
    /// Three- and four-finger swipes and two-finger pinches are reported
    /// (`gestureBegin`, `gestureUpdate`, `gestureEnd`), for a receiver
    /// that plays them on its touchpad. Off: three fingers moving do
    /// nothing and two always scroll, as before gestures.
    public var gestures = false
    /// Two fingers are a pinch or a scroll once, since the second landed,
    /// either finger has moved this far against the other (half the
    /// change of the line between them: spreading, closing, turning) or
    /// their centroid has moved this far: a pinch when the first is the
    /// larger. libinput decides after 1.5-4 mm of motion by whether the
    /// fingers' directions differ, which is the same question. Scrolling
    /// is held back, not lost, until then.
    public var pinchDecisionMm: Double = 3

    public init(geometry: TouchpadGeometry) { self.geometry = geometry }

    /// Checks every setting; the error names the one to change.
    public func validated() throws(InputConfigError) -> TouchpadConfig {
        guard (20_000...1_000_000).contains(tapTimeoutUs) else {
            throw InputConfigError("tap timeout \(tapTimeoutUs) us is outside 20 000-1 000 000; 180 000 is libinput's")
        }
        guard tapMoveThresholdMm.isFinite, tapMoveThresholdMm > 0, tapMoveThresholdMm <= 20 else {
            throw InputConfigError("tap move threshold \(tapMoveThresholdMm) mm is outside 0-20; 3 is the default, 1.3 libinput's")
        }
        guard dragTimeoutBaseUs + 3 * dragTimeoutPerFingerUs <= 2_000_000, dragLockTimeoutUs <= 5_000_000 else {
            throw InputConfigError("drag timeouts over 2 s (drag) or 5 s (drag lock) leave a button down long after the finger lifted; use 160 000 + 20 000 and 300 000 us")
        }
        guard buttonAreaFraction.isFinite, (0...0.5).contains(buttonAreaFraction) else {
            throw InputConfigError("button area \(buttonAreaFraction) of the height is outside 0-0.5; 0.12 is the default")
        }
        guard rightButtonLeftFraction.isFinite, (0...1).contains(rightButtonLeftFraction) else {
            throw InputConfigError("right-button edge \(rightButtonLeftFraction) of the width is outside 0-1; 0.5 is the default")
        }
        guard (1_000...500_000).contains(glideWindowUs), glideMinimumMmPerSecond.isFinite, glideMinimumMmPerSecond >= 0 else {
            throw InputConfigError("glide window \(glideWindowUs) us must be 1 000-500 000 and the glide minimum a speed >= 0; the defaults are 50 000 us and 10 mm/s")
        }
        guard pinchDecisionMm.isFinite, (0.5...20).contains(pinchDecisionMm) else {
            throw InputConfigError("pinch decision \(pinchDecisionMm) mm is outside 0.5-20; 3 is the default")
        }
        return self
    }

    /// Contacts at or below this y (mm) are in the button area.
    public var buttonAreaTopMm: Double { geometry.heightMm * (1 - buttonAreaFraction) }
}

/// One contact of a multi-touch surface at one moment: the kernel's slot,
/// its position in millimetres from the top-left corner (x right, y down),
/// and whether it is touching. A slot that stops touching has lifted; its
/// position is then ignored.
public struct ContactSample: Equatable, Sendable {
    public var slot: Int32
    public var xMm: Double
    public var yMm: Double
    public var isTouching: Bool
    /// Sender clock, microseconds.
    public var timeUs: UInt64

    public init(slot: Int32, xMm: Double, yMm: Double, isTouching: Bool, timeUs: UInt64) {
        self.slot = slot
        self.xMm = xMm
        self.yMm = yMm
        self.isTouching = isTouching
        self.timeUs = timeUs
    }
}

/// What the touchpad means, in finger space (millimetres, x right, y down),
/// before any curve or scroll setting.
public enum TouchpadEvent: Equatable, Sendable {
    /// Pointer motion of one contact's sample, which took `intervalUs` since
    /// that contact's previous sample (the speed the curve needs).
    case motion(dxMm: Double, dyMm: Double, intervalUs: UInt64, atUs: UInt64)
    /// Two-finger scroll: each contact's sample brings half its motion, so
    /// the sum is the mean motion of the two.
    case scroll(dxMm: Double, dyMm: Double, atUs: UInt64)
    case button(ButtonChange)
    /// The scrolling fingers lifted at this velocity: momentum starts.
    case glide(vxMmPerSecond: Double, vyMmPerSecond: Double, atUs: UInt64)
    /// A finger touched: momentum stops.
    case touchDown(atUs: UInt64)
    /// A swipe (3 or 4 fingers) or a pinch (2) begins (only with
    /// `TouchpadConfig.gestures`).
    case gestureBegin(kind: TouchpadGestureKind, fingers: Int, atUs: UInt64)
    /// The fingers' centroid moved by dx, dy; for a pinch, scale is the
    /// fingers' distance over the distance where the second landed, angle
    /// how far the line between them has turned since (radians,
    /// counter-clockwise on screen). Both stay 1 and 0 in a swipe.
    case gestureUpdate(dxMm: Double, dyMm: Double, scale: Double, angle: Double, atUs: UInt64)
    /// The gesture ends: the fingers lifted, or their count changed.
    case gestureEnd(atUs: UInt64)
}

public enum TouchpadGestureKind: String, Equatable, Sendable {
    case swipe, pinch
}

/// Turns contact samples and the clickpad's physical button into pointer
/// motion, scrolling and button changes: one finger moves, two scroll, taps
/// click (one finger left, two right, three middle), tap-and-drag with drag
/// lock, clickpad clicks (right with two fingers or in the bottom-right
/// area, middle with three), click-and-hold drag, and a thumb or palm
/// resting in the button area is ignored.
///
/// Time only comes from the samples and from `advance(toUs:)`: timeouts
/// fire, stamped with their own deadline, when a later time is seen.
/// Samples must come in time order; an earlier time counts as the latest
/// time seen.
