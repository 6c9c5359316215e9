import CEvdev
import Foundation
import RemoloPlayout
import RemoloInput
import Synchronization
import Testing
import RemoloTestSupport

// What the device tests drive: uinput devices made by the test (a clickpad
// with real ABS_MT slots, a mouse, a keyboard), a finger-script player, and
// a receiver whose pointer is read back with libevdev.

/// A uinput device the test writes events into (one thread at a time:
/// made on the test's thread, written by the script's).
final class VirtualDevice: @unchecked Sendable {
    let dev: OpaquePointer
    let ui: OpaquePointer
    let node: String

    init(name: String, setup: (OpaquePointer) -> Void) throws {
        let d = libevdev_new()!
        libevdev_set_name(d, name)
        libevdev_set_id_bustype(d, Int32(BUS_USB))
        libevdev_set_id_vendor(d, 0x1234)
        libevdev_set_id_product(d, 0x5678)
        setup(d)
        var u: OpaquePointer?
        let rc = libevdev_uinput_create_from_device(d, LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue, &u)
        if rc != 0 { libevdev_free(d) }
        try #require(rc == 0, "uinput create \(name): \(String(cString: strerror(-rc)))")
        dev = d
        ui = u!
        node = String(cString: libevdev_uinput_get_devnode(u!))
    }

    deinit {
        libevdev_uinput_destroy(ui)
        libevdev_free(dev)
    }

    func write(_ type: Int32, _ code: Int32, _ value: Int32) {
        _ = libevdev_uinput_write_event(ui, UInt32(type), UInt32(code), value)
    }

    func syn() { write(EV_SYN, SYN_REPORT, 0) }

    static func key(_ d: OpaquePointer, _ codes: [Int32]) {
        for c in codes { libevdev_enable_event_code(d, UInt32(EV_KEY), UInt32(c), nil) }
    }

    static func mouse(name: String) throws -> VirtualDevice {
        try VirtualDevice(name: name) { d in
            libevdev_enable_property(d, UInt32(INPUT_PROP_POINTER))
            for c in [REL_X, REL_Y, REL_WHEEL, REL_WHEEL_HI_RES] {
                libevdev_enable_event_code(d, UInt32(EV_REL), UInt32(c), nil)
            }
            key(d, [BTN_LEFT, BTN_RIGHT, BTN_MIDDLE, BTN_SIDE, BTN_EXTRA])
        }
    }

    static func keyboard(name: String) throws -> VirtualDevice {
        try VirtualDevice(name: name) { d in
            key(d, [KEY_ESC, KEY_LEFTCTRL, KEY_LEFTALT, KEY_RIGHTCTRL, KEY_RIGHTALT, KEY_A, KEY_SPACE])
        }
    }
}

/// A clickpad as laptops have them: 100 x 60 mm at 40 units per mm,
/// five slots (multi-touch protocol B), BTN_TOUCH and the tool bits,
/// INPUT_PROP_POINTER and INPUT_PROP_BUTTONPAD.
enum Pad {
    static let width: Int32 = 4000, height: Int32 = 2400, resolution: Int32 = 40

    /// `resolution` 0: a pad that reports none (its size must be given).
    static func make(name: String, resolution: Int32 = Pad.resolution) throws -> VirtualDevice {
        try VirtualDevice(name: name) { d in
            libevdev_enable_property(d, UInt32(INPUT_PROP_POINTER))
            libevdev_enable_property(d, UInt32(INPUT_PROP_BUTTONPAD))
            VirtualDevice.key(d, [BTN_LEFT, BTN_TOUCH, BTN_TOOL_FINGER, BTN_TOOL_DOUBLETAP, BTN_TOOL_TRIPLETAP])
            func abs(_ code: Int32, _ max: Int32, _ res: Int32) {
                var a = input_absinfo(value: 0, minimum: 0, maximum: max, fuzz: 0, flat: 0, resolution: res)
                libevdev_enable_event_code(d, UInt32(EV_ABS), UInt32(code), &a)
            }
            abs(ABS_X, width, resolution)
            abs(ABS_Y, height, resolution)
            abs(ABS_MT_SLOT, 4, 0)
            abs(ABS_MT_TRACKING_ID, 65535, 0)
            abs(ABS_MT_POSITION_X, width, resolution)
            abs(ABS_MT_POSITION_Y, height, resolution)
        }
    }

    static func geometry() throws -> TouchpadGeometry {
        try TouchpadGeometry(xMinimum: 0, xMaximum: width, xResolution: resolution,
                             yMinimum: 0, yMaximum: height, yResolution: resolution)
    }
}

/// One report of a finger script: where each finger is (device units;
/// absent = lifted), the clickpad's button, then how long until the next.
struct PadStep {
    var fingers: [Int32: (x: Int32, y: Int32)]
    var button: Bool = false
    var afterUs: UInt64 = 8_000
}

/// Writes a script into a touchpad the way a kernel driver reports it
/// (multi-touch-protocol.rst, protocol B).
final class PadWriter: @unchecked Sendable {
    let pad: VirtualDevice
    private var down: [Int32: Int32] = [:]   // slot -> tracking id
    private var nextID: Int32 = 1
    private var button = false

    init(_ pad: VirtualDevice) { self.pad = pad }

