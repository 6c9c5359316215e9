// mutter's own RemoteDesktop API (MutterBackend) against the same headless
// GNOME desktop as the portal tests: chosen where the portal is version 1,
// started with nobody answering any dialog, and exact like the portal.
import Foundation
import RemoloPlayout
import RemoloDesktop
import RemoloTestSupport
import Testing
import RemoloTypes

@Suite(.serialized, .enabled(if: PortalEnv.enabled, PortalEnv.reason))
struct MutterBackendTests {
    /// One desktop and one session for every test below (the pointer
    /// appears with the session's first input; Shared says why).
    final class Session: @unchecked Sendable {
        let desktop: Desktop
        let backend: MutterBackend
        let startSeconds: Double
        let portalCallsAtStart: [String]

        static let instance = Result { try Session() }
        static func get() throws -> Session { try instance.get() }

        private init() throws {
            desktop = try Desktop()
            let from = desktop.monitorCount
            let t0 = Date()
            // No consent helper runs: a dialog would go unanswered, and
            // the session would not start.
            do { backend = try MutterBackend(PortalOptions(busAddress: desktop.bus)) } catch {
                throw TestFailure(error.message)
            }
            startSeconds = Date().timeIntervalSince(t0)
            usleep(300_000)
            portalCallsAtStart = desktop.monitor(from: from).filter { $0.hasPrefix("portal ") }
            try desktop.warmUp(backend)
        }

        func home(_ x: Int32, _ y: Int32) throws {
            try backend.apply(OutputBatch(dx: -4000, dy: -4000))
            try backend.apply(OutputBatch(dx: x, dy: y))
            guard desktop.waitPosition(Double(x), Double(y)) else {
                throw TestFailure("the pointer did not reach (\(x), \(y)); last \(String(describing: desktop.position))")
            }
        }
    }

    @Test("auto prefers mutter's API here (GNOME, portal version 1); the session starts with no dialog and no portal call")
    func startsWithoutAsking() throws {
        let s = try Session.get()
        #expect(MutterBackend.preferred(busAddress: s.desktop.bus))
        #expect(s.backend.sessionPath.hasPrefix("/org/gnome/Mutter/RemoteDesktop/Session/"), "\(s.backend.sessionPath)")
        #expect(s.portalCallsAtStart.isEmpty, "the portal was called: \(s.portalCallsAtStart)")
        #expect(s.startSeconds < 30, "Start took \(s.startSeconds) s")
    }

    @Test("motion totals are exact (not accelerated)", arguments: PortalSessionTests.motions)
    func motionTotals(_ c: (n: Int, total: Int32, step: Int32, axis: String)) throws {
        let s = try Session.get()
        let start: (x: Int32, y: Int32) = (200, 600)
        try s.home(start.x, start.y)
        for _ in 0..<(c.total / c.step) {
            try s.backend.apply(c.axis == "x" ? OutputBatch(dx: c.step) : OutputBatch(dy: c.step))
        }
        let want = c.axis == "x" ? (Double(start.x + c.total), Double(start.y)) : (Double(start.x), Double(start.y + c.total))
        #expect(s.desktop.waitPosition(want.0, want.1),
                "case \(c.n): ended at \(String(describing: s.desktop.position)), not \(want)")
    }

    @Test("buttons and a key reach the client where the pointer is")
    func buttonsAndKeys() throws {
        let s = try Session.get()
        try s.home(300, 300)
        var from = s.desktop.clientCount
        for b in [btnLeft, btnRight] {
            try s.backend.apply(OutputBatch(transitions: [KeyChange(code: b, down: true)]))
            try s.backend.apply(OutputBatch(transitions: [KeyChange(code: b, down: false)]))
        }
        let want = ["button 1 press 300.000 300.000", "button 1 release 300.000 300.000",
                    "button 3 press 300.000 300.000", "button 3 release 300.000 300.000"]
        let seen = s.desktop.waitFor { s.desktop.client(from: from).filter { $0.hasPrefix("button") }.count >= want.count }
        #expect(seen && s.desktop.client(from: from).filter { $0.hasPrefix("button") } == want,
                "client saw \(s.desktop.client(from: from))")
        from = s.desktop.clientCount
        try s.backend.apply(OutputBatch(transitions: [KeyChange(code: keyA, down: true)]))
        try s.backend.apply(OutputBatch(transitions: [KeyChange(code: keyA, down: false)]))
        #expect(s.desktop.waitFor { s.desktop.client(from: from).filter { $0.hasPrefix("key") } == ["key 30 press", "key 30 release"] },
                "client saw \(s.desktop.client(from: from))")
    }

    @Test("remolo receive --output auto in the GNOME session says mutter, and a sender's motion moves the cursor, nobody asked")
    func receiverChoosesMutter() throws {
        let desktop = try Desktop()
        defer { desktop.stop() }
        let c = try PairedConfigs(label: "mutter")
        defer { c.remove() }
        let port = try freePort()
        let session = ["DBUS_SESSION_BUS_ADDRESS": desktop.bus, "XDG_CURRENT_DESKTOP": "GNOME",
                       "XDG_SESSION_TYPE": "wayland", "WAYLAND_DISPLAY": "remolo-test",
                       "XDG_RUNTIME_DIR": desktop.dir + "/run", "DISPLAY": ""]
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--output", "auto", "--no-announce",
                                 "--seconds", "60"], configDir: c.receiver, log: c.log("rx"), environment: session)
        defer { rx.signal(SIGTERM); _ = rx.wait(upTo: 10) }
        let line = try #require(rx.line("output: "), "\(rx.output)")
        #expect(line.hasPrefix("output: mutter (auto: GNOME on Wayland"), "\(line)")
        #expect(rx.line("receiver ") != nil, "\(rx.output)")
        let from = desktop.clientCount
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "swipe", "--seconds", "1"],
                                configDir: c.sender, log: c.log("tx"))
        #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")
        #expect(desktop.waitFor(10) { desktop.client(from: from).contains { $0.hasPrefix("motion ") } },
                "the client saw no motion: \(desktop.client(from: from).suffix(5)); rx: \(rx.output)")
        #expect(!rx.output.contains("asks whether Remolo may control"), "\(rx.output)")
    }
}
