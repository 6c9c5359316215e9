// Output through the desktop's RemoteDesktop portal (remolo receive
// --output portal): NotifyPointerMotion, NotifyPointerButton,
// NotifyPointerAxis and NotifyKeyboardKeycode on one portal session that
// lives as long as the backend. mutter and KWin pass a portal session's
// motion to clients unaccelerated, so the cursor moves exactly what the
// sender's curve made of the finger (docs/portal.md).
//
// Every Start asks the person at the desktop (GNOME: the "Remote desktop"
// dialog). A portal of interface version 2+ can remember the answer (a
// restore token, kept in the config directory); version 1 cannot, so the
// receiver makes ONE backend for its whole life: a session per sender
// would ask at every reconnection.
//
// Threads: the adapter's thread calls apply() and releaseAll(); a thread of
// our own watches the bus while no batch comes (the session's Closed
// signal, the portal leaving the bus) and ends a scroll gesture that has
// gone quiet. sd-bus allows one thread at a time on a connection, so both
// hold `lock` around every use of it.

internal import Glibc
import Foundation
import RemoloInput
import RemoloSystem
import Synchronization

/// How wheel units reach the portal.
public enum PortalScroll: Sendable, Equatable {
    /// NotifyPointerAxis in pixels, as a touchpad's two-finger scroll,
    /// ended by one with `finish` (applications then run their own kinetic
    /// scrolling, GTK and Qt alike).
    case smooth
    /// NotifyPointerAxisDiscrete, one step per whole notch (120 units), as
    /// a mouse wheel: for applications that scroll only by lines.
    case notches
}

public struct PortalOptions: Sendable, Equatable {
    /// A D-Bus address; nil: the session bus ($DBUS_SESSION_BUS_ADDRESS).
    public var busAddress: String?
    /// Where the restore token is kept (portal version 2+), e.g. the config
    /// directory's `PortalBackend.tokenFileName`; nil: never remembered.
    public var tokenFile: String?
    /// How long Start may wait for the person at the desktop, in seconds.
    public var consentTimeout: Double = 300
    /// A scroll that has not continued for this long is finished, seconds.
    public var scrollIdle: Double = PortalBackend.scrollIdleDefault
    public var scroll: PortalScroll = .smooth
    /// Ask for the keyboard too (KEY_* transitions), where the portal offers it.
    public var keyboard = true

    public init(busAddress: String? = nil, tokenFile: String? = nil) {
        self.busAddress = busAddress
        self.tokenFile = tokenFile
    }
}

/// What a portal backend has sent.
public struct PortalStats: Sendable, Equatable {
    public var motions: UInt64 = 0
    public var buttons: UInt64 = 0
    public var keys: UInt64 = 0
    public var axes: UInt64 = 0
    /// NotifyPointerAxis calls carrying `finish` (one per scroll gesture).
    public var finishes: UInt64 = 0
    public var discreteSteps: UInt64 = 0
    /// Keys dropped because the keyboard was not granted.
    public var droppedKeys: UInt64 = 0
}

public final class PortalBackend: OutputBackend, @unchecked Sendable {
    // @unchecked Sendable: every mutable field is in `link`, behind its lock.
    public let name = "portal"
    /// The portal's version and device types.
    public let info: PortalInfo
    /// The device types the person allowed (PortalDevices bits).
    public let devices: UInt32
    /// The session's object path.
    public let sessionHandle: String
    /// Start used a saved restore token (nobody was asked, version 2+).
    public let restoredFromToken: Bool
    private let link: PortalLink

    /// The restore token's file name in the config directory.
    public static let tokenFileName = "portal-restore-token"
    /// 100 ms: longer than any pause inside one scroll (the sender frames at
    /// 120 Hz and the drain spreads each frame over its ticks; a momentum
    /// tail's whole units come at most ~50 ms apart), short enough that an
    /// application's kinetic scrolling starts at once after the sender's
    /// own momentum has run out.
    public static let scrollIdleDefault = 0.1
    /// Pixels of scroll per hi-res wheel unit: the sender makes 4 units of a
    /// point of finger travel (InputConfig.wheelUnitsPerPoint), and the
    /// portal's axis is "the motion vector of a pointer motion", so a notch
    /// (120 units) is the 30 px the fingers moved.
    public static let pixelsPerWheelUnit = 1 / InputConfig.wheelUnitsPerPoint
    private static let saidVersion1 = Atomic<Bool>(false)

