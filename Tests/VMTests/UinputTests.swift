import CEvdev
import Foundation
@testable import RemoloPlayout
@testable import RemoloDevices
@testable import RemoloService
@testable import RemoloSession
import RemoloSystem
import RemoloCore
import RemoloPlayoutCore
import Testing
import RemoloTypes

/// One evdev event without its timestamp: what must round-trip exactly.
struct Ev: Equatable, CustomStringConvertible {
    var type: UInt16
    var code: UInt16
    var value: Int32

    init(_ type: Int32, _ code: Int32, _ value: Int32) {
        self.type = UInt16(type); self.code = UInt16(code); self.value = value
    }

    static let syn = Ev(EV_SYN, SYN_REPORT, 0)
    static func rel(_ code: Int32, _ v: Int32) -> Ev { Ev(EV_REL, code, v) }
    static func key(_ code: Int32, _ down: Bool) -> Ev { Ev(EV_KEY, code, down ? 1 : 0) }

    var description: String {
        let t = libevdev_event_type_get_name(UInt32(type)).map { String(cString: $0) } ?? "\(type)"
        let c = libevdev_event_code_get_name(UInt32(type), UInt32(code)).map { String(cString: $0) } ?? "\(code)"
        return "\(t) \(c) \(value)"
    }
}

/// One event with the kernel's timestamp, microseconds on the reader's
/// clock (`EvdevReader.useMonotonicClock`).
struct TimedEv {
    var ev: Ev
    var tUs: UInt64
}

/// Reads a device node back through libevdev.
final class EvdevReader {
    let fd: Int32
    let dev: OpaquePointer

    init(_ node: String) throws {
        fd = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(fd >= 0, "open \(node): \(String(cString: strerror(errno)))")
        var d: OpaquePointer?
        let r = libevdev_new_from_fd(fd, &d)
        if r < 0 { close(fd) }
        try #require(r == 0, "libevdev_new_from_fd \(node): \(r)")
        dev = d!
    }

    deinit {
        libevdev_free(dev)
        close(fd)
    }

    /// Stamps this reader's events with CLOCK_MONOTONIC (EVIOCSCLOCKID;
    /// evdev's default is CLOCK_REALTIME): the clock of the receiver's
    /// playout and of the sender's datagram stamps.
    func useMonotonicClock() throws {
        let r = libevdev_set_clock_id(dev, CLOCK_MONOTONIC)
        try #require(r == 0, "libevdev_set_clock_id(CLOCK_MONOTONIC): \(r)")
    }

    /// Reads while another thread makes events, until `stop()` holds and
    /// nothing came for `settleMs` (or `timeoutMs` passed). The reader
    /// must keep up while the device is written: evdev's per-client buffer
    /// holds only a few frames and drops the rest as SYN_DROPPED, which is
    /// kept in the output.
    func readTimed(settleMs: UInt64 = 300, timeoutMs: UInt64 = 60_000, stop: () -> Bool) -> [TimedEv] {
        var out: [TimedEv] = []
        let deadline = monotonicNs() + timeoutMs * 1_000_000
        var quietSince: UInt64?
        while monotonicNs() < deadline {
            var ev = input_event()
            let rc = libevdev_next_event(dev, LIBEVDEV_READ_FLAG_NORMAL.rawValue, &ev)
            let t = UInt64(ev.time.tv_sec) * 1_000_000 + UInt64(ev.time.tv_usec)
            if rc == LIBEVDEV_READ_STATUS_SUCCESS.rawValue {
                out.append(TimedEv(ev: Ev(Int32(ev.type), Int32(ev.code), ev.value), tUs: t))
                quietSince = nil
                continue
            }
            if rc == LIBEVDEV_READ_STATUS_SYNC.rawValue {
                out.append(TimedEv(ev: Ev(EV_SYN, SYN_DROPPED, 0), tUs: t))
                continue
            }
            if stop() {
                let now = monotonicNs()
                if let q = quietSince, now - q >= settleMs * 1_000_000 { break }
                if quietSince == nil { quietSince = now }
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, 20)
        }
        return out
    }

