import Foundation
@testable import RemoloDevices
import RemoloTestSupport
import Testing

// What an X11 desktop gets from the Remolo touchpad's gestures: a real Xorg
// (dummy video, xf86-input-libinput hot-plugging the pad through udev, as
// DesktopOutputTests runs it) and a real X client that selects XInput 2.4's
// gesture events on the root window. docs/desktop.md, "Gestures on each
// desktop", has the figures; docs/gestures.md how the pad makes libinput's
// gestures.

// XI2.h's event types (XInput 2.4 for the gestures).
let XI_RawButtonPress: Int32 = 15, XI_RawButtonRelease: Int32 = 16, XI_RawMotion: Int32 = 17
let XI_GesturePinchBegin: Int32 = 27, XI_GesturePinchUpdate: Int32 = 28, XI_GesturePinchEnd: Int32 = 29
let XI_GestureSwipeBegin: Int32 = 30, XI_GestureSwipeUpdate: Int32 = 31, XI_GestureSwipeEnd: Int32 = 32

/// A gesture event as an X client receives it (XIGestureSwipeEvent,
/// XIGesturePinchEvent), or a raw motion or button event of any device.
struct XGestureEvent: CustomStringConvertible {
    var evtype: Int32
    var sourceid: Int32
    var fingers: Int          // detail: the finger count (gestures); the button (raw buttons)
    var dx = 0.0, dy = 0.0, udx = 0.0, udy = 0.0
    var scale = 1.0, angle = 0.0
    var flags: UInt32 = 0

    var name: String {
        switch evtype {
        case XI_GestureSwipeBegin: "GestureSwipeBegin"
        case XI_GestureSwipeUpdate: "GestureSwipeUpdate"
        case XI_GestureSwipeEnd: "GestureSwipeEnd"
        case XI_GesturePinchBegin: "GesturePinchBegin"
        case XI_GesturePinchUpdate: "GesturePinchUpdate"
        case XI_GesturePinchEnd: "GesturePinchEnd"
        case XI_RawMotion: "RawMotion"
        case XI_RawButtonPress: "RawButtonPress"
        case XI_RawButtonRelease: "RawButtonRelease"
        default: "XI event \(evtype)"
        }
    }

    var isGesture: Bool { evtype >= XI_GesturePinchBegin && evtype <= XI_GestureSwipeEnd }

    var description: String {
        isGesture
            ? name + String(format: " source %d fingers %d delta %.2f/%.2f unaccel %.2f/%.2f scale %.3f angle %.2f flags %u",
                            sourceid, fingers, dx, dy, udx, udy, scale, angle, flags)
            : "\(name) source \(sourceid) detail \(fingers)"
    }

    /// A line of the client's: "ev EVTYPE SOURCE DETAIL DX DY UDX UDY SCALE ANGLE FLAGS".
    init?(line: String) {
        let f = line.split(separator: " ")
        guard f.count == 11, f[0] == "ev", let t = Int32(f[1]), let src = Int32(f[2]), let d = Int(f[3]),
              let n = Optional(f[4...9].compactMap { Double($0) }), n.count == 6, let fl = UInt32(f[10]) else { return nil }
        self.init(evtype: t, sourceid: src, fingers: d, dx: n[0], dy: n[1], udx: n[2], udy: n[3], scale: n[4], angle: n[5],
                  flags: fl)
    }

    init(evtype: Int32, sourceid: Int32, fingers: Int, dx: Double = 0, dy: Double = 0, udx: Double = 0, udy: Double = 0,
         scale: Double = 1, angle: Double = 0, flags: UInt32 = 0) {
        self.evtype = evtype
        self.sourceid = sourceid
        self.fingers = fingers
        self.dx = dx
        self.dy = dy
        self.udx = udx
        self.udy = udy
        self.scale = scale
        self.angle = angle
        self.flags = flags
    }
}