    /// Opens the session: CreateSession, SelectDevices (pointer, and the
    /// keyboard where offered), Start, which waits for the person at the
    /// desktop to allow it (or uses the restore token). Throws `.failed`
    /// with a sentence saying what to do.
    public init(_ options: PortalOptions = PortalOptions(),
                log: @escaping @Sendable (String) -> Void = { _ in }) throws(OutputBackendError) {
        let conn: DBusConnection
        do {
            conn = try DBusConnection(address: options.busAddress)
        } catch {
            throw OutputBackendError(.failed, "cannot reach the session bus (\(error)): \(Portal.noPortal)")
        }
        info = try Portal.probe(conn)
        guard info.hasPointer else {
            throw OutputBackendError(.failed, "the RemoteDesktop portal here offers no pointer (\(info)): use --output uinput")
        }
        if !info.canRemember && !Self.saidVersion1.exchange(true, ordering: .relaxed) {
            log("the RemoteDesktop portal here is version \(info.version) (xdg-desktop-portal before 1.17): it cannot "
                + "remember consent, so the desktop asks once each time the receiver starts; the receiver keeps that "
                + "one session for its whole life, so senders that reconnect are not asked about again")
        }
        let link = PortalLink(conn: conn, options: options, log: log)
        self.link = link
        try link.watchBus()
        var requests = PortalRequests(conn)
        let keyboard = options.keyboard && info.hasKeyboard
        let token = info.canRemember ? options.tokenFile.flatMap(PortalToken.read) : nil
        var handle = ""
        var granted: UInt32 = 0
        do {
            let (code, created) = try requests.request("CreateSession", [],
                                                       options: [("session_handle_token", .string("remolo\(getpid())"))],
                                                       timeout: 30)
            guard code == 0, let h = created["session_handle"]?.string else {
                throw OutputBackendError(.failed, "the RemoteDesktop portal refused to create a session (response \(code)); "
                    + "its log (journalctl --user -u xdg-desktop-portal) says why. Use --output uinput meanwhile")
            }
            handle = h
            try link.watchSession(h)
            var select: [(String, DBusValue)] = [("types", .uint32(PortalDevices.pointer | (keyboard ? PortalDevices.keyboard : 0)))]
            if info.canRemember {
                select.append(("persist_mode", .uint32(Portal.persistUntilRevoked)))
                if let token { select.append(("restore_token", .string(token))) }
            }
            let (selected, _) = try requests.request("SelectDevices", [.objectPath(h)], options: select, timeout: 30)
            guard selected == 0 else {
                throw OutputBackendError(.failed, "the RemoteDesktop portal refused the pointer and keyboard (response "
                    + "\(selected)): use --output uinput")
            }
            if token == nil {
                log("the desktop asks whether Remolo may control the pointer: allow it there (GNOME: turn on "
                    + "\"Allow remote interaction\", then Share)")
            }
            let (started, results) = try requests.request("Start", [.objectPath(h), .string("")], options: [],
                                                          timeout: options.consentTimeout)
            switch started {
            case 0: break
            case 1:
                throw OutputBackendError(.failed, "remote control was refused at the desktop (Cancel in its \"Remote "
                    + "desktop\" dialog): restart the receiver and allow it (GNOME: \"Allow remote interaction\", then "
                    + "Share), or use --output uinput")
            default:
                throw OutputBackendError(.failed, "the desktop ended the remote-control request without an answer "
                    + "(response \(started); the dialog was closed, or the session went): restart the receiver to be "
                    + "asked again, or use --output uinput")
            }
            granted = results["devices"]?.uint32 ?? 0
            if info.canRemember, let file = options.tokenFile {
                if let fresh = results["restore_token"]?.string {
                    try PortalToken.write(fresh, to: file)
                } else if token != nil {
                    unlink(file)  // used once, and no new one: it is spent
                }
            }
        } catch let e as DBusError {
            if e.name == "timeout" {
                throw OutputBackendError(.failed, "nobody answered the desktop's remote-control question within "
                    + "\(Int(options.consentTimeout)) s: allow it at the desktop when the receiver starts, or use --output uinput")
            }
            throw OutputBackendError(.failed, "the RemoteDesktop portal failed (\(e)): use --output uinput")
        } catch let e as OutputBackendError {
            throw e
        } catch {
            throw OutputBackendError(.failed, "the RemoteDesktop portal failed (\(error)): use --output uinput")
        }
        guard granted & PortalDevices.pointer != 0 else {
            throw OutputBackendError(.failed, "the desktop allowed remote control without the pointer (granted: "
                + "\(PortalDevices.names(granted))): restart the receiver and allow the pointer, or use --output uinput")
        }
        devices = granted
        sessionHandle = handle
        restoredFromToken = token != nil
        try link.run(session: handle, keyboard: granted & PortalDevices.keyboard != 0, thread: "remolo-portal")
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

    /// Releases what is held and closes the session (Session.Close). The
    /// receiver calls it when it stops; deinit does it too. Idempotent.
    public func close() {
        link.close()
    }
}
