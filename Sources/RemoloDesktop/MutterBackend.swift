// Output through mutter's own RemoteDesktop API (org.gnome.Mutter.RemoteDesktop
// on the session bus), for GNOME where the portal cannot remember consent:
// Debian 12's RemoteDesktop portal is version 1, so every start of the
// receiver, which for the user unit is every login, would put the consent
// dialog up again. mutter's API is the one the portal's GNOME backend itself
// drives; it asks nobody, and it is open to the session's own user only
// (the session bus is). GSConnect moves the pointer the same way.
//
// The events and their handling are the portal's (PortalLink, in its mutter
// flavour): the same motion, buttons, keys and scroll, unaccelerated, only
// under other names (NotifyPointerMotionRelative, ...) and with no session
// handle or options. A mutter session lives as long as the connection that
// made it: the backend keeps one for the receiver's whole life.

internal import Glibc
import Foundation

/// mutter's RemoteDesktop API: names, and how a portal call maps to it.
enum Mutter {
    static let bus = "org.gnome.Mutter.RemoteDesktop"
    static let path = "/org/gnome/Mutter/RemoteDesktop"
    static let remoteDesktop = "org.gnome.Mutter.RemoteDesktop"
    static let session = "org.gnome.Mutter.RemoteDesktop.Session"
    /// NotifyPointerAxis's flags: the end of a scroll gesture
    /// (META_REMOTE_DESKTOP_NOTIFY_AXIS_FLAGS_FINISH).
    static let axisFinish: UInt32 = 1

    /// The mutter call for a portal call and its arguments (without the
    /// session handle and options the portal's take).
    static func call(_ member: String, _ args: [DBusValue], finish: Bool) -> (String, [DBusValue]) {
        func state(_ v: DBusValue) -> DBusValue { .bool(v.uint32.map { $0 != 0 } ?? false) }
        switch member {
        case "NotifyPointerMotion":
            return ("NotifyPointerMotionRelative", args)
        case "NotifyPointerButton" where args.count == 2:
            return (member, [args[0], state(args[1])])
        case "NotifyKeyboardKeycode" where args.count == 2:
            guard case let .int32(code) = args[0] else { return (member, args) }
            return (member, [.uint32(UInt32(bitPattern: code)), state(args[1])])
        case "NotifyPointerAxis":
            return (member, args + [.uint32(finish ? axisFinish : 0)])
        default:
            // NotifyPointerAxisDiscrete: the same arguments.
            return (member, args)
        }
    }

    /// Whether the receiver should use mutter's API rather than the
    /// portal: a GNOME session whose mutter offers it, and a portal that
    /// cannot remember consent (version 1), or none at all.
    static func preferred(busAddress: String? = nil) -> Bool {
        guard let conn = try? DBusConnection(address: busAddress), conn.owner(of: bus) != nil else { return false }
        guard let info = try? Portal.probe(conn) else { return true }
        return !info.canRemember
    }
}

public final class MutterBackend: OutputBackend, @unchecked Sendable {
    // @unchecked Sendable: every mutable field is in `link`, behind its lock.
    public let name = "mutter"
    /// The session's object path (/org/gnome/Mutter/RemoteDesktop/Session/...).
    public let sessionPath: String
    private let link: PortalLink

    /// Whether this receiver should take this output on `auto` (GNOME whose
    /// portal cannot remember consent; MutterBackend.swift says why).
    public static func preferred(busAddress: String? = nil) -> Bool { Mutter.preferred(busAddress: busAddress) }

    /// CreateSession and Start on mutter's RemoteDesktop API: no dialog.
    /// Throws `.failed` with a sentence saying what to do. Of `options`,
    /// the bus, the scroll mode and its idle time are used.
    public init(_ options: PortalOptions = PortalOptions(),
                log: @escaping @Sendable (String) -> Void = { _ in }) throws(OutputBackendError) {
        let conn: DBusConnection
        do {
            conn = try DBusConnection(address: options.busAddress)
        } catch {
            throw OutputBackendError(.failed, "cannot reach the session bus (\(error)): run the receiver in the GNOME "
                + "session (remolo install --user), or use --output uinput")
        }
        guard conn.owner(of: Mutter.bus) != nil else {
            throw OutputBackendError(.failed, "mutter's RemoteDesktop API (\(Mutter.bus)) is not on the session bus: "
                + "this is not a GNOME session; use --output portal or --output uinput")
        }
        let link = PortalLink(conn: conn, options: options, log: log, mutter: true)
        self.link = link
        try link.watchBus()
        var path = ""
        do {
            let created = try conn.call(try conn.methodCall(Mutter.bus, Mutter.path, Mutter.remoteDesktop, "CreateSession"),
                                        timeoutUs: 10_000_000)
            guard case let .objectPath(p)? = try? created.read() else {
                throw OutputBackendError(.failed, "mutter's CreateSession answered no session: use --output portal or uinput")
            }
            path = p
            try link.watchSession(p)
            _ = try conn.call(try conn.methodCall(Mutter.bus, p, Mutter.session, "Start"), timeoutUs: 10_000_000)
        } catch let e as OutputBackendError {
            throw e
        } catch {
            throw OutputBackendError(.failed, "mutter's RemoteDesktop API failed (\(error)): use --output portal or uinput")
        }
        sessionPath = path
        try link.run(session: path, keyboard: true, thread: "remolo-mutter")
    }

    deinit { close() }

    public var stats: PortalStats { link.locked { $0.stats } }

    /// Why the session is gone, or nil while it works.
    public var closedReason: String? { link.closedReason }

    public func apply(_ batch: OutputBatch) throws(OutputBackendError) {
        try link.apply(batch)
    }

    public func releaseAll() {
        link.releaseAll()
    }

    /// Releases what is held and stops the session. Idempotent.
    public func close() {
        link.close()
    }
}
