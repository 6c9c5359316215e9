// X11 output through XTest (remolo receive --output x11): relative motion,
// buttons, the wheel as buttons 4-7 and keys, injected into the X server's
// XTest device. The server applies no pointer acceleration to XTest motion
// (it is not a physical device: GetPointerEvents accelerates only when the
// driver asks, and XTest does not), so the cursor moves exactly what the
// sender's curve made of the finger.

internal import CXTest
internal import Glibc
import Synchronization
import RemoloTypes

/// X protocol errors seen (Xlib's default handler would exit the process:
/// a button the XTest device lacks is BadValue, not a reason to die).
private let xErrors = Atomic<Int>(0)
private let xLastError = Atomic<Int>(0)

/// An Xlib connection whose loss is a flag, not an exit(). Used on one
/// thread only.
final class X11Connection {
    let dpy: OpaquePointer
    /// The connection failed (server gone): only XCloseDisplay may follow.
    fileprivate(set) var lost = false
    let name: String

    /// Opens `display` (nil: $DISPLAY).
    init(display: String? = nil) throws(OutputBackendError) {
        Self.installHandlers()
        let shown = display ?? getenv("DISPLAY").map { String(cString: $0) } ?? ""
        guard !shown.isEmpty else {
            throw OutputBackendError(.failed, "no X display: DISPLAY is not set. Run the receiver inside the "
                + "X session (with its DISPLAY and XAUTHORITY), or use --output uinput")
        }
        let d: OpaquePointer? = display.map { XOpenDisplay($0) } ?? XOpenDisplay(nil)
        guard let d else {
            throw OutputBackendError(.failed, "cannot open the X display '\(shown)' (DISPLAY): no X server "
                + "answers there, or it refused this user (XAUTHORITY, xhost). Run the receiver inside the "
                + "X session, or use --output uinput")
        }
        dpy = d
        name = shown
        // Not exit() when the server goes: note it and let the caller
        // decide (libX11 1.7+; Debian 12 has 1.8).
        XSetIOErrorExitHandler(d, { _, ctx in
            guard let ctx else { return }
            Unmanaged<X11Connection>.fromOpaque(ctx).takeUnretainedValue().lost = true
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { XCloseDisplay(dpy) }

    private static let handlersOnce: Void = {
        _ = XInitThreads()
        _ = XSetErrorHandler { _, ev in
            xErrors.add(1, ordering: .relaxed)
            xLastError.store(Int(ev?.pointee.error_code ?? 0), ordering: .relaxed)
            return 0
        }
        // Xlib's default prints and exits; the exit handler above decides.
        _ = XSetIOErrorHandler { _ in 0 }
    }()

    static func installHandlers() { _ = handlersOnce }

    /// False once the server has closed the connection. Looks at the socket
    /// first (a peer that closed shows POLLHUP) so that no Xlib call runs
    /// on a dead connection; reads pending errors when there are any.
    func alive() -> Bool {
        if lost { return false }
        var p = pollfd(fd: XConnectionNumber(dpy), events: Int16(POLLIN), revents: 0)
        if poll(&p, 1, 0) > 0 {
            if p.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                lost = true
                return false
            }
            // Errors or events waiting: reading them runs the handlers (and
            // finds an EOF, if that is what it is).
            _ = XPending(dpy)
        }
        return !lost
    }

    func flush() { if !lost { XFlush(dpy) } }
}

/// Batches into XTest requests on one X connection (the adapter's thread).
public final class X11Backend: OutputBackend {
    public let name = "x11"
    private let x: X11Connection
    /// Hi-res wheel units not yet a whole notch (XTest scrolls in buttons
    /// 4/5/6/7, one click per notch).
    private var carry: (v: Int32, h: Int32) = (0, 0)
    /// What this backend has pressed and not released: X button numbers and
    /// keycodes.
    private var buttonsDown = Set<UInt32>()
    private var keysDown = Set<UInt32>()

    /// The X display the backend talks to ($DISPLAY when nil).
    public var display: String { x.name }

    /// Connects to `display` ($DISPLAY when nil) and checks for XTest.
    public init(display: String? = nil) throws(OutputBackendError) {
        x = try X11Connection(display: display)
        var ev: Int32 = 0, err: Int32 = 0, major: Int32 = 0, minor: Int32 = 0
        guard XTestQueryExtension(x.dpy, &ev, &err, &major, &minor) != 0 else {
            throw OutputBackendError(.failed, "the X server at '\(x.name)' has no XTEST extension; "
                + "use --output uinput")
        }
    }

    /// The X button for a Linux BTN_* code, as xf86-input-libinput numbers
    /// them (1 left, 2 middle, 3 right, 4-7 the wheel, 8 + code - BTN_SIDE
    /// for the rest); nil for a code that is not a pointer button.
    public static func xButton(_ code: UInt16) -> UInt32? {
        switch Int32(code) {
        case 0x110: 1   // BTN_LEFT
        case 0x112: 2   // BTN_MIDDLE
        case 0x111: 3   // BTN_RIGHT
        case 0x113...0x117: UInt32(8 + Int32(code) - 0x113)  // BTN_SIDE ... BTN_TASK
        default: nil
        }
    }

    /// The X keycode for a Linux KEY_* code: the evdev offset of 8 that
    /// xkeyboard-config's evdev keycodes use; nil past X's 255.
    public static func xKeycode(_ code: UInt16) -> UInt32? {
        code > 0 && code < 0x100 && code + 8 <= 255 ? UInt32(code) + 8 : nil
    }

    /// Whole notches in `acc + hires`, truncated toward zero; the rest
    /// stays (the one notch rule, `Wheel.notches`).
    static func notches(_ acc: inout Int32, _ hires: Int32) -> Int32 {
        Wheel.notches(adding: hires, to: &acc)
    }

    public func apply(_ batch: OutputBatch) throws(OutputBackendError) {
        guard x.alive() else { throw lostError }
        let d = x.dpy
        if batch.dx != 0 || batch.dy != 0 {
            XTestFakeRelativeMotionEvent(d, batch.dx, batch.dy, 0)
        }
        // REL_WHEEL_HI_RES positive is up (button 4); REL_HWHEEL_HI_RES
        // positive is right (button 7).
        click(wheel: Self.notches(&carry.v, batch.wheelHiRes), positive: 4, negative: 5)
        click(wheel: Self.notches(&carry.h, batch.hwheelHiRes), positive: 7, negative: 6)
        for t in batch.transitions {
            if let b = Self.xButton(t.code) {
                XTestFakeButtonEvent(d, b, t.down ? 1 : 0, 0)
                if t.down { buttonsDown.insert(b) } else { buttonsDown.remove(b) }
            } else if let k = Self.xKeycode(t.code) {
                XTestFakeKeyEvent(d, k, t.down ? 1 : 0, 0)
                if t.down { keysDown.insert(k) } else { keysDown.remove(k) }
            }
        }
        x.flush()
        if x.lost { throw lostError }
    }

    private func click(wheel n: Int32, positive: UInt32, negative: UInt32) {
        let b = n > 0 ? positive : negative
        for _ in 0..<Int(n.magnitude) {
            XTestFakeButtonEvent(x.dpy, b, 1, 0)
            XTestFakeButtonEvent(x.dpy, b, 0, 0)
        }
    }

    public func releaseAll() {
        defer {
            buttonsDown.removeAll()
            keysDown.removeAll()
        }
        guard x.alive() else { return }
        for b in buttonsDown.sorted() { XTestFakeButtonEvent(x.dpy, b, 0, 0) }
        for k in keysDown.sorted() { XTestFakeKeyEvent(x.dpy, k, 0, 0) }
        // Round trip: the releases are in the server before the receiver
        // goes on (or exits).
        if !x.lost { XSync(x.dpy, 0) }
    }

    private var lostError: OutputBackendError {
        OutputBackendError(.disconnected, "the X server at '\(x.name)' closed the connection")
    }

    /// X protocol errors seen so far in this process (each ignored).
    public static var protocolErrors: Int { xErrors.load(ordering: .relaxed) }
}
