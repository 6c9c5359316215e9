import CEvdev
import Foundation
@testable import RemoloPlayout
@testable import RemoloDevices
@testable import RemoloDesktop
@testable import RemoloReceiver
@testable import RemoloSender
import RemoloSession
import RemoloSystem
import Synchronization
import Testing
import RemoloTestSupport
import RemoloTypes

// The pointer on a real desktop stack: libinput's acceleration of the uinput
// pointer measured per speed (adaptive and flat), and a real Xorg (dummy
// video driver, xf86-input-libinput hot-plugging through udev) driven by
// the XTest output and by the uinput output with the flat profile. The
// cursor must end exactly where the sum of what was sent puts it.

/// An Xorg server on :N with the dummy video driver (1024x768, no
/// hardware), with a config the test writes; `extraConfig` is appended
/// (the shipped xorg.conf.d snippet). Stops on deinit.
final class DummyXServer {
    let display: String
    let process = Process()
    let dir: String
    static let width = 1024, height = 768

    init(number: Int, extraConfig: String = "") throws {
        display = ":\(number)"
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-xorg-\(number)-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let conf = """
            Section "ServerFlags"
                Option "AutoAddDevices" "true"
                Option "AutoEnableDevices" "true"
                Option "DontVTSwitch" "true"
            EndSection
            Section "Device"
                Identifier "dummy"
                Driver "dummy"
                VideoRam 16384
            EndSection
            Section "Monitor"
                Identifier "monitor"
                HorizSync 5.0 - 1000.0
                VertRefresh 5.0 - 200.0
                Modeline "1024x768" 63.50 1024 1072 1176 1328 768 771 775 798 -hsync +vsync
            EndSection
            Section "Screen"
                Identifier "screen"
                Device "dummy"
                Monitor "monitor"
                DefaultDepth 24
                SubSection "Display"
                    Depth 24
                    Modes "1024x768"
                    Virtual 1024 768
                EndSubSection
            EndSection

            """ + extraConfig
        try conf.write(toFile: dir + "/xorg.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/Xorg")
        process.arguments = [display, "-config", dir + "/xorg.conf", "-noreset", "-nolisten", "tcp",
                             "-logfile", dir + "/Xorg.log", "-novtswitch", "-sharevts"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let up = eventually(60) { (try? self.pointer()) != nil }
        try #require(up, "Xorg \(display) did not come up:\n\(self.log.suffix(2000))")
    }

    deinit { stop() }

    func stop() {
        guard process.isRunning else { return }
        // SIGKILL: started from the test bundle, Xorg was still running 5 s
        // after a SIGTERM (from a shell it exits at once); a server killed
        // outright is also what "the X server went away" is to a client.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    var log: String { (try? String(contentsOfFile: dir + "/Xorg.log", encoding: .utf8)) ?? "" }

    func xdotool(_ args: String...) throws -> String {
        let r = try run("/usr/bin/env", ["DISPLAY=\(display)", "xdotool"] + args)
        guard r.status == 0 else { throw CLIError("xdotool \(args): \(r.output)") }
        return r.output
    }

    /// The cursor's position (`xdotool getmouselocation`).
    func pointer() throws -> (x: Int, y: Int) {
        let out = try xdotool("getmouselocation")
        func field(_ k: String) -> Int? {
            out.split(separator: " ").first { $0.hasPrefix(k + ":") }.flatMap { Int($0.dropFirst(k.count + 1)) }
        }
        guard let x = field("x"), let y = field("y") else { throw CLIError("getmouselocation: \(out)") }
        return (x, y)
    }

    func warp(_ x: Int, _ y: Int) throws { _ = try xdotool("mousemove", "\(x)", "\(y)") }

    /// Whether the server has hot-plugged an input device of this name.
    func hasDevice(_ name: String) -> Bool {
        (try? run("/usr/bin/env", ["DISPLAY=\(display)", "xinput", "list", "--name-only"]))?.output
            .split(separator: "\n").contains { $0 == name } ?? false
    }
}

/// `xinput test-xi2 --root`: the raw button events an X client sees, as
/// (X button, pressed) in order.
final class XButtonWatcher {
    let p = Process()
    let out = LineCollector()
    let pipe = Pipe()

    init(display: String) throws {
        p.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
        p.arguments = ["-oL", "env", "DISPLAY=\(display)", "xinput", "test-xi2", "--root"]
        p.standardOutput = pipe
        p.standardError = pipe
        let out = self.out
        pipe.fileHandleForReading.readabilityHandler = { h in out.feed(h.availableData) }
        try p.run()
        usleep(500_000)
    }

    deinit {
        stop(p)
        pipe.fileHandleForReading.readabilityHandler = nil
    }

    /// RawButtonPress / RawButtonRelease with their detail (the button).
    var buttons: [(UInt32, Bool)] {
        var r: [(UInt32, Bool)] = []
        var pending: Bool?
        for l in out.snapshot {
            if l.contains("(RawButtonPress)") { pending = true } else if l.contains("(RawButtonRelease)") { pending = false }
            else if l.contains("EVENT type") { pending = nil }
            else if let p = pending, let d = l.split(separator: ":").last.flatMap({ UInt32($0.trimmingCharacters(in: .whitespaces)) }),
                    l.trimmingCharacters(in: .whitespaces).hasPrefix("detail:") {
                r.append((d, p))
                pending = nil
            }
        }
        return r
    }
}

/// A paired in-process receiver and sender over loopback.
final class DesktopRig {
    let rx: Receiver
    let tx: Sender

    init(output: ReceiverOutput) throws {
        let senderID = Identity.generate(), receiverID = Identity.generate()
        var list = PeerList()
        list.add(senderID.publicKey, label: "desktop test")
        let trust = try ReceiverTrust(identity: receiverID, directory: nil, authorized: list)
        rx = try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: output)
        tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: senderID, receiver: receiverID.publicKey)
    }

