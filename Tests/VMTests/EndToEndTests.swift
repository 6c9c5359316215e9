import CEvdev
import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloLab
import RemoloTrace
@testable import RemoloSession
import RemoloSystem
import Synchronization
import Testing
import RemoloTestSupport

/// What the sender thread reports back.
private final class SendOutcome: Sendable {
    let stats = Mutex<SenderStats?>(nil)
    let error = Mutex<String?>(nil)
    let done = Mutex(false)
}

extension VMSuite {
    /// A sender and a receiver over loopback UDP and TCP in one process: the
    /// real io_uring loop writes the real uinput device, read back with
    /// libevdev from /dev/input/eventN.
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct EndToEnd {
        @Test(arguments: [SyntheticGesture.Shape.swipe, .circle])
        func senderMovesTheKernelPointer(_ shape: SyntheticGesture.Shape) throws {
            let senderID = Identity.generate()
            let receiverID = Identity.generate()
            var list = PeerList()
            list.add(senderID.publicKey, label: "e2e sender")
            let trust = try ReceiverTrust(identity: receiverID, directory: nil, authorized: list)
            let rx = try Receiver(host: "127.0.0.1", port: 0, trust: trust,
                                  output: .uinput(name: "Remolo e2e \(shape)"))
            defer { rx.stop() }
            let node = try #require(rx.loop.devnode)
            let reader = try EvdevReader(node)
            #expect(String(cString: libevdev_get_name(reader.dev)) == "Remolo e2e \(shape)")

            let outcome = SendOutcome()
            let port = rx.port
            let receiverKey = receiverID.publicKey
            let t = Thread {
                do {
                    let tx = try Sender.connect(host: "127.0.0.1", port: port, identity: senderID,
                                                receiver: receiverKey)
                    // Several pixels per packet, so each packet's motion
                    // visibly becomes several frames.
                    var g = SyntheticGesture(shape, size: shape == .swipe ? 600 : 120)
                    try tx.run(&g, seconds: 1.0)
                    tx.close()
                    outcome.stats.withLock { $0 = tx.stats }
                } catch {
                    outcome.error.withLock { $0 = "\(error)" }
                }
                outcome.done.withLock { $0 = true }
            }
            t.start()
            let events = reader.read {
                outcome.done.withLock { $0 } && rx.stats.sessionsRemoved >= 1
            }
            #expect(outcome.error.withLock { $0 } == nil, "sender: \(outcome.error.withLock { $0 } ?? "")")
            let sent = try #require(outcome.stats.withLock { $0 })
            let st = rx.stats

            #expect(!events.contains(Ev(EV_SYN, SYN_DROPPED, 0)), "the reader fell behind")
            let dx = events.filter { $0 == Ev.rel(REL_X, $0.value) }.reduce(Int64(0)) { $0 + Int64($1.value) }
            let dy = events.filter { $0 == Ev.rel(REL_Y, $0.value) }.reduce(Int64(0)) { $0 + Int64($1.value) }
            // Conservation: the nearest whole pixel of what was sent (the
            // playout keeps at most half a pixel back).
            #expect(abs(dx * 256 - sent.totalDX) <= 128, "x: \(dx) px, sent \(sent.totalDX) Q8")
            #expect(abs(dy * 256 - sent.totalDY) <= 128, "y: \(dy) px, sent \(sent.totalDY) Q8")
            #expect(dx == st.totalDX && dy == st.totalDY)
            #expect(st.opened == sent.motionDatagrams + sent.heartbeats, "\(st.summary)")
            #expect(st.dropped == 0, "\(st.summary)")
            #expect(sent.motionDatagrams >= 60, "sent \(sent.motionDatagrams)")

            // Spread: more frames than packets, each a small step.
            let frames = events.filter { $0 == .syn }.count
            #expect(frames > Int(sent.motionDatagrams), "frames \(frames) for \(sent.motionDatagrams) packets")
            #expect(UInt64(frames) == st.frames, "every frame the loop wrote arrived")

            let keys = events.filter { $0.type == UInt16(EV_KEY) }
            if shape == .swipe {
                #expect(keys == [.key(BTN_LEFT, true), .key(BTN_LEFT, false)], "\(keys)")
                // Dragged: motion between the press and the release.
                let down = events.firstIndex(of: .key(BTN_LEFT, true)) ?? 0
                let up = events.firstIndex(of: .key(BTN_LEFT, false)) ?? 0
                let dragged = events[down..<up].filter { $0.type == UInt16(EV_REL) }.count
                #expect(dragged > events.filter { $0.type == UInt16(EV_REL) }.count / 2)
            } else {
                #expect(keys.isEmpty)
            }
            // The timer stops once everything has played.
            #expect(eventually(2) { !rx.stats.timerRunning })
        }

        /// A sender that vanishes mid-drag: the session ends and the kernel
        /// sees the button go up.
        @Test func buttonReleasedWhenSenderVanishes() throws {
            let senderID = Identity.generate()
            let receiverID = Identity.generate()
            var list = PeerList()
            list.add(senderID.publicKey, label: "e2e sender")
            let trust = try ReceiverTrust(identity: receiverID, directory: nil, authorized: list)
            let rx = try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .uinput(name: "Remolo e2e drop"))
            defer { rx.stop() }
            let reader = try EvdevReader(try #require(rx.loop.devnode))
            let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: senderID,
                                        receiver: receiverID.publicKey)
            try tx.button(.right, down: true, at: senderClockUs())
            try tx.send(.motion(dx: 256 * 9, dy: 0), at: senderClockUs())
            usleep(150_000)
            tx.channel.close()   // no bye
            let events = reader.read { rx.stats.sessionsRemoved >= 1 }
            #expect(events.filter { $0.type == UInt16(EV_KEY) } == [.key(BTN_RIGHT, true), .key(BTN_RIGHT, false)])
            #expect(events.filter { $0.type == UInt16(EV_REL) }.reduce(0) { $0 + $1.value } == 9)
        }
    }
}

