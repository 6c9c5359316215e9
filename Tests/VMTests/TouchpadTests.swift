import CEvdev
import Foundation
@testable import RemoloDevices
import RemoloCore
import Testing

private func touches(_ pts: [(Int32, Int32)]) -> tpdev_touches {
    var t = tpdev_touches()
    t.n = UInt8(pts.count)
    withUnsafeMutableBytes(of: &t.x) { xb in
        withUnsafeMutableBytes(of: &t.y) { yb in
            for (i, p) in pts.enumerated() {
                xb.storeBytes(of: p.0, toByteOffset: i * 4, as: Int32.self)
                yb.storeBytes(of: p.1, toByteOffset: i * 4, as: Int32.self)
            }
        }
    }
    return t
}

private func points(_ t: tpdev_touches) -> [(Int32, Int32)] {
    var x = t.x, y = t.y
    let xs = withUnsafeBytes(of: &x) { Array($0.bindMemory(to: Int32.self)) }
    let ys = withUnsafeBytes(of: &y) { Array($0.bindMemory(to: Int32.self)) }
    return (0..<Int(t.n)).map { (xs[$0], ys[$0]) }
}

private func abs(_ code: Int32, _ v: Int32) -> Ev { Ev(EV_ABS, code, v) }
private func slot(_ i: Int32) -> Ev { abs(ABS_MT_SLOT, i) }

/// Runs everywhere: the touchpad's frames (no kernel).
@Suite struct TouchpadHost {
    struct Case: CustomStringConvertible {
        var n: Int
        var from: [(Int32, Int32)]
        var to: [(Int32, Int32)]
        var want: [Ev]
        var description: String { "case \(n)" }
    }

    /// The type B protocol (Documentation/input/multi-touch-protocol.rst):
    /// each changed slot announced, a new contact given a tracking id, a
    /// lifted one -1; BTN_TOOL_* says how many touch.
    static let cases: [Case] = [
        // 1: three fingers down at once: ids 7, 8, 9, one tool key.
        Case(n: 1, from: [], to: [(100, 200), (820, 200), (1540, 200)], want: [
            slot(0), abs(ABS_MT_TRACKING_ID, 7), abs(ABS_MT_POSITION_X, 100), abs(ABS_MT_POSITION_Y, 200),
            slot(1), abs(ABS_MT_TRACKING_ID, 8), abs(ABS_MT_POSITION_X, 820), abs(ABS_MT_POSITION_Y, 200),
            slot(2), abs(ABS_MT_TRACKING_ID, 9), abs(ABS_MT_POSITION_X, 1540), abs(ABS_MT_POSITION_Y, 200),
            abs(ABS_X, 100), abs(ABS_Y, 200), .key(BTN_TOUCH, true), .key(BTN_TOOL_TRIPLETAP, true), .syn,
        ]),
        // 2: the row moves down: only y changes, and only y is written.
        Case(n: 2, from: [(100, 200), (820, 200), (1540, 200)], to: [(100, 240), (820, 240), (1540, 240)], want: [
            slot(0), abs(ABS_MT_POSITION_Y, 240), slot(1), abs(ABS_MT_POSITION_Y, 240),
            slot(2), abs(ABS_MT_POSITION_Y, 240), abs(ABS_Y, 240), .syn,
        ]),
        // 3: nothing moved: no frame at all.
        Case(n: 3, from: [(100, 200), (820, 200)], to: [(100, 200), (820, 200)], want: []),
        // 4: a fourth finger joins: the tool key changes, the others stay.
        Case(n: 4, from: [(100, 200), (820, 200), (1540, 200)],
             to: [(100, 200), (820, 200), (1540, 200), (2260, 200)], want: [
            slot(3), abs(ABS_MT_TRACKING_ID, 7), abs(ABS_MT_POSITION_X, 2260), abs(ABS_MT_POSITION_Y, 200),
            .key(BTN_TOOL_TRIPLETAP, false), .key(BTN_TOOL_QUADTAP, true), .syn,
        ]),
        // 5: every finger lifted: -1 in each slot, BTN_TOUCH and the tool up.
        Case(n: 5, from: [(100, 200), (820, 200)], to: [], want: [
            slot(0), abs(ABS_MT_TRACKING_ID, -1), slot(1), abs(ABS_MT_TRACKING_ID, -1),
            .key(BTN_TOUCH, false), .key(BTN_TOOL_DOUBLETAP, false), .syn,
        ]),
        // 6: a pinch: the two fingers move apart in x, the first one's single-touch x follows.
        Case(n: 6, from: [(1000, 1600), (1720, 1600)], to: [(900, 1600), (1820, 1600)], want: [
            slot(0), abs(ABS_MT_POSITION_X, 900), slot(1), abs(ABS_MT_POSITION_X, 1820), abs(ABS_X, 900), .syn,
        ]),
    ]