    func play(_ steps: [PadStep]) {
        for s in steps {
            for slot in s.fingers.keys.sorted() {
                let p = s.fingers[slot]!
                pad.write(EV_ABS, ABS_MT_SLOT, slot)
                if down[slot] == nil {
                    down[slot] = nextID
                    pad.write(EV_ABS, ABS_MT_TRACKING_ID, nextID)
                    nextID += 1
                }
                pad.write(EV_ABS, ABS_MT_POSITION_X, p.x)
                pad.write(EV_ABS, ABS_MT_POSITION_Y, p.y)
            }
            for slot in down.keys.sorted() where s.fingers[slot] == nil {
                pad.write(EV_ABS, ABS_MT_SLOT, slot)
                pad.write(EV_ABS, ABS_MT_TRACKING_ID, -1)
                down[slot] = nil
            }
            if s.button != button {
                pad.write(EV_KEY, BTN_LEFT, s.button ? 1 : 0)
                button = s.button
            }
            let n = s.fingers.count
            pad.write(EV_KEY, BTN_TOUCH, n > 0 ? 1 : 0)
            pad.write(EV_KEY, BTN_TOOL_FINGER, n == 1 ? 1 : 0)
            pad.write(EV_KEY, BTN_TOOL_DOUBLETAP, n == 2 ? 1 : 0)
            pad.write(EV_KEY, BTN_TOOL_TRIPLETAP, n == 3 ? 1 : 0)
            if let first = s.fingers.keys.min().flatMap({ s.fingers[$0] }) {
                pad.write(EV_ABS, ABS_X, first.x)
                pad.write(EV_ABS, ABS_Y, first.y)
            }
            pad.syn()
            usleep(UInt32(s.afterUs))
        }
    }
}

/// What the sender core makes of a script, with the script's own times:
/// the totals the receiver's pointer must show.
struct Expected {
    var dxQ8: Int64 = 0, dyQ8: Int64 = 0, scrollVQ8: Int64 = 0, scrollHQ8: Int64 = 0
    var keys: [Ev] = []

    init(_ steps: [PadStep], config: InputConfig) throws {
        var core = try InputCore(config: config, startUs: 1_000_000)
        let g = try Pad.geometry()
        var t: UInt64 = 1_000_000
        var touching = Set<Int32>()
        var button = false
        func frames(upTo u: UInt64) {
            while core.nextFrameUs <= u { add(core.endFrame()) }
        }
        func add(_ f: Frame) {
            dxQ8 += Int64(f.motion.a); dyQ8 += Int64(f.motion.b)
            scrollVQ8 += Int64(f.scroll.a); scrollHQ8 += Int64(f.scroll.b)
            for b in f.buttons { keys.append(.key(Int32(b.button.rawValue), b.isDown)) }
        }
        for s in steps {
            frames(upTo: t)
            for slot in s.fingers.keys.sorted() {
                let p = s.fingers[slot]!
                let mm = g.millimetres(x: p.x, y: p.y)
                core.contact(ContactSample(slot: slot, xMm: mm.x, yMm: mm.y, isTouching: true, timeUs: t))
                touching.insert(slot)
            }
            for slot in touching.sorted() where s.fingers[slot] == nil {
                core.contact(ContactSample(slot: slot, xMm: 0, yMm: 0, isTouching: false, timeUs: t))
                touching.remove(slot)
            }
            if s.button != button { core.clickpadButton(isDown: s.button, atUs: t); button = s.button }
            t += s.afterUs
        }
        frames(upTo: t + 2_000_000)
    }
}

func sum(_ events: [Ev], _ code: Int32) -> Int64 {
    events.filter { $0.type == UInt16(EV_REL) && $0.code == UInt16(code) }.reduce(0) { $0 + Int64($1.value) }
}

/// A receiver process with its uinput pointer open for reading, and the
/// paired configs.
/// A `remolo receive` on loopback with its uinput pointer read back, and a
/// paired sender config for `remolo send --device`.
struct DeviceRig {
    let c: PairedConfigs
    let port: UInt16
    let rx: CLIProcess
    let pointer: EvdevReader

    init(_ label: String) throws {
        c = try PairedConfigs(label: label)
        port = try freePort()
        rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--seconds", "300"],
                            configDir: c.receiver, log: c.log("rx"))
        let listening = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
        let node = try #require(listening.split(separator: " ").last.map(String.init))
        pointer = try EvdevReader(node)
    }

    func send(_ args: [String]) throws -> CLIProcess {
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)"] + args, configDir: c.sender, log: c.log("tx"))
        _ = try #require(tx.line("reading ", timeout: 30), "send did not start reading: \(tx.output)")
        return tx
    }

    /// Runs `script` on a thread of its own while the receiver's pointer is
    /// read: the events read until `script` has returned.
    func pointerEvents(while script: @escaping @Sendable () -> Void) -> [Ev] {
        let played = Mutex(false)
        Thread {
            script()
            played.withLock { $0 = true }
        }.start()
        return pointer.read(until: { played.withLock { $0 } })
    }

    /// Plays `steps` on `pad`, then ends the sender `tx` with SIGINT (as
    /// Ctrl+C would): the pointer's events meanwhile.
    @discardableResult
    func play(_ steps: [PadStep], on pad: VirtualDevice, thenInterrupt tx: CLIProcess) -> [Ev] {
        let writer = PadWriter(pad)
        return pointerEvents {
            writer.play(steps)
            usleep(300_000)
            tx.signal(SIGINT)
            _ = tx.wait()
        }
    }

    func stop() {
        if rx.process.isRunning { rx.signal(SIGTERM) }
        _ = rx.wait(upTo: 10)
        c.remove()
    }
}
