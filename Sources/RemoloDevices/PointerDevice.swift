internal import Glibc
package import RemoloCore
internal import RemoloPlayoutCore
import RemoloPlayout

/// Why the pointer device failed, with what to do about it.
public struct PointerDeviceError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The errno value (positive), as the kernel reported it.
    public let errno: Int32
    /// What was being done: "create" or "write".
    public let operation: String
    /// A sentence for the user: what went wrong and how to fix it.
    public let message: String

    public var description: String { message }

    /// The udev rule that lets members of the `input` group create devices:
    /// the very line `remolo install` writes.
    public static let udevRule = UinputAccess.udevRuleLine

    init(errno: Int32, operation: String, device: String = "pointer") {
        self.errno = errno
        self.operation = operation
        self.message = Self.explain(errno: errno, operation: operation, device: device)
    }

    static func explain(errno e: Int32, operation: String, device: String = "pointer") -> String {
        switch (operation, e) {
        case ("create", ENOENT), ("create", ENODEV), ("create", ENXIO):
            return "cannot create the \(device) device: /dev/uinput does not exist (the uinput "
                + "module is not loaded). Fix: `sudo modprobe uinput`; to load it at every boot, "
                + "`sudo remolo install` writes \(UinputAccess.modulesLoadPath) (with the udev rule and the "
                + "service), or by hand: `echo uinput | sudo tee \(UinputAccess.modulesLoadPath)`."
        case ("create", EACCES), ("create", EPERM):
            return "cannot create the \(device) device: no permission to open /dev/uinput. Fix: "
                + "`sudo remolo install` writes the udev rule `\(udevRule)` to "
                + "\(UinputAccess.udevRulePath) (or write it there by hand), then run `sudo udevadm control "
                + "--reload-rules && sudo udevadm trigger --sysname-match=uinput`, `sudo usermod -aG "
                + "\(UinputAccess.uinputGroup) $USER` and log in again; or run as root."
        case ("devnode", _):
            return "the \(device) device has no /dev/input/event node: the evdev module is not "
                + "loaded. Fix: `sudo modprobe evdev`."
        case (_, EINVAL):
            return "\(operation) pointer device: invalid frame or device (EINVAL): a button "
                + "code outside BTN_LEFT...BTN_TASK or more than 8 button changes in one frame."
        case ("write", ENODEV):
            return "write \(device) device: the device is closed or was removed (ENODEV)."
        default:
            return "\(operation) \(device) device: \(String(cString: strerror(e))) (errno \(e))."
        }
    }
}

/// A virtual pointer (mouse) created through /dev/uinput: what compositors
/// and libinput see as the Remolo pointer. Each `write` is one frame, one
/// write() ending in SYN_REPORT. Releasing the device first releases any
/// button still held.
public final class PointerDevice {
    /// The C device; the receive loop writes to it from its own thread.
    package let dev: UnsafeMutablePointer<ptrdev>
    /// The evdev node the kernel made for the device, /dev/input/eventN.
    public let devnode: String
    /// What keeps the fd of fd mode open (an output adapter): released only
    /// after deinit's last write to it.
    private var owner: AnyObject?

    /// The default device name, "Remolo pointer".
    public static let defaultName = REMOLO_PTRDEV_NAME

    public init(name: String = PointerDevice.defaultName) throws(PointerDeviceError) {
        let d = UnsafeMutablePointer<ptrdev>.allocate(capacity: 1)
        let r = name.withCString { ptrdev_init(d, $0) }
        guard r == 0 else {
            d.deallocate()
            throw PointerDeviceError(errno: -r, operation: "create")
        }
        guard let node = ptrdev_devnode(d) else {
            ptrdev_deinit(d)
            d.deallocate()
            throw PointerDeviceError(errno: ENODEV, operation: "devnode")
        }
        devnode = String(cString: node)
        dev = d
    }

    /// The same device over a descriptor the caller owns and keeps open
    /// while the device lives: the same frames and button bookkeeping, no
    /// uinput (the receive loop's `.fileDescriptor` output). `devnode` is
    /// `/dev/fd/N`. `owner`, when given, is what keeps `fd` open (an output
    /// adapter): the device holds it until after its own last write.
    package init(fileDescriptor fd: Int32, keeping owner: AnyObject? = nil) throws(PointerDeviceError) {
        let d = UnsafeMutablePointer<ptrdev>.allocate(capacity: 1)
        let r = ptrdev_init_fd(d, fd)
        guard r == 0 else {
            d.deallocate()
            throw PointerDeviceError(errno: -r, operation: "create")
        }
        devnode = "/dev/fd/\(fd)"
        dev = d
        self.owner = owner
    }

    deinit {
        ptrdev_deinit(dev)
        dev.deallocate()
    }

    /// Writes one frame, without allocating (the receiver's drain path).
    /// Returns the bytes written (0 for an empty frame).
    @discardableResult
    public func write(_ frame: PointerFrame) throws(PointerDeviceError) -> Int {
        var o = playout_out()
        o.dx = frame.dx
        o.dy = frame.dy
        o.wheel = frame.wheel
        o.hwheel = frame.hwheel
        o.wheel_hires = frame.wheelHiRes
        o.hwheel_hires = frame.hwheelHiRes
        o.nbtn = UInt32(frame.buttons.count)
        for i in 0..<frame.buttons.count {
            let b = frame.buttons[i]
            ptrdev_out_set_btn(&o, UInt32(i), b.code, b.down ? 1 : 0)
        }
        return try write(o)
    }

    /// Releases every button still held, as one frame. Returns the bytes
    /// written (0 when nothing is held). The device does this itself when it
    /// goes away; a receiver calls it when a session ends.
    @discardableResult
    public func releaseAll() throws(PointerDeviceError) -> Int {
        let r = ptrdev_release(dev)
        guard r >= 0 else { throw PointerDeviceError(errno: -r, operation: "write") }
        return Int(r)
    }

    private func write(_ o: playout_out) throws(PointerDeviceError) -> Int {
        var o = o
        let r = ptrdev_write(dev, &o)
        guard r >= 0 else { throw PointerDeviceError(errno: -r, operation: "write") }
        return Int(r)
    }
}
