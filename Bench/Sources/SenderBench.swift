import CEvdev
import Foundation
import RemoloPlayout
import RemoloReceiver
import RemoloSender
import RemoloSession

// The sender reading a real evdev device: a virtual mouse made through
// /dev/uinput moves at 120 Hz (one REL_X/REL_Y report per 8.3 ms); the
// sender's device loop (`remolo send --device`'s own code) reads it, runs
// the frame clock, seals and sends to a receiver on loopback in this
// process (its frames go to /dev/null).
//
//   tx.cpu_pct              CPU of the sending thread (read, curve, frame,
//                           seal, send) over the run, percent of one core;
//                           goal < 1
//   tx.sample_to_send_us    a report's kernel timestamp (CLOCK_MONOTONIC,
//                           EVIOCSCLOCKID) to its datagram leaving, p50/p99
//
// Needs /dev/uinput (the `uinput` module, and write access: root or the
// udev rule `remolo install` writes). Without it the figures are NaN (null
// in JSON) and the reason goes to stderr; the VM suite runs this case in a
// real kernel (Tests/VM/suite, "bench in the VM").
func senderBenches() -> [BenchCase] {
    [BenchCase(name: "tx.device") { s in senderDeviceBench(s) }]
}

private func unavailable(_ why: String) -> [BenchResult] {
    FileHandle.standardError.write(Data("tx.device: not measured: \(why)\n".utf8))
    return [BenchResult(name: "tx.cpu_pct", value: .nan, unit: "%"),
            BenchResult(name: "tx.sample_to_send_us.p50", value: .nan, unit: "us"),
            BenchResult(name: "tx.sample_to_send_us.p99", value: .nan, unit: "us")]
}

/// A uinput mouse that reports relative motion.
private final class VirtualMouse: @unchecked Sendable {
    // @unchecked Sendable: written from one thread at a time.
    let dev: OpaquePointer
    let ui: OpaquePointer
    let node: String

    init() throws(BenchError) {
        let d = libevdev_new()!
        libevdev_set_name(d, "Bench mouse")
        libevdev_set_id_bustype(d, Int32(BUS_VIRTUAL))
        libevdev_enable_property(d, UInt32(INPUT_PROP_POINTER))
        for c in [REL_X, REL_Y, REL_WHEEL] { libevdev_enable_event_code(d, UInt32(EV_REL), UInt32(c), nil) }
        for c in [BTN_LEFT, BTN_RIGHT, BTN_MIDDLE] { libevdev_enable_event_code(d, UInt32(EV_KEY), UInt32(c), nil) }
        var u: OpaquePointer?
        let rc = libevdev_uinput_create_from_device(d, LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue, &u)
        guard rc == 0, let u else {
            libevdev_free(d)
            throw BenchError("cannot create a uinput device: \(String(cString: strerror(-rc))); "
                             + "load the module (modprobe uinput) and run as root or with the udev rule of `remolo install`")
        }
        dev = d
        ui = u
        node = String(cString: libevdev_uinput_get_devnode(u))
    }

    deinit {
        libevdev_uinput_destroy(ui)
        libevdev_free(dev)
    }

    func move() {
        _ = libevdev_uinput_write_event(ui, UInt32(EV_REL), UInt32(REL_X), 1)
        _ = libevdev_uinput_write_event(ui, UInt32(EV_REL), UInt32(REL_Y), 1)
        _ = libevdev_uinput_write_event(ui, UInt32(EV_SYN), UInt32(SYN_REPORT), 0)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

private func senderDeviceBench(_ settings: BenchSettings) -> [BenchResult] {
    let probe = open("/dev/uinput", O_RDWR | O_CLOEXEC)
    guard probe >= 0 else {
        return unavailable("/dev/uinput: \(String(cString: strerror(errno))) (a virtual mouse drives the sender; "
                           + "modprobe uinput and run as root, or see Tests/VM/suite for the same case in a VM)")
    }
    close(probe)
    do {
        let mouse = try VirtualMouse()
        let sink = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(sink) }
        let senderID = Identity.generate(), receiverID = Identity.generate()
        var peers = PeerList()
        peers.add(senderID.publicKey, label: "bench sender")
        let trust = try ReceiverTrust(identity: receiverID, directory: nil, authorized: peers)
        let rx = try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .fileDescriptor(sink))
        defer { rx.stop() }
        let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: senderID, receiver: receiverID.publicKey)
        let seconds = settings.quick ? 1.0 : 10.0
        let stop = DispatchSemaphore(value: 0)
        Thread {
            // 120 Hz reports on an absolute schedule, until the run ends.
            let start = monotonicNs()
            var i: UInt64 = 1
            while stop.wait(timeout: .now()) == .timedOut {
                let due = start + i * 8_333_333
                let now = monotonicNs()
                if due > now { usleep(UInt32((due - now) / 1000)) }
                mouse.move()
                i += 1
            }
        }.start()
        var options = DeviceRunOptions()
        options.path = mouse.node
        options.seconds = seconds
        options.chord = false
        options.reconnect = false
        let report = try tx.runDevice(options) { _ in }
        stop.signal()
        guard report.samplesSent > 0 else { return unavailable("no report reached the sender") }
        return [BenchResult(name: "tx.cpu_pct", value: report.threadCPUPercent, unit: "%"),
                BenchResult(name: "tx.sample_to_send_us.p50", value: Double(report.sampleToSendUs.p50), unit: "us"),
                BenchResult(name: "tx.sample_to_send_us.p99", value: Double(report.sampleToSendUs.p99), unit: "us")]
    } catch {
        return unavailable("\(error)")
    }
}