    @Test(arguments: cases)
    func encode(_ c: Case) {
        var evs = [input_event](repeating: input_event(), count: Int(REMOLO_TPDEV_FRAME_MAX))
        var ids = [Int32](repeating: 0, count: Int(REMOLO_TPDEV_SLOTS))
        var next: Int32 = 7
        var from = touches(c.from), to = touches(c.to)
        let n = tpdev_encode(&evs, evs.count, &from, &to, &ids, &next)
        let got = evs.prefix(max(0, Int(n))).map { Ev(Int32($0.type), Int32($0.code), $0.value) }
        #expect(Int(n) == c.want.count, "\(c)")
        #expect(got == c.want, "\(c): \(got)")
    }

    @Test func encodeRefusesWhatIsNotAFrame() {
        var evs = [input_event](repeating: input_event(), count: Int(REMOLO_TPDEV_FRAME_MAX))
        var ids = [Int32](repeating: 0, count: Int(REMOLO_TPDEV_SLOTS))
        var next: Int32 = 0
        var none = tpdev_touches()
        var five = touches([(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)])
        var off = touches([(REMOLO_TPDEV_MAX_X + 1, 10)])
        var neg = touches([(10, -1)])
        #expect(tpdev_encode(&evs, evs.count, &none, &five, &ids, &next) == -EINVAL)
        #expect(tpdev_encode(&evs, evs.count, &none, &off, &ids, &next) == -EINVAL)
        #expect(tpdev_encode(&evs, evs.count, &none, &neg, &ids, &next) == -EINVAL)
        var one = touches([(10, 10)])
        #expect(tpdev_encode(&evs, 4, &none, &one, &ids, &next) == -EINVAL)
        #expect(next == 0, "no tracking id used up by a refused frame")
    }

    @Test func trackingIdsWrapAtTheKernelsMask() {
        var evs = [input_event](repeating: input_event(), count: Int(REMOLO_TPDEV_FRAME_MAX))
        var ids = [Int32](repeating: 0, count: Int(REMOLO_TPDEV_SLOTS))
        var next: Int32 = 0xffff
        var none = tpdev_touches()
        var two = touches([(10, 10), (20, 10)])
        _ = tpdev_encode(&evs, evs.count, &none, &two, &ids, &next)
        #expect(Array(ids.prefix(2)) == [0xffff, 0])
        #expect(next == 1)
    }

    /// The layout: a row REMOLO_TPDEV_SPACING_MM apart around the
    /// centroid, scaled and turned as a pinch asks, clamped to the pad.
    @Test func layout() {
        let u = Double(REMOLO_TPDEV_UNITS_PER_MM), gap = Int32(REMOLO_TPDEV_SPACING_MM * REMOLO_TPDEV_UNITS_PER_MM)
        var t = tpdev_touches()
        tpdev_layout(&t, 3, 60 * u, 40 * u, 1, 0)
        #expect(points(t).map { $0.0 } == [2400 - gap, 2400, 2400 + gap])
        #expect(points(t).allSatisfy { $0.1 == 1600 })
        // Twice the spread, turned a quarter counter-clockwise: the row
        // stands upright, its second finger above (y down).
        tpdev_layout(&t, 2, 60 * u, 40 * u, 2, Double.pi / 2)
        let p = points(t)
        #expect(p.map { $0.0 } == [2400, 2400])
        #expect(p.map { $0.1 } == [1600 + gap, 1600 - gap])
        // Off the pad's left edge: clamped, not refused.
        tpdev_layout(&t, 4, 0, 40 * u, 1, 0)
        #expect(points(t).map { $0.0 }.prefix(2) == [0, 0])
        // More fingers than the device takes: the most it takes.
        tpdev_layout(&t, 9, 60 * u, 40 * u, 1, 0)
        #expect(Int32(t.n) == REMOLO_TPDEV_FINGERS_MAX)
        tpdev_layout(&t, 3, .nan, 40 * u, .infinity, 0)
        #expect(points(t).allSatisfy { $0.0 >= 0 && $0.0 <= REMOLO_TPDEV_MAX_X })
    }

