// An open evdev node and its libevdev state: what the sender reads input
// devices through (EvdevDevice.swift: the devices; DeviceRun.swift: the loop).
// References: libevdev's documentation of libevdev_next_event (SYN_DROPPED
// and sync mode) and libevdev_grab; the kernel's
// Documentation/input/event-codes.rst.

internal import CEvdev
internal import Glibc
import RemoloInput

/// An open evdev node and its libevdev state.
final class EvdevHandle {
    let path: String
    let fd: Int32
    let dev: OpaquePointer
    /// The size the user gave for a touchpad; it wins over the resolution
    /// the device reports (some report none, some a wrong one).
    let touchpadSizeMm: TouchpadSize?
    private(set) var grabbed = false

    init(path: String, touchpadSizeMm: TouchpadSize? = nil) throws(InputDeviceError) {
        self.path = path
        self.touchpadSizeMm = touchpadSizeMm
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .open(path, errno: errno) }
        var d: OpaquePointer?
        let rc = libevdev_new_from_fd(fd, &d)
        guard rc == 0, let d else {
            Glibc.close(fd)
            throw InputDeviceError("\(path) is not an evdev device libevdev can read (\(String(cString: strerror(-rc))))")
        }
        self.fd = fd
        self.dev = d
        // Event times on the sender's clock (CLOCK_MONOTONIC), so a sample's
        // kernel timestamp can stamp it (EVIOCSCLOCKID; the default is
        // CLOCK_REALTIME, which jumps).
        _ = libevdev_set_clock_id(d, CLOCK_MONOTONIC)
    }

    deinit {
        if grabbed { _ = libevdev_grab(dev, LIBEVDEV_UNGRAB) }
        libevdev_free(dev)
        Glibc.close(fd)
    }

    var name: String { libevdev_get_name(dev).map { String(cString: $0) } ?? "" }

    func has(_ type: Int32, _ code: Int32) -> Bool {
        libevdev_has_event_code(dev, UInt32(type), UInt32(code)) == 1
    }
    func has(property p: Int32) -> Bool { libevdev_has_property(dev, UInt32(p)) == 1 }
    func value(_ type: Int32, _ code: Int32) -> Int32 { libevdev_get_event_value(dev, UInt32(type), UInt32(code)) }

    /// Reads every event available into `each`: 0 once drained, else the
    /// errno the device went away with. After the kernel's buffer
    /// overflowed (SYN_DROPPED) `onOverflow` runs, and libevdev then hands
    /// out the difference to the device's real state, which goes through
    /// `each` like any event (libevdev docs: "sync mode"); what was lost
    /// in the overflow stays lost.
    func readAvailable(onOverflow: () -> Void, _ each: (input_event) -> Void) -> Int32 {
        var ev = input_event()
        var flags = LIBEVDEV_READ_FLAG_NORMAL.rawValue
        while true {
            let rc = libevdev_next_event(dev, flags, &ev)
            if rc == -EAGAIN {
                // After a SYN_DROPPED the sync events are done: back to normal.
                if flags == LIBEVDEV_READ_FLAG_SYNC.rawValue { flags = LIBEVDEV_READ_FLAG_NORMAL.rawValue; continue }
                return 0
            }
            if rc < 0 { return -rc }
            if rc == LIBEVDEV_READ_STATUS_SYNC.rawValue && flags == LIBEVDEV_READ_FLAG_NORMAL.rawValue {
                onOverflow()
                flags = LIBEVDEV_READ_FLAG_SYNC.rawValue
                continue
            }
            each(ev)
        }
    }

    /// EVIOCGRAB: only this reader gets the device's events (the local
    /// pointer stops moving). The kernel drops the grab when the fd closes.
    /// `option`: the flag that asked for it, named in the error.
    func grab(option: String = "--grab") throws(InputDeviceError) {
        let rc = libevdev_grab(dev, LIBEVDEV_GRAB)
        guard rc == 0 else {
            throw InputDeviceError(rc == -EBUSY
                ? "\(path) (\(name)) is already grabbed by another program; close it or send without \(option)"
                : "cannot grab \(path): \(String(cString: strerror(-rc)))")
        }
        grabbed = true
    }

    func ungrab() {
        guard grabbed else { return }
        _ = libevdev_grab(dev, LIBEVDEV_UNGRAB)
        grabbed = false
    }

    /// Why this device is or is not a pointer source.
    var info: InputDeviceInfo {
        var i = InputDeviceInfo(path: path, name: name, kind: nil, note: "")
        let bus = libevdev_get_id_bustype(dev)
        if bus == BUS_VIRTUAL && name.hasPrefix("Remolo") {
            i.note = "a Remolo receiver's own \(name.hasSuffix("keyboard") ? "keyboard" : "pointer"): sending it would feed back into itself"
            return i
        }
        if has(EV_ABS, ABS_MT_POSITION_X) && has(EV_ABS, ABS_MT_POSITION_Y) {
            if has(property: INPUT_PROP_DIRECT) {
                i.note = "a touchscreen (INPUT_PROP_DIRECT): touches are positions on a screen, not pointer motion"
                return i
            }
            if has(EV_KEY, BTN_TOOL_PEN) || has(EV_KEY, BTN_STYLUS) {
                i.note = "a pen tablet: not supported"
                return i
            }
            guard has(EV_ABS, ABS_MT_SLOT) else {
                i.note = "multi-touch protocol A (no ABS_MT_SLOT): only protocol B touchpads are read"
                return i
            }
            switch touchpadGeometry() {
            case .failure(let e): i.note = e.message
            case .success(let g):
                i.kind = .touchpad
                let slots = libevdev_get_num_slots(dev)
                let pad = has(property: INPUT_PROP_BUTTONPAD) ? ", clickpad" : (has(EV_KEY, BTN_RIGHT) ? ", with buttons" : "")
                i.note = "\(Int(g.widthMm.rounded())) x \(Int(g.heightMm.rounded())) mm, \(slots) slots\(pad)"
            }
            return i
        }
        if has(EV_REL, REL_X) && has(EV_REL, REL_Y) && has(EV_KEY, BTN_LEFT) {
            i.kind = .mouse
            let wheel = has(EV_REL, REL_WHEEL_HI_RES) ? "hi-res wheel" : has(EV_REL, REL_WHEEL) ? "wheel" : "no wheel"
            let buttons = (BTN_LEFT...BTN_TASK).filter { has(EV_KEY, $0) }.count
            i.note = "\(buttons) buttons, \(wheel)"
            return i
        }
        if has(EV_KEY, KEY_ESC) && has(EV_KEY, KEY_LEFTCTRL) && has(EV_KEY, KEY_LEFTALT) {
            i.kind = .keyboard
            i.note = "a keyboard: watched for the let-go chord Ctrl+Alt+Esc; `remolo send --keyboard` forwards its keys (grabbed)"
            return i
        }
        if has(EV_ABS, ABS_X) && has(EV_KEY, BTN_TOUCH) {
            i.note = "a single-touch surface (no ABS_MT_* axes): only multi-touch touchpads are read"
        } else if has(EV_REL, REL_X) {
            i.note = "relative axes but no BTN_LEFT: not a mouse"
        } else {
            i.note = "no relative X/Y and no touch surface: not a pointer"
        }
        return i
    }

    /// The surface from ABS_MT_POSITION_X/Y (minimum, maximum, resolution).
    func touchpadGeometry() -> Result<TouchpadGeometry, InputConfigError> {
        guard let x = libevdev_get_abs_info(dev, UInt32(ABS_MT_POSITION_X))?.pointee,
              let y = libevdev_get_abs_info(dev, UInt32(ABS_MT_POSITION_Y))?.pointee else {
            return .failure(InputConfigError("no ABS_MT_POSITION_X/Y ranges"))
        }
        do {
            if let size = touchpadSizeMm {
                return .success(try TouchpadGeometry(xMinimum: x.minimum, xMaximum: x.maximum, yMinimum: y.minimum,
                                                     yMaximum: y.maximum, widthMm: size.width, heightMm: size.height))
            }
            return .success(try TouchpadGeometry(xMinimum: x.minimum, xMaximum: x.maximum, xResolution: x.resolution,
                                                 yMinimum: y.minimum, yMaximum: y.maximum, yResolution: y.resolution))
        } catch {
            return .failure(error)
        }
    }
}
