// Input devices of the sending machine, read through libevdev: a touchpad
// (multi-touch protocol B) or a mouse becomes InputCore samples; a keyboard
// is watched for the let-go chord (and forwarded with --keyboard:
// KeyboardForward.swift).
//
// References: the kernel's Documentation/input/multi-touch-protocol.rst
// (slots, tracking ids), Documentation/input/event-codes.rst (INPUT_PROP_*,
// REL_WHEEL_HI_RES), and libevdev's documentation of libevdev_next_event
// (SYN_DROPPED and sync mode) and libevdev_grab.
internal import CEvdev
internal import Glibc
import RemoloInput
import RemoloTypes

/// What an input device is to the sender.
public enum InputDeviceKind: String, Sendable, Equatable {
    /// A multi-touch surface (protocol B) with a resolution: fingers move,
    /// scroll, tap and click.
    case touchpad
    /// Relative X/Y and buttons: motion, buttons, wheel.
    case mouse
    /// Not a pointer: watched for the let-go chord; its keys are forwarded
    /// (grabbed) only with `remolo send --keyboard`.
    case keyboard
}

/// One `/dev/input/event*` node as the sender sees it.
public struct InputDeviceInfo: Sendable, Equatable {
    public var path: String
    public var name: String
    /// nil: not usable as a pointer source (`note` says why).
    public var kind: InputDeviceKind?
    /// What it is (size, slots, clickpad, hi-res wheel), or why not usable.
    public var note: String

    public var isPointer: Bool { kind == .touchpad || kind == .mouse }
}

/// Why an input device could not be used, with what to do about it.
public struct InputDeviceError: Error, Equatable, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    init(_ message: String) { self.message = message }

    static func open(_ path: String, errno e: Int32) -> InputDeviceError {
        switch e {
        case EACCES, EPERM:
            return InputDeviceError("no permission to read \(path): add yourself to the input group "
                + "(`sudo usermod -aG input $USER`, then log in again) or run as root")
        case ENOENT, ENODEV, ENXIO:
            return InputDeviceError("\(path) does not exist (unplugged?); `remolo devices` lists what is there")
        default:
            return InputDeviceError("cannot open \(path): \(String(cString: strerror(e))) (errno \(e))")
        }
    }
}

/// The input devices of this machine.
public enum InputDevices {
    public static let directory = "/dev/input"

    /// Every event node, in number order.
    public static func nodes() -> [String] {
        guard let d = opendir(directory) else { return [] }
        defer { closedir(d) }
        var numbers: [Int] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix("event"), let n = Int(name.dropFirst(5)) { numbers.append(n) }
        }
        return numbers.sorted().map { "\(directory)/event\($0)" }
    }

    /// What each node is, or why it cannot be read.
    public static func list(touchpadSizeMm: TouchpadSize? = nil) -> [InputDeviceInfo] {
        nodes().map { probe($0, touchpadSizeMm: touchpadSizeMm) }
    }

    /// What `path` is. `touchpadSizeMm` stands in for a touchpad's own
    /// resolution (`--touchpad-size`).
    public static func probe(_ path: String, touchpadSizeMm: TouchpadSize? = nil) -> InputDeviceInfo {
        do {
            let d = try EvdevHandle(path: path, touchpadSizeMm: touchpadSizeMm)
            return d.info
        } catch {
            return InputDeviceInfo(path: path, name: "?", kind: nil, note: error.message)
        }
    }

    /// `--device auto`: the first touchpad, else the first mouse.
    public static func automatic(touchpadSizeMm: TouchpadSize? = nil) throws(InputDeviceError) -> InputDeviceInfo {
        let all = list(touchpadSizeMm: touchpadSizeMm)
        if let t = all.first(where: { $0.kind == .touchpad }) ?? all.first(where: { $0.kind == .mouse }) { return t }
        let denied = all.contains { $0.note.hasPrefix("no permission") }
        throw InputDeviceError("no touchpad or mouse found in \(directory)"
            + (denied ? " (some devices could not be opened: add yourself to the input group, or run as root)" : "")
            + "; `remolo devices` says why each device is not usable")
    }
}

/// A touchpad's size in millimetres, given by the user.
public struct TouchpadSize: Sendable, Equatable {
    public var width: Double
    public var height: Double
    public init(width: Double, height: Double) { self.width = width; self.height = height }

