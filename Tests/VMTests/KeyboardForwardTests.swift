import CEvdev
import Foundation
import RemoloPlayout
import RemoloDevices
import RemoloReceiver
import RemoloSender
import RemoloSession
import Synchronization
import Testing
import RemoloTestSupport

// `remolo send --device ... --grab --keyboard` in the real kernel: a uinput
// keyboard on the sender's side, grabbed and read by a `remolo send`
// process, its keys sent to a receiver in this process (its keyboard's
// control-plane counters read directly; its "Remolo keyboard" device read
// back too where the receiver makes one).

extension VirtualDevice {
    /// A keyboard with every key from KEY_ESC to KEY_MICMUTE and no EV_REP
    /// (the kernel then makes no repeats of its own: the test writes them).
    static func fullKeyboard(name: String) throws -> VirtualDevice {
        try VirtualDevice(name: name) { d in key(d, Array(Int32(KEY_ESC)...Int32(KEY_MICMUTE))) }
    }

    /// Writes each (code, value) as its own report, `gapUs` apart.
    func keys(_ script: [(Int32, Int32)], gapUs: UInt32 = 15_000) {
        for (c, v) in script {
            write(EV_KEY, c, v)
            syn()
            usleep(gapUs)
        }
    }
}

/// The first event node with this name.
func inputNode(named name: String) -> String? {
    for n in InputDevices.nodes() {
        let fd = open(n, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { continue }
        defer { close(fd) }
        var d: OpaquePointer?
        guard libevdev_new_from_fd(fd, &d) == 0, let d else { continue }
        defer { libevdev_free(d) }
        if String(cString: libevdev_get_name(d)) == name { return n }
    }
    return nil
}

/// A receiver in this process (its keyboard counters at hand) with a real
/// uinput pointer, and a paired sender config for `remolo send`.
final class KeyRig: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; the receiver is Sendable,
    // and the keyboard reader is used by the test's thread only.
    let c: PairedConfigs
    let rx: Receiver
    /// The receiver's own keyboard, where it makes one ("Remolo keyboard").
    let remoloKeyboard: EvdevReader?

    init(_ label: String, keyboard: ReceiverKeyboard = ReceiverKeyboard()) throws {
        c = try PairedConfigs(label: label, typing: true)
        let dir = ConfigDirectory(path: c.receiver)
        let trust = try ReceiverTrust(identity: try Identity.loadOrCreate(in: dir), directory: dir)
        rx = try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .uinput(name: PointerDevice.defaultName),
                          keyboard: keyboard)
        remoloKeyboard = try inputNode(named: "Remolo keyboard").map { try EvdevReader($0) }
        if remoloKeyboard == nil { print("keyboard forwarding: no \"Remolo keyboard\" device; checked through the receiver's counters only") }
    }

    func send(_ args: [String]) throws -> CLIProcess {
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(rx.port)"] + args, configDir: c.sender, log: c.log("tx"))
        _ = try #require(tx.line("reading ", timeout: 30), "send did not start reading: \(tx.output)")
        return tx
    }

    /// Runs `script` on a thread of its own; the receiver's keyboard's
    /// key events meanwhile (none where it has no keyboard device).
    func played(while script: @escaping @Sendable () -> Void) -> [Ev] {
        let done = Mutex(false)
        Thread {
            script()
            done.withLock { $0 = true }
        }.start()
        guard let k = remoloKeyboard else {
            _ = eventually(120) { done.withLock { $0 } }
            return []
        }
        // Repeats on that device are its own (EV_REP: the desktop's job).
        return k.read(until: { done.withLock { $0 } }).filter { $0.type == UInt16(EV_KEY) && $0.value != 2 }
    }

    var counters: KeyboardCounters { rx.keyboardCounters }
    var nothingRefused: Bool { counters.refused.values.allSatisfy { $0 == 0 } }

    func stop() {
        rx.stop()
        c.remove()
    }
}