    /// Reads until `count` events arrived, then waits `settle` ms more to
    /// catch anything unexpected. Gives up after `timeoutMs`.
    func read(count: Int, timeoutMs: Int32 = 5000, settleMs: Int32 = 100) -> [Ev] {
        var out: [Ev] = []
        let deadline = monotonicNs() + UInt64(timeoutMs) * 1_000_000
        var settled = false
        while true {
            var ev = input_event()
            let r = libevdev_next_event(dev, LIBEVDEV_READ_FLAG_NORMAL.rawValue, &ev)
            if r == LIBEVDEV_READ_STATUS_SUCCESS.rawValue {
                out.append(Ev(Int32(ev.type), Int32(ev.code), ev.value))
                continue
            }
            if r == LIBEVDEV_READ_STATUS_SYNC.rawValue {
                // SYN_DROPPED: the reader fell behind. Keep it visible.
                out.append(Ev(EV_SYN, SYN_DROPPED, 0))
                continue
            }
            // -EAGAIN: nothing queued.
            if out.count >= count {
                if settled { return out }
                settled = true
            }
            let now = monotonicNs()
            if now >= deadline { return out }
            let left = Int32((deadline - now) / 1_000_000)
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, settled ? settleMs : min(left, 1000))
        }
    }
}

extension EvdevReader {
    /// `readTimed` without the times.
    func read(settleMs: UInt64 = 500, timeoutMs: UInt64 = 120_000, until stop: () -> Bool) -> [Ev] {
        readTimed(settleMs: settleMs, timeoutMs: timeoutMs, stop: stop).map(\.ev)
    }
}

