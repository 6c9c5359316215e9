internal import Glibc
package import RemoloCore

/// Where a gesture's fingers are on the touchpad: how many, their centroid
/// in millimetres from the pad's top-left corner, and for a pinch the row's
/// scale (1 where it began) and turn (radians, counter-clockwise on screen).
/// The fingers are laid out in a row around the centroid
/// (`tpdev_layout`, remolo_tpdev.h).
public struct TouchpadGesture: Equatable, Sendable {
    public var fingers: Int
    public var x: Double
    public var y: Double
    public var scale: Double
    public var angle: Double

    public init(fingers: Int, x: Double = TouchpadDevice.widthMM / 2, y: Double = TouchpadDevice.heightMM / 2,
                scale: Double = 1, angle: Double = 0) {
        self.fingers = fingers
        self.x = x
        self.y = y
        self.scale = scale
        self.angle = angle
    }

    /// No finger down.
    public static let none = TouchpadGesture(fingers: 0)
}

/// A virtual multitouch touchpad through /dev/uinput, "Remolo touchpad":
/// what libinput turns into swipe and pinch gestures for the desktop
/// (docs/gestures.md). Each `show` is one frame, one write() ending in
/// SYN_REPORT. The device lifts every finger before it goes away.
public final class TouchpadDevice {
    package let dev: UnsafeMutablePointer<tpdev>
    /// The evdev node the kernel made for the device, /dev/input/eventN.
    public let devnode: String
    private var owner: AnyObject?

    public static let defaultName = REMOLO_TPDEV_NAME
    public static let widthMM = Double(REMOLO_TPDEV_WIDTH_MM)
    public static let heightMM = Double(REMOLO_TPDEV_HEIGHT_MM)
    public static let unitsPerMM = Double(REMOLO_TPDEV_UNITS_PER_MM)
    public static let maxFingers = Int(REMOLO_TPDEV_FINGERS_MAX)

    public init(name: String = TouchpadDevice.defaultName) throws(PointerDeviceError) {
        let d = UnsafeMutablePointer<tpdev>.allocate(capacity: 1)
        let r = name.withCString { tpdev_init(d, $0) }
        guard r == 0 else {
            d.deallocate()
            throw PointerDeviceError(errno: -r, operation: "create", device: "touchpad")
        }
        guard let node = tpdev_devnode(d) else {
            tpdev_deinit(d)
            d.deallocate()
            throw PointerDeviceError(errno: ENODEV, operation: "devnode", device: "touchpad")
        }
        devnode = String(cString: node)
        dev = d
    }

    /// The same frames to a descriptor the caller owns and keeps open
    /// (`owner`, when given, keeps it open until the last write).
    package init(fileDescriptor fd: Int32, keeping owner: AnyObject? = nil) throws(PointerDeviceError) {
        let d = UnsafeMutablePointer<tpdev>.allocate(capacity: 1)
        let r = tpdev_init_fd(d, fd)
        guard r == 0 else {
            d.deallocate()
            throw PointerDeviceError(errno: -r, operation: "create", device: "touchpad")
        }
        devnode = "/dev/fd/\(fd)"
        dev = d
        self.owner = owner
    }

    deinit {
        tpdev_deinit(dev)
        dev.deallocate()
    }

    /// Whether a finger is down, as far as the kernel was told.
    public var touching: Bool { dev.pointee.shown.n != 0 }

    /// Shows the fingers of `g` (0 fingers lifts them all). Returns the
    /// bytes written (0 when nothing changed). After a failed write the
    /// next call writes the whole change again.
    @discardableResult
    public func show(_ g: TouchpadGesture) throws(PointerDeviceError) -> Int {
        var t = tpdev_touches()
        let u = Self.unitsPerMM
        tpdev_layout(&t, UInt32(max(0, min(g.fingers, Self.maxFingers))), g.x * u, g.y * u, g.scale, g.angle)
        let r = tpdev_write(dev, &t)
        guard r >= 0 else { throw PointerDeviceError(errno: -r, operation: "write", device: "touchpad") }
        return Int(r)
    }

    /// Lifts every finger in one frame (0 when none was down).
    @discardableResult
    public func lift() throws(PointerDeviceError) -> Int {
        let r = tpdev_lift(dev)
        guard r >= 0 else { throw PointerDeviceError(errno: -r, operation: "write", device: "touchpad") }
        return Int(r)
    }
}
