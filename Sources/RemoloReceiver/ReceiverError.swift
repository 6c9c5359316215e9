// Why the receiver could not start or act, and where its frames go.

internal import Glibc
import RemoloDevices

/// Why the receiver could not start or act, with what to do about it.
public struct ReceiverError: Error, Equatable, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }

    init(_ message: String) { self.message = message }

    /// io_uring cannot be used here: says which of the usual causes applies.
    static func ioUring(errno e: Int32, disabled: Int32, seccomp: Int32) -> ReceiverError {
        var m = "io_uring is not available (io_uring_setup: \(String(cString: strerror(e))))"
        if disabled == 2 {
            m += ": it is disabled system-wide (/proc/sys/kernel/io_uring_disabled = 2). Fix: "
                + "`sudo sysctl -w kernel.io_uring_disabled=0` (and drop the setting from /etc/sysctl.d)."
        } else if disabled == 1 {
            m += ": it is limited to the io_uring group (/proc/sys/kernel/io_uring_disabled = 1). Fix: "
                + "run as root, add this user to the group named by /proc/sys/kernel/io_uring_group, "
                + "or `sudo sysctl -w kernel.io_uring_disabled=0`."
        } else if seccomp > 0 {
            m += ": a seccomp filter blocks it (Seccomp: \(seccomp) in /proc/self/status; containers "
                + "often do this). Fix: run outside the container, or allow io_uring_setup, "
                + "io_uring_enter and io_uring_register in its seccomp profile."
        } else if e == ENOSYS {
            m += ": the kernel was built without it (CONFIG_IO_URING). Use a kernel with io_uring (6.1 or later)."
        } else if e == ENOMEM || e == EPERM {
            m += ": the locked-memory limit may be too low. Fix: raise `ulimit -l` (memlock)."
        } else {
            m += "."
        }
        return ReceiverError(m)
    }
}

/// Where a receiver's gestures go (docs/gestures.md): its virtual touchpad,
/// made when a session is first granted gestures, never before.
public enum TouchpadOutput: Sendable {
    /// A uinput touchpad with this name.
    case uinput(name: String)
    /// The same frames (struct input_event) to a descriptor the caller
    /// owns: for tests and tools.
    case fileDescriptor(Int32)
    /// No touchpad: gestures are not offered.
    case none
}

/// Where the receive loop writes its frames.
public enum ReceiverOutput: Sendable {
    /// A new uinput pointer device with this name (what the desktop sees)
    /// and, with `keyboard`, the keyboard beside it
    /// (`KeyboardDevice.name(besidePointer:)`: "Remolo keyboard" beside the
    /// default pointer). A keyboard that cannot be created leaves the loop
    /// without one (`ReceiveLoop.keyboardError` says why); the pointer
    /// still runs.
    case uinput(name: String, keyboard: Bool = true)
    /// Any file descriptor: the same encoded evdev frames (struct
    /// input_event), one write() per tick, by the devices' own write and
    /// recovery code; the keyboard's frames (with `keyboard`) go to the
    /// same descriptor, each its own write. For tests and tools; the caller
    /// owns the descriptor. This is not a pointer device.
    case fileDescriptor(Int32, keyboard: Bool = true)
    /// An output adapter's pipe: the same frames, the keyboard's included,
    /// turned into a backend's calls (XTest, ...) on the adapter's thread.
    /// The loop owns the adapter from here on: stopping the loop finishes it
    /// (its pipe drained, every key and button it holds released).
    case adapter(any FrameOutput)
}
