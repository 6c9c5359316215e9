// Consent refused, wheel notches, and a session lost from the desktop's
// side, each on a desktop of its own (real mutter and portal).
import Foundation
import RemoloPlayout
import RemoloDesktop
import Testing
import RemoloTypes

@Suite(.serialized, .enabled(if: PortalEnv.enabled, PortalEnv.reason))
struct PortalLifecycleTests {
    @Test("consent refused at the desktop: the backend is not made, and the message says what to do")
    func refused() throws {
        let desktop = try Desktop()
        defer { desktop.stop() }
        let helper = try desktop.consent("refuse")
        defer { helper.waitUntilExit() }
        var o = PortalOptions(busAddress: desktop.bus)
        o.consentTimeout = 60
        do {
            _ = try PortalBackend(o)
            Issue.record("the backend was made although consent was refused")
        } catch {
            #expect(error.kind == .failed)
            #expect(error.message.contains("refused") && error.message.contains("--output uinput"), "\(error.message)")
        }
    }

    @Test("no portal on the bus: a clear .failed, at once")
    func noPortal() throws {
        // A bus with nothing on it: dbus-daemon of our own, no activation.
        let dir = NSTemporaryDirectory() + "remolo-noportal-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let conf = dir + "/bus.conf"
        try """
        <busconfig><type>session</type><listen>unix:path=\(dir)/bus</listen>
        <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
        """.write(toFile: conf, atomically: true, encoding: .utf8)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--config-file=" + conf, "--nofork"]
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        defer { kill(daemon.processIdentifier, SIGKILL); daemon.waitUntilExit() }
        #expect(Desktop.waitFile(dir + "/bus"))
        let t0 = Date()
        do {
            _ = try PortalBackend(PortalOptions(busAddress: "unix:path=\(dir)/bus"))
            Issue.record("a backend was made with no portal")
        } catch {
            #expect(error.kind == .failed)
            #expect(error.message.contains("no desktop portal") && error.message.contains("--output uinput"), "\(error.message)")
        }
        #expect(Date().timeIntervalSince(t0) < 5)
    }

    @Test("wheel as notches (NotifyPointerAxisDiscrete); then the portal's GNOME backend dies mid-drag: .disconnected, nothing more sent, the button not left held")
    func notchesThenLost() throws {
        let desktop = try Desktop()
        defer { desktop.stop() }
        let backend = try desktop.backend { $0.scroll = .notches }
        try desktop.warmUp(backend)
        try backend.apply(OutputBatch(dx: 700, dy: 500))
        #expect(desktop.waitPosition(700, 500))

        // Notches: half + half = one down, two more down, one right.
        let from = desktop.clientCount
        for w in [Int32(-60), -60, -120, -120] { try backend.apply(OutputBatch(wheelHiRes: w)) }
        try backend.apply(OutputBatch(hwheelHiRes: 120))
        // GTK 3 on Wayland reports each wheel step twice: as a discrete
        // event and as a smooth one of 1.0. Its discrete event names a
        // horizontal step's direction the wrong way round (right as left,
        // GTK 3.24.38); the smooth one says +1, right.
        let want = ["scroll-discrete down", "scroll 0.0000 1.0000 stop=0", "scroll-discrete down",
                    "scroll 0.0000 1.0000 stop=0", "scroll-discrete down", "scroll 0.0000 1.0000 stop=0",
                    "scroll-discrete left", "scroll 1.0000 0.0000 stop=0"]
        let seen = desktop.waitFor { desktop.client(from: from).filter { $0.hasPrefix("scroll") } == want }
        #expect(seen, "client: \(desktop.client(from: from).filter { $0.hasPrefix("scroll") })")
        #expect(backend.stats.discreteSteps == 4 && backend.stats.axes == 0 && backend.stats.finishes == 0)

        // Mid-drag: the button is down when the session goes. (What mutter
        // got is read on the bus: GTK may report a motion under a held
        // button late, at its next frame.)
        let monitor0 = desktop.monitorCount
        try backend.apply(OutputBatch(transitions: [KeyChange(code: btnLeft, down: true)]))
        try backend.apply(OutputBatch(dx: 10))
        #expect(desktop.waitFor { desktop.monitor(from: monitor0).contains("mutter NotifyPointerMotionRelative 10.0 0.0") })
        let impl = "org.freedesktop.impl.portal.desktop.gnome"
        let pid = try desktop.pid(of: impl)
        let before = desktop.client().lastIndex { $0.hasPrefix("button 1 press") } ?? desktop.clientCount
        kill(pid, SIGKILL)
        let noticed = desktop.waitFor { backend.closedReason != nil }
        #expect(noticed, "the backend did not notice that \(impl) left")
        #expect(backend.closedReason?.contains(impl) == true, "\(backend.closedReason ?? "nil")")
        do {
            try backend.apply(OutputBatch(dx: 25))
            Issue.record("apply succeeded on a lost session")
        } catch {
            #expect(error.kind == .disconnected)
        }
        let t0 = Date()
        backend.releaseAll()
        #expect(Date().timeIntervalSince(t0) < 1, "releaseAll on a lost session must not wait")
        // mutter ended its session with the backend's connection and let go
        // of the button there, where the drag had got to; nothing moved
        // after the loss.
        let released = desktop.waitFor { desktop.client(from: before).contains { $0.hasPrefix("button 1 release") } }
        #expect(released, "client after the loss: \(desktop.client(from: before))")
        usleep(300_000)
        let after = desktop.client(from: before).filter { !$0.hasPrefix("scroll") }
        #expect(after.last == "button 1 release 710.000 500.000", "client after the loss: \(after)")
        #expect(!desktop.monitor(from: monitor0).contains { $0.contains("25.0") }, "nothing sent after the loss")
    }
}