extension VMSuite.EndToEnd {
    /// The commands themselves: `remolo receive --pair` and `remolo send
    /// --pair CODE` as separate processes, the pointer read back from the
    /// device the receiver made.
    @Test func cliReceiveAndSend() throws {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-e2e-\(getpid())")
        let rxDir = tmp.appendingPathComponent("rx").path, txDir = tmp.appendingPathComponent("tx").path
        try FileManager.default.createDirectory(atPath: rxDir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: txDir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: tmp) }
        let port = 7400 + Int(getpid() % 500)
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--pair", "--seconds", "60"],
                                configDir: rxDir, log: tmp.appendingPathComponent("rx.log").path)
        defer { if rx.process.isRunning { rx.process.terminate() }; _ = rx.wait() }
        let listening = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
        let node = try #require(listening.split(separator: " ").last.map(String.init))
        #expect(node.hasPrefix("/dev/input/event"), "\(listening)")
        let codeLine = try #require(rx.line("pairing code: "))
        let code = String(codeLine.dropFirst("pairing code: ".count))
        let reader = try EvdevReader(node)

        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--pair", code, "--gesture", "swipe",
                                 "--seconds", "1", "--size", "300"], configDir: txDir,
                                log: tmp.appendingPathComponent("tx.log").path)
        let done = Mutex(false)
        let waiter = Thread {
            tx.process.waitUntilExit()
            done.withLock { $0 = true }
        }
        waiter.start()
        let events = reader.read {
            done.withLock { $0 } && rx.output.contains("ended")
        }
        #expect(tx.wait() == 0, "send: \(tx.output)")
        let sent = try #require(tx.line("sent: "), "\(tx.output)")
        let f = sent.split(separator: " ").map(String.init)
        let q8x = try #require(f.firstIndex(of: "dx_q8").flatMap { Int64(f[$0 + 1]) })
        let q8y = try #require(f.firstIndex(of: "dy_q8").flatMap { Int64(f[$0 + 1]) })
        let dx = events.filter { $0 == Ev.rel(REL_X, $0.value) }.reduce(Int64(0)) { $0 + Int64($1.value) }
        let dy = events.filter { $0 == Ev.rel(REL_Y, $0.value) }.reduce(Int64(0)) { $0 + Int64($1.value) }
        #expect(abs(dx * 256 - q8x) <= 128 && abs(dy * 256 - q8y) <= 128, "moved \(dx),\(dy) px; \(sent)")
        #expect(dx >= 299, "the swipe is 300 px long")
        #expect(events.filter { $0.type == UInt16(EV_KEY) } == [.key(BTN_LEFT, true), .key(BTN_LEFT, false)])
        // Spread rather than one frame per packet. Under software emulation the
        // 480 Hz timer misses ticks (merged into one frame each), so the bound
        // is half the 120 packets; the host tests check frames > packets.
        #expect(events.filter { $0 == .syn }.count > 60, "spread over many frames")
        #expect(!events.contains(Ev(EV_SYN, SYN_DROPPED, 0)))
        rx.process.terminate()   // SIGTERM: a clean stop
        #expect(rx.wait() == 0, "\(rx.output)")
        #expect(rx.output.contains("final: "))
    }
}

extension VMSuite.EndToEnd {
    /// Past every session timeout with the real defaults: a 75 s drag whose
    /// control channel carries only the press, pings and the release. The
    /// pointer's totals must match the whole run, not its first 30 s.
    @Test func cliSessionOutlivesIdleTimeout() throws {
        let c = try PairedConfigs(label: "long")
        defer { c.remove() }
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--seconds", "200"],
                                configDir: c.receiver, log: c.log("rx"))
        defer { if rx.process.isRunning { rx.process.terminate() }; _ = rx.wait() }
        let listening = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
        let node = try #require(listening.split(separator: " ").last.map(String.init))
        let reader = try EvdevReader(node)
        let seconds = 75
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "swipe", "--size", "3000",
                                 "--seconds", "\(seconds)"], configDir: c.sender, log: c.log("tx"))
        let done = Mutex(false)
        Thread { tx.process.waitUntilExit(); done.withLock { $0 = true } }.start()
        let events = reader.read(timeoutMs: UInt64(seconds + 60) * 1000) {
            done.withLock { $0 } && rx.output.contains("ended")
        }
        #expect(tx.wait() == 0, "send: \(tx.output)")
        let sent = try #require(tx.line("sent: "), "\(tx.output)")
        #expect(CLIProcess.field("sessions_lost", in: sent) == 0, "\(sent)")
        let q8x = try #require(CLIProcess.field("dx_q8", in: sent))
        let dx = events.filter { $0 == Ev.rel(REL_X, $0.value) }.reduce(Int64(0)) { $0 + Int64($1.value) }
        // A session dropped at 30 s would stop near 960 px (the ease-in-out's 40%).
        #expect(abs(dx * 256 - q8x) <= 128, "moved \(dx) px of \(q8x) Q8: \(sent)")
        #expect(dx >= 2999, "the drag is 3000 px long")
        #expect(events.filter { $0.type == UInt16(EV_KEY) } == [.key(BTN_LEFT, true), .key(BTN_LEFT, false)])
        #expect(!rx.output.contains("timed out"), "\(rx.output)")
    }
}