    /// "WIDTHxHEIGHT" in millimetres, e.g. "100x60".
    public init?(_ text: String) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Double(parts[0]), let h = Double(parts[1]),
              w.isFinite, h.isFinite, (10...1000).contains(w), (10...1000).contains(h) else { return nil }
        self.init(width: w, height: h)
    }
}

/// What reading a device brought.
enum EvdevRead: Equatable {
    /// Everything available was read.
    case drained
    /// The device is gone (ENODEV: unplugged, or removed across a suspend),
    /// or reading failed with this errno.
    case gone(Int32)
}

/// A touchpad or mouse translated into InputCore samples.
///
/// Touchpad, multi-touch protocol B (multi-touch-protocol.rst): ABS_MT_SLOT
/// selects the slot the following ABS_MT_* events describe;
/// ABS_MT_TRACKING_ID >= 0 starts a contact in it, -1 ends it. A contact's
/// state is complete at SYN_REPORT: only then is a sample made, stamped with
/// the SYN_REPORT's kernel time, for every slot that changed.
final class PointerSource {
    let handle: EvdevHandle
    let kind: InputDeviceKind
    let geometry: TouchpadGeometry?
    let isClickpad: Bool
    let hasHiResWheel: Bool
    let hasHiResHWheel: Bool

    private struct Slot {
        var touching = false
        var x: Int32 = 0
        var y: Int32 = 0
        var changed = false
        /// Down when the device was opened: ignored until it lifts (its
        /// start was never seen).
        var stale = false
    }
    private var slots: [Slot]
    private var slot = 0
    /// Relative motion and wheel of the current report.
    private var rel = (dx: Int32(0), dy: Int32(0), v: Int32(0), h: Int32(0))
    /// Kernel times (us) of reports that carried motion, not yet in a
    /// datagram: the sample-to-send latency starts there.
    var motionTimes: [UInt64] = []
    /// Times the kernel's buffer for this reader overflowed (SYN_DROPPED):
    /// the reader fell behind and relative motion was lost.
    private(set) var overflows: UInt64 = 0

    init(path: String, grab: Bool, touchpadSizeMm: TouchpadSize? = nil) throws(InputDeviceError) {
        let h = try EvdevHandle(path: path, touchpadSizeMm: touchpadSizeMm)
        let i = h.info
        guard let k = i.kind, k != .keyboard else {
            throw InputDeviceError("\(path) (\(i.name)) is not a touchpad or mouse: \(i.note); `remolo devices` lists usable ones")
        }
        handle = h
        kind = k
        geometry = k == .touchpad ? (try? h.touchpadGeometry().get()) : nil
        isClickpad = h.has(property: INPUT_PROP_BUTTONPAD)
        hasHiResWheel = h.has(EV_REL, REL_WHEEL_HI_RES)
        hasHiResHWheel = h.has(EV_REL, REL_HWHEEL_HI_RES)
        let n = k == .touchpad ? max(1, Int(libevdev_get_num_slots(h.dev))) : 0
        slots = Array(repeating: Slot(), count: n)
        for s in 0..<n where libevdev_get_slot_value(h.dev, UInt32(s), UInt32(ABS_MT_TRACKING_ID)) >= 0 {
            slots[s].stale = true
        }
        if k == .touchpad { slot = max(0, Int(h.value(EV_ABS, ABS_MT_SLOT))) }
        if grab { try h.grab() }
    }

    var fd: Int32 { handle.fd }
    var name: String { handle.name }
    var path: String { handle.path }

    /// Reads every event available into `core`.
    func read(into core: inout InputCore) -> EvdevRead {
        let e = handle.readAvailable(onOverflow: {
            overflows += 1
            rel = (0, 0, 0, 0)
        }) { ev in handle(ev, into: &core) }
        return e == 0 ? .drained : .gone(e)
    }