extension VMSuite {
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct KeyboardForward {
        /// Typed: h e l l o, then Shift+A with three autorepeats of A.
        static let typed: [(Int32, Int32)] = [
            (KEY_H, 1), (KEY_H, 0), (KEY_E, 1), (KEY_E, 0), (KEY_L, 1), (KEY_L, 0), (KEY_L, 1), (KEY_L, 0), (KEY_O, 1), (KEY_O, 0),
            (KEY_LEFTSHIFT, 1), (KEY_A, 1), (KEY_A, 2), (KEY_A, 2), (KEY_A, 2), (KEY_A, 0), (KEY_LEFTSHIFT, 0),
        ]

        @Test func keysGoInOrderWithoutRepeatsOrTheChordsEsc() throws {
            let rig = try KeyRig("keys")
            defer { rig.stop() }
            let mouse = try VirtualDevice.mouse(name: "Test mouse keys")
            let kb = try VirtualDevice.fullKeyboard(name: "Test keyboard keys")
            let local = try EvdevReader(kb.node)
            let tx = try rig.send(["--device", mouse.node, "--grab", "--keyboard", kb.node])
            #expect(eventually(20) { tx.output.contains("(Test keyboard keys) grabbed") }, "\(tx.output)")
            let steps = Mutex<[String]>([])
            let played = rig.played {
                kb.keys(Self.typed)
                let typed = eventually(10) { rig.counters.keyEvents == 14 }
                // The let-go chord, on the grabbed keyboard itself.
                kb.keys([(KEY_LEFTCTRL, 1), (KEY_LEFTALT, 1), (KEY_ESC, 1)])
                let ended = tx.wait(upTo: 20)
                steps.withLock { $0 = ["typed \(typed)", "ended \(ended.map(String.init) ?? "no")"] }
            }
            #expect(steps.withLock { $0 } == ["typed true", "ended 0"], "\(tx.output)")
            // Nothing reached a local reader while the keyboard was grabbed.
            #expect(local.read(count: 1, timeoutMs: 50, settleMs: 0).isEmpty, "keys leaked past the grab")
            kb.keys([(KEY_ESC, 0), (KEY_LEFTALT, 0), (KEY_LEFTCTRL, 0)], gapUs: 0)
            // The grab ended with the sender: these reach it.
            #expect(local.read(count: 6, timeoutMs: 3000, settleMs: 0).contains(.key(KEY_ESC, false)), "the grab outlived the sender")
            #expect(tx.output.contains("ended_by chord") && tx.output.contains("(its last key was not sent)"), "\(tx.output)")
            // 14 typed, Ctrl and Alt pressed, and released at let-go; no Esc,
            // no repeat: every release matched a press (none refused).
            #expect(eventually(5) { rig.counters.keyMessages == 18 }, "\(rig.counters)")
            #expect(rig.counters.keyEvents == 18 && rig.nothingRefused, "\(rig.counters)")
            let device = try #require(tx.line("device: "), "\(tx.output)")
            #expect(CLIProcess.field("keys_sent", in: device) == 18, "\(device)")
            #expect(CLIProcess.field("repeats_ignored", in: device) == 3, "\(device)")
            #expect(CLIProcess.field("keys_not_sent", in: device) == 0, "\(device)")
            let sent = try #require(tx.line("sent: "), "\(tx.output)")
            #expect(CLIProcess.field("keys", in: sent) == 18 && CLIProcess.field("keys_refused", in: sent) == 0, "\(sent)")
            if rig.remoloKeyboard != nil {
                let want = Self.typed.filter { $0.1 != 2 }.map { Ev.key($0.0, $0.1 == 1) }
                    + [.key(KEY_LEFTCTRL, true), .key(KEY_LEFTALT, true), .key(KEY_LEFTCTRL, false), .key(KEY_LEFTALT, false)]
                #expect(played == want, "\(played)")
            }
        }

        /// `--keyboard auto`: the test's keyboard, never the receiver's own
        /// devices; unplugged with Shift held (released on the receiver),
        /// found again by name and grabbed again.
        @Test func unpluggedKeyboardIsReleasedAndGrabbedAgain() throws {
            let rig = try KeyRig("kbplug")
            defer { rig.stop() }
            final class Plug: @unchecked Sendable { var kb: VirtualDevice? }
            let plug = Plug()
            let mouse = try VirtualDevice.mouse(name: "Test mouse plug")
            plug.kb = try VirtualDevice.fullKeyboard(name: "Test keyboard plug")
            let tx = try rig.send(["--device", mouse.node, "--grab", "--keyboard", "auto"])
            let reading = try #require(tx.line("reading "), "\(tx.output)")
            #expect(reading.contains("(Test keyboard plug)") && !reading.contains("Remolo"), "\(reading)")
            #expect(eventually(20) { tx.output.contains("(Test keyboard plug) grabbed") }, "\(tx.output)")
            let steps = Mutex<[String]>([])
            _ = rig.played {
                plug.kb!.keys([(KEY_LEFTSHIFT, 1)])
                let held = eventually(10) { rig.counters.keyEvents == 1 }
                plug.kb = nil   // unplugged with Shift held
                let gone = eventually(10) { tx.output.contains("is gone") && tx.output.contains("its keys released on the receiver") }
                let released = eventually(10) { rig.counters.keyEvents == 2 }
                plug.kb = try? VirtualDevice.fullKeyboard(name: "Test keyboard plug")
                let back = eventually(10) { tx.output.contains("Test keyboard plug is back") }
                let regrabbed = eventually(10) { tx.output.components(separatedBy: "(Test keyboard plug) grabbed").count == 3 }
                plug.kb?.keys([(KEY_A, 1), (KEY_A, 0)])
                let typed = eventually(10) { rig.counters.keyEvents == 4 }
                tx.signal(SIGINT)
                _ = tx.wait(upTo: 20)
                steps.withLock { $0 = ["held \(held)", "gone \(gone)", "released \(released)", "back \(back)",
                                       "regrabbed \(regrabbed)", "typed \(typed)"] }
            }
            #expect(steps.withLock { $0 } == ["held true", "gone true", "released true", "back true", "regrabbed true", "typed true"],
                    "\(tx.output)")
            #expect(tx.wait() == 0 && tx.output.contains("ended_by signal"), "\(tx.output)")
            #expect(rig.counters.keyMessages == 4 && rig.nothingRefused, "\(rig.counters)")
            let device = try #require(tx.line("device: "), "\(tx.output)")
            #expect(CLIProcess.field("keyboard_unplugs", in: device) == 1 && CLIProcess.field("keys_sent", in: device) == 4, "\(device)")
        }

