import CXTest
import Foundation
@testable import RemoloDevices
import RemoloTestSupport
import Synchronization
import Testing

// What an X11 desktop gets from the Remolo touchpad's gestures: a real Xorg
// (dummy video, xf86-input-libinput hot-plugging the pad through udev, as
// DesktopOutputTests runs it) and a real X client that selects XInput 2.4's
// gesture events on the root window. docs/desktop.md, "Gestures", has the
// figures; docs/gestures.md how the pad makes libinput's gestures.

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
}

/// X errors seen while the client set itself up (Xlib's default handler
/// would exit the test process on a BadValue).
private let xClientErrors = Mutex<[UInt8]>([])

/// One X client on its own connection and thread: asks for XInput 2.4,
/// selects the six gesture events and raw motion and buttons on the root
/// window for every master device, and collects what arrives.
final class XGestureClient: @unchecked Sendable {
    /// The XInput version the server answered for 2.4.
    let serverVersion: (major: Int32, minor: Int32)
    /// X errors the selection raised (empty: the server took it).
    let selectErrors: [UInt8]
    private let dpy: OpaquePointer
    private let opcode: Int32
    private let events = Mutex<[XGestureEvent]>([])
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(display: String) throws {
        _ = XInitThreads()
        let d = try #require(XOpenDisplay(display), "cannot open \(display)")
        dpy = d
        var op: Int32 = 0, ev: Int32 = 0, err: Int32 = 0
        try #require(XQueryExtension(d, "XInputExtension", &op, &ev, &err) != 0, "no XInputExtension")
        opcode = op
        var major: Int32 = 2, minor: Int32 = 4
        try #require(XIQueryVersion(d, &major, &minor) == 0, "XIQueryVersion 2.4 failed")
        serverVersion = (major, minor)

        xClientErrors.withLock { $0 = [] }
        let previous = XSetErrorHandler { _, e in
            let code = e?.pointee.error_code ?? 0
            xClientErrors.withLock { $0.append(code) }
            return 0
        }
        var bits = [UInt8](repeating: 0, count: Int(XI_LASTEVENT) / 8 + 1)   // XIMaskLen(XI_LASTEVENT)
        for e in [XI_GesturePinchBegin, XI_GesturePinchUpdate, XI_GesturePinchEnd,
                  XI_GestureSwipeBegin, XI_GestureSwipeUpdate, XI_GestureSwipeEnd,
                  XI_RawMotion, XI_RawButtonPress, XI_RawButtonRelease] {
            bits[Int(e) >> 3] |= UInt8(1 << (Int(e) & 7))                    // XISetMask
        }
        bits.withUnsafeMutableBufferPointer { b in
            var mask = XIEventMask(deviceid: XIAllMasterDevices, mask_len: Int32(b.count), mask: b.baseAddress)
            _ = XISelectEvents(d, XDefaultRootWindow(d), &mask, 1)
        }
        XSync(d, 0)
        _ = XSetErrorHandler(previous)
        selectErrors = xClientErrors.withLock { $0 }

        let t = Thread { [self] in loop() }
        t.start()
    }

    deinit { stop() }