extension VMSuite {
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct Uinput {
        @Test func deviceCapabilities() throws {
            let d = try PointerDevice(name: "Remolo caps test")
            #expect(d.devnode.hasPrefix("/dev/input/event"))
            let r = try EvdevReader(d.devnode)
            #expect(String(cString: libevdev_get_name(r.dev)) == "Remolo caps test")
            #expect(libevdev_get_id_bustype(r.dev) == BUS_VIRTUAL)
            #expect(libevdev_has_property(r.dev, UInt32(INPUT_PROP_POINTER)) == 1)
            for code in [REL_X, REL_Y, REL_WHEEL, REL_HWHEEL, REL_WHEEL_HI_RES, REL_HWHEEL_HI_RES] {
                #expect(libevdev_has_event_code(r.dev, UInt32(EV_REL), UInt32(code)) == 1, "REL \(code)")
            }
            for code in [BTN_LEFT, BTN_RIGHT, BTN_MIDDLE, BTN_SIDE, BTN_EXTRA] {
                #expect(libevdev_has_event_code(r.dev, UInt32(EV_KEY), UInt32(code)) == 1, "BTN \(code)")
            }
            #expect(libevdev_has_event_type(r.dev, UInt32(EV_ABS)) == 0)
        }

        /// Every event written comes back from /dev/input/eventN, exactly,
        /// with the same SYN_REPORT boundaries.
        @Test func roundTripEveryEvent() throws {
            let d = try PointerDevice(name: "Remolo round trip")
            let r = try EvdevReader(d.devnode)
            typealias B = KeyChange

            let frames: [(PointerFrame, [Ev])] = [
                (PointerFrame(dx: 5, dy: -3),
                 [.rel(REL_X, 5), .rel(REL_Y, -3), .syn]),
                (PointerFrame(dx: -1024),
                 [.rel(REL_X, -1024), .syn]),
                (PointerFrame(dy: 7, buttons: [B(code: MouseButton.left.evdevCode, down: true)]),
                 [.rel(REL_Y, 7), .key(BTN_LEFT, true), .syn]),
                (PointerFrame(dx: 1, buttons: [B(code: MouseButton.left.evdevCode, down: false)]),
                 [.rel(REL_X, 1), .key(BTN_LEFT, false), .syn]),
                (PointerFrame(wheel: 1, wheelHiRes: 120),
                 [.rel(REL_WHEEL_HI_RES, 120), .rel(REL_WHEEL, 1), .syn]),
                (PointerFrame(wheelHiRes: -30),
                 [.rel(REL_WHEEL_HI_RES, -30), .syn]),
                (PointerFrame(hwheel: -2, hwheelHiRes: -240),
                 [.rel(REL_HWHEEL_HI_RES, -240), .rel(REL_HWHEEL, -2), .syn]),
                // A whole tick at once: motion, both wheels, two buttons.
                (PointerFrame(dx: 3, dy: 4, wheel: -1, hwheel: 1, wheelHiRes: -120, hwheelHiRes: 120,
                              buttons: [B(code: MouseButton.right.evdevCode, down: true), B(code: MouseButton.middle.evdevCode, down: true)]),
                 [.rel(REL_X, 3), .rel(REL_Y, 4), .rel(REL_WHEEL_HI_RES, -120), .rel(REL_WHEEL, -1),
                  .rel(REL_HWHEEL_HI_RES, 120), .rel(REL_HWHEEL, 1),
                  .key(BTN_RIGHT, true), .key(BTN_MIDDLE, true), .syn]),
                (PointerFrame(buttons: [B(code: MouseButton.right.evdevCode, down: false), B(code: MouseButton.middle.evdevCode, down: false)]),
                 [.key(BTN_RIGHT, false), .key(BTN_MIDDLE, false), .syn]),
                // A click inside one tick: the release starts a new frame so
                // the press is not cancelled out. Still one write().
                (PointerFrame(buttons: [B(code: MouseButton.left.evdevCode, down: true), B(code: MouseButton.left.evdevCode, down: false)]),
                 [.key(BTN_LEFT, true), .syn, .key(BTN_LEFT, false), .syn]),
                (PointerFrame(buttons: [B(code: MouseButton.side.evdevCode, down: true), B(code: MouseButton.extra.evdevCode, down: true),
                                        B(code: MouseButton.side.evdevCode, down: false), B(code: MouseButton.extra.evdevCode, down: false)]),
                 [.key(BTN_SIDE, true), .key(BTN_EXTRA, true), .syn,
                  .key(BTN_SIDE, false), .key(BTN_EXTRA, false), .syn]),
            ]

            var expected: [Ev] = []
            for (frame, evs) in frames {
                let n = try d.write(frame)
                #expect(n == evs.count * MemoryLayout<input_event>.stride, "bytes written for \(frame)")
                expected += evs
            }
            // An empty frame writes nothing at all (not even a SYN_REPORT).
            #expect(try d.write(PointerFrame()) == 0)

            let got = r.read(count: expected.count)
            #expect(got == expected, "events read back differ:\n got \(got)\nwant \(expected)")
        }

        /// The receiver's path: a PointerFrame straight from the playout.
        @Test func playoutFrameWrites() throws {
            let d = try PointerDevice(name: "Remolo playout frame")
            let r = try EvdevReader(d.devnode)
            var f = PointerFrame()
            f.dx = -9
            f.wheelHiRes = 60
            #expect(try d.write(f) == 3 * MemoryLayout<input_event>.stride)
            #expect(try d.write(PointerFrame()) == 0)
            let got = r.read(count: 3)
            #expect(got == [.rel(REL_X, -9), .rel(REL_WHEEL_HI_RES, 60), .syn])
        }

        /// Ending with a button down releases it: a compositor never keeps
        /// a stuck button. (deinit does the same release before destroying
        /// the device, but evdev refuses reads once the device is gone, so
        /// the release is checked through releaseAll.)
        @Test func releaseAllReleasesHeldButtons() throws {
            let d = try PointerDevice(name: "Remolo release test")
            let r = try EvdevReader(d.devnode)
            typealias B = KeyChange
            try d.write(PointerFrame(buttons: [B(code: MouseButton.left.evdevCode, down: true), B(code: MouseButton.right.evdevCode, down: true),
                                               B(code: MouseButton.side.evdevCode, down: true)]))
            try d.write(PointerFrame(buttons: [B(code: MouseButton.right.evdevCode, down: false)]))
            #expect(try d.releaseAll() == 3 * MemoryLayout<input_event>.stride)
            #expect(try d.releaseAll() == 0) // nothing held any more
            let got = r.read(count: 9)
            #expect(got == [
                .key(BTN_LEFT, true), .key(BTN_RIGHT, true), .key(BTN_SIDE, true), .syn,
                .key(BTN_RIGHT, false), .syn,
                .key(BTN_LEFT, false), .key(BTN_SIDE, false), .syn,
            ])
            #expect(libevdev_get_event_value(r.dev, UInt32(EV_KEY), UInt32(BTN_LEFT)) == 0)
        }

        /// The C API directly: return values and one write() per frame.
        @Test func cApi() throws {
            var dev = ptrdev()
            #expect(ptrdev_init(&dev, nil) == 0)
            defer { ptrdev_deinit(&dev) }
            let node = try #require(ptrdev_devnode(&dev))
            let r = try EvdevReader(String(cString: node))
            #expect(String(cString: libevdev_get_name(r.dev)) == REMOLO_PTRDEV_NAME)

            var o = playout_out()
            o.dx = 2
            ptrdev_out_set_btn(&o, 0, UInt16(BTN_TASK), 1)
            o.nbtn = 1
            #expect(ptrdev_write(&dev, &o) == Int32(3 * MemoryLayout<input_event>.stride))
            o = playout_out()
            ptrdev_out_set_btn(&o, 0, UInt16(BTN_TASK) + 1, 1) // outside the device's buttons
            o.nbtn = 1
            #expect(ptrdev_write(&dev, &o) == -EINVAL)
            #expect(r.read(count: 3) == [.rel(REL_X, 2), .key(BTN_TASK, true), .syn])

            ptrdev_deinit(&dev)
            o = playout_out()
            o.dx = 1
            #expect(ptrdev_write(&dev, &o) == -ENODEV)
        }
    }
}

