import Foundation
@testable import RemoloPlayout
@testable import RemoloKeymap
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import Testing
import RemoloTypes

/// Typing end to end on loopback: a sender that said hello, its key and
/// text messages over the control channel, the receiver's checks, the
/// layout, the loop's key queue and the keyboard's frames in the sink.
extension RxSuite {
    @Suite struct KeyboardEndToEndTests {
        typealias Pair = ReceiverTests.Pair
        static let us = try! Keymap(KeymapName(layout: "us"))
        static let de = try! Keymap(KeymapName(layout: "de"))
        static let a: UInt16 = 30, ctrl: UInt16 = 29, c: UInt16 = 46

        /// A receiver typing in `keymap` into a new sink, and a sender that asked for the keyboard.
        static func rig(_ p: Pair, keymap: Keymap = us, log: @escaping (String) -> Void = { _ in })
            throws -> (rx: Receiver, tx: Sender, sink: FrameSink) {
            let sink = try FrameSink()
            let rx = try Receiver(host: "127.0.0.1", port: 0, trust: p.trust, output: .fileDescriptor(sink.writeFD),
                                  keyboard: ReceiverKeyboard(keymap: keymap))
            do {
                let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: p.senderID,
                                            receiver: p.receiverID.publicKey, keyboard: true, log: log)
                return (rx, tx, sink)
            } catch {
                rx.stop()
                throw error
            }
        }

        static func strokes(_ events: [Event]) -> [KeyChange] { events.map { KeyChange(code: $0.code, down: $0.value == 1) } }

        @Test("1: text typed in the receiver's layout arrives as exactly its key strokes", arguments: ["us", "de"])
        func textInLayout(_ layout: String) throws {
            let keymap = layout == "us" ? Self.us : Self.de
            let (rx, tx, sink) = try Self.rig(try Pair(), keymap: keymap)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            #expect(tx.keyboardGranted)
            let text = "Hello, World! 123 @#"
            try tx.type(text, at: senderClockUs())
            let want = keymap.strokes(for: text).strokes
            #expect(eventually(5) { sink.drain(); return sink.keyboardKeys.count >= want.count })
            #expect(Self.strokes(sink.keyboardKeys) == want)
            #expect(keymap.text(typedBy: Self.strokes(sink.keyboardKeys)) == text)
            tx.close()
            #expect(eventually(3) { rx.liveSessions == 0 })
            let k = rx.keyboardCounters
            #expect(k.textMessages == 1 && k.keyEvents == UInt64(want.count) && k.refused.isEmpty, "\(k)")
        }

        /// The playout spreads a packet's motion over the sender frame after
        /// its slot (design note, part 5): motion sent at t plays from t's
        /// slot for one frame (at most REMOLO_FRAME_MAX_US, 17 ms), so a key
        /// sent a frame or more later plays after all of it.
        @Test("2: a key between two strokes plays between them, in sender time")
        func keyAfterMotion() throws {
            let (rx, tx, sink) = try Self.rig(try Pair())
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            // Sent as a sender sends: each when its time comes (the clock
            // offset is learnt from the arrivals).
            let t0 = senderClockUs() + 1000
            func at(_ t: UInt64) -> UInt64 { MonotonicClock.sleep(untilUs: t); return t }
            for i in 0..<4 { try tx.send(.motion(dx: 10 * 256, dy: 0), at: at(t0 + UInt64(i) * 8_333)) }
            try tx.key(Self.a, down: true, at: at(t0 + 3 * 8_333 + 17_000))
            try tx.key(Self.a, down: false, at: at(t0 + 3 * 8_333 + 40_000))
            for i in 0..<4 { try tx.send(.motion(dx: 0, dy: 10 * 256), at: at(t0 + 3 * 8_333 + 60_000 + UInt64(i) * 8_333)) }
            #expect(eventually(5) { sink.drain(); return sink.keyboardKeys.count == 2 && sink.sum(Event.relY) == 40 })
            // Frames in the order written: every REL_X before the press,
            // every REL_Y after the release.
            let order = sink.frames.flatMap { $0 }
            let press = try #require(order.firstIndex(of: .key(Self.a, true)))
            let release = try #require(order.firstIndex(of: .key(Self.a, false)))
            let lastX = order.lastIndex { $0.type == Event.evRel && $0.code == Event.relX && $0.value != 0 } ?? -1
            let firstY = order.firstIndex { $0.type == Event.evRel && $0.code == Event.relY && $0.value != 0 } ?? .max
            #expect(lastX < press && press < release && release < firstY,
                    "x..\(lastX) press \(press) release \(release) y \(firstY).. in \(sink.frames)")
            tx.close()
        }

        /// Numbered cases: how a session holding Ctrl ends; every way releases it.
        @Test("3: a key held when the session ends is released", arguments: [1, 2, 3, 4])
        func heldKeyReleased(_ n: Int) throws {
            let p = try Pair()
            let (rx, tx, sink) = try Self.rig(p)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            try tx.key(Self.ctrl, down: true, at: senderClockUs())
            #expect(eventually(3) { sink.drain(); return sink.keyboardKeys == [.key(Self.ctrl, true)] })
            switch n {
            case 1: tx.close()                                              // bye
            case 2: tx.channel.connection.close()                           // the connection drops (a killed sender)
            case 3: _ = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: p.senderID,
                                           receiver: p.receiverID.publicKey) // replaced by a new session
            default: rx.stop()                                              // the receiver stops
            }
            #expect(eventually(3) { sink.drain(); return sink.keyboardKeys == [.key(Self.ctrl, true), .key(Self.ctrl, false)] },
                    "\(n): \(sink.keyboardKeys)")
        }

        @Test("4: Ctrl held through a key message and the text c is Ctrl+C; refusals reach the sender")
        func heldModifierAndRefusals() throws {
            var lines: [String] = []
            let (rx, tx, sink) = try Self.rig(try Pair(), log: { lines.append($0) })
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let t = senderClockUs()
            try tx.key(Self.ctrl, down: true, at: t)
            try tx.type("c", at: t + 1000)
            try tx.key(Self.ctrl, down: false, at: t + 2000)
            try tx.type("a€b", at: t + 3000)             // € is not in us
            try tx.key(0x2ff, down: true, at: t + 4000)   // no such key on the device
            #expect(eventually(5) { sink.drain(); return sink.keyboardKeys.count >= 8 })
            #expect(sink.keyboardKeys == [.key(Self.ctrl, true), .key(Self.c, true), .key(Self.c, false), .key(Self.ctrl, false),
                                          .key(Self.a, true), .key(Self.a, false), .key(48, true), .key(48, false)])
            // The refusals come back with the next keepalive's answers.
            #expect(eventually(5) { try? tx.keepAlive(); return lines.filter { $0.contains("refused") }.count == 2 }, "\(lines)")
            #expect(lines.contains { $0.contains("cannot type") }, "\(lines)")
            #expect(lines.contains { $0.contains("no such key") }, "\(lines)")
            let k = rx.keyboardCounters
            #expect(k.refused == ["untypable": 1, "unknown_key": 1], "\(k)")
            tx.close()
        }
    }
}
