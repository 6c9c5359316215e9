// Which desktop the receiver runs in, which output fits it (`--output
// auto`), and whether that desktop accelerates the uinput pointer a second
// time (docs/desktop.md). The sender already applies the acceleration
// curve; every compositor on libinput (and Xorg's libinput driver) gives a
// new relative pointer the adaptive profile, so on a desktop the uinput
// pointer moves 0.96x to 2x what was sent, by speed, unless its profile is
// flat. XTest and the RemoteDesktop portal are not accelerated.

import Foundation

/// The graphical session this process belongs to, as its environment says
/// (XDG_CURRENT_DESKTOP, XDG_SESSION_TYPE, WAYLAND_DISPLAY, DISPLAY,
/// SWAYSOCK).
public struct DesktopSession: Sendable, Equatable, CustomStringConvertible {
    public enum Desktop: String, Sendable, Equatable {
        case gnome = "GNOME"
        case kde = "KDE Plasma"
        case sway = "sway"
        /// A graphical session of another kind.
        case other = "desktop"
        /// No graphical session: a console, a login screen, a system service.
        case none = "none"
    }

    public enum Display: String, Sendable, Equatable {
        case wayland = "Wayland", x11 = "X11", none = "none"
    }

    public var desktop: Desktop
    public var display: Display
    /// $DISPLAY (an X server, or Xwayland inside a Wayland session).
    public var xDisplay: String?
    public var waylandDisplay: String?
    public var swaySocket: String?
    /// XDG_CURRENT_DESKTOP as given.
    public var currentDesktop: String?

    public init(environment env: [String: String] = ProcessInfo.processInfo.environment) {
        func nonEmpty(_ k: String) -> String? { env[k].flatMap { $0.isEmpty ? nil : $0 } }
        xDisplay = nonEmpty("DISPLAY")
        waylandDisplay = nonEmpty("WAYLAND_DISPLAY")
        swaySocket = nonEmpty("SWAYSOCK")
        currentDesktop = nonEmpty("XDG_CURRENT_DESKTOP")
        switch nonEmpty("XDG_SESSION_TYPE")?.lowercased() {
        case "wayland": display = .wayland
        case "x11": display = .x11
        default: display = waylandDisplay != nil ? .wayland : xDisplay != nil ? .x11 : .none
        }
        // "ubuntu:GNOME", "GNOME-Classic:GNOME", "KDE", "sway".
        let names = (currentDesktop ?? "").split(separator: ":").map { $0.lowercased() }
        if names.contains(where: { $0 == "gnome" || $0.hasPrefix("gnome-") }) {
            desktop = .gnome
        } else if names.contains("kde") {
            desktop = .kde
        } else if names.contains("sway") || swaySocket != nil {
            desktop = .sway
        } else {
            desktop = display == .none ? .none : .other
        }
    }

    public var description: String {
        switch (desktop, display) {
        case (.none, _): "no graphical session (a console, login screen or system service)"
        case (.other, .x11): "an X11 session (DISPLAY \(xDisplay ?? "?"))"
        case (.other, _): "a Wayland session (\(currentDesktop ?? waylandDisplay ?? "unknown compositor"))"
        case (_, .none): desktop.rawValue
        default: "\(desktop.rawValue) on \(display.rawValue)"
        }
    }
}

/// `remolo receive --output`.
public enum OutputKind: String, Sendable, CaseIterable {
    /// A uinput pointer device: works everywhere (consoles, login screens,
    /// services, games reading evdev); a desktop's libinput accelerates it.
    case uinput
    /// XTest on $DISPLAY: an X11 session's cursor, not accelerated.
    case x11
    /// org.freedesktop.portal.RemoteDesktop: a Wayland session's cursor,
    /// not accelerated.
    case portal
    /// The first of portal, x11, uinput that fits the session.
    case auto
}

/// What `--output auto` tries, in order, and why it leaves the rest out.
public struct OutputPlan: Sendable, Equatable {
    /// Candidates, best first; the last is always uinput.
    public var order: [OutputKind]
    /// Why a better candidate is not in `order` (one clause each).
    public var skipped: [String]

    /// The portal backend is built separately; until it is linked in, auto
    /// never picks it.
    public static func auto(for s: DesktopSession, portalAvailable: Bool = false) -> OutputPlan {
        var order: [OutputKind] = []
        var skipped: [String] = []
        switch s.display {
        case .wayland:
            if portalAvailable {
                order.append(.portal)
            } else {
                skipped.append("no RemoteDesktop portal to try")
            }
            if s.xDisplay != nil {
                skipped.append("XTest on Xwayland (\(s.xDisplay!)) would reach X clients only")
            }
        case .x11:
            order.append(.x11)
        case .none:
            break
        }
        order.append(.uinput)
        return OutputPlan(order: order, skipped: skipped)
    }
}