        /// Enter still held when the sender starts (the key that started
        /// it): the keyboard is grabbed only once Enter is up, so its
        /// release reaches the local reader that saw its press, and the
        /// receiver never gets it.
        @Test func aHeldKeyDelaysTheGrab() throws {
            let rig = try KeyRig("kbheld")
            defer { rig.stop() }
            let mouse = try VirtualDevice.mouse(name: "Test mouse held")
            let kb = try VirtualDevice.fullKeyboard(name: "Test keyboard held")
            let local = try EvdevReader(kb.node)
            kb.keys([(KEY_ENTER, 1)])
            let tx = try rig.send(["--device", mouse.node, "--grab", "--keyboard", kb.node])
            #expect(eventually(10) { tx.output.contains("keys held; grabbed once they are all up") }, "\(tx.output)")
            #expect(!tx.output.contains(") grabbed"), "\(tx.output)")
            kb.keys([(KEY_ENTER, 0)])
            #expect(eventually(10) { tx.output.contains("(Test keyboard held) grabbed") }, "\(tx.output)")
            let seen = local.read(count: 4, timeoutMs: 3000, settleMs: 100)
            #expect(seen.filter { $0.type == UInt16(EV_KEY) } == [.key(KEY_ENTER, true), .key(KEY_ENTER, false)], "\(seen)")
            kb.keys([(KEY_A, 1), (KEY_A, 0)])
            #expect(eventually(10) { rig.counters.keyEvents == 2 }, "\(rig.counters)")
            #expect(local.read(count: 1, timeoutMs: 50, settleMs: 0).isEmpty, "keys leaked past the grab")
            tx.signal(SIGINT)
            #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")
            #expect(rig.counters.keyMessages == 2 && rig.nothingRefused, "\(rig.counters)")
        }