/// Runs everywhere: the frame encoding (no kernel), and what a host without
/// uinput gets told.
@Suite struct PointerDeviceHost {
    @Test func encodeSplitsRepeatedButtons() {
        var out = playout_out()
        out.dy = -4
        ptrdev_out_set_btn(&out, 0, UInt16(BTN_LEFT), 1)
        ptrdev_out_set_btn(&out, 1, UInt16(BTN_LEFT), 0)
        ptrdev_out_set_btn(&out, 2, UInt16(BTN_RIGHT), 1)
        out.nbtn = 3
        var evs = [input_event](repeating: input_event(), count: Int(REMOLO_PTRDEV_FRAME_MAX))
        var held: UInt8 = 0
        let n = ptrdev_encode(&evs, evs.count, &out, &held)
        let got = evs.prefix(max(0, Int(n))).map { Ev(Int32($0.type), Int32($0.code), $0.value) }
        #expect(got == [.rel(REL_Y, -4), .key(BTN_LEFT, true), .syn,
                        .key(BTN_LEFT, false), .key(BTN_RIGHT, true), .syn])
        #expect(held == 0b10)
    }

    @Test func encodeEmptyAndInvalid() {
        var evs = [input_event](repeating: input_event(), count: Int(REMOLO_PTRDEV_FRAME_MAX))
        var held: UInt8 = 0
        var out = playout_out()
        #expect(ptrdev_encode(&evs, evs.count, &out, &held) == 0)
        out.nbtn = UInt32(PLAYOUT_BTN_PER_TICK) + 1
        #expect(ptrdev_encode(&evs, evs.count, &out, &held) == -EINVAL)
        out.nbtn = 1
        ptrdev_out_set_btn(&out, 0, UInt16(BTN_MOUSE) - 1, 1)
        #expect(ptrdev_encode(&evs, evs.count, &out, &held) == -EINVAL)
        #expect(ptrdev_encode(&evs, 5, &out, &held) == -EINVAL)
    }

    @Test(.enabled(if: !VMEnv.hasUinput, "this host has /dev/uinput"))
    func missingUinputSaysHowToFix() {
        var dev = ptrdev()
        #expect(ptrdev_init(&dev, nil) == -ENOENT)
        ptrdev_deinit(&dev) // harmless after a failed init
        do {
            _ = try PointerDevice()
            Issue.record("created a pointer device without /dev/uinput")
        } catch {
            #expect(error.errno == ENOENT)
            #expect(error.message.contains("modprobe uinput"), "\(error.message)")
        }
    }

    @Test func permissionMessageHasTheUdevRule() {
        let e = PointerDeviceError(errno: EACCES, operation: "create")
        // The very rule `remolo install` writes (AdviceCLITests holds the
        // command line's side).
        #expect(e.message.contains(ServiceFiles.udevRuleLine))
        #expect(e.message.contains(ServiceFiles.udevRulePath))
        #expect(e.message.contains("usermod -aG input"))
    }
}