    private func handle(_ ev: input_event, into core: inout InputCore) {
        let type = Int32(ev.type), code = Int32(ev.code)
        switch type {
        case EV_ABS where kind == .touchpad:
            switch code {
            case ABS_MT_SLOT: slot = Int(ev.value)
            case ABS_MT_TRACKING_ID:
                guard slots.indices.contains(slot) else { return }
                let down = ev.value >= 0
                if !down && slots[slot].stale { slots[slot].stale = false; return }
                if slots[slot].stale { return }
                slots[slot].touching = down
                slots[slot].changed = true
            case ABS_MT_POSITION_X:
                guard slots.indices.contains(slot) else { return }
                slots[slot].x = ev.value
                slots[slot].changed = true
            case ABS_MT_POSITION_Y:
                guard slots.indices.contains(slot) else { return }
                slots[slot].y = ev.value
                slots[slot].changed = true
            default: break
            }
        case EV_REL:
            switch code {
            case REL_X: rel.dx &+= ev.value
            case REL_Y: rel.dy &+= ev.value
            // A hi-res wheel sends both: REL_WHEEL_HI_RES in 1/120 notches,
            // REL_WHEEL once a whole notch has built up
            // (event-codes.rst). Only one of them is read.
            case REL_WHEEL_HI_RES: rel.v &+= ev.value
            case REL_HWHEEL_HI_RES: rel.h &+= ev.value
            case REL_WHEEL where !hasHiResWheel: rel.v &+= ev.value &* 120
            case REL_HWHEEL where !hasHiResHWheel: rel.h &+= ev.value &* 120
            default: break
            }
        case EV_KEY:
            guard (BTN_LEFT...BTN_TASK).contains(code), ev.value != 2 else { return }
            let t = Self.timeUs(ev)
            if kind == .touchpad && isClickpad && code == BTN_LEFT {
                // The clickpad's one physical button: left, right or middle
                // depends on where and how many fingers (the recognizer).
                core.clickpadButton(isDown: ev.value != 0, atUs: t)
            } else {
                core.mouseButton(Button(rawValue: UInt16(code)), isDown: ev.value != 0, atUs: t)
            }
        case EV_SYN where code == SYN_REPORT:
            report(at: Self.timeUs(ev), into: &core)
        default:
            break
        }
    }

    /// SYN_REPORT: the report's samples go to the core.
    private func report(at t: UInt64, into core: inout InputCore) {
        var moved = false
        if kind == .touchpad, let g = geometry {
            for i in slots.indices where slots[i].changed {
                slots[i].changed = false
                let mm = g.millimetres(x: slots[i].x, y: slots[i].y)
                core.contact(ContactSample(slot: Int32(i), xMm: mm.x, yMm: mm.y, isTouching: slots[i].touching, timeUs: t))
                moved = moved || slots[i].touching
            }
        }
        if rel.dx != 0 || rel.dy != 0 {
            core.mouseMotion(dx: rel.dx, dy: rel.dy, atUs: t)
            moved = true
        }
        if rel.v != 0 || rel.h != 0 {
            core.mouseWheel(verticalUnits: rel.v, horizontalUnits: rel.h, atUs: t)
            moved = true
        }
        rel = (0, 0, 0, 0)
        if moved && motionTimes.count < 4096 { motionTimes.append(t) }
    }

    static func timeUs(_ ev: input_event) -> UInt64 {
        UInt64(max(0, ev.time.tv_sec)) * 1_000_000 + UInt64(max(0, ev.time.tv_usec))
    }
}

/// A keyboard watched (not grabbed) for the let-go chord: Ctrl, Alt and
/// Esc held together, left or right modifiers alike.
final class ChordWatcher {
    let handle: EvdevHandle

    init?(path: String) {
        guard let h = try? EvdevHandle(path: path), h.info.kind == .keyboard else { return nil }
        handle = h
    }

    var fd: Int32 { handle.fd }

    /// Reads what is available (libevdev keeps the key state); true when the
    /// chord is held, or the keyboard is gone (false then, and `gone` set).
    func read() -> (chord: Bool, gone: Bool) {
        // libevdev keeps the key state, through a SYN_DROPPED too.
        if handle.readAvailable(onOverflow: {}, { _ in }) != 0 { return (false, true) }
        let down = { (c: Int32) in self.handle.value(EV_KEY, c) != 0 }
        return ((down(KEY_LEFTCTRL) || down(KEY_RIGHTCTRL)) && (down(KEY_LEFTALT) || down(KEY_RIGHTALT)) && down(KEY_ESC), false)
    }
}