/// One X client, a separate process: python3 calling libX11 and libXi 1.8
/// through ctypes (Debian 12's `xinput test-xi2`, 1.6.3, predates XI 2.4
/// and prints no gesture; python3-xlib 0.33 knows XI 2.0 only). It asks for
/// XInput 2.4, selects the six gesture events and raw motion and buttons
/// on the root window for every master device, and prints each event.
final class XGestureClient {
    static let script = #"""
import ctypes as C, select, sys
x11 = C.CDLL("libX11.so.6"); xi = C.CDLL("libXi.so.6")
P, I, U, UL, D = C.c_void_p, C.c_int, C.c_uint, C.c_ulong, C.c_double
x11.XOpenDisplay.restype = P; x11.XOpenDisplay.argtypes = [C.c_char_p]
x11.XDefaultRootWindow.restype = UL; x11.XDefaultRootWindow.argtypes = [P]
for f in ("XSync", "XPending", "XConnectionNumber", "XNextEvent", "XGetEventData", "XFreeEventData", "XQueryExtension"):
    getattr(x11, f).argtypes = None
x11.XSync.argtypes = [P, I]; x11.XPending.argtypes = [P]; x11.XConnectionNumber.argtypes = [P]
x11.XNextEvent.argtypes = [P, P]; x11.XGetEventData.argtypes = [P, P]; x11.XFreeEventData.argtypes = [P, P]
x11.XQueryExtension.argtypes = [P, C.c_char_p, C.POINTER(I), C.POINTER(I), C.POINTER(I)]
xi.XIQueryVersion.argtypes = [P, C.POINTER(I), C.POINTER(I)]
class XErrorEvent(C.Structure):
    _fields_ = [("type", I), ("display", P), ("resourceid", UL), ("serial", UL),
                ("error_code", C.c_ubyte), ("request_code", C.c_ubyte), ("minor_code", C.c_ubyte)]
class XIEventMask(C.Structure):
    _fields_ = [("deviceid", I), ("mask_len", I), ("mask", C.POINTER(C.c_ubyte))]
class Cookie(C.Structure):     # XGenericEventCookie
    _fields_ = [("type", I), ("serial", UL), ("send_event", I), ("display", P),
                ("extension", I), ("evtype", I), ("cookie", U), ("data", P)]
class Head(C.Structure):       # what XIRawEvent and the gesture events share
    _fields_ = [("type", I), ("serial", UL), ("send_event", I), ("display", P), ("extension", I),
                ("evtype", I), ("time", UL), ("deviceid", I), ("sourceid", I), ("detail", I)]
class Gesture(Head):           # XIGestureSwipeEvent up to its deltas; XIGesturePinchEvent goes on
    _fields_ = [("root", UL), ("event", UL), ("child", UL), ("root_x", D), ("root_y", D),
                ("event_x", D), ("event_y", D), ("delta_x", D), ("delta_y", D),
                ("delta_unaccel_x", D), ("delta_unaccel_y", D)]
class Swipe(Gesture):
    _fields_ = [("flags", I)]
class Pinch(Gesture):
    _fields_ = [("scale", D), ("delta_angle", D), ("flags", I)]
dpy = x11.XOpenDisplay(sys.argv[1].encode())
if not dpy:
    print("fail cannot open", sys.argv[1], flush=True); sys.exit(2)
op, ev, err = I(), I(), I()
if not x11.XQueryExtension(dpy, b"XInputExtension", C.byref(op), C.byref(ev), C.byref(err)):
    print("fail no XInputExtension", flush=True); sys.exit(2)
major, minor = I(2), I(4)
status = xi.XIQueryVersion(dpy, C.byref(major), C.byref(minor))
print("version", status, major.value, minor.value, flush=True)
errors = []
Handler = C.CFUNCTYPE(I, P, C.POINTER(XErrorEvent))
def on_error(d, e):
    errors.append(e.contents.error_code); return 0
handler = Handler(on_error); x11.XSetErrorHandler.argtypes = [Handler]; x11.XSetErrorHandler(handler)
bits = (C.c_ubyte * 5)()       # XIMaskLen(XI_LASTEVENT)
for e in (27, 28, 29, 30, 31, 32, 15, 16, 17):
    bits[e >> 3] |= 1 << (e & 7)
mask = XIEventMask(1, 5, C.cast(bits, C.POINTER(C.c_ubyte)))   # XIAllMasterDevices
xi.XISelectEvents.argtypes = [P, UL, C.POINTER(XIEventMask), I]
xi.XISelectEvents(dpy, x11.XDefaultRootWindow(dpy), C.byref(mask), 1)
x11.XSync(dpy, 0)
print("selected", len(errors), *errors, flush=True)
buf = (C.c_long * 24)()        # XEvent
fd = x11.XConnectionNumber(dpy)
while True:
    while x11.XPending(dpy):
        x11.XNextEvent(dpy, buf)
        ck = Cookie.from_buffer(buf)
        if ck.type != 35 or ck.extension != op.value or not x11.XGetEventData(dpy, buf):
            continue
        ck = Cookie.from_buffer(buf)
        h = C.cast(ck.data, C.POINTER(Head)).contents
        dx = dy = ux = uy = angle = 0.0; scale = 1.0; flags = 0
        if 30 <= h.evtype <= 32:
            g = C.cast(ck.data, C.POINTER(Swipe)).contents
            dx, dy, ux, uy, flags = g.delta_x, g.delta_y, g.delta_unaccel_x, g.delta_unaccel_y, g.flags
        elif 27 <= h.evtype <= 29:
            g = C.cast(ck.data, C.POINTER(Pinch)).contents
            dx, dy, ux, uy, flags = g.delta_x, g.delta_y, g.delta_unaccel_x, g.delta_unaccel_y, g.flags
            scale, angle = g.scale, g.delta_angle
        print("ev %d %d %d %.6f %.6f %.6f %.6f %.6f %.6f %d"
              % (h.evtype, h.sourceid, h.detail, dx, dy, ux, uy, scale, angle, flags), flush=True)
        x11.XFreeEventData(dpy, buf)
    select.select([fd], [], [], 0.1)
"""#

    let process = Process()
    let out = LineCollector()
    private let pipe = Pipe()
    /// What XIQueryVersion(2, 4) answered: its status, then the server's
    /// major and minor version.
    private(set) var version: [Int] = []
    /// X errors the selection raised (empty: the server took it).
    private(set) var selectErrors: [Int] = []

    init(display: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", Self.script, display]
        process.standardOutput = pipe
        process.standardError = pipe
        let out = self.out
        pipe.fileHandleForReading.readabilityHandler = { h in out.feed(h.availableData) }
        try process.run()
        let proc = process
        let ready = out.wait(seconds: 30) { lines in
            lines.contains { $0.hasPrefix("selected") || $0.hasPrefix("fail") } || !proc.isRunning
        }
        let lines = out.snapshot
        try #require(ready, "the X client did not start:\n\(lines.joined(separator: "\n"))")
        let v = lines.first { $0.hasPrefix("version ") }?.split(separator: " ").dropFirst().compactMap { Int($0) } ?? []
        let sel = try #require(lines.first { $0.hasPrefix("selected ") }, "the X client: \(lines.joined(separator: "\n"))")
        version = v
        selectErrors = Array(sel.split(separator: " ").dropFirst(2).compactMap { Int($0) })
    }

    deinit { stop() }

    /// Ends the client (SIGTERM); its lines stay.
    func stop() {
        VMTests.stop(process)
        pipe.fileHandleForReading.readabilityHandler = nil
    }

    var snapshot: [XGestureEvent] { out.snapshot.compactMap { XGestureEvent(line: $0) } }
}

/// One gesture as the X client saw it: begin, updates summed, end.
struct XSeenGesture {
    var kind: String          // "SWIPE" or "PINCH"
    var fingers: Int
    var updates = 0
    var udx = 0.0, udy = 0.0
    var scale = 1.0
    var ended = false
    var cancelled = false

    static func parse(_ events: [XGestureEvent]) -> [XSeenGesture] {
        var out: [XSeenGesture] = []
        for e in events where e.isGesture {
            let swipe = e.evtype >= XI_GestureSwipeBegin
            let kind = swipe ? "SWIPE" : "PINCH"
            switch e.evtype {
            case XI_GestureSwipeBegin, XI_GesturePinchBegin:
                out.append(XSeenGesture(kind: kind, fingers: e.fingers))
            case XI_GestureSwipeUpdate, XI_GesturePinchUpdate:
                guard var g = out.last, g.kind == kind, !g.ended else { continue }
                g.updates += 1
                g.udx += e.udx
                g.udy += e.udy
                if !swipe { g.scale = e.scale }
                out[out.count - 1] = g
            default:
                guard var g = out.last, g.kind == kind else { continue }
                g.ended = true
                g.cancelled = e.flags & 1 != 0   // XIGesture{Swipe,Pinch}EventCancelled
                out[out.count - 1] = g
            }
        }
        return out
    }
}

/// The X input device id of the slave device called `name` (`xinput list --id-only`).
private func xDeviceID(_ x: DummyXServer, _ name: String) -> Int32? {
    guard let r = try? run("/usr/bin/env", ["DISPLAY=\(x.display)", "xinput", "list", "--id-only", name]),
          r.status == 0 else { return nil }
    return Int32(r.output.trimmingCharacters(in: .whitespacesAndNewlines))
}

extension VMSuite {
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct DesktopGestures {
        /// Xorg 21.1 with xf86-input-libinput 1.2 (Debian 12): the Remolo
        /// touchpad's three- and four-finger swipes and two-finger pinch
        /// reach an X client as XInput 2.4 gesture events, with the finger
        /// count and the deltas libinput reports for them (a second libinput
        /// context, `libinput debug-events` on the same device, is printed
        /// beside them); the cursor does not move and no button is pressed.
        @Test(.timeLimit(.minutes(3)))
        func x11GestureEvents() throws {
            let x = try DummyXServer(number: 11)
            defer { x.stop() }
            let pad = try TouchpadDevice(name: TouchpadDevice.defaultName)
            try #require(eventually(20) { x.hasDevice(TouchpadDevice.defaultName) },
                         "Xorg never added the touchpad:\n\(x.log.suffix(3000))")
            let padID = try #require(xDeviceID(x, TouchpadDevice.defaultName))
            let log = x.log
            let logLines = log.split(separator: "\n").filter { $0.contains(TouchpadDevice.defaultName) }
            print("Xorg log for the pad:\n" + logLines.prefix(12).joined(separator: "\n"))
            #expect(log.contains("Using input driver 'libinput' for '\(TouchpadDevice.defaultName)'"),
                    "\(logLines.joined(separator: "\n"))")

            let client = try XGestureClient(display: x.display)
            defer { client.stop() }
            print("X client: XIQueryVersion(2, 4) -> status, major, minor \(client.version); "
                  + "selection errors \(client.selectErrors)")
            try #require(client.version.count == 3 && client.version[0] == 0 && client.version[1] == 2 && client.version[2] >= 4,
                         "the server's XInput: \(client.version) (status, major, minor): no gestures (XI 2.4)")
            #expect(client.selectErrors.isEmpty, "the server refused the gesture selection: \(client.selectErrors)")
            let watch = try LibinputWatch(pad.devnode)
            try x.warp(500, 400)
            usleep(300_000)

            // The same gestures as TouchpadGestures: 30 mm right and 6 mm up
            // at 0.5 mm a frame; two fingers spread from 18 to 36 mm.
            func swipe(_ n: Int) -> [TouchpadGesture] {
                (0...60).map { i in
                    TouchpadGesture(fingers: n, x: 45 + 30 * Double(i) / 60, y: 40 - 6 * Double(i) / 60)
                }
            }
            let pinch = (0...45).map { TouchpadGesture(fingers: 2, scale: 1 + Double($0) / 45) }
            let plays: [(String, Int, [TouchpadGesture])] = [("SWIPE", 3, swipe(3)), ("SWIPE", 4, swipe(4)), ("PINCH", 2, pinch)]
            var report = "X11 (Xorg, xf86-input-libinput) against libinput debug-events, same device:\n"
            for (i, (kind, fingers, frames)) in plays.enumerated() {
                let before = try x.pointer()
                try VMSuite.TouchpadGestures.play(pad, frames)
                let ended = eventually(10) { XSeenGesture.parse(client.snapshot).filter(\.ended).count >= i + 1 }
                // The reference reader's own gesture (a moment later, at most).
                _ = watch.out.wait(seconds: 3) { SeenGesture.parse($0).filter { $0.ended && $0.kind != "HOLD" }.count >= i + 1 }
                usleep(300_000)
                let after = try x.pointer()
                let xg = XSeenGesture.parse(client.snapshot)
                let dump = client.snapshot.map(\.description).suffix(8).joined(separator: "\n")
                try #require(ended && xg.count == i + 1, "\(kind) of \(fingers) fingers: X saw \(xg)\n\(dump)")
                let g = xg[i]
                #expect(g.kind == kind && g.fingers == fingers && g.ended && !g.cancelled, "X: \(g)")
                // What libinput reports for these gestures (TouchpadGestures,
                // docs/gestures.md): the motion less what it used to decide,
                // at most max_move (4 + 2(n-2) mm); the pinch's scale against
                // the fingers' distance where it decided, 36 mm over 21..26 mm.
                let u = VMSuite.TouchpadGestures.unitsPerMM
                if kind == "SWIPE" {
                    let maxMove = 4 + 2 * Double(fingers - 2)
                    #expect(g.udx <= 30 * u + 0.5 && g.udx >= (30 - maxMove) * u, "X: summed dx \(g.udx) for 30 mm")
                    #expect(g.udy >= -6 * u - 0.5 && g.udy <= -(6 - maxMove / 5) * u, "X: summed dy \(g.udy) for -6 mm")
                } else {
                    #expect(g.scale >= 36.0 / 26 - 0.01 && g.scale <= 36.0 / 21 + 0.01, "X: last scale \(g.scale)")
                }
                #expect(before == after, "the cursor moved from \(before) to \(after) during a \(kind)")
                // libinput 1.19+ also reports hold gestures (fingers down,
                // still), which XInput 2.4 does not carry.
                let lg = SeenGesture.parse(watch.out.snapshot).filter { $0.kind != "HOLD" }
                let l = lg.count == i + 1 ? String(format: "%d updates, %.1f/%.1f, scale %.3f", lg[i].updates, lg[i].dx, lg[i].dy,
                                                   lg[i].scale) : "\(lg)"
                report += "  \(kind) \(fingers) fingers: " + String(format: "X %d updates, unaccelerated %.1f/%.1f, scale %.3f",
                                                                   g.updates, g.udx, g.udy, g.scale)
                    + "; libinput \(l); cursor \(before) -> \(after)\n"
            }
            let holds = SeenGesture.parse(watch.end()).filter { $0.kind == "HOLD" }
            // The control: a click through XTest reaches the same client as
            // raw button events, so the selection of raw events works and
            // the pad's silence below means something.
            let gestureEvents = client.snapshot.count
            _ = try x.xdotool("click", "2")
            let clicked = eventually(5) {
                client.snapshot.dropFirst(gestureEvents).contains { $0.evtype == XI_RawButtonRelease && $0.fingers == 2 }
            }
            #expect(clicked, "the client saw no raw button from XTest: \(client.snapshot.dropFirst(gestureEvents).map(\.description))")
            let all = client.snapshot
            client.stop()
            let first = all.filter(\.isGesture).prefix(2).map(\.description) + all.filter(\.isGesture).suffix(1).map(\.description)
            print(report + "  libinput's hold gestures (not in XI 2.4): \(holds.map { "\($0.fingers) fingers\($0.cancelled ? " cancelled" : "")" })\n"
                  + "  first and last X events:\n    " + first.joined(separator: "\n    "))
            // Every gesture event came from the pad; the pad sent no motion
            // and no button (a swipe is not a drag, a pinch not a scroll).
            #expect(all.filter(\.isGesture).allSatisfy { $0.sourceid == padID }, "a gesture from another device")
            let fromPad = all.filter { !$0.isGesture && $0.sourceid == padID }
            #expect(fromPad.isEmpty, "the pad sent raw motion or buttons: \(fromPad.prefix(5))")
        }
    }
}
