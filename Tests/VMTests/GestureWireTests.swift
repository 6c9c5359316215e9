import CEvdev
import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloCore
@testable import RemoloDevices
import RemoloSystem
import RemoloTestSupport
import Testing

extension VMSuite {
    /// Gestures over the wire into the real kernel and libinput: a sender's
    /// gesture states through a real receiver (io_uring loop, playout,
    /// uinput touchpad made at the grant), read by `libinput debug-events`;
    /// and the kernel's own touch state after a session ends mid-gesture.
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct GestureWire {
        static let padName = "Remolo touchpad wire"

        static func rig() throws -> (Receiver, Sender, String, reconnect: () throws -> Sender) {
            let senderID = Identity.generate(), receiverID = Identity.generate()
            var list = PeerList()
            list.add(senderID.publicKey, label: "gesture sender")
            let trust = try ReceiverTrust(identity: receiverID, directory: nil, authorized: list)
            let rx = try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .uinput(name: "Remolo gesture wire pointer"),
                                  touchpad: .uinput(name: padName))
            do {
                let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: senderID,
                                            receiver: receiverID.publicKey, gestures: true)
                try #require(tx.gesturesGranted, "the receiver did not grant gestures")
                let node = try #require(rx.loop.touchpadDevnode, "no touchpad after the grant")
                let port = rx.port
                return (rx, tx, node, {
                    try Sender.connect(host: "127.0.0.1", port: port, identity: senderID,
                                       receiver: receiverID.publicKey, gestures: true)
                })
            } catch { rx.stop(); throw error }
        }

        /// Sends a swipe's states 8 ms apart (x mm per state), then its end.
        static func swipe(_ tx: Sender, fingers: UInt8, states: Int, mmPerState: Double, end: Bool) throws {
            var t: UInt64 = 0
            for i in 1...states {
                t = senderClockUs()
                try tx.send(gesture: GestureDatagram(id: 1, kind: .swipe, fingers: fingers, isLast: end && i == states,
                                                     xUm: Int32(Double(i) * mmPerState * 1000), yUm: 0,
                                                     scaleQ16: 65_536, angleUrad: 0), at: t)
                usleep(8_000)
            }
            if end { try tx.endGesture(1, at: t) }
        }

        /// A three-finger swipe of 30 mm sent over the wire is one libinput
        /// swipe of three fingers, ended and not cancelled, its summed
        /// unaccelerated dx within libinput's own processing of the sent
        /// motion (TouchpadGestures says how that is measured).
        @Test(.timeLimit(.minutes(2)))
        func swipeOverTheWireIsALibinputSwipe() throws {
            let (rx, tx, node, _) = try Self.rig()
            defer { tx.close(); rx.stop() }
            let watch = try LibinputWatch(node)
            try Self.swipe(tx, fingers: 3, states: 60, mmPerState: 0.5, end: true)
            let g = try Self.onlyGesture("SWIPE", watch, "")
            #expect(g.fingers == 3, "\(g)")
            let u = VMSuite.TouchpadGestures.unitsPerMM, maxMove = 4.0 + 2
            #expect(g.dx <= 30 * u + 0.5 && g.dx >= (30 - maxMove) * u, "summed dx \(g.dx) for 30 mm: \(g)")
            print("gesture wire: 3-finger swipe of 30 mm over the wire: libinput summed dx \(g.dx) "
                  + "(\(30 * u) sent) in \(g.updates) updates")
        }

        /// A pinch sent over the wire (two fingers, scale 1 to 2 in 45
        /// states) is one libinput pinch of two fingers whose last scale is
        /// within what libinput's own decision leaves of the sent one
        /// (TouchpadGestures.pinch says why: 36 mm over 21..26 mm).
        @Test(.timeLimit(.minutes(2)))
        func pinchOverTheWireIsALibinputPinch() throws {
            let (rx, tx, node, _) = try Self.rig()
            defer { tx.close(); rx.stop() }
            let watch = try LibinputWatch(node)
            var t: UInt64 = 0
            for i in 1...45 {
                t = senderClockUs()
                try tx.send(gesture: GestureDatagram(id: 2, kind: .pinch, fingers: 2, isLast: i == 45, xUm: 0, yUm: 0,
                                                     scaleQ16: 65_536 + Int32(i) * 65_536 / 45, angleUrad: 0), at: t)
                usleep(8_000)
            }
            try tx.endGesture(2, at: t)
            let p = try Self.onlyGesture("PINCH", watch, "")
            #expect(p.fingers == 2, "\(p)")
            #expect(p.scale >= 36.0 / 26 - 0.01 && p.scale <= 36.0 / 21 + 0.01, "last scale \(p.scale): \(p)")
            print("gesture wire: pinch to scale 2 over the wire: libinput's last scale \(p.scale) in \(p.updates) updates")
        }

        /// The uinput node of the device with exactly this name, if any.
        static func node(named name: String) -> String? {
            let dir = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/input")) ?? []
            for e in dir where e.hasPrefix("event") {
                guard let r = try? EvdevReader("/dev/input/" + e) else { continue }
                if String(cString: libevdev_get_name(r.dev)) == name { return "/dev/input/" + e }
            }
            return nil
        }

        /// `remolo receive` and `remolo send --device --grab` on a new virtual
        /// clickpad, and the receiver's touchpad, made when it granted the
        /// sender's gestures.
        static func deviceRig(_ label: String) throws -> (DeviceRig, VirtualDevice, CLIProcess, String) {
            let rig = try DeviceRig(label)
            do {
                let pad = try Pad.make(name: "Test gesture pad")
                let tx = try rig.send(["--device", pad.node, "--grab"])
                var node: String?
                _ = eventually(10) { node = Self.node(named: TouchpadDevice.defaultName); return node != nil }
                let touchpad = try #require(node, "the receiver made no touchpad: \(rig.rx.output)\n\(tx.output)")
                return (rig, pad, tx, touchpad)
            } catch { rig.stop(); throw error }
        }

        /// Three fingers 15 mm apart, `reports` reports 0.5 mm right each.
        static func threeFingers(_ reports: Int) -> [PadStep] {
            (0...reports).map { k in
                let x = Int32(1000 + 20 * k)
                return PadStep(fingers: [0: (x, 1200), 1: (x + 600, 1200), 2: (x + 1200, 1200)])
            }
        }

        /// libinput's one gesture of `kind` on the watched device once one ends.
        static func onlyGesture(_ kind: String, _ watch: LibinputWatch, _ context: String) throws -> SeenGesture {
            _ = watch.out.wait(seconds: 10) { SeenGesture.parse($0).contains { $0.ended } }
            let lines = watch.end()
            let all = lines.joined(separator: "\n")
            let g = SeenGesture.parse(lines).filter { $0.kind == kind }
            try #require(g.count == 1, "one \(kind), not \(g.count):\n\(all)\n\(context)")
            #expect(g[0].ended && !g[0].cancelled, "\(g[0])\n\(all)")
            return g[0]
        }

        /// The whole Linux path: a virtual clickpad's three fingers read by
        /// `remolo send --device` (its touchpad rules, gestures granted), over
        /// the wire to `remolo receive`, out of its touchpad as libinput's
        /// three-finger swipe.
        @Test(.timeLimit(.minutes(3)))
        func linuxSendersTouchpadSwipeIsALibinputSwipe() throws {
            let (rig, pad, tx, touchpad) = try Self.deviceRig("gesture-pad")
            defer { rig.stop() }
            let watch = try LibinputWatch(touchpad)
            rig.play(Self.threeFingers(60) + [PadStep(fingers: [:])], on: pad, thenInterrupt: tx)
            let g = try Self.onlyGesture("SWIPE", watch, tx.output)
            #expect(g.fingers == 3 && g.dx > 0, "three fingers, to the right: \(g)")
            // The pointer did not move: the fingers went to the touchpad.
            #expect(rig.pointer.read(count: 1, timeoutMs: 50, settleMs: 0).filter { $0.type == UInt16(EV_REL) }.isEmpty)
            print("gesture wire: remolo send --device, 3 fingers 30 mm right: libinput summed dx \(g.dx) in \(g.updates) updates")
        }

        /// The Linux path for a pinch: two fingers spreading on a virtual
        /// clickpad, through `remolo send --device` and `remolo receive`, are
        /// one libinput pinch of two fingers that grows.
        @Test(.timeLimit(.minutes(3)))
        func linuxSendersTouchpadPinchIsALibinputPinch() throws {
            let (rig, pad, tx, touchpad) = try Self.deviceRig("gesture-pinch")
            defer { rig.stop() }
            let watch = try LibinputWatch(touchpad)
            // Two fingers 20 mm apart spreading 0.25 mm a report each way, to 50 mm.
            var steps: [PadStep] = []
            for k in 0...60 {
                steps.append(PadStep(fingers: [0: (Int32(1600 - 10 * k), 1200), 1: (Int32(2400 + 10 * k), 1200)]))
            }
            steps.append(PadStep(fingers: [:]))
            rig.play(steps, on: pad, thenInterrupt: tx)
            let p = try Self.onlyGesture("PINCH", watch, tx.output)
            #expect(p.fingers == 2 && p.scale > 1.5, "two fingers, and it grew: \(p)")
            print("gesture wire: remolo send --device, a pinch 20 -> 50 mm: libinput's last scale \(p.scale)")
        }

        /// `remolo send --device` killed (SIGKILL) with three fingers down
        /// mid-swipe: the receiver's touchpad has no touch down in the
        /// kernel once the session has ended.
        @Test(.timeLimit(.minutes(3)))
        func killedLinuxSenderLeavesNoTouchDown() throws {
            let (rig, pad, tx, touchpad) = try Self.deviceRig("gesture-kill")
            defer { rig.stop() }
            /// BTN_TOUCH as the kernel has it now (a fresh reader: EVIOCGKEY).
            func touching() -> Int32? {
                (try? EvdevReader(touchpad)).map { libevdev_get_event_value($0.dev, UInt32(EV_KEY), UInt32(BTN_TOUCH)) }
            }
            PadWriter(pad).play(Self.threeFingers(40))   // no lift: the fingers stay down
            try #require(eventually(5) { touching() == 1 }, "no finger down mid-swipe: \(tx.output)")
            tx.signal(SIGKILL)
            _ = tx.wait()
            // The session ends when the kernel closes the killed sender's
            // connection; its fingers lift in the session's last frame.
            #expect(eventually(5) {
                guard touching() == 0, let fresh = try? EvdevReader(touchpad) else { return false }
                return (0..<REMOLO_TPDEV_SLOTS).allSatisfy {
                        libevdev_get_slot_value(fresh.dev, UInt32($0), UInt32(ABS_MT_TRACKING_ID)) == -1 }
            }, "a touch still down after the sender was killed: \(rig.rx.output)")
        }

        enum Ending: String, CaseIterable, Sendable { case killed, bye, replaced }

        /// A session that ends mid-gesture leaves no touch down in the
        /// kernel (EVIOCGMTSLOTS, EVIOCGKEY through a fresh libevdev reader).
        @Test(.timeLimit(.minutes(1)), arguments: Ending.allCases)
        func noTouchDownAfterTheSessionEnds(_ ending: Ending) throws {
            let (rx, tx, node, again) = try Self.rig()
            defer { rx.stop() }
            let r = try EvdevReader(node)
            try Self.swipe(tx, fingers: 4, states: 10, mmPerState: 0.5, end: false)
            _ = r.read(count: 1, timeoutMs: 2000)
            #expect(libevdev_get_event_value(r.dev, UInt32(EV_KEY), UInt32(BTN_TOUCH)) == 1, "fingers down mid-gesture")
            var second: Sender?
            switch ending {
            case .killed: tx.channel.close()   // what the kernel does for a killed sender: the socket closes, no bye
            case .bye: tx.close()
            case .replaced:
                second = try again()
            }
            #expect(eventually(3) { rx.stats.sessionsRemoved >= 1 })
            usleep(100_000)
            let fresh = try EvdevReader(node)
            let slots = (0..<REMOLO_TPDEV_SLOTS).map { libevdev_get_slot_value(fresh.dev, UInt32($0), UInt32(ABS_MT_TRACKING_ID)) }
            #expect(slots.allSatisfy { $0 == -1 }, "\(ending): a slot still down: \(slots)")
            #expect(libevdev_get_event_value(fresh.dev, UInt32(EV_KEY), UInt32(BTN_TOUCH)) == 0, "\(ending)")
            #expect(libevdev_get_event_value(fresh.dev, UInt32(EV_KEY), UInt32(BTN_TOOL_QUADTAP)) == 0, "\(ending)")
            second?.close()
            if ending == .replaced { tx.close() }
        }
    }
}
