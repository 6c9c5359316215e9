// A started portal session's state, shared by the adapter's thread
// (apply, releaseAll) and the watcher thread, behind one lock that also
// covers every use of the sd-bus connection (PortalBackend.swift says why).
//
// Each Notify* call waits for its reply before the next is sent:
// xdg-desktop-portal runs method calls on threads of its own
// (G_DBUS_INTERFACE_SKELETON_FLAGS_HANDLE_METHOD_INVOCATIONS_IN_THREAD), so
// two calls sent back to back can reach the compositor swapped (seen here:
// a move of -4000 px to the corner and the 200 px after it arrived the
// other way round). Its reply comes once it has passed the call on, so
// waiting keeps the order; it costs a round trip per call, and while the
// portal is slow the adapter sums what arrives meanwhile (a stalled
// portal slows the cursor, never the drain).

internal import Glibc
import Foundation
import RemoloSystem
import RemoloTypes

final class PortalLink: @unchecked Sendable {
    // @unchecked Sendable: every field below is used only under `lock`.
    private let lock = NSLock()
    let conn: DBusConnection
    private let options: PortalOptions
    private let log: @Sendable (String) -> Void
    private var session = ""
    private var keyboard = false
    private var closed: String?
    private var stopping = false
    /// A scroll gesture is under way (NotifyPointerAxis sent, no finish yet).
    private var scrolling = false
    private var lastScrollUs: UInt64 = 0
    /// Hi-res units not yet a whole notch (`.notches`).
    private var carry: (v: Int32, h: Int32) = (0, 0)
    private var buttonsDown = Set<UInt16>()
    private var keysDown = Set<UInt16>()
    private var saidNoKeyboard = false
    private(set) var stats = PortalStats()
    /// Wakes the watcher (a pipe) when a scroll's deadline moves or it must stop.
    private let wakeFD: Int32
    private let wakeWrite: Int32
    /// Signalled when the watcher thread returns.
    private let watcherDone = DispatchSemaphore(value: 0)

    /// A portal that does not answer a Notify* call within this is taken
    /// for gone.
    static let replyTimeoutUs: UInt64 = 5_000_000

    /// The calls go to mutter's own RemoteDesktop session
    /// (MutterBackend.swift) rather than to the portal: the same events,
    /// other names and argument types, no session handle or options.
    let mutter: Bool

