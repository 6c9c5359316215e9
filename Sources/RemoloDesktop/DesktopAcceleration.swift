// Whether the desktop accelerates the uinput pointer a second time, and the
// flat profile for it where that can be set for this device alone without
// touching the person's own settings: sway (swaymsg, for the running
// session), KDE Plasma (KWin's per-device D-Bus property), X11 (the
// device's libinput property). GNOME has only a global mouse setting, which
// the receiver reports and never changes. Measured (docs/desktop.md): the
// adaptive profile multiplies motion by 0.96 below 100 px/s up to 2.00
// above 1600 px/s; the flat one by exactly 1.

import Foundation
import RemoloPlayout
import RemoloDevices

/// The uinput pointer as a desktop names it.
public struct PointerIdentity: Sendable, Equatable {
    public var name: String
    /// The fixed USB-style ids ptrdev gives the device (ptrdev.c).
    public var vendor: UInt16 = 0x1d6b
    public var product: UInt16 = 0x5245
    /// /dev/input/eventN.
    public var devnode: String

    public init(name: String = PointerDevice.defaultName, devnode: String) {
        self.name = name
        self.devnode = devnode
    }

    /// sway's identifier: decimal vendor and product, the name's spaces as
    /// underscores (`swaymsg -t get_inputs`).
    public var swayIdentifier: String {
        "\(vendor):\(product):" + String(name.map { $0 == " " ? "_" : $0 })
    }

    /// "eventN", KWin's object name for the device.
    public var eventName: String { String(devnode.split(separator: "/").last ?? "") }

    /// KWin's D-Bus object for the device.
    public var kwinPath: String { "/org/kde/KWin/InputDevice/" + eventName }
}

/// Runs a helper program (swaymsg, dbus-send, gsettings) off the hot path;
/// nil when it could not be started.
public struct CommandRunner: Sendable {
    public var run: @Sendable (_ program: String, _ args: [String], _ timeout: Double) -> (status: Int32, output: String)?

    public init(run: @escaping @Sendable (String, [String], Double) -> (status: Int32, output: String)?) {
        self.run = run
    }

    /// Finds the program on PATH; kills it after `timeout` seconds.
    public static let system = CommandRunner { program, args, timeout in
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [program] + args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch { return nil }
        let t = DispatchWorkItem { if p.isRunning { p.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: t)
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        t.cancel()
        let out = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        // env says 127 for a program it cannot find.
        if p.terminationStatus == 127 && out.contains("No such file") { return nil }
        return (p.terminationStatus, out)
    }
}

public enum DesktopAcceleration {
    /// Where the X server reads the snippet (xorg.conf(5), "xorg.conf.d");
    /// also shipped as packaging/xorg.conf.d/60-remolo-pointer.conf.
    public static let xorgSnippetPath = "/etc/X11/xorg.conf.d/60-remolo-pointer.conf"

    /// An InputClass giving the uinput pointer the flat profile in every X
    /// server that starts after it is installed.
    public static func xorgSnippet(name: String = PointerDevice.defaultName) -> String {
        """
        # The Remolo pointer (remolo receive, uinput): the sender already applied
        # its acceleration curve, so libinput's must not apply a second one.
        # Install as \(xorgSnippetPath) and restart the X server.
        Section "InputClass"
            Identifier "Remolo pointer: flat acceleration"
            MatchProduct "\(name)"
            MatchIsPointer "on"
            Option "AccelProfile" "flat"
        EndSection

        """
    }

    static func dbusSet(_ p: PointerIdentity) -> [String] {
        ["--session", "--print-reply", "--dest=org.kde.KWin", p.kwinPath, "org.freedesktop.DBus.Properties.Set",
         "string:org.kde.KWin.InputDevice", "string:pointerAccelerationProfileFlat", "variant:boolean:true"]
    }

    static func dbusGet(_ p: PointerIdentity) -> [String] {
        ["--session", "--print-reply", "--dest=org.kde.KWin", p.kwinPath, "org.freedesktop.DBus.Properties.Get",
         "string:org.kde.KWin.InputDevice", "string:pointerAccelerationProfileFlat"]
    }

    static func quoted(_ args: [String]) -> String {
        args.map { a in a.contains(" ") || a.contains("\"") ? "'\(a)'" : a }.joined(separator: " ")
    }

