import CEvdev
import Foundation
@testable import RemoloPlayout
@testable import RemoloDevices
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import RemoloCore
import RemoloPlayoutCore
import Testing
import RemoloTypes

/// The kernel's own key state of a device: a fresh libevdev handle asks the
/// kernel with EVIOCGKEY when it opens (libevdev_new_from_fd), so this is
/// the input core's bit map of every key down, not a reader's view of the
/// events. (ioctl itself is variadic: Swift cannot call it.)
func kernelKeysDown(_ node: String) throws -> [UInt16] {
    let fresh = try EvdevReader(node)
    return (0...UInt16(KEY_MAX)).filter { libevdev_get_event_value(fresh.dev, UInt32(EV_KEY), UInt32($0)) != 0 }
}

extension VMSuite {
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct Keyboard {
        static let ctrl = UInt16(KEY_LEFTCTRL), shift = UInt16(KEY_LEFTSHIFT), a = UInt16(KEY_A)

        /// "Remolo keyboard" beside the pointer: a real uinput device with
        /// exactly the keys `KeyboardDevice.hasKey` lists and key repeat,
        /// which udev and libinput take for a keyboard.
        @Test(.timeLimit(.minutes(1)))
        func deviceIsAKeyboard() throws {
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            let loop = try ReceiveLoop(socket: udp, output: .uinput(name: PointerDevice.defaultName))
            defer { loop.stop() }
            #expect(loop.keyboardError == nil && loop.hasKeyboard)
            let node = try #require(loop.keyboardDevnode)
            let r = try EvdevReader(node)
            #expect(String(cString: libevdev_get_name(r.dev)) == "Remolo keyboard")
            #expect(libevdev_get_id_bustype(r.dev) == BUS_VIRTUAL)
            #expect(libevdev_has_event_type(r.dev, UInt32(EV_REP)) == 1, "the kernel and the desktop repeat keys")
            #expect(libevdev_has_event_type(r.dev, UInt32(EV_REL)) == 0)
            var missing: [Int] = [], extra: [Int] = []
            for code in 0...Int(KEY_MAX) {
                let has = libevdev_has_event_code(r.dev, UInt32(EV_KEY), UInt32(code)) == 1
                if KeyboardDevice.hasKey(UInt16(code)) && !has { missing.append(code) }
                if !KeyboardDevice.hasKey(UInt16(code)) && has { extra.append(code) }
            }
            #expect(missing.isEmpty && extra.isEmpty, "missing \(missing), extra \(extra)")
            for code in [KEY_ESC, KEY_Z, KEY_102ND, KEY_F1, KEY_F12, KEY_F13, KEY_F24, KEY_HOME, KEY_PAGEDOWN, KEY_UP,
                         KEY_INSERT, KEY_DELETE, KEY_SYSRQ, KEY_PAUSE, KEY_LEFTMETA, KEY_RIGHTMETA, KEY_COMPOSE,
                         KEY_KPENTER, KEY_KPDOT, KEY_MUTE, KEY_VOLUMEDOWN, KEY_VOLUMEUP, KEY_PLAYPAUSE, KEY_NEXTSONG,
                         KEY_PREVIOUSSONG, KEY_STOPCD] {
                #expect(KeyboardDevice.hasKey(UInt16(code)), "key \(code)")
            }
            for code in [KEY_POWER, KEY_SLEEP, KEY_WAKEUP, KEY_SUSPEND, KEY_RFKILL] {
                #expect(!KeyboardDevice.hasKey(UInt16(code)), "key \(code) stays out")
            }

            // udev has initialised it (libinput takes only such devices).
            try must("/usr/bin/udevadm", "settle", "--timeout=20")
            let info = try run("/usr/bin/udevadm", "info", "--query=property", "--name=\(node)")
            #expect(info.output.contains("ID_INPUT_KEYBOARD=1"), "\(info.output)")
            let list = try run("/usr/bin/libinput", "list-devices")
            #expect(list.status == 0, "\(list.output)")
            let block = list.output.components(separatedBy: "\n\n").first {
                $0.contains("Device:") && $0.contains("Remolo keyboard") && $0.contains(node)
            }
            let found = try #require(block, "libinput list-devices does not list Remolo keyboard:\n\(list.output)")
            let caps = found.split(separator: "\n").first { $0.hasPrefix("Capabilities:") } ?? ""
            #expect(caps.contains("keyboard"), "\(found)")
            #expect(!caps.contains("pointer"), "\(found)")
        }

        /// Keys pushed through the loop reach the kernel, and a session's
        /// end releases them: EVIOCGKEY is all zero afterwards. The same for
        /// the loop's stop, with two sessions holding keys.
        @Test(.timeLimit(.minutes(1)))
        func noKeyStaysDown() throws {
            let udp = try Receiver.bindUDP(host: "127.0.0.1", port: 0)
            defer { close(udp) }
            let loop = try ReceiveLoop(socket: udp, output: .uinput(name: "Remolo vm keys"))
            defer { loop.stop() }
            let node = try #require(loop.keyboardDevnode)
            let r = try EvdevReader(node)
            let s1 = TestSessionKeys(), s2 = TestSessionKeys()
            try loop.addSession(s1.id, key: s1.key)
            try loop.addSession(s2.id, key: s2.key)

            let held = [Self.ctrl, Self.shift, Self.a]
            let res = try loop.keys(s1.id, held.map { KeyChange(code: $0, down: true) }, senderTimeUs: senderClockUs())
            #expect(res == KeyPushResult(accepted: 3))
            // Value 2 is the kernel's own repeat of a held key (EV_REP).
            func changes(_ evs: [Ev]) -> [Ev] { evs.filter { $0.type == UInt16(EV_KEY) && $0.value != 2 } }
            let downs = r.read(count: 6)
            #expect(changes(downs) == held.map { Ev.key(Int32($0), true) })
            #expect(try kernelKeysDown(node) == held.sorted())

            // The session ends: everything it held goes up.
            #expect(try loop.removeSession(s1.id))
            let ups = r.read(count: 4)
            #expect(Set(changes(ups).map(\.code)) == Set(held) && changes(ups).allSatisfy { $0.value == 0 }, "\(ups)")
            #expect(try kernelKeysDown(node) == [], "after the session's end")

            // Another session holds keys, Alt+SysRq is refused its SysRq, and
            // the loop stops.
            _ = try loop.keys(s2.id, [KeyChange(code: Self.ctrl, down: true), KeyChange(code: UInt16(KEY_LEFTALT), down: true),
                                      KeyChange(code: UInt16(KEY_SYSRQ), down: true)], senderTimeUs: senderClockUs())
            _ = r.read(count: 4)
            #expect(try kernelKeysDown(node) == [Self.ctrl, UInt16(KEY_LEFTALT)].sorted(),
                    "SysRq never goes down while Alt is held")
            #expect(eventually(3) { loop.stats.sysrqDropped == 1 })
            loop.stop()
            _ = r.read(count: 3)
            #expect(try kernelKeysDown(node) == [], "after the loop stopped")
        }
    }
}

/// A session id and key for the loop (no datagrams are sent here).
struct TestSessionKeys {
    let id = SessionID.random()
    let key = DatagramKey.random()
}

/// Polls `condition` until it holds or `timeout` seconds pass.
private func eventually(_ timeout: Double, _ condition: () -> Bool) -> Bool {
    let deadline = monotonicNs() + UInt64(timeout * 1e9)
    while monotonicNs() < deadline {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}
