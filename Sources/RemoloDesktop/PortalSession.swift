// The RemoteDesktop portal's session set-up (xdg-desktop-portal,
// org.freedesktop.portal.RemoteDesktop): CreateSession, SelectDevices,
// Start. Each answers at once with a Request object and later with that
// Request's Response signal; Start's Response waits for the person at the
// desktop to allow remote control. The restore token that lets a later
// Start skip that question exists from interface version 2
// (xdg-desktop-portal 1.17); Debian 12's 1.16 has version 1.

internal import Glibc
import Foundation
import RemoloSession
import RemoloSystem

/// What the desktop's RemoteDesktop portal offers.
public struct PortalInfo: Sendable, Equatable, CustomStringConvertible {
    /// The interface's `version` property.
    public var version: UInt32
    /// `AvailableDeviceTypes`: 1 keyboard, 2 pointer, 4 touchscreen.
    public var deviceTypes: UInt32

    public init(version: UInt32, deviceTypes: UInt32) {
        self.version = version
        self.deviceTypes = deviceTypes
    }

    /// Consent can be remembered (persist_mode and restore_token, version 2+).
    public var canRemember: Bool { version >= 2 }
    public var hasPointer: Bool { deviceTypes & PortalDevices.pointer != 0 }
    public var hasKeyboard: Bool { deviceTypes & PortalDevices.keyboard != 0 }

    public var description: String {
        "RemoteDesktop portal version \(version), devices \(PortalDevices.names(deviceTypes))"
    }
}

/// The portal's device type bits.
public enum PortalDevices {
    public static let keyboard: UInt32 = 1
    public static let pointer: UInt32 = 2
    public static let touchscreen: UInt32 = 4

    static func names(_ bits: UInt32) -> String {
        let n = [(keyboard, "keyboard"), (pointer, "pointer"), (touchscreen, "touchscreen")]
            .filter { bits & $0.0 != 0 }.map(\.1)
        return n.isEmpty ? "none" : n.joined(separator: "+")
    }
}

/// Names and paths of the portal's D-Bus API.
enum Portal {
    static let bus = "org.freedesktop.portal.Desktop"
    static let path = "/org/freedesktop/portal/desktop"
    static let remoteDesktop = "org.freedesktop.portal.RemoteDesktop"
    static let request = "org.freedesktop.portal.Request"
    static let session = "org.freedesktop.portal.Session"
    /// persist_mode 2: "permissions persist until explicitly revoked".
    static let persistUntilRevoked: UInt32 = 2
    /// Where desktop backends describe themselves (xdg-desktop-portal's
    /// `*.portal` files: DBusName and Interfaces).
    static let portalsDirectory = "/usr/share/xdg-desktop-portal/portals"
    static let implRemoteDesktop = "org.freedesktop.impl.portal.RemoteDesktop"

    static let noPortal = "use --output uinput, or run the receiver inside the desktop session "
        + "(its DBUS_SESSION_BUS_ADDRESS) with xdg-desktop-portal and the desktop's backend installed "
        + "(xdg-desktop-portal-gnome on GNOME, xdg-desktop-portal-kde on KDE Plasma)"

    /// Reads the interface's properties; fails with a sentence saying what
    /// is missing and what to do.
    static func probe(_ c: DBusConnection) throws(OutputBackendError) -> PortalInfo {
        let version: DBusValue
        do {
            version = try c.property(bus, path, remoteDesktop, "version")
        } catch {
            if error.name == "org.freedesktop.DBus.Error.ServiceUnknown" || error.name.hasSuffix(".NameHasNoOwner") {
                throw OutputBackendError(.failed, "no desktop portal (xdg-desktop-portal) answers on the session "
                    + "bus: \(noPortal)")
            }
            if error.name.hasSuffix(".UnknownInterface") || error.name.hasSuffix(".InvalidArgs")
                || error.name.hasSuffix(".UnknownProperty") {
                throw OutputBackendError(.failed, "the desktop portal here offers no RemoteDesktop interface "
                    + "(no backend for it: GNOME needs xdg-desktop-portal-gnome, KDE Plasma xdg-desktop-portal-kde; "
                    + "sway and other wlroots desktops have none, and the portal picks GNOME's backend only with "
                    + "XDG_CURRENT_DESKTOP=GNOME): use --output uinput")
            }
            throw OutputBackendError(.failed, "cannot ask the desktop portal for RemoteDesktop (\(error)): \(noPortal)")
        }
        let types = (try? c.property(bus, path, remoteDesktop, "AvailableDeviceTypes"))?.uint32 ?? 0
        guard let v = version.uint32 else {
            throw OutputBackendError(.failed, "the RemoteDesktop portal answered its version with \(version): use --output uinput")
        }
        return PortalInfo(version: v, deviceTypes: types)
    }