    /// The device over a socket: what reaches the reader is each frame
    /// whole, and a lift that failed to reach the kernel is written again.
    @Test func aFailedLiftIsWrittenAgain() throws {
        var sv: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &sv) == 0)
        defer { close(sv[0]); close(sv[1]) }
        let fd = dup(sv[0])
        defer { close(fd) }
        let pad = try TouchpadDevice(fileDescriptor: fd)
        #expect(try pad.show(TouchpadGesture(fingers: 3)) > 0)
        #expect(pad.touching)
        // The descriptor now names a read-only file: the lift fails.
        let ro = open("/dev/null", O_RDONLY)
        try #require(ro >= 0)
        dup2(ro, fd)
        close(ro)
        #expect(throws: PointerDeviceError.self) { try pad.lift() }
        #expect(pad.touching, "a lift that was not written is not counted as done")
        dup2(sv[0], fd)
        #expect(try pad.show(.none) > 0)
        #expect(!pad.touching)
        // What the reader got: the first frame (3 fingers down), then the lift.
        var frames: [[Ev]] = []
        var buf = [input_event](repeating: input_event(), count: 64)
        while true {
            let r = buf.withUnsafeMutableBytes { recv(sv[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if r <= 0 { break }
            frames.append(buf.prefix(r / MemoryLayout<input_event>.stride).map { Ev(Int32($0.type), Int32($0.code), $0.value) })
        }
        #expect(frames.count == 2)
        #expect(frames.first?.contains(.key(BTN_TOOL_TRIPLETAP, true)) == true)
        #expect(frames.last == [slot(0), abs(ABS_MT_TRACKING_ID, -1), slot(1), abs(ABS_MT_TRACKING_ID, -1),
                                slot(2), abs(ABS_MT_TRACKING_ID, -1), .key(BTN_TOUCH, false),
                                .key(BTN_TOOL_TRIPLETAP, false), .syn])
    }

    @Test(.enabled(if: !VMEnv.hasUinput, "this host has /dev/uinput"))
    func missingUinputSaysHowToFix() {
        do {
            _ = try TouchpadDevice()
            Issue.record("created a touchpad without /dev/uinput")
        } catch {
            #expect(error.errno == ENOENT)
            #expect(error.message.contains("touchpad"), "\(error.message)")
            #expect(error.message.contains("modprobe uinput"), "\(error.message)")
        }
    }
}

/// A finger-count gesture as libinput reports it: begin, the updates'
/// unaccelerated deltas summed, the last scale, and how it ended.
struct SeenGesture {
    var kind: String          // "SWIPE" or "PINCH"
    var fingers: Int
    var updates = 0
    var dx = 0.0, dy = 0.0    // unaccelerated, summed
    var scale = 1.0
    var ended = false
    var cancelled = false

    /// Parses `libinput debug-events` lines: "GESTURE_SWIPE_UPDATE +1.234s\t3  5.12/ 0.00 ( 4.01/ 0.00
    /// unaccelerated)", and for a pinch " 1.25 @ 0.00" (scale @ angle delta) after it.
    static func parse(_ lines: [String]) -> [SeenGesture] {
        var out: [SeenGesture] = []
        for l in lines {
            guard let e = LibinputEvent(l), e.kind.hasPrefix("GESTURE_") else { continue }
            let parts = e.kind.split(separator: "_")
            guard parts.count == 3 else { continue }
            let kind = String(parts[1]), phase = String(parts[2])
            // After the time ("+1.234s\t"): the finger count, then the numbers.
            let fields = e.rest.split(whereSeparator: { $0 == " " || $0 == "\t" })
            let fingers = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            switch phase {
            case "BEGIN":
                out.append(SeenGesture(kind: kind, fingers: fingers))
            case "UPDATE":
                guard var g = out.last, g.kind == kind, !g.ended else { continue }
                let n = e.numbers   // time, dx, dy, udx, udy[, scale, angle]
                guard n.count >= 5 else { continue }
                g.updates += 1
                g.dx += n[3]
                g.dy += n[4]
                if kind == "PINCH", n.count >= 7 { g.scale = n[5] }
                out[out.count - 1] = g
            case "END":
                guard var g = out.last, g.kind == kind else { continue }
                g.ended = true
                g.cancelled = e.rest.contains("cancelled")
                out[out.count - 1] = g
            default:
                continue
            }
        }
        return out
    }
}

