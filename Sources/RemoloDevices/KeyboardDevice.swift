internal import Glibc
package import RemoloCore
internal import RemoloPlayoutCore
import RemoloTypes

/// Why the keyboard device failed, with what to do about it.
public struct KeyboardDeviceError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The errno value (positive), as the kernel reported it.
    public let errno: Int32
    /// What was being done: "create" or "write".
    public let operation: String
    /// A sentence for the user: what went wrong and how to fix it.
    public let message: String

    public var description: String { message }

    init(errno: Int32, operation: String) {
        self.errno = errno
        self.operation = operation
        if errno == EINVAL {
            message = "\(operation) keyboard device: invalid frame or device (EINVAL): a key the Remolo keyboard does "
                + "not have (KeyboardDevice.hasKey) or more than \(KeyboardDevice.maxChangesPerFrame) "
                + "changes in one frame."
        } else {
            // The same causes and fixes as the pointer's (uinput, evdev).
            message = PointerDeviceError.explain(errno: errno, operation: operation, device: "keyboard")
        }
    }
}

/// The virtual keyboard created through /dev/uinput beside the pointer:
/// "Remolo keyboard", with every key of a standard 105-key keyboard plus
/// the international, media and volume keys. Each `write` is one frame,
/// one write() ending in SYN_REPORT. Going away releases every key held.
public final class KeyboardDevice {
    /// The C device; the receive loop writes to it from its own thread.
    package let dev: UnsafeMutablePointer<kbddev>
    /// The evdev node the kernel made for the device (`/dev/fd/N` in fd mode).
    public let devnode: String

    /// The default device name, "Remolo keyboard".
    public static let defaultName = REMOLO_KBDDEV_NAME
    /// Key changes one frame (one drain tick) carries.
    public static let maxChangesPerFrame = Int(PLAYOUT_KEY_PER_TICK)

    /// Whether the Remolo keyboard has this `KEY_*` code: the receiver's one
    /// list of keys. A key outside it is refused as an unknown key.
    public static func hasKey(_ code: UInt16) -> Bool { kbddev_has_key(code) }

    /// The keyboard's name beside a pointer called `pointerName`: the
    /// default pointer's keyboard is "Remolo keyboard", another pointer
    /// "NAME keyboard".
    public static func name(besidePointer pointerName: String) -> String {
        pointerName == PointerDevice.defaultName ? defaultName : pointerName + " keyboard"
    }

    public init(name: String = KeyboardDevice.defaultName) throws(KeyboardDeviceError) {
        let d = UnsafeMutablePointer<kbddev>.allocate(capacity: 1)
        let r = name.withCString { kbddev_init(d, $0) }
        guard r == 0 else {
            d.deallocate()
            throw KeyboardDeviceError(errno: -r, operation: "create")
        }
        guard let node = kbddev_devnode(d) else {
            kbddev_deinit(d)
            d.deallocate()
            throw KeyboardDeviceError(errno: ENODEV, operation: "devnode")
        }
        devnode = String(cString: node)
        dev = d
    }

    /// The same device over a descriptor the caller owns and keeps open
    /// while the device lives (the receive loop's `.fileDescriptor` output:
    /// the pointer's descriptor, each keyboard frame its own write).
    package init(fileDescriptor fd: Int32) throws(KeyboardDeviceError) {
        let d = UnsafeMutablePointer<kbddev>.allocate(capacity: 1)
        let r = kbddev_init_fd(d, fd)
        guard r == 0 else {
            d.deallocate()
            throw KeyboardDeviceError(errno: -r, operation: "create")
        }
        devnode = "/dev/fd/\(fd)"
        dev = d
    }

    deinit {
        kbddev_deinit(dev)
        dev.deallocate()
    }

    /// Writes key changes as one frame (at most `maxChangesPerFrame`; a key
    /// changing twice gets a SYN_REPORT between). Returns the bytes written.
    @discardableResult
    public func write(_ changes: [KeyChange]) throws(KeyboardDeviceError) -> Int {
        guard changes.count <= Self.maxChangesPerFrame else {
            throw KeyboardDeviceError(errno: EINVAL, operation: "write")
        }
        var o = playout_out()
        o.nkey = UInt32(changes.count)
        withUnsafeMutableBytes(of: &o.key) { raw in
            let k = raw.bindMemory(to: playout_key.self)
            for (i, c) in changes.enumerated() { k[i] = playout_key(code: c.code, down: c.down ? 1 : 0) }
        }
        let r = kbddev_write(dev, &o)
        guard r >= 0 else { throw KeyboardDeviceError(errno: -r, operation: "write") }
        return Int(r)
    }

    /// Releases every key still held. Returns the bytes written (0 when
    /// none is held).
    @discardableResult
    public func releaseAll() throws(KeyboardDeviceError) -> Int {
        let r = kbddev_release(dev)
        guard r >= 0 else { throw KeyboardDeviceError(errno: -r, operation: "write") }
        return Int(r)
    }
}