    deinit {
        tx.close()
        rx.stop()
    }

    /// Sends (dx, dy) whole pixels in `steps` datagrams `gapUs` apart
    /// (speed = distance / (steps * gap)), then waits until it has played.
    func move(_ dx: Int32, _ dy: Int32, steps: Int32 = 10, gapUs: UInt32 = 8_333) throws {
        let before = (rx.stats.totalDX, rx.stats.totalDY)
        var sent: (Int32, Int32) = (0, 0)
        for i in 1...steps {
            let x = dx * 256 * i / steps, y = dy * 256 * i / steps
            try tx.send(.motion(dx: x - sent.0, dy: y - sent.1), at: senderClockUs())
            sent = (x, y)
            usleep(gapUs)
        }
        let played = eventually(10) {
            rx.stats.totalDX - before.0 == Int64(dx) && rx.stats.totalDY - before.1 == Int64(dy)
        }
        try #require(played, "the loop wrote \(rx.stats.totalDX - before.0), \(rx.stats.totalDY - before.1)")
    }
}

extension VMSuite {
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct DesktopOutput {
        /// libinput's factor (accelerated / unaccelerated motion) on the
        /// Remolo pointer, per speed band, with the default (adaptive)
        /// profile and with the flat one: two `libinput debug-events`
        /// readers of the same device, one with --set-profile=flat.
        @Test(.timeLimit(.minutes(2)))
        func libinputAccelerationTable() throws {
            let d = try PointerDevice(name: PointerDevice.defaultName)
            func reader(_ extra: [String]) throws -> (Process, LineCollector, Pipe) {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
                p.arguments = ["-oL", "libinput", "debug-events", "--device", d.devnode] + extra
                let pipe = Pipe(), out = LineCollector()
                p.standardOutput = pipe
                p.standardError = pipe
                pipe.fileHandleForReading.readabilityHandler = { h in out.feed(h.availableData) }
                try p.run()
                return (p, out, pipe)
            }
            let adaptive = try reader([]), flat = try reader(["--set-profile=flat"])
            defer {
                for (p, _, pipe) in [adaptive, flat] { stop(p); pipe.fileHandleForReading.readabilityHandler = nil }
            }
            for (_, out, _) in [adaptive, flat] {
                try #require(out.wait(seconds: 30) { $0.contains { $0.contains("DEVICE_ADDED") } }, "\(out.snapshot)")
            }
            // Straight strokes at each speed, 480 Hz ticks as the drain writes
            // them (whole pixels, the remainder carried), a right click
            // between bands so the readers can tell them apart.
            let speeds: [Double] = [60, 150, 300, 600, 1200, 2400]
            let tick = 1_000_000_000 / 480
            var next = monotonicNs()
            func sleepTick() {
                next += UInt64(tick)
                var ts = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil)
            }
            for (band, v) in speeds.enumerated() {
                var carry = 0.0
                let ticks = 480 * 6 / 10
                for i in 0..<ticks {
                    carry += v / 480
                    let px = Int32(carry)
                    carry -= Double(px)
                    // Back and forth, so the pointer stays near where it was.
                    let dir: Int32 = (i / 96) % 2 == 0 ? 1 : -1
                    if px != 0 { try d.write(PointerFrame(dx: dir * px, dy: 0)) }
                    sleepTick()
                }
                usleep(150_000)
                try d.write(PointerFrame(buttons: [KeyChange(code: MouseButton.right.evdevCode, down: true)]))
                try d.write(PointerFrame(buttons: [KeyChange(code: MouseButton.right.evdevCode, down: false)]))
                usleep(150_000)
                next = monotonicNs()
                _ = band
            }
            // accelerated and raw |dx| summed per band, from each reader.
            func ratios(_ out: LineCollector) -> [(acc: Double, raw: Double)] {
                var bands = [(acc: Double, raw: Double)](repeating: (0, 0), count: speeds.count)
                var band = 0
                for l in out.snapshot {
                    guard let e = LibinputEvent(l) else { continue }
                    if e.kind == "POINTER_BUTTON" && e.rest.contains("BTN_RIGHT") && e.rest.contains("released") {
                        band += 1
                    } else if e.kind == "POINTER_MOTION", band < speeds.count {
                        let n = e.numbers  // time, dx, dy, raw dx, raw dy
                        guard n.count >= 5 else { continue }
                        bands[band].acc += abs(n[1])
                        bands[band].raw += abs(n[3])
                    }
                }
                return bands
            }
            let bandCount = speeds.count
            let done = { (lines: [String]) in
                lines.filter { $0.contains("BTN_RIGHT") && $0.contains("released") }.count >= bandCount
            }
            #expect(adaptive.1.wait(seconds: 20, until: done) && flat.1.wait(seconds: 20, until: done))
            let a = ratios(adaptive.1), f = ratios(flat.1)
            var table = "libinput on the Remolo pointer: accelerated / unaccelerated motion\n"
            table += "  speed px/s   adaptive   flat\n"
            for (i, v) in speeds.enumerated() {
                table += String(format: "  %10.0f   %8.3f   %.3f\n", v, a[i].acc / a[i].raw, f[i].acc / f[i].raw)
            }
            let at = a.reduce((0.0, 0.0)) { ($0.0 + $1.acc, $0.1 + $1.raw) }
            let ft = f.reduce((0.0, 0.0)) { ($0.0 + $1.acc, $0.1 + $1.raw) }
            table += String(format: "  whole path   %8.3f   %.3f", at.0 / at.1, ft.0 / ft.1)
            print(table)
            for (i, b) in f.enumerated() {
                #expect(b.raw > 0 && abs(b.acc / b.raw - 1) <= 0.001, "flat, \(speeds[i]) px/s:\n\(table)")
            }
            // The double acceleration the flat profile takes away.
            #expect(a.last!.acc / a.last!.raw >= 1.5, "\(table)")
            #expect(a.first!.acc / a.first!.raw <= 1.0, "\(table)")
            #expect(at.0 / at.1 >= 1.2, "\(table)")
        }

