import CEvdev
import Foundation
import RemoloPlayout
import RemoloInput
import Synchronization
import Testing
import RemoloTestSupport

// `remolo send --device` end to end in the real kernel: the test makes a
// touchpad, a mouse and a keyboard with uinput, drives them with scripted
// finger paths and clicks, the sender reads them (grabbed), `remolo
// receive` plays them into its own uinput pointer, and the test reads that
// pointer back with libevdev.
extension VMSuite {
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct Devices {
        /// The finger script: move, two-finger scroll, one/two/three-finger
        /// taps, tap-and-drag, a clickpad click in the bottom-right area,
        /// a thumb resting and moving in the button area.
        static func script() -> [PadStep] {
            var s: [PadStep] = []
            // One finger moves 40 mm right and 16 mm down, 1 mm a report.
            s.append(PadStep(fingers: [0: (800, 600)]))
            for i in 1...40 { s.append(PadStep(fingers: [0: (800 + 40 * Int32(i), 600 + 16 * Int32(i))])) }
            s.append(PadStep(fingers: [:], afterUs: 400_000))
            // Two fingers scroll 20 mm down, stop, lift (no glide).
            s.append(PadStep(fingers: [0: (1200, 600), 1: (2000, 600)]))
            for i in 1...20 { s.append(PadStep(fingers: [0: (1200, 600 + 40 * Int32(i)), 1: (2000, 600 + 40 * Int32(i))])) }
            s.append(PadStep(fingers: [0: (1200, 1400), 1: (2000, 1400)], afterUs: 200_000))
            s.append(PadStep(fingers: [:], afterUs: 400_000))
            // Taps: one finger (left), two (right), three (middle).
            s.append(PadStep(fingers: [0: (2000, 1000)], afterUs: 40_000))
            s.append(PadStep(fingers: [:], afterUs: 500_000))
            s.append(PadStep(fingers: [0: (1800, 1000), 1: (2300, 1000)], afterUs: 40_000))
            s.append(PadStep(fingers: [:], afterUs: 500_000))
            s.append(PadStep(fingers: [0: (1500, 1000), 1: (2000, 1000), 2: (2500, 1000)], afterUs: 40_000))
            s.append(PadStep(fingers: [:], afterUs: 500_000))
            // Tap-and-drag: tap, touch again within the drag timeout, move
            // 30 mm left, lift; drag lock ends 300 ms later.
            s.append(PadStep(fingers: [0: (3000, 1000)], afterUs: 40_000))
            s.append(PadStep(fingers: [:], afterUs: 60_000))
            s.append(PadStep(fingers: [0: (3000, 1000)]))
            for i in 1...30 { s.append(PadStep(fingers: [0: (3000 - 40 * Int32(i), 1000)])) }
            s.append(PadStep(fingers: [:], afterUs: 700_000))
            // A click in the bottom-right area: right.
            s.append(PadStep(fingers: [0: (3600, 2300)], afterUs: 50_000))
            s.append(PadStep(fingers: [0: (3600, 2300)], button: true, afterUs: 80_000))
            s.append(PadStep(fingers: [0: (3600, 2300)], button: false, afterUs: 50_000))
            s.append(PadStep(fingers: [:], afterUs: 400_000))
            // A thumb lands in the button area and slides 20 mm: nothing.
            s.append(PadStep(fingers: [0: (1000, 2330)]))
            for i in 1...20 { s.append(PadStep(fingers: [0: (1000 + 40 * Int32(i), 2330)])) }
            s.append(PadStep(fingers: [:], afterUs: 300_000))
            return s
        }

        static func config() throws -> InputConfig {
            var c = InputConfig(touchpad: TouchpadConfig(geometry: try Pad.geometry()))
            c.acceleration = 0   // speeds then do not matter: totals are exact
            return c
        }

        @Test func touchpadDrivesTheReceiversPointer() throws {
            let steps = Self.script()
            let want = try Expected(steps, config: try Self.config())
            // The resting thumb's slide must count for nothing.
            let withoutThumb = try Expected(Array(steps.dropLast(22)), config: try Self.config())
            #expect(want.dxQ8 == withoutThumb.dxQ8 && want.dyQ8 == withoutThumb.dyQ8)
            #expect(want.keys == [.key(BTN_LEFT, true), .key(BTN_LEFT, false), .key(BTN_RIGHT, true), .key(BTN_RIGHT, false),
                                  .key(BTN_MIDDLE, true), .key(BTN_MIDDLE, false), .key(BTN_LEFT, true), .key(BTN_LEFT, false),
                                  .key(BTN_RIGHT, true), .key(BTN_RIGHT, false)], "\(want.keys)")