/// `libinput debug-events` on one device, its lines collected.
final class LibinputWatch {
    let process = Process()
    let out = LineCollector()
    private let pipe = Pipe()

    init(_ devnode: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
        process.arguments = ["-oL", "libinput", "debug-events", "--device", devnode]
        process.standardOutput = pipe
        process.standardError = pipe
        let out = self.out
        pipe.fileHandleForReading.readabilityHandler = { h in out.feed(h.availableData) }
        try process.run()
        let added = out.wait(seconds: 30) { $0.contains { $0.contains("DEVICE_ADDED") } }
        try #require(added, "libinput never added the device:\n\(out.snapshot.joined(separator: "\n"))")
    }

    func end() -> [String] {
        stop(process)
        pipe.fileHandleForReading.readabilityHandler = nil
        return out.snapshot
    }

    deinit { if process.isRunning { _ = end() } }
}

extension VMSuite {
    /// What a compositor gets from the touchpad: libinput's own gesture
    /// events (docs/gestures.md says how they are made).
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct TouchpadGestures {
        /// Plays frames 8 ms apart (a 125 Hz pad), each finger moved in each
        /// frame, then lifts.
        static func play(_ pad: TouchpadDevice, _ frames: [TouchpadGesture]) throws {
            for f in frames {
                try pad.show(f)
                usleep(8_000)
            }
            try pad.lift()
        }

        /// libinput's swipe delta is the fingers' mean motion in 1000-dpi
        /// units (mm x 1000/25.4) through its constant touchpad filter
        /// (0.9 x TP_MAGIC_SLOWDOWN 0.2968, filter-touchpad.c), and the
        /// motion before it decides the gesture (at most max_move, 4 + 2(n-2)
        /// mm, evdev-mt-touchpad-gestures.c) is not reported.
        static let unitsPerMM = 1000 / 25.4 * 0.9 * 0.2968

        @Test(.timeLimit(.minutes(2)), arguments: [3, 4])
        func swipe(fingers: Int) throws {
            let pad = try TouchpadDevice(name: "Remolo touchpad test")
            let watch = try LibinputWatch(pad.devnode)
            let add = watch.out.snapshot.first { $0.contains("DEVICE_ADDED") } ?? ""
            // cap:g = gestures (libinput's touchpad code gives them to pads
            // with more than one slot).
            #expect(add.contains("cap:") && add.split(separator: " ").contains { $0.hasPrefix("cap:") && $0.contains("g") },
                    "not a gesture device: \(add)")

            // 30 mm right and 6 mm up, 0.5 mm a frame: a slow swipe
            // (libinput's jump detection drops a step over 7 mm).
            let steps = 60
            var frames: [TouchpadGesture] = []
            for i in 0...steps {
                let t = Double(i) / Double(steps)
                frames.append(TouchpadGesture(fingers: fingers, x: 45 + 30 * t, y: 40 - 6 * t))
            }
            try Self.play(pad, frames)
            _ = watch.out.wait(seconds: 10) { SeenGesture.parse($0).contains { $0.ended } }
            let lines = watch.end()
            let all = lines.joined(separator: "\n")
            let g = SeenGesture.parse(lines).filter { $0.kind == "SWIPE" }
            try #require(g.count == 1, "one swipe, not \(g.count):\n\(all)")
            let s = g[0]
            #expect(s.fingers == fingers && s.ended && !s.cancelled, "\(s)\n\(all)")
            #expect(!SeenGesture.parse(lines).contains { $0.kind == "PINCH" }, "a swipe taken for a pinch:\n\(all)")
            // Sent: +30 mm, -6 mm. Reported: that less what libinput used
            // to decide, at most max_move along the motion.
            let maxMove = 4 + 2 * Double(fingers - 2)
            let u = Self.unitsPerMM
            #expect(s.dx <= 30 * u + 0.5 && s.dx >= (30 - maxMove) * u, "summed dx \(s.dx) for 30 mm (\(30 * u))\n\(all)")
            #expect(s.dy >= -6 * u - 0.5 && s.dy <= -(6 - maxMove / 5) * u, "summed dy \(s.dy) for -6 mm (\(-6 * u))\n\(all)")
            print("touchpad: \(fingers)-finger swipe of 30/-6 mm: libinput summed \(s.dx)/\(s.dy) in \(s.updates) updates "
                  + "(\(30 * u)/\(-6 * u) sent in its units)")
        }