    /// Ends the thread and closes the connection; before the server goes,
    /// or Xlib's I/O error handler ends the whole process.
    func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        done.wait()
        XCloseDisplay(dpy)
    }

    var snapshot: [XGestureEvent] { events.withLock { $0 } }

    /// Runs on the client's own thread: polls the connection, reads every
    /// event and keeps the XI ones.
    private func loop() {
        defer { done.signal() }
        var p = pollfd(fd: XConnectionNumber(dpy), events: Int16(POLLIN), revents: 0)
        while !stopping.load(ordering: .relaxed) {
            if XPending(dpy) == 0 {
                p.revents = 0
                _ = poll(&p, 1, 50)
                continue
            }
            var ev = XEvent()
            XNextEvent(dpy, &ev)
            guard ev.type == GenericEvent else { continue }
            var cookie = ev.xcookie
            guard cookie.extension == opcode, XGetEventData(dpy, &cookie) != 0 else { continue }
            defer { XFreeEventData(dpy, &cookie) }
            guard let data = cookie.data else { continue }
            var out: XGestureEvent
            switch cookie.evtype {
            case XI_GestureSwipeBegin, XI_GestureSwipeUpdate, XI_GestureSwipeEnd:
                let g = data.assumingMemoryBound(to: XIGestureSwipeEvent.self).pointee
                out = XGestureEvent(evtype: g.evtype, sourceid: g.sourceid, fingers: Int(g.detail),
                                    dx: g.delta_x, dy: g.delta_y, udx: g.delta_unaccel_x, udy: g.delta_unaccel_y,
                                    flags: UInt32(g.flags))
            case XI_GesturePinchBegin, XI_GesturePinchUpdate, XI_GesturePinchEnd:
                let g = data.assumingMemoryBound(to: XIGesturePinchEvent.self).pointee
                out = XGestureEvent(evtype: g.evtype, sourceid: g.sourceid, fingers: Int(g.detail),
                                    dx: g.delta_x, dy: g.delta_y, udx: g.delta_unaccel_x, udy: g.delta_unaccel_y,
                                    scale: g.scale, angle: g.delta_angle, flags: UInt32(g.flags))
            case XI_RawMotion, XI_RawButtonPress, XI_RawButtonRelease:
                let r = data.assumingMemoryBound(to: XIRawEvent.self).pointee
                out = XGestureEvent(evtype: r.evtype, sourceid: r.sourceid, fingers: Int(r.detail))
            default:
                continue
            }
            events.withLock { $0.append(out) }
        }
    }
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
        /// count and the deltas libinput reported (a second libinput
        /// context, `libinput debug-events` on the same device, is the
        /// reference); the cursor does not move and no button is pressed.
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
            print("X client: XIQueryVersion(2, 4) -> \(client.serverVersion.major).\(client.serverVersion.minor); "
                  + "selection errors \(client.selectErrors)")
            try #require(client.serverVersion.major == 2 && client.serverVersion.minor >= 4,
                         "the server has XInput \(client.serverVersion), no gestures (XI 2.4)")
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
                let ended = eventually(10) {
                    XSeenGesture.parse(client.snapshot).filter(\.ended).count >= i + 1
                        && SeenGesture.parse(watch.out.snapshot).filter { $0.ended && $0.kind != "HOLD" }.count >= i + 1
                }
                usleep(300_000)
                let after = try x.pointer()
                let xg = XSeenGesture.parse(client.snapshot)
                // libinput 1.19+ also reports hold gestures (fingers down,
                // still), which XInput 2.4 does not carry.
                let lg = SeenGesture.parse(watch.out.snapshot).filter { $0.kind != "HOLD" }
                let dump = client.snapshot.map(\.description).suffix(8).joined(separator: "\n")
                try #require(ended && xg.count == i + 1 && lg.count == i + 1,
                             "\(kind) \(fingers): X saw \(xg), libinput saw \(lg)\n\(dump)")
                let g = xg[i], l = lg[i]
                #expect(g.kind == kind && g.fingers == fingers && !g.cancelled, "X: \(g)")
                #expect(l.kind == kind && l.fingers == fingers, "libinput: \(l)")
                // The same deltas as libinput's own (XI carries them as
                // 16.16 fixed point; two contexts decide the gesture from
                // the same kernel events).
                #expect(abs(g.udx - l.dx) <= 0.01 * max(1, abs(l.dx)) && abs(g.udy - l.dy) <= 0.01 * max(1, abs(l.dy)),
                        "X \(g.udx)/\(g.udy), libinput \(l.dx)/\(l.dy)")
                if kind == "PINCH" { #expect(abs(g.scale - l.scale) < 0.01, "X scale \(g.scale), libinput \(l.scale)") }
                #expect(before == after, "the cursor moved from \(before) to \(after) during a \(kind)")
                report += "  \(kind) \(fingers) fingers: " + String(format: "X %d updates, unaccel %.1f/%.1f, scale %.3f; "
                                 + "libinput %d updates, %.1f/%.1f, scale %.3f; cursor (%d,%d) -> (%d,%d)",
                                 g.updates, g.udx, g.udy, g.scale,
                                 l.updates, l.dx, l.dy, l.scale, before.x, before.y, after.x, after.y)
                    + (g.cancelled ? " (cancelled)" : "") + "\n"
            }
            let holds = SeenGesture.parse(watch.end()).filter { $0.kind == "HOLD" }
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
