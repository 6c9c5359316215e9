import CEvdev
import Foundation
import Testing
import RemoloTestSupport

/// The kernel's mouse mixer, /dev/input/mice (mousedev, built into Debian's
/// kernel): one 3-byte PS/2 packet per change of any pointer's state, bit 0
/// of the first byte the left button as the input core last passed it on.
/// Unlike a device's own event node it outlives the device, so it shows
/// what the kernel does with a button held down when its device goes away.
private final class MiceReader {
    let fd: Int32
    /// Left button in the packets read so far, in order.
    private(set) var left: [Bool] = []

    init() throws {
        fd = open("/dev/input/mice", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(fd >= 0, "open /dev/input/mice: \(String(cString: strerror(errno))) (CONFIG_INPUT_MOUSEDEV)")
    }

    deinit { close(fd) }

    /// Reads every queued packet (mousedev returns one per read).
    @discardableResult
    func drain() -> [Bool] {
        var seen: [Bool] = []
        var buf = [UInt8](repeating: 0, count: 8)
        while true {
            let n = read(fd, &buf, buf.count)
            guard n >= 3 else { break }
            seen.append(buf[0] & 1 == 1)
        }
        left += seen
        return seen
    }
}

/// Every event queued on a device now; stops at -EAGAIN or -ENODEV (the
/// device is gone), which it returns as well.
private func drain(_ r: EvdevReader) -> (events: [Ev], status: Int32) {
    var out: [Ev] = []
    while true {
        var ev = input_event()
        let rc = libevdev_next_event(r.dev, LIBEVDEV_READ_FLAG_NORMAL.rawValue, &ev)
        if rc == LIBEVDEV_READ_STATUS_SUCCESS.rawValue {
            out.append(Ev(Int32(ev.type), Int32(ev.code), ev.value))
        } else if rc == LIBEVDEV_READ_STATUS_SYNC.rawValue {
            out.append(Ev(EV_SYN, SYN_DROPPED, 0))
        } else {
            return (out, rc)
        }
    }
}

private func leftDown(_ r: EvdevReader) -> Int32 {
    libevdev_get_event_value(r.dev, UInt32(EV_KEY), UInt32(BTN_LEFT))
}

extension VMSuite.EndToEnd {
    /// `remolo receive` killed with SIGKILL in the middle of a drag: no
    /// stop(), no release written. What ends the button is the kernel: the
    /// process's uinput fd closes, the device is destroyed, and the input
    /// core releases every key still down (input_dev_release_keys) before
    /// the handlers let go of it. The device's own node then only answers
    /// ENODEV (evdev refuses reads of a dead device, buffered release
    /// included), so the release is read where it outlives the device: the
    /// mouse mixer. A restarted receiver then makes a new device with no key
    /// down, and a new session on it presses nothing.
    @Test func killedReceiverLeavesNoButtonDown() throws {
        let c = try PairedConfigs(label: "kill")
        defer { c.remove() }
        let port = try freePort()
        let rxArgs = ["receive", "--listen", "127.0.0.1:\(port)", "--seconds", "120"]
        let rx = try CLIProcess(rxArgs, configDir: c.receiver, log: c.log("rx"))
        defer { if rx.process.isRunning { rx.signal(SIGKILL) }; _ = rx.wait() }
        let listening = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
        let node = try #require(listening.split(separator: " ").last.map(String.init))
        let reader = try EvdevReader(node)
        let mice = try MiceReader()
        // A long drag: the button goes down with the first frame and stays down.
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "swipe", "--size", "3000",
                                 "--seconds", "30"], configDir: c.sender, log: c.log("tx"))
        defer { if tx.process.isRunning { tx.signal(SIGKILL) }; _ = tx.wait() }

        var moved: Int64 = 0
        let dragging = eventually(30) {
            for e in drain(reader).events where e.type == UInt16(EV_REL) && e.code == UInt16(REL_X) { moved += Int64(e.value) }
            mice.drain()
            return leftDown(reader) == 1 && mice.left.last == true && moved >= 20
        }
        try #require(dragging, "no drag under way: evdev BTN_LEFT \(leftDown(reader)), mixer \(mice.left.suffix(3)), moved \(moved) px; rx: \(rx.output) tx: \(tx.output)")

        rx.signal(SIGKILL)
        _ = rx.wait()
        #expect(rx.process.terminationReason == .uncaughtSignal)
        #expect(!rx.output.contains("final: "), "SIGKILL leaves no chance to stop cleanly: \(rx.output)")

        // The kernel released the button: the mixer's last packet has it up.
        var after: [Bool] = []
        _ = eventually(5) { after += mice.drain(); return after.last == false }
        #expect(after.last == false, "the left button is still down at the mixer after the device went: \(after)")
        // The old device is gone: its node answers ENODEV, its sysfs entry goes.
        var status: Int32 = 0
        _ = eventually(5) { status = drain(reader).status; return status == -ENODEV }
        #expect(status == -ENODEV, "reading the killed receiver's device: \(status)")
        let name = node.split(separator: "/").last.map(String.init) ?? node
        #expect(eventually(5) { access("/sys/class/input/\(name)", F_OK) != 0 }, "\(name) still registered")
        // The sender (no --reconnect) notices the dead session and exits 1.
        #expect(tx.wait(upTo: 20) == 1, "send: \(tx.output)")

        // Restart: the new device has no key down, before and after a session.
        let rx2 = try CLIProcess(rxArgs, configDir: c.receiver, log: c.log("rx2"))
        defer { if rx2.process.isRunning { rx2.signal(SIGKILL) }; _ = rx2.wait() }
        let listening2 = try #require(rx2.line("receiver "), "restart did not start: \(rx2.output)")
        let node2 = try #require(listening2.split(separator: " ").last.map(String.init))
        let reader2 = try EvdevReader(node2)
        #expect(leftDown(reader2) == 0, "the new device starts with BTN_LEFT down")
        mice.drain()
        let tx2 = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "circle", "--seconds", "1"],
                                 configDir: c.sender, log: c.log("tx2"))
        var events: [Ev] = []
        _ = eventually(20) {
            events += drain(reader2).events
            return !tx2.process.isRunning && rx2.output.contains(" ended")
        }
        usleep(300_000)
        events += drain(reader2).events
        #expect(tx2.wait() == 0, "send: \(tx2.output)")
        #expect(events.contains { $0.type == UInt16(EV_REL) }, "the new receiver moved nothing")
        #expect(!events.contains { $0.type == UInt16(EV_KEY) }, "keys on the new device: \(events.filter { $0.type == UInt16(EV_KEY) })")
        #expect(leftDown(reader2) == 0)
        let later = mice.drain()
        #expect(!later.contains(true), "the mixer saw the left button down again: \(later)")
        rx2.signal(SIGTERM)
        #expect(rx2.wait(upTo: 10) == 0, "\(rx2.output)")
    }
}