    /// The bus names of the installed desktop backends that implement
    /// RemoteDesktop (from the `*.portal` files). Our session lives inside
    /// one of them: if it leaves the bus, the session is gone, and a
    /// portal before 1.17 does not say so.
    static func remoteDesktopBackends(directory: String = portalsDirectory) -> [String] {
        guard let files = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var names: [String] = []
        for f in files.sorted() where f.hasSuffix(".portal") {
            guard let text = try? String(contentsOfFile: directory + "/" + f, encoding: .utf8) else { continue }
            var name: String?, offers = false
            for line in text.split(separator: "\n") {
                if line.hasPrefix("DBusName=") { name = String(line.dropFirst("DBusName=".count)) }
                if line.hasPrefix("Interfaces="), line.split(separator: "=", maxSplits: 1).last?
                    .split(separator: ";").contains(where: { $0 == implRemoteDesktop }) == true { offers = true }
            }
            if offers, let name { names.append(name) }
        }
        return names
    }
}

/// Calls that answer through a Request object's Response signal.
struct PortalRequests {
    let c: DBusConnection
    private var count = 0
    /// The request path's sender element: the unique name without its ':'
    /// and with '.' as '_' (org.freedesktop.portal.Request).
    private let sender: String

    init(_ c: DBusConnection) {
        self.c = c
        sender = String(c.uniqueName.dropFirst()).replacingOccurrences(of: ".", with: "_")
    }

    /// Sends `member` with `handle_token` in its options (last argument,
    /// after `args`) and waits up to `timeout` seconds for the Response.
    /// Returns the Response's code (0 granted, 1 cancelled by the user,
    /// 2 ended otherwise) and results.
    mutating func request(_ member: String, _ args: [DBusValue], options: [(String, DBusValue)],
                          after: [DBusValue] = [], timeout: Double) throws(DBusError) -> (UInt32, [String: DBusValue]) {
        count += 1
        let token = "remolo\(getpid())_\(count)"
        let path = "/org/freedesktop/portal/desktop/request/\(sender)/\(token)"
        final class Answer { var code: UInt32?; var results: [String: DBusValue] = [:]; var bad: DBusError? }
        let answer = Answer()
        // Subscribed before the call, so a quick Response is not missed.
        try c.onSignal(sender: nil, path: path, interface: Portal.request, member: "Response", handler: DBusHandler { m in
            guard answer.code == nil else { return }
            do {
                answer.code = try m.read().uint32 ?? 2
                answer.results = try m.readOptions()
            } catch {
                answer.bad = error as? DBusError ?? DBusError(name: "", message: "\(error)")
                answer.code = 2
            }
        })
        let m = try c.methodCall(Portal.bus, Portal.path, Portal.remoteDesktop, member)
        for a in args { try m.append(a) }
        for a in after { try m.append(a) }
        try m.appendOptions([("handle_token", .string(token))] + options)
        let reply = try c.call(m, timeoutUs: 30_000_000)
        if let got = try reply.read().string, got != path {
            // A portal before 0.9 chose its own path; the signal would go there.
            throw DBusError(name: "", message: "the portal answered \(member) on \(got), not \(path)")
        }
        let deadline = MonotonicClock.seconds() + timeout
        while answer.code == nil {
            try c.processAll()
            if answer.code != nil { break }
            let left = deadline - MonotonicClock.seconds()
            if left <= 0 { throw DBusError(name: "timeout", message: "\(member) got no answer within \(Int(timeout)) s") }
            try c.wait(timeoutUs: UInt64(min(left, 1) * 1_000_000))
        }
        if let bad = answer.bad { throw bad }
        return (answer.code!, answer.results)
    }
}

/// The restore token's file: one line, mode 0600, replaced atomically.
enum PortalToken {
    static func read(_ path: String) -> String? {
        guard let s = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let t = s.trimmingCharacters(in: .whitespacesAndNewlines)
        return t.isEmpty ? nil : t
    }

    /// Writes `token` to `path` with mode 0600, in a directory made 0700
    /// when missing (the config directory's rule). The token lets this
    /// user's processes skip the desktop's question, so nobody else may read it.
    static func write(_ token: String, to path: String) throws(OutputBackendError) {
        let dir = (path as NSString).deletingLastPathComponent
        do {
            try ConfigDirectory(path: dir).ensureExists()
        } catch {
            throw OutputBackendError(.failed, "cannot keep the portal's restore token in \(dir): \(error); "
                + "consent will be asked again next time")
        }
        let tmp = path + ".tmp\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw OutputBackendError(.failed, "cannot write \(tmp): \(String(cString: strerror(errno))); "
                + "consent will be asked again next time")
        }
        let bytes = Array((token + "\n").utf8)
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        _ = fchmod(fd, 0o600)  // O_CREAT's mode went through the umask
        let ok = n == bytes.count && fsync(fd) == 0
        close(fd)
        guard ok, rename(tmp, path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(tmp)
            throw OutputBackendError(.failed, "cannot write \(path): \(why); consent will be asked again next time")
        }
    }
}