    /// How a person makes the pointer flat on this desktop, exactly.
    public static func howTo(_ s: DesktopSession, _ p: PointerIdentity) -> String {
        switch (s.desktop, s.display) {
        case (.sway, _):
            return "`swaymsg input \"\(p.swayIdentifier)\" accel_profile flat` (or the same `input` block in ~/.config/sway/config)"
        case (.kde, .wayland):
            return "`dbus-send \(quoted(dbusSet(p)))`, or System Settings > Mouse > \(p.name) > "
                + "Acceleration profile: None"
        case (.gnome, .wayland):
            return "GNOME has one mouse setting for every mouse: `gsettings set org.gnome.desktop.peripherals.mouse "
                + "accel-profile flat` (a real mouse loses its acceleration too)"
        case (_, .x11):
            return "`xinput set-prop \"\(p.name)\" \"\(X11PointerProfile.property)\" 0 1` now (on drivers with a "
                + "third, custom profile: 0 1 0), or the InputClass in \(xorgSnippetPath) for every start"
        default:
            return "set the libinput acceleration profile of the device \"\(p.name)\" (USB id "
                + String(format: "%04x:%04x", p.vendor, p.product) + ") to flat in the compositor's input settings"
        }
    }

    static let adaptive = "libinput's adaptive profile multiplies motion by 0.96x (slow) to 2x (fast)"

    /// Checks whether this desktop accelerates the uinput pointer and sets
    /// the flat profile where that is safe (this device only, nothing
    /// global, nothing on disk); one line for the log, nil where there is
    /// no desktop to ask. May take a few seconds (waits for the desktop to
    /// take the device): call it off the receiver's start-up path.
    public static func settle(_ s: DesktopSession, _ p: PointerIdentity, run: CommandRunner = .system) -> String? {
        switch (s.desktop, s.display) {
        case (.none, _):
            return nil
        case (.sway, _):
            let args = ["input", p.swayIdentifier, "accel_profile", "flat"]
            // The device reaches sway a moment after uinput made it.
            var last = "swaymsg not found"
            for _ in 0..<30 {
                guard let r = run.run("swaymsg", args, 5) else { break }
                if r.status == 0 && !r.output.contains("\"success\": false") {
                    return "sway: the \(p.name)'s acceleration profile is now flat (swaymsg input \"\(p.swayIdentifier)\" "
                        + "accel_profile flat): motion arrives as sent"
                }
                last = r.output
                usleep(100_000)
            }
            return "sway accelerates the \(p.name) (\(adaptive)): setting it flat failed (\(last)); do it with "
                + howTo(s, p)
        case (.kde, .wayland):
            var last = "dbus-send not found"
            for _ in 0..<30 {
                guard let r = run.run("dbus-send", dbusSet(p), 5) else { break }
                if r.status == 0, let g = run.run("dbus-send", dbusGet(p), 5), g.output.contains("boolean true") {
                    return "KDE Plasma: the \(p.name)'s acceleration profile is now flat (KWin \(p.kwinPath), "
                        + "pointerAccelerationProfileFlat): motion arrives as sent"
                }
                last = r.output
                usleep(100_000)
            }
            return "KDE Plasma accelerates the \(p.name) (\(adaptive)): setting it flat over D-Bus failed (\(last)); "
                + "do it with " + howTo(s, p)
        case (.gnome, .wayland):
            let r = run.run("gsettings", ["get", "org.gnome.desktop.peripherals.mouse", "accel-profile"], 5)
            if let r, r.status == 0, r.output == "'flat'" {
                return "GNOME: the mouse acceleration profile is flat (for every mouse): the \(p.name)'s motion "
                    + "arrives as sent"
            }
            let now = r.map { $0.status == 0 ? "is \($0.output)" : "could not be read" } ?? "could not be read"
            return "GNOME accelerates the \(p.name) (its mouse acceleration profile \(now); \(adaptive)). "
                + howTo(s, p) + "; see desktop.md (man remolo, SEE ALSO) for the trade-off"
        case (_, .x11):
            switch X11PointerProfile.makeFlat(deviceName: p.name, display: s.xDisplay) {
            case .setFlat:
                return "X11: the \(p.name)'s libinput acceleration profile is now flat (its device property, as "
                    + "`xinput set-prop` sets it): motion arrives as sent; for every start, install "
                    + "\(xorgSnippetPath) (desktop.md: man remolo, SEE ALSO)"
            case .alreadyFlat:
                return "X11: the \(p.name) has the flat acceleration profile already: motion arrives as sent"
            case .notFound:
                return "X11: the X server on \(s.xDisplay ?? "?") has no input device \"\(p.name)\" after 5 s "
                    + "(it may not hot-plug devices); if it takes it later, it is accelerated unless \(howTo(s, p))"
            case .notLibinput:
                return "X11: the \(p.name) is not driven by xf86-input-libinput, so X's own pointer acceleration "
                    + "applies: `xinput set-prop \"\(p.name)\" \"Device Accel Profile\" -1` turns it off"
            case .failed(let why):
                return "X11: could not check the \(p.name)'s acceleration (\(why)); to be sure it is flat: "
                    + howTo(s, p)
            }
        default:
            return "\(s): libinput gives the \(p.name) its adaptive profile (\(adaptive)) unless the compositor "
                + "is told otherwise: " + howTo(s, p)
        }
    }
}
