import CEvdev
import Foundation
import RemoloPlayout
import RemoloSender
import RemoloSession
import Testing
import RemoloTestSupport

// Typing in the real kernel: `remolo receive --keymap L` with its real
// "Remolo keyboard", `remolo send --type`, and a session that holds a key
// when it ends. Read back from the keyboard's own event node.

/// evdev codes, written out so that a wrong table in the code under test
/// cannot agree with itself (<linux/input-event-codes.h>).
private let SHIFT: UInt16 = 42, ALTGR: UInt16 = 100, CTRL: UInt16 = 29
private func tap(_ c: UInt16) -> [Ev] { [.key(Int32(c), true), .key(Int32(c), false)] }
private func dn(_ c: UInt16) -> Ev { .key(Int32(c), true) }
private func up(_ c: UInt16) -> Ev { .key(Int32(c), false) }

/// "Hello, World! 123 @#": us has Shift around H, W and '!', and one Shift
/// held over "@#" (Shift+2, Shift+3); de has '@' as AltGr+q and '#' on its
/// own key (KEY_BACKSLASH), from /usr/share/X11/xkb/symbols/de.
private let hello = "Hello, World! 123 @#"
private let common: [Ev] = [dn(SHIFT)] + tap(35) + [up(SHIFT)] + tap(18) + tap(38) + tap(38) + tap(24) + tap(51) + tap(57)
    + [dn(SHIFT)] + tap(17) + [up(SHIFT)] + tap(24) + tap(19) + tap(38) + tap(32)
    + [dn(SHIFT)] + tap(2) + [up(SHIFT)] + tap(57) + tap(2) + tap(3) + tap(4) + tap(57)
private let helloUS = common + [dn(SHIFT)] + tap(3) + tap(4) + [up(SHIFT)]
private let helloDE = common + [dn(ALTGR)] + tap(16) + [up(ALTGR)] + tap(43)

extension VMSuite.EndToEnd {
    /// A receiver process typing in `layout`, on a real uinput keyboard.
    private struct TypingRig {
        let c: PairedConfigs
        let port: UInt16
        let rx: CLIProcess
        let keyboard: EvdevReader
        let node: String

        init(_ label: String, layout: String) throws {
            c = try PairedConfigs(label: label, typing: true)
            port = try freePort()
            rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--keymap", layout, "--no-announce",
                                 "--output", "uinput", "--seconds", "120"], configDir: c.receiver, log: c.log("rx"))
            _ = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
            node = try #require(inputNode(named: "Remolo keyboard"), "no Remolo keyboard: \(rx.output)")
            keyboard = try EvdevReader(node)
        }

        func send(_ args: [String]) throws -> CLIProcess {
            try CLIProcess(["send", "--to", "127.0.0.1:\(port)"] + args, configDir: c.sender, log: c.log("tx"))
        }

        /// Key changes on the keyboard (repeats are the desktop's own):
        /// until `count` of them came (or 20 s passed), then whatever else
        /// comes within 300 ms.
        func keys(count: Int) -> [Ev] {
            func changes(_ e: [Ev]) -> [Ev] { e.filter { $0.type == UInt16(EV_KEY) && $0.value != 2 } }
            var out: [Ev] = []
            let deadline = Date().addingTimeInterval(20)
            while out.count < count && Date() < deadline {
                out += changes(keyboard.read(count: 1, timeoutMs: 1000, settleMs: 0))
            }
            return out + changes(keyboard.read(count: 0, timeoutMs: 300, settleMs: 300))
        }

        func stop() {
            rx.signal(SIGTERM)
            _ = rx.wait(upTo: 20)
            c.remove()
        }
    }

    /// `Hello, World! 123 @#` typed with --keymap us and de: exactly the
    /// key sequence each layout types it with; then a character the layout
    /// lacks is reported to the sender and not typed.
    @Test(arguments: ["us", "de"])
    func typedTextInTheReceiversLayout(_ layout: String) throws {
        let rig = try TypingRig("type-\(layout)", layout: layout)
        defer { rig.stop() }
        let want = layout == "us" ? helloUS : helloDE
        // Read while the sender types: a reader that waits lets the
        // kernel's 64-event buffer overflow (SYN_DROPPED), as any slow
        // reader of a keyboard would.
        let tx = try rig.send(["--seconds", "0", "--type", hello])
        let got = rig.keys(count: want.count)
        #expect(tx.wait(upTo: 30) == 0, "\(tx.output)")
        #expect(got == want, "tx: \(tx.output)")

        // ж is in neither layout: a and b are typed, ж is reported.
        let tx2 = try rig.send(["--seconds", "0", "--type", "aжb"])
        #expect(rig.keys(count: 4) == tap(30) + tap(48))
        #expect(tx2.wait(upTo: 30) == 0, "\(tx2.output)")
        #expect(tx2.output.contains("cannot type"), "the sender was not told: \(tx2.output)")
        #expect(try kernelKeysDown(rig.node).isEmpty)
    }

    /// Ctrl held on the receiver by a session that then ends: by the
    /// sender's bye, by a new session of the same sender (replaced), and
    /// by the sender process being killed (its connection closes). The
    /// kernel's own key state (EVIOCGKEY) is all zero after each. (The
    /// receiver stopping releases every key too: Keyboard.noKeyStaysDown.)
    @Test func heldKeysAreReleasedHoweverTheSessionEnds() throws {
        let rig = try TypingRig("held", layout: "us")
        defer { rig.stop() }
        let dir = ConfigDirectory(path: rig.c.sender)
        let id = try Identity.loadOrCreate(in: dir)
        let receiver = try #require(try PeerList.load(from: dir.file(PeerList.knownReceiversFile)).entries.first?.key)
        func session() throws -> Sender {
            let tx = try Sender.connect(host: "127.0.0.1", port: rig.port, identity: id, receiver: receiver, keyboard: true)
            try #require(tx.keyboardGranted, "\(String(describing: tx.receiverHello))")
            return tx
        }
        func holdCtrl(_ tx: Sender) throws {
            try tx.key(CTRL, down: true, at: senderClockUs())
            #expect(eventually(10) { (try? kernelKeysDown(rig.node)) == [CTRL] }, "Ctrl never went down")
        }
        func released(_ what: String) {
            #expect(eventually(10) { (try? kernelKeysDown(rig.node)) == [] }, "\(what): a key is still down")
        }

        let bye = try session()
        try holdCtrl(bye)
        bye.close()
        released("bye")

        let old = try session()
        try holdCtrl(old)
        let new = try session()
        released("replaced")
        new.close()

        // A sender process forwarding a keyboard, killed with Ctrl held.
        let mouse = try VirtualDevice.mouse(name: "Test mouse kill")
        let kb = try VirtualDevice.fullKeyboard(name: "Test keyboard kill")
        let tx = try rig.send(["--device", mouse.node, "--grab", "--keyboard", kb.node])
        #expect(eventually(30) { tx.output.contains("(Test keyboard kill) grabbed") }, "\(tx.output)")
        kb.keys([(KEY_LEFTCTRL, 1)])
        #expect(eventually(10) { (try? kernelKeysDown(rig.node)) == [CTRL] }, "Ctrl never went down: \(tx.output)")
        tx.signal(SIGKILL)
        _ = tx.wait()
        released("sender killed")
        kb.keys([(KEY_LEFTCTRL, 0)])
    }
}