        /// --output x11: XTest moves the cursor by exactly what was sent,
        /// clamped at the screen's edges; buttons and the wheel (buttons
        /// 4-7, one click a notch) reach an X client; the receiver's end
        /// leaves no button down. Then the same server with the uinput
        /// output: the adaptive profile moves the cursor further than sent,
        /// and once the receiver has set the flat profile (as `remolo
        /// receive` does on X11), exactly as far.
        @Test(.timeLimit(.minutes(3)))
        func xtestAndFlatUinputAreExact() throws {
            let x = try DummyXServer(number: 7)
            defer { x.stop() }
            do {
                let display = x.display
                let adapter = try OutputAdapter(make: { () throws(OutputBackendError) -> any OutputBackend in
                    try X11Backend(display: display)
                })
                let rig = try DesktopRig(output: .adapter(adapter))
                let watch = try XButtonWatcher(display: x.display)
                try x.warp(100, 100)
                // Slow, fast and very fast: XTest applies no curve at any speed.
                try rig.move(37, 21, steps: 20, gapUs: 8_333)
                try rig.move(300, 150, steps: 6, gapUs: 8_333)
                try rig.move(-211, 97, steps: 3, gapUs: 8_333)
                #expect(eventually(3) { (try? x.pointer()) .map { $0 == (100 + 126, 100 + 268) } ?? false },
                        "cursor \(String(describing: try? x.pointer())), want \(100 + 126), \(100 + 268)")
                // Past the right and bottom edges: clamped; then back in.
                try rig.move(5000, 3000, steps: 5)
                #expect(eventually(3) { (try? x.pointer()).map { $0 == (1023, 767) } ?? false }, "\(String(describing: try? x.pointer()))")
                try rig.move(-23, -67, steps: 2)
                #expect(eventually(3) { (try? x.pointer()).map { $0 == (1000, 700) } ?? false }, "\(String(describing: try? x.pointer()))")

                try rig.tx.button(.left, down: true, at: senderClockUs())
                try rig.tx.button(.left, down: false, at: senderClockUs())
                try rig.tx.button(.right, down: true, at: senderClockUs())
                // Buttons travel on the control channel, the wheel in
                // datagrams: apart in time, so their order is the test's.
                usleep(100_000)
                // 2 notches up, then 1.5 down (the half carried), 1 right.
                try rig.tx.send(.scroll(vertical: 240 * 256, horizontal: 0), at: senderClockUs())
                usleep(50_000)
                try rig.tx.send(.scroll(vertical: -180 * 256, horizontal: 120 * 256), at: senderClockUs())
                usleep(300_000)
                // The right button is still down when the receiver stops.
                rig.tx.close()
                rig.rx.stop()
                let want: [(UInt32, Bool)] = [(1, true), (1, false), (3, true), (4, true), (4, false), (4, true), (4, false),
                                              (5, true), (5, false), (7, true), (7, false), (3, false)]
                let seen = { watch.buttons.map { "\($0.0)\($0.1 ? "+" : "-")" } }
                let wanted = want.map { "\($0.0)\($0.1 ? "+" : "-")" }
                #expect(eventually(5) { Set(seen()) == Set(wanted) && seen().count == wanted.count }, "X saw \(seen())")
                #expect(seen() == wanted, "order: \(seen())")
                #expect(adapter.stats.backend == "x11" && adapter.stats.failedBatches == 0, "\(adapter.stats)")
            }