    init(conn: DBusConnection, options: PortalOptions, log: @escaping @Sendable (String) -> Void, mutter: Bool = false) {
        self.conn = conn
        self.options = options
        self.log = log
        self.mutter = mutter
        var p: [Int32] = [-1, -1]
        if pipe(&p) == 0 {
            for fd in p {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        }
        wakeFD = p[0]
        wakeWrite = p[1]
    }

    deinit {
        if wakeFD >= 0 { Glibc.close(wakeFD) }
        if wakeWrite >= 0 { Glibc.close(wakeWrite) }
    }

    func locked<T>(_ body: (PortalLink) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(self)
    }

    var closedReason: String? { locked { $0.closed } }

    // ---- set-up (before the watcher runs; one thread) ----

    /// The portal, and the desktop backends that hold our session, leaving
    /// the bus end it: xdg-desktop-portal 1.16 sends no Closed when its
    /// backend (xdg-desktop-portal-gnome) goes, it just drops our calls.
    func watchBus() throws(OutputBackendError) {
        var watched = [mutter ? Mutter.bus : Portal.bus]
        if !mutter {
            for n in Portal.remoteDesktopBackends() where conn.owner(of: n) != nil { watched.append(n) }
        }
        do {
            try conn.onSignal(sender: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                              interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                              handler: DBusHandler { [unowned self] m in
                guard let name = (try? m.read())?.string, watched.contains(name),
                      (try? m.read()) != nil, (try? m.read())?.string == "" else { return }
                let who = name == Portal.bus ? "the desktop portal (xdg-desktop-portal)"
                    : name == Mutter.bus ? "mutter (the GNOME compositor)" : "the portal's desktop backend (\(name))"
                end("\(who) left the session bus, and the remote-control session went with it")
            })
        } catch {
            throw OutputBackendError(.failed, "cannot watch the session bus (\(error)): use --output uinput")
        }
    }

    func watchSession(_ handle: String) throws(DBusError) {
        try conn.onSignal(sender: nil, path: handle, interface: mutter ? Mutter.session : Portal.session, member: "Closed",
                          handler: DBusHandler { [unowned self] _ in
            end("the desktop closed the remote-control session (stopped from the desktop, or its portal "
                + "backend ended it)")
        })
    }

    /// The session has started (the portal's or mutter's): records it,
    /// fails if it ended meanwhile, and starts the watcher thread.
    func run(session: String, keyboard: Bool, thread name: String) throws(OutputBackendError) {
        locked {
            $0.session = session
            $0.keyboard = keyboard
        }
        if let reason = closedReason {
            throw OutputBackendError(.failed, "the remote-control session ended as it started: \(reason)")
        }
        let done = watcherDone
        let t = Thread { [self] in watch(); done.signal() }
        t.name = name
        t.start()
    }

    /// Records why the session is over (the first reason wins). Under the lock.
    private func end(_ reason: String) {
        if closed == nil { closed = reason }
    }

    // ---- the adapter's thread ----

    func apply(_ batch: OutputBatch) throws(OutputBackendError) {
        lock.lock()
        defer { lock.unlock() }
        if let closed { throw OutputBackendError(.disconnected, closed) }
        var wake = false
        do {
            try conn.processAll()
            try checkAlive()
            let wheel = batch.wheelHiRes != 0 || batch.hwheelHiRes != 0
            let motion = batch.dx != 0 || batch.dy != 0
            // Pointer motion or a click ends a scroll gesture: the fingers
            // have left the two-finger scroll.
            if scrolling && !wheel && motion { try finishScroll() }
            if motion {
                try notify("NotifyPointerMotion", [.double(Double(batch.dx)), .double(Double(batch.dy))])
                stats.motions += 1
            }
            if wheel {
                try scroll(batch.wheelHiRes, batch.hwheelHiRes)
                wake = true
            }
            if scrolling && !batch.transitions.isEmpty { try finishScroll() }
            for t in batch.transitions { try transition(t) }
            // Signals read while waiting for the replies (Closed) are
            // dispatched now, not at the next batch.
            try conn.processAll()
            try checkAlive()
        } catch let e as OutputBackendError {
            throw e
        } catch {
            let e = error as? DBusError
            end(e?.isDisconnect == true ? "the session bus closed the connection (the desktop session ended)"
                : "the portal failed: \(error)")
            throw OutputBackendError(.disconnected, closed!)
        }
        if wake { poke() }
    }

    /// Throws `.disconnected` once the session is known to be gone.
    private func checkAlive() throws(OutputBackendError) {
        if let closed { throw OutputBackendError(.disconnected, closed) }
    }

    private func notify(_ member: String, _ args: [DBusValue],
                        options: [(String, DBusValue)] = []) throws(DBusError) {
        let m: DBusMessage
        if mutter {
            let (name, margs) = Mutter.call(member, args, finish: options.contains { $0.0 == "finish" })
            m = try conn.methodCall(Mutter.bus, session, Mutter.session, name)
            for a in margs { try m.append(a) }
        } else {
            m = try conn.methodCall(Portal.bus, Portal.path, Portal.remoteDesktop, member)
            try m.append(.objectPath(session))
            try m.appendOptions(options)
            for a in args { try m.append(a) }
        }
        do {
            _ = try conn.call(m, timeoutUs: Self.replyTimeoutUs)
        } catch where error.errno == ETIMEDOUT {
            throw DBusError(name: "", message: "the portal did not answer \(member) within "
                + "\(Self.replyTimeoutUs / 1_000_000) s")
        } catch where !error.name.isEmpty {
            // An error reply: the portal no longer knows the session.
            throw DBusError(name: error.name, message: "the portal refused \(member): \(error.message)")
        }
    }

    private func scroll(_ wheel: Int32, _ hwheel: Int32) throws(DBusError) {
        switch options.scroll {
        case .smooth:
            // The portal's axis follows the compositor's: positive dy scrolls
            // down (REL_WHEEL_HI_RES is positive up), positive dx right.
            let k = PortalBackend.pixelsPerWheelUnit
            try notify("NotifyPointerAxis", [.double(Double(hwheel) * k), .double(-Double(wheel) * k)])
            stats.axes += 1
            scrolling = true
            lastScrollUs = MonotonicClock.nowUs()
        case .notches:
            let v = Wheel.notches(adding: wheel, to: &carry.v)
            let h = Wheel.notches(adding: hwheel, to: &carry.h)
            // Axis 0 vertical (positive steps down), 1 horizontal (positive right).
            if v != 0 { try notify("NotifyPointerAxisDiscrete", [.uint32(0), .int32(-v)]) }
            if h != 0 { try notify("NotifyPointerAxisDiscrete", [.uint32(1), .int32(h)]) }
            stats.discreteSteps += UInt64(v.magnitude + h.magnitude)
        }
    }

    /// The end of a scroll gesture: a zero axis event with `finish`, which
    /// the compositor turns into wl_pointer.axis_stop (what GTK and Qt start
    /// their kinetic scrolling from).
    private func finishScroll() throws(DBusError) {
        scrolling = false
        try notify("NotifyPointerAxis", [.double(0), .double(0)], options: [("finish", .bool(true))])
        stats.finishes += 1
    }

    private func transition(_ t: KeyChange) throws(DBusError) {
        // state: 0 released, 1 pressed; codes are evdev's (BTN_*, KEY_*).
        if t.isButton {
            try notify("NotifyPointerButton", [.int32(Int32(t.code)), .uint32(t.down ? 1 : 0)])
            if t.down { buttonsDown.insert(t.code) } else { buttonsDown.remove(t.code) }
            stats.buttons += 1
        } else if keyboard {
            try notify("NotifyKeyboardKeycode", [.int32(Int32(t.code)), .uint32(t.down ? 1 : 0)])
            if t.down { keysDown.insert(t.code) } else { keysDown.remove(t.code) }
            stats.keys += 1
        } else {
            stats.droppedKeys += 1
            if !saidNoKeyboard {
                saidNoKeyboard = true
                log("the desktop did not allow the keyboard for remote control: keys are dropped (restart the "
                    + "receiver and allow the keyboard, or use --output uinput)")
            }
        }
    }

    func releaseAll() {
        lock.lock()
        defer { lock.unlock() }
        releaseLocked()
    }

    private func releaseLocked() {
        defer {
            buttonsDown.removeAll()
            keysDown.removeAll()
            scrolling = false
            carry = (0, 0)
        }
        guard closed == nil, !session.isEmpty else { return }
        do {
            if scrolling { try finishScroll() }
            for b in buttonsDown.sorted() { try notify("NotifyPointerButton", [.int32(Int32(b)), .uint32(0)]) }
            for k in keysDown.sorted() { try notify("NotifyKeyboardKeycode", [.int32(Int32(k)), .uint32(0)]) }
        } catch {
            end("the portal failed while releasing: \(error)")
        }
    }

    // ---- the watcher thread ----

    /// Until stop(): reads the bus while no batch comes (Closed, replies,
    /// NameOwnerChanged) and finishes a scroll that went quiet.
    func watch() {
        var fds = [pollfd(fd: -1, events: 0, revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        while true {
            lock.lock()
            if stopping || closed != nil {
                lock.unlock()
                return
            }
            var timeoutMs: Int32 = -1
            do {
                try conn.processAll()
                let now = MonotonicClock.nowUs()
                let idleUs = UInt64(options.scrollIdle * 1e6)
                if scrolling && closed == nil {
                    if now >= lastScrollUs + idleUs {
                        try finishScroll()
                    } else {
                        timeoutMs = Int32((lastScrollUs + idleUs - now + 999) / 1000)
                    }
                }
                if let d = conn.deadlineUs {
                    let ms = Int32(clamping: d > now ? (d - now + 999) / 1000 : 0)
                    timeoutMs = timeoutMs < 0 ? ms : min(timeoutMs, ms)
                }
            } catch {
                end(error.isDisconnect ? "the session bus closed the connection (the desktop session ended)"
                    : "the portal failed: \(error)")
            }
            fds[0].fd = conn.fd
            fds[0].events = conn.events | Int16(POLLIN)
            lock.unlock()
            fds[0].revents = 0
            fds[1].revents = 0
            _ = poll(&fds, 2, timeoutMs)
            var junk = (UInt64(0), UInt64(0))
            _ = read(wakeFD, &junk, 16)
        }
    }

    private func poke() {
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
    }

    /// stop(), then waits up to 2 s for the watcher to return. Idempotent.
    func close() {
        guard stop() else { return }
        _ = watcherDone.wait(timeout: .now() + 2)
    }

    /// Ends the watcher and the session: releases what is held, then
    /// Session.Close. False if already stopped.
    private func stop() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !stopping else { return false }
        stopping = true
        releaseLocked()
        if closed == nil && !session.isEmpty,
           let m = try? (mutter ? conn.methodCall(Mutter.bus, session, Mutter.session, "Stop")
                                : conn.methodCall(Portal.bus, session, Portal.session, "Close")) {
            _ = try? conn.call(m, timeoutUs: 2_000_000)
        }
        end("the receiver closed the remote-control session")
        poke()
        return true
    }
}
