import Foundation
@testable import RemoloPlayout
@testable import RemoloDesktop
import Synchronization
import Testing

/// Which desktop the environment names, what `--output auto` makes of it,
/// and what the receiver says and does about the uinput pointer's
/// acceleration there (the helper programs replaced by a script of replies).
@Suite struct DesktopTests {
    struct SessionCase: Sendable, CustomTestStringConvertible {
        let id: Int
        let env: [String: String]
        let desktop: DesktopSession.Desktop
        let display: DesktopSession.Display
        let auto: [OutputKind]
        var testDescription: String { "\(id): \(env)" }
    }

    static let sessionCases: [SessionCase] = [
        SessionCase(id: 1, env: [:], desktop: .none, display: .none, auto: [.uinput]),
        SessionCase(id: 2, env: ["XDG_SESSION_TYPE": "tty"], desktop: .none, display: .none, auto: [.uinput]),
        SessionCase(id: 3, env: ["DISPLAY": ":0"], desktop: .other, display: .x11, auto: [.x11, .uinput]),
        SessionCase(id: 4, env: ["XDG_CURRENT_DESKTOP": "ubuntu:GNOME", "XDG_SESSION_TYPE": "wayland",
                                 "WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"],
                    desktop: .gnome, display: .wayland, auto: [.uinput]),
        SessionCase(id: 5, env: ["XDG_CURRENT_DESKTOP": "GNOME", "XDG_SESSION_TYPE": "x11", "DISPLAY": ":1"],
                    desktop: .gnome, display: .x11, auto: [.x11, .uinput]),
        SessionCase(id: 6, env: ["XDG_CURRENT_DESKTOP": "KDE", "WAYLAND_DISPLAY": "wayland-0"],
                    desktop: .kde, display: .wayland, auto: [.uinput]),
        SessionCase(id: 7, env: ["SWAYSOCK": "/run/user/1000/sway-ipc.sock", "WAYLAND_DISPLAY": "wayland-1"],
                    desktop: .sway, display: .wayland, auto: [.uinput]),
        SessionCase(id: 8, env: ["XDG_CURRENT_DESKTOP": "Hyprland", "XDG_SESSION_TYPE": "wayland"],
                    desktop: .other, display: .wayland, auto: [.uinput]),
        SessionCase(id: 9, env: ["XDG_CURRENT_DESKTOP": "XFCE", "DISPLAY": ":0", "WAYLAND_DISPLAY": ""],
                    desktop: .other, display: .x11, auto: [.x11, .uinput]),
    ]

    @Test(arguments: sessionCases)
    func recognisesTheSession(_ c: SessionCase) {
        let s = DesktopSession(environment: c.env)
        #expect(s.desktop == c.desktop && s.display == c.display, "\(s)")
        let plan = OutputPlan.auto(for: s)
        #expect(plan.order == c.auto)
        // Wayland with Xwayland: auto says why it does not use XTest there.
        if c.display == .wayland && c.env["DISPLAY"] != nil {
            #expect(plan.skipped.contains { $0.contains("Xwayland") }, "\(plan.skipped)")
        }
        #expect(OutputPlan.auto(for: s, portalAvailable: true).order.first == (c.display == .wayland ? .portal : c.auto.first))
    }