            let rig = try DeviceRig("pad")
            defer { rig.stop() }
            let pad = try Pad.make(name: "Test touchpad")
            let other = try EvdevReader(pad.node)
            // `remolo devices`: the touchpad is usable and auto's pick; the
            // receiver's own pointer is not, and says why.
            let list = try run(CLIProcess.binary, "devices")
            let lines = list.output.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix(pad.node + " ") && $0.contains("touchpad") && $0.contains("100 x 60 mm") }, "\(list.output)")
            #expect(lines.contains { $0.contains("not usable") && $0.contains("own pointer") }, "\(list.output)")
            #expect(lines.last == "--device auto: \(pad.node) (Test touchpad)", "\(list.output)")
            let tx = try rig.send(["--device", pad.node, "--grab", "--accel", "0"])
            #expect(tx.output.contains("touchpad"), "\(tx.output)")
            let events = rig.play(steps, on: pad, thenInterrupt: tx)
            #expect(tx.wait() == 0, "\(tx.output)")
            let sent = try #require(tx.line("sent: "), "\(tx.output)")
            #expect(tx.output.contains("ended_by signal"), "\(tx.output)")
            #expect(!events.contains(Ev(EV_SYN, SYN_DROPPED, 0)), "the reader fell behind")

            // Exactly what the core makes of the script, through the wire.
            #expect(CLIProcess.field("dx_q8", in: sent) == want.dxQ8, "\(sent); core \(want.dxQ8)")
            #expect(CLIProcess.field("dy_q8", in: sent) == want.dyQ8, "\(sent); core \(want.dyQ8)")
            #expect(CLIProcess.field("scroll_v_q8", in: sent) == want.scrollVQ8, "\(sent); core \(want.scrollVQ8)")
            let dx = sum(events, REL_X), dy = sum(events, REL_Y), wheel = sum(events, REL_WHEEL_HI_RES)
            #expect(abs(dx * 256 - want.dxQ8) <= 128, "moved \(dx) px, core \(want.dxQ8) Q8")
            #expect(abs(dy * 256 - want.dyQ8) <= 128, "moved \(dy) px, core \(want.dyQ8) Q8")
            #expect(abs(wheel * 256 - want.scrollVQ8) <= 128, "scrolled \(wheel), core \(want.scrollVQ8) Q8")
            #expect(dy > 90 && wheel > 400, "one finger moved, two scrolled (natural: fingers down, content up)")
            let keys = events.filter { $0.type == UInt16(EV_KEY) }
            #expect(keys == want.keys, "\(keys): \(tx.output)")
            #expect(CLIProcess.field("overflows", in: tx.line("device: ") ?? "") == 0, "\(tx.output)")
            // The drag: the second left press holds across motion.
            let lefts = events.indices.filter { events[$0] == .key(BTN_LEFT, true) || events[$0] == .key(BTN_LEFT, false) }
            if lefts.count == 4 {
                let dragged = events[lefts[2]..<lefts[3]].filter { $0.type == UInt16(EV_REL) && $0.code == UInt16(REL_X) }
                #expect(dragged.reduce(0) { $0 + Int64($1.value) } < -150, "the drag moved left with the button held")
            }
            // Grabbed: no other reader saw the touchpad.
            #expect(other.read(count: 1, timeoutMs: 50, settleMs: 0).isEmpty, "events leaked past the grab")
        }

        /// A pad that reports no resolution: `remolo devices` says how to
        /// give its size, and with `--touchpad-size 100x60` (the pad's real
        /// size) the sender's totals are exactly those of the pad that
        /// reports 40 units per mm.
        @Test func touchpadWithoutResolutionTakesItsSize() throws {
            let steps = Array(Self.script().prefix(42)) // the one-finger move and its lift
            let want = try Expected(steps, config: try Self.config())
            let rig = try DeviceRig("pad0")
            defer { rig.stop() }
            let pad = try Pad.make(name: "Test touchpad without resolution", resolution: 0)
            let list = try run(CLIProcess.binary, "devices")
            #expect(list.output.contains("no resolution") && list.output.contains("--touchpad-size"), "\(list.output)")
            let refused = try run(CLIProcess.binary, "send", "--to", "127.0.0.1:9", "--device", pad.node, "--touchpad-size", "5x5")
            #expect(refused.status == 2 && refused.output.contains("--touchpad-size takes"), "\(refused.output)")
            let tx = try rig.send(["--device", pad.node, "--accel", "0", "--touchpad-size", "100x60"])
            _ = rig.play(steps, on: pad, thenInterrupt: tx)
            #expect(tx.wait() == 0, "\(tx.output)")
            let sent = try #require(tx.line("sent: "), "\(tx.output)")
            #expect(want.dxQ8 != 0 || want.dyQ8 != 0, "the script's first steps move")
            #expect(CLIProcess.field("dx_q8", in: sent) == want.dxQ8, "\(sent); core \(want.dxQ8)")
            #expect(CLIProcess.field("dy_q8", in: sent) == want.dyQ8, "\(sent); core \(want.dyQ8)")
        }

        @Test func mouseGrabButtonsWheelAndSIGINTMidDrag() throws {
            let rig = try DeviceRig("mouse")
            defer { rig.stop() }
            let mouse = try VirtualDevice.mouse(name: "Test mouse")
            let other = try EvdevReader(mouse.node)
            let tx = try rig.send(["--device", mouse.node, "--grab"])
            #expect(tx.output.contains("mouse"), "\(tx.output)")
            let events = rig.pointerEvents {
                // 125 Hz, a common mouse's report rate, in bursts of ten with
                // a pause: the kernel keeps only 64 events per reader, and a
                // guest starved of CPU must still keep up.
                for i in 0..<100 {
                    mouse.write(EV_REL, REL_X, 3); mouse.write(EV_REL, REL_Y, -2); mouse.syn()
                    usleep(i % 10 == 9 ? 150_000 : 8000)
                }
                for _ in 0..<5 { mouse.write(EV_REL, REL_WHEEL, 1); mouse.write(EV_REL, REL_WHEEL_HI_RES, 120); mouse.syn(); usleep(8000) }
                usleep(100_000)
                for b in [BTN_RIGHT, BTN_MIDDLE, BTN_SIDE, BTN_EXTRA] {
                    mouse.write(EV_KEY, b, 1); mouse.syn(); usleep(30_000)
                    mouse.write(EV_KEY, b, 0); mouse.syn(); usleep(30_000)
                }
                mouse.write(EV_KEY, BTN_LEFT, 1); mouse.syn(); usleep(20_000)
                for i in 0..<50 { mouse.write(EV_REL, REL_X, 2); mouse.syn(); usleep(i % 10 == 9 ? 150_000 : 8000) }
                usleep(300_000)
                tx.signal(SIGINT)   // mid-drag: the receiver must see left go up
                _ = tx.wait()
            }
            #expect(tx.wait() == 0, "\(tx.output)")
            #expect(tx.output.contains("ended_by signal"), "\(tx.output)")
            let sent = try #require(tx.line("sent: "), "\(tx.output)")
            // What the sender sent, the receiver played, exactly.
            #expect(CLIProcess.field("dx_q8", in: sent) == sum(events, REL_X) * 256
                    && CLIProcess.field("dy_q8", in: sent) == sum(events, REL_Y) * 256, "\(sent)")
            // And it is what the mouse did, unless the kernel dropped events
            // because the guest starved the sender of CPU (it says so).
            let overflows = CLIProcess.field("overflows", in: tx.line("device: ") ?? "") ?? -1
            if overflows == 0 {
                #expect(sum(events, REL_X) == 400 && sum(events, REL_Y) == -200, "1:1 mouse motion: \(tx.output)")
            } else {
                print("mouse: the kernel dropped events for the sender (\(overflows) overflows): totals not compared")
            }
            #expect(sum(events, REL_WHEEL_HI_RES) == 600 && sum(events, REL_WHEEL) == 5, "hi-res wheel: \(tx.output)")
            let keys = events.filter { $0.type == UInt16(EV_KEY) }
            #expect(keys == [.key(BTN_RIGHT, true), .key(BTN_RIGHT, false), .key(BTN_MIDDLE, true), .key(BTN_MIDDLE, false),
                             .key(BTN_SIDE, true), .key(BTN_SIDE, false), .key(BTN_EXTRA, true), .key(BTN_EXTRA, false),
                             .key(BTN_LEFT, true), .key(BTN_LEFT, false)], "\(keys): \(tx.output) \(rig.rx.output)")
            // The grab kept everything from the other reader, and ended with the sender.
            #expect(other.read(count: 1, timeoutMs: 50, settleMs: 0).isEmpty, "events leaked past the grab")
            mouse.write(EV_REL, REL_X, 1); mouse.syn()
            #expect(!other.read(count: 2, timeoutMs: 2000, settleMs: 0).isEmpty, "the grab outlived the sender")
        }

        @Test func unplugReleasesAndChordLetsGo() throws {
            let rig = try DeviceRig("unplug")
            defer { rig.stop() }
            final class Plug: @unchecked Sendable { var mouse: VirtualDevice? }
            let plug = Plug()
            plug.mouse = try VirtualDevice.mouse(name: "Test mouse 2")
            let tx = try rig.send(["--device", plug.mouse!.node, "--grab"])
            #expect(tx.output.contains("Ctrl+Alt+Esc"), "\(tx.output)")
            // Plugged in after the sender started: watched all the same.
            let keyboard = try VirtualDevice.keyboard(name: "Test keyboard")
            let log = Mutex<[String]>([])
            let events = rig.pointerEvents {
                plug.mouse!.write(EV_KEY, BTN_LEFT, 1); plug.mouse!.syn(); usleep(20_000)
                for _ in 0..<10 { plug.mouse!.write(EV_REL, REL_X, 5); plug.mouse!.syn(); usleep(8000) }
                usleep(200_000)
                plug.mouse = nil   // unplugged with the button held
                let gone = eventually(10) { tx.output.contains("is gone") }
                plug.mouse = try? VirtualDevice.mouse(name: "Test mouse 2")
                let back = eventually(10) { tx.output.contains("is back") }
                log.withLock { $0 += ["gone \(gone)", "back \(back)"] }
                for _ in 0..<10 { plug.mouse?.write(EV_REL, REL_Y, 3); plug.mouse?.syn(); usleep(8000) }
                usleep(2_500_000)   // the sender looks for new keyboards every 2 s
                for k in [KEY_LEFTCTRL, KEY_LEFTALT, KEY_ESC] { keyboard.write(EV_KEY, k, 1); keyboard.syn(); usleep(10_000) }
                _ = tx.wait(upTo: 10)
                for k in [KEY_ESC, KEY_LEFTALT, KEY_LEFTCTRL] { keyboard.write(EV_KEY, k, 0); keyboard.syn() }
            }
            #expect(log.withLock { $0 } == ["gone true", "back true"], "\(tx.output)")
            #expect(tx.wait() == 0, "\(tx.output)")
            #expect(tx.output.contains("ended_by chord"), "\(tx.output)")
            #expect(events.filter { $0.type == UInt16(EV_KEY) } == [.key(BTN_LEFT, true), .key(BTN_LEFT, false)],
                    "unplugged mid-drag: the button went up")
            #expect(sum(events, REL_X) == 50 && sum(events, REL_Y) == 30, "motion before and after the device came back")
        }

        /// tx.cpu_pct and tx.sample_to_send_us: a mouse reporting at 120 Hz
        /// for 5 s. Guest code runs under TCG, several times slower than
        /// hardware: these figures are upper bounds.
        @Test func senderCostAt120Hz() throws {
            let rig = try DeviceRig("bench")
            defer { rig.stop() }
            let mouse = try VirtualDevice.mouse(name: "Test mouse 120")
            let tx = try rig.send(["--device", mouse.node, "--grab"])
            let events = rig.pointerEvents {
                let start = monotonicNs()
                for i in 1...600 {
                    let due = start + UInt64(i) * 8_333_333
                    let now = monotonicNs()
                    if due > now { usleep(UInt32((due - now) / 1000)) }
                    mouse.write(EV_REL, REL_X, 1); mouse.write(EV_REL, REL_Y, 1); mouse.syn()
                }
                usleep(200_000)
                tx.signal(SIGINT)
                _ = tx.wait()
            }
            #expect(tx.wait() == 0, "\(tx.output)")
            let d = try #require(tx.line("device: "), "\(tx.output)")
            print("bench (VM, TCG): tx.cpu_pct \(d.split(separator: " ").drop { $0 != "cpu_pct" }.dropFirst().first ?? "?")"
                  + " tx.sample_to_send_us p50 \(CLIProcess.field("sample_to_send_us_p50", in: d) ?? -1)"
                  + " p99 \(CLIProcess.field("sample_to_send_us_p99", in: d) ?? -1): \(d)")
            #expect(CLIProcess.field("dx_q8", in: tx.line("sent: ") ?? "") == sum(events, REL_X) * 256)
            #expect((CLIProcess.field("samples_sent", in: d) ?? 0) > 0, "\(d)")
        }
    }
}