            // The command as a person runs it in an X11 session: auto picks
            // XTest and says so; a swipe lands exactly where the receiver's
            // totals say.
            do {
                let c = try PairedConfigs(label: "x11-cli")
                defer { c.remove() }
                let port = try freePort()
                let env = ["DISPLAY": x.display, "XDG_SESSION_TYPE": "x11"]
                let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--no-announce", "--seconds", "60"],
                                        configDir: c.receiver, log: c.log("rx"), environment: env)
                let out = try #require(rx.line("output: ", timeout: 30), "\(rx.output)")
                #expect(out.hasPrefix("output: x11 (auto: an X11 session") && out.contains("XTest"), "\(out)")
                try x.warp(300, 300)
                let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "swipe", "--size", "150",
                                         "--seconds", "1"], configDir: c.sender, log: c.log("tx"))
                #expect(tx.wait(upTo: 30) == 0, "\(tx.output)")
                usleep(300_000)
                rx.signal(SIGINT)
                #expect(rx.wait(upTo: 20) == 0, "\(rx.output)")
                let final = try #require(rx.output.split(separator: "\n").first { $0.hasPrefix("final:") }.map(String.init))
                let dx = CLIProcess.field("dx", in: final) ?? 0, dy = CLIProcess.field("dy", in: final) ?? 0
                #expect(dx != 0, "\(final)")
                let at = try x.pointer()
                #expect(at.x == 300 + Int(dx) && at.y == 300 + Int(dy), "cursor \(at), receiver totals \(dx), \(dy)")
            }

            // uinput under the same server: accelerated, then flat.
            let rig = try DesktopRig(output: .uinput(name: PointerDevice.defaultName))
            try #require(eventually(20) { x.hasDevice(PointerDevice.defaultName) }, "Xorg never added the pointer")
            try x.warp(100, 100)
            try rig.move(200, 150, steps: 5, gapUs: 8_333)   // ~ 5000 px/s
            usleep(200_000)
            let accelerated = try x.pointer()
            print("uinput, adaptive profile: sent (200, 150) px fast, the cursor moved (\(accelerated.x - 100), \(accelerated.y - 100))")
            #expect(accelerated.x - 100 > 220, "no acceleration seen: \(accelerated)")

            let session = DesktopSession(environment: ["DISPLAY": x.display, "XDG_SESSION_TYPE": "x11"])
            let node = try #require(rig.rx.loop.devnode)
            let said = DesktopAcceleration.settle(session, PointerIdentity(devnode: node)) ?? ""
            print("receiver: \(said)")
            #expect(said.contains("now flat"), "\(said)")
            try x.warp(100, 100)
            try rig.move(200, 150, steps: 5, gapUs: 8_333)
            try rig.move(-31, 17, steps: 20, gapUs: 8_333)
            #expect(eventually(3) { (try? x.pointer()).map { $0 == (269, 267) } ?? false }, "\(String(describing: try? x.pointer()))")
            // A second look finds it flat already.
            #expect(DesktopAcceleration.settle(session, PointerIdentity(devnode: node))?.contains("already") == true)
            rig.tx.close()
            rig.rx.stop()
            x.stop()
        }

        /// The shipped xorg.conf.d snippet: an X server started with it gives
        /// the uinput pointer the flat profile at hot-plug.
        @Test(.timeLimit(.minutes(2)))
        func xorgSnippetMakesItFlat() throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            let snippet = try String(contentsOf: root.appendingPathComponent("packaging/xorg.conf.d/60-remolo-pointer.conf"),
                                     encoding: .utf8)
            let x = try DummyXServer(number: 8, extraConfig: snippet)
            defer { x.stop() }
            let rig = try DesktopRig(output: .uinput(name: PointerDevice.defaultName))
            try #require(eventually(20) { x.hasDevice(PointerDevice.defaultName) }, "Xorg never added the pointer")
            let props = try run("/usr/bin/env", ["DISPLAY=\(x.display)", "xinput", "list-props", PointerDevice.defaultName]).output
            #expect(props.split(separator: "\n").contains { $0.contains("Accel Profile Enabled (") && $0.contains("0, 1") }, "\(props)")
            try x.warp(500, 500)
            try rig.move(-300, -250, steps: 4, gapUs: 8_333)
            #expect(eventually(3) { (try? x.pointer()).map { $0 == (200, 250) } ?? false }, "\(String(describing: try? x.pointer()))")
        }

        /// The X server goes away under --output x11: the adapter falls
        /// back to a uinput pointer; the batch that failed is not replayed,
        /// what follows arrives exactly once, and no button stays down.
        @Test(.timeLimit(.minutes(2)))
        func lostXServerFallsBackToUinput() throws {
            let x = try DummyXServer(number: 9)
            let display = x.display
            let lines = Mutex<[String]>([])
            let adapter = try OutputAdapter(
                make: { () throws(OutputBackendError) -> any OutputBackend in try X11Backend(display: display) },
                fallback: { () throws(OutputBackendError) -> any OutputBackend in try UinputBackend(name: "Remolo fallback") },
                                            onEvent: { l in lines.withLock { $0.append(l) } })
            let rig = try DesktopRig(output: .adapter(adapter))
            try x.warp(100, 100)
            try rig.move(50, 40, steps: 5)
            #expect(eventually(3) { (try? x.pointer()).map { $0 == (150, 140) } ?? false })
            try rig.tx.button(.left, down: true, at: senderClockUs())
            usleep(100_000)
            x.stop()
            // The first batch after the loss fails on the dead connection.
            try rig.move(7, 0, steps: 1)
            try #require(eventually(5) { adapter.stats.fallbacks == 1 }, "\(adapter.stats)")
            let node = try #require(uinputNode(named: "Remolo fallback"), "no fall-back device")
            let reader = try EvdevReader(node)
            try rig.move(30, -20, steps: 6)
            try rig.tx.button(.left, down: false, at: senderClockUs())
            let events = reader.read(settleMs: 300, timeoutMs: 5000) { false }
            let dx = events.filter { $0 == Ev.rel(REL_X, $0.value) }.reduce(0) { $0 + $1.value }
            let dy = events.filter { $0 == Ev.rel(REL_Y, $0.value) }.reduce(0) { $0 + $1.value }
            // All of what followed, once; of the 7 px sent as the server
            // went, only the batch that failed is lost (the drain spreads
            // a packet over several ticks, so the rest may follow it):
            // never more than was sent.
            #expect(dx >= 30 && dx <= 37 && dy == -20, "the fall-back device moved \(dx), \(dy)")
            // Pressed on the lost server; the new device never had it down.
            #expect(libevdev_get_event_value(reader.dev, UInt32(EV_KEY), UInt32(BTN_LEFT)) == 0)
            #expect(adapter.stats.backend == "uinput")
            let l = lines.withLock { $0 }
            #expect(l.count == 1 && l[0].contains("continuing on uinput"), "\(l)")
        }
    }
}

/// /dev/input/eventN of the input device called `name`, from sysfs.
func uinputNode(named name: String) -> String? {
    let base = "/sys/class/input"
    for e in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where e.hasPrefix("event") {
        let n = (try? String(contentsOfFile: "\(base)/\(e)/device/name", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if n == name { return "/dev/input/\(e)" }
    }
    return nil
}