    @Test func buttonsKeysAndNotchesForX11() {
        let cases: [(UInt16, UInt32?)] = [(0x110, 1), (0x111, 3), (0x112, 2), (0x113, 8), (0x114, 9),
                                          (0x115, 10), (0x116, 11), (0x117, 12), (30, nil)]
        for (code, want) in cases { #expect(X11Backend.xButton(code) == want, "BTN \(code)") }
        #expect(X11Backend.xKeycode(30) == 38)   // KEY_A, X's "a" on evdev keycodes
        #expect(X11Backend.xKeycode(0) == nil && X11Backend.xKeycode(248) == nil && X11Backend.xKeycode(247) == 255)
        var acc: Int32 = 0
        // Truncated toward zero, the rest carried: 60, 120, 250+0, 10-50, -40-200, -90-40.
        let steps: [(Int32, Int32)] = [(60, 0), (60, 1), (250, 2), (-50, 0), (-200, -2), (-90, 0), (-40, -1)]
        for (i, (hires, notches)) in steps.enumerated() {
            #expect(X11Backend.notches(&acc, hires) == notches, "step \(i + 1)")
        }
        #expect(acc == -10)
    }

    /// The snippet shipped in packaging/ is the one the receiver prints.
    @Test func xorgSnippetFileMatches() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("packaging/xorg.conf.d/60-remolo-pointer.conf"),
                              encoding: .utf8)
        #expect(file == DesktopAcceleration.xorgSnippet())
        #expect(file.contains("MatchProduct \"Remolo pointer\"") && file.contains("Option \"AccelProfile\" \"flat\""))
    }

    /// A scripted helper: replies by program, and what was run.
    final class Script: Sendable {
        let replies: [String: (Int32, String)]
        private let calls = Mutex<[[String]]>([])
        init(_ replies: [String: (Int32, String)]) { self.replies = replies }
        var ran: [[String]] { calls.withLock { $0 } }
        var runner: CommandRunner {
            CommandRunner { [self] program, args, _ in
                calls.withLock { $0.append([program] + args) }
                return replies[program].map { (status: $0.0, output: $0.1) }
            }
        }
    }

    static let pointer = PointerIdentity(name: "Remolo pointer", devnode: "/dev/input/event7")

    @Test func swaySetsTheDeviceFlat() {
        let s = DesktopSession(environment: ["SWAYSOCK": "/tmp/s", "WAYLAND_DISPLAY": "wayland-1"])
        let ok = Script(["swaymsg": (0, "[ { \"success\": true } ]")])
        let line = DesktopAcceleration.settle(s, Self.pointer, run: ok.runner) ?? ""
        #expect(ok.ran == [["swaymsg", "input", "7531:21061:Remolo_pointer", "accel_profile", "flat"]])
        #expect(line.contains("now flat"), "\(line)")
        let missing = Script([:])
        let no = DesktopAcceleration.settle(s, Self.pointer, run: missing.runner) ?? ""
        #expect(no.contains("accelerates") && no.contains("swaymsg input \"7531:21061:Remolo_pointer\" accel_profile flat"), "\(no)")
    }

    @Test func kdeSetsTheDeviceFlatOverDBus() {
        let s = DesktopSession(environment: ["XDG_CURRENT_DESKTOP": "KDE", "XDG_SESSION_TYPE": "wayland"])
        let ok = Script(["dbus-send": (0, "method return ... variant       boolean true")])
        let line = DesktopAcceleration.settle(s, Self.pointer, run: ok.runner) ?? ""
        #expect(line.contains("now flat") && line.contains("/org/kde/KWin/InputDevice/event7"), "\(line)")
        #expect(ok.ran.first?.contains("variant:boolean:true") == true)
        #expect(ok.ran.first?.contains("string:pointerAccelerationProfileFlat") == true)
    }

    @Test func gnomeIsReportedNeverChanged() {
        let s = DesktopSession(environment: ["XDG_CURRENT_DESKTOP": "GNOME", "XDG_SESSION_TYPE": "wayland"])
        let adaptive = Script(["gsettings": (0, "'default'")])
        let line = DesktopAcceleration.settle(s, Self.pointer, run: adaptive.runner) ?? ""
        #expect(line.contains("GNOME accelerates") && line.contains("gsettings set org.gnome.desktop.peripherals.mouse accel-profile flat"), "\(line)")
        #expect(adaptive.ran.allSatisfy { $0.contains("get") }, "only reads: \(adaptive.ran)")
        let flat = Script(["gsettings": (0, "'flat'")])
        #expect(DesktopAcceleration.settle(s, Self.pointer, run: flat.runner)?.contains("arrives as sent") == true)
    }

    @Test func noDesktopSaysNothing() {
        #expect(DesktopAcceleration.settle(DesktopSession(environment: [:]), Self.pointer, run: Script([:]).runner) == nil)
    }
}