        @Test(.timeLimit(.minutes(2)))
        func pinch() throws {
            let pad = try TouchpadDevice(name: "Remolo touchpad test")
            let watch = try LibinputWatch(pad.devnode)
            // Two fingers 18 mm apart spread to 36 mm, 0.2 mm a frame each.
            let steps = 45
            var frames: [TouchpadGesture] = []
            for i in 0...steps {
                frames.append(TouchpadGesture(fingers: 2, scale: 1 + Double(i) / Double(steps)))
            }
            try Self.play(pad, frames)
            _ = watch.out.wait(seconds: 10) { SeenGesture.parse($0).contains { $0.ended } }
            let lines = watch.end()
            let all = lines.joined(separator: "\n")
            let g = SeenGesture.parse(lines).filter { $0.kind == "PINCH" }
            try #require(g.count == 1, "one pinch, not \(g.count):\n\(all)")
            let p = g[0]
            #expect(p.fingers == 2 && p.ended && !p.cancelled, "\(p)\n\(all)")
            // libinput's scale is the distance over the distance where it
            // decided (tp_gesture_init_pinch): each finger had moved at
            // least 1.5 mm then (PINCH_DISAMBIGUATION_MOVE_THRESHOLD), at most
            // max_move 4 mm. So 36 mm over 21..26 mm; sent: 2 from 18 mm.
            #expect(p.scale >= 36.0 / 26 - 0.01 && p.scale <= 36.0 / 21 + 0.01, "final scale \(p.scale)\n\(all)")
            print("touchpad: pinch 18 -> 36 mm (sent scale 2): libinput's last scale \(p.scale) in \(p.updates) updates")
        }

        /// After a lift the kernel's own state has no finger down
        /// (EVIOCGMTSLOTS and EVIOCGKEY, read through libevdev).
        @Test(.timeLimit(.minutes(1)))
        func liftLeavesNoTouchDown() throws {
            let pad = try TouchpadDevice(name: "Remolo touchpad test")
            let r = try EvdevReader(pad.devnode)
            try pad.show(TouchpadGesture(fingers: 4))
            _ = r.read(count: 1, timeoutMs: 2000)
            func down() -> [Int32] {
                (0..<REMOLO_TPDEV_SLOTS).map { libevdev_get_slot_value(r.dev, UInt32($0), UInt32(ABS_MT_TRACKING_ID)) }
            }
            #expect(down().prefix(4).allSatisfy { $0 >= 0 }, "four fingers down: \(down())")
            #expect(libevdev_get_event_value(r.dev, UInt32(EV_KEY), UInt32(BTN_TOUCH)) == 1)
            try pad.lift()
            _ = r.read(count: 1, timeoutMs: 2000)
            #expect(down().allSatisfy { $0 == -1 }, "a slot still down: \(down())")
            #expect(libevdev_get_event_value(r.dev, UInt32(EV_KEY), UInt32(BTN_TOUCH)) == 0)
            #expect(libevdev_get_event_value(r.dev, UInt32(EV_KEY), UInt32(BTN_TOOL_QUADTAP)) == 0)
            // The kernel's state as a new reader gets it (EVIOCGMTSLOTS).
            let fresh = try EvdevReader(pad.devnode)
            #expect((0..<REMOLO_TPDEV_SLOTS).allSatisfy {
                libevdev_get_slot_value(fresh.dev, UInt32($0), UInt32(ABS_MT_TRACKING_ID)) == -1
            })
            #expect(libevdev_get_event_value(fresh.dev, UInt32(EV_KEY), UInt32(BTN_TOUCH)) == 0)
        }
    }
}