        /// A receiver that takes no keys (`--no-keyboard`): the sender says
        /// why once and leaves the keyboard to this machine (not grabbed);
        /// its chord still lets go.
        @Test func keyboardStaysLocalWhenTheReceiverTakesNoKeys() throws {
            let rig = try KeyRig("kboff", keyboard: .off)
            defer { rig.stop() }
            let mouse = try VirtualDevice.mouse(name: "Test mouse off")
            let kb = try VirtualDevice.fullKeyboard(name: "Test keyboard off")
            let local = try EvdevReader(kb.node)
            let tx = try rig.send(["--device", mouse.node, "--grab", "--keyboard", kb.node])
            #expect(eventually(10) { tx.output.contains("not grabbed") }, "\(tx.output)")
            kb.keys([(KEY_A, 1), (KEY_A, 0)])
            let seen = local.read(count: 4, timeoutMs: 3000, settleMs: 0)
            #expect(seen.contains(.key(KEY_A, true)) && seen.contains(.key(KEY_A, false)), "typed locally: \(seen)")
            kb.keys([(KEY_RIGHTCTRL, 1), (KEY_RIGHTALT, 1), (KEY_ESC, 1)])
            #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")
            kb.keys([(KEY_ESC, 0), (KEY_RIGHTALT, 0), (KEY_RIGHTCTRL, 0)], gapUs: 0)
            #expect(tx.output.contains("ended_by chord"), "\(tx.output)")
            let why = KeyboardStatus.off.description
            #expect(tx.output.components(separatedBy: why).count == 2, "said once why: \(tx.output)")
            #expect(!tx.output.contains(") grabbed"), "\(tx.output)")
            #expect(rig.counters.keyMessages == 0, "\(rig.counters)")
            let device = try #require(tx.line("device: "), "\(tx.output)")
            #expect(CLIProcess.field("keys_sent", in: device) == 0, "\(device)")
        }

        /// The session lost (the receiver stopped) with Shift held: keys of
        /// the outage are not sent late; Shift, still held, is pressed again
        /// on the new session, and released there.
        @Test func outageKeysAreNotSentLate() throws {
            let c = try PairedConfigs(label: "kbout", typing: true)
            defer { c.remove() }
            let dir = ConfigDirectory(path: c.receiver)
            let trust = try ReceiverTrust(identity: try Identity.loadOrCreate(in: dir), directory: dir)
            var rx: Receiver? = try Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .uinput(name: PointerDevice.defaultName))
            let port = rx!.port
            let mouse = try VirtualDevice.mouse(name: "Test mouse outage")
            let kb = try VirtualDevice.fullKeyboard(name: "Test keyboard outage")
            let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--device", mouse.node, "--grab", "--keyboard", kb.node],
                                    configDir: c.sender, log: c.log("tx"))
            #expect(eventually(30) { tx.output.contains("(Test keyboard outage) grabbed") }, "\(tx.output)")
            kb.keys([(KEY_LEFTSHIFT, 1), (KEY_B, 1), (KEY_B, 0)])
            #expect(eventually(10) { rx!.keyboardCounters.keyEvents == 3 }, "\(rx!.keyboardCounters)")
            rx!.stop()
            rx = nil
            #expect(eventually(15) { tx.output.contains("session lost") }, "\(tx.output)")
            // Typed while the session is out: never sent.
            kb.keys([(KEY_C, 1), (KEY_C, 0), (KEY_D, 1), (KEY_D, 0)])
            rx = try Receiver(host: "127.0.0.1", port: port, trust: trust, output: .uinput(name: PointerDevice.defaultName))
            defer { rx?.stop() }
            #expect(eventually(20) { tx.output.contains("reconnected") }, "\(tx.output)")
            // Shift, held across the outage, pressed again on the new session.
            #expect(eventually(10) { rx!.keyboardCounters.keyEvents == 1 }, "\(rx!.keyboardCounters)")
            kb.keys([(KEY_LEFTSHIFT, 0)])
            #expect(eventually(10) { rx!.keyboardCounters.keyEvents == 2 }, "\(rx!.keyboardCounters)")
            tx.signal(SIGINT)
            #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")
            #expect(rx!.keyboardCounters.keyMessages == 2 && rx!.keyboardCounters.refused.values.allSatisfy { $0 == 0 },
                    "\(rx!.keyboardCounters)")
            let device = try #require(tx.line("device: "), "\(tx.output)")
            #expect(CLIProcess.field("keys_not_sent", in: device) == 4, "\(device)")
            // Sent: Shift, B down and up; Shift again on the new session and its release.
            #expect(CLIProcess.field("keys_sent", in: device) == 5, "\(device)")
        }
    }
}
