import Foundation
@testable import RemoloPlayout
@testable import RemoloKeymap
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import RemoloCore
import RemoloPlayoutCore
import Testing
import RemoloTypes

/// The keyboard's limits as a sender meets them over a real connection to a
/// real receiver (docs/protocol.md, "Refused"): a key or text is played
/// whole or refused whole; the rate limit is a token bucket that refills
/// continuously, with free releases; a full key queue is reason 5 (flood).
extension RxSuite {
    @Suite struct KeyLimitTests {
        typealias Pair = ReceiverTests.Pair
        static let us = try! Keymap(KeymapName(layout: "us"))

        /// A receiver typing in us into a sink, and a sender's control
        /// channel that said hello and was granted the keyboard.
        final class Rig {
            let sink: FrameSink
            let rx: Receiver
            let ch: ControlChannel
            var seq: UInt32 = 1000
            /// Refusals received, by the refused message's sequence.
            var refused: [UInt32: KeyRefused] = [:]

            init() throws {
                let p = try Pair()
                sink = try FrameSink()
                rx = try Receiver(host: "127.0.0.1", port: 0, trust: p.trust, output: .fileDescriptor(sink.writeFD),
                                  keyboard: ReceiverKeyboard(keymap: KeyLimitTests.us))
                do {
                    ch = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.senderID,
                                                    receiver: p.receiverID.publicKey)
                    guard case .answered(let h) = try ch.hello(.keyboard), h.features.contains(.keyboard) else {
                        throw ReceiverError("the receiver did not grant the keyboard")
                    }
                } catch {
                    rx.stop()
                    throw error
                }
            }

            deinit {
                ch.close()
                rx.stop()
            }

            private func next() -> UInt32 { defer { seq += 1 }; return seq }
            private var ns: UInt64 { senderClockUs() * 1000 }

            @discardableResult
            func text(_ s: String) throws -> UInt32 {
                let q = next()
                try ch.send(.text(TextInput(s, senderTimeNs: ns, sequence: q)))
                try collect()
                return q
            }

            @discardableResult
            func key(_ code: UInt16, _ down: Bool) throws -> UInt32 {
                let q = next()
                try ch.send(.key(KeyEvent(code: code, isDown: down, senderTimeNs: ns, sequence: q)))
                try collect()
                return q
            }

            /// The refusals that have arrived (the receiver sends one right
            /// after the message it refuses).
            func collect() throws {
                for m in try ch.receiveAvailable() { if case .refused(let r) = m { refused[r.sequence] = r } }
            }

            /// Every refusal of what was sent so far: the receiver answers a
            /// session's messages in order, so they all come before this pong.
            func settle() throws {
                let token: UInt64 = 0x5e771e
                try ch.send(.ping(token))
                while true {
                    let m = try ch.receive(timeout: 20)
                    if case .refused(let r) = m { refused[r.sequence] = r }
                    if case .pong(token) = m { return }
                }
            }

            /// Waits until the keyboard has written `n` key changes.
            func keys(_ n: Int, timeout: Double = 15) -> [KeyChange] {
                _ = eventually(timeout) { sink.drain(); return sink.keyboardKeys.count >= n }
                usleep(100_000)    // and nothing more
                sink.drain()
                return sink.keyboardKeys.map { KeyChange(code: $0.code, down: $0.value == 1) }
            }
        }

        static let b: UInt16 = 48

        static let a: UInt16 = 30

        /// Once a session had spent its burst, every press used to be
        /// refused for seconds: a release that met the full key queue was
        /// folded, and presses stayed locked out until the queue had
        /// drained. After a flood of presses and releases (one key, so the
        /// queue plays one change a tick) that got floods back, presses at
        /// 20 a second are all taken.
        @Test("1: after a flood, one press every 50 ms is never refused")
        func bucketRefills() throws {
            let r = try Rig()
            var presses: [UInt32] = []
            for _ in 0..<4000 {
                presses.append(try r.key(Self.a, true))
                try r.key(Self.a, false)
            }
            try r.settle()
            let flooded = presses.filter { r.refused[$0]?.reason == .flood }
            #expect(!flooded.isEmpty, "the flood got no flood back: nothing was spent")
            #expect(r.refused.values.allSatisfy { $0.count == 1 && ($0.reason == .flood || $0.reason == .notHeld) },
                    "\(Set(r.refused.values.map(\.reason.name)))")
            // Then a press and its release every 50 ms, for 2 s.
            var slow: [UInt32] = []
            for _ in 0..<40 {
                usleep(50_000)
                slow.append(try r.key(Self.b, true))
                slow.append(try r.key(Self.b, false))
            }
            try r.settle()
            let refusedSlow = slow.compactMap { r.refused[$0] }
            #expect(refusedSlow.isEmpty, "\(refusedSlow.count) of 80 refused: \(Set(refusedSlow.map(\.reason.name)))")
            // What played: every taken press of a with its release, then b's.
            let taken = presses.count - presses.filter { r.refused[$0] != nil }.count
            let played = r.keys(2 * taken + 80, timeout: 30)
            #expect(played.filter { $0.code == Self.a }.count == 2 * taken)
            #expect(played.filter { $0.code == Self.b }
                    == Array(repeating: [KeyChange(code: Self.b, down: true), KeyChange(code: Self.b, down: false)], count: 40).flatMap { $0 })
        }

        /// Issue: a text that met the full queue was typed partway and then
        /// refused with reason 4 or 5. Each text here is played whole or
        /// refused whole as a flood, and what plays is exactly the taken
        /// texts' strokes, in order.
        @Test("2: a text that meets a full key queue is refused whole with reason 5, never typed in part", arguments: [1, 2, 3])
        func fullQueue(_ n: Int) throws {
            let r = try Rig()
            var texts: [(UInt32, String)] = []
            // Big texts fill the 2048-change queue (each 512 changes)...
            for i in 0..<(3 + n) {
                let s = String(repeating: String(Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(i)))), count: 256)
                texts.append((try r.text(s), s))
            }
            // ...then texts of 16 characters meet it full.
            for i in 0..<12 {
                let s = String((0..<16).map { j in Character(UnicodeScalar(UInt8(ascii: "a") + UInt8((i + j) % 26))) })
                texts.append((try r.text(s), s))
            }
            try r.settle()
            let refused = texts.filter { r.refused[$0.0] != nil }
            #expect(!refused.isEmpty, "case \(n): nothing met a full queue")
            for (q, s) in refused {
                #expect(r.refused[q] == KeyRefused(sequence: q, reason: .flood, count: 1), "case \(n): \(s.prefix(16))…")
            }
            let want = texts.filter { r.refused[$0.0] == nil }.flatMap { Self.us.strokes(for: $0.1).strokes }
            let played = r.keys(want.count)
            #expect(played == want, "case \(n): played \(played.count) changes, the taken texts are \(want.count)")
            #expect(r.rx.keyboardCounters.refused["not_held"] ?? 0 == 0)
            #expect(r.rx.keyboardCounters.refused["flood"] == UInt64(refused.count))
        }

        /// A stream of 16-character texts faster than the receiver plays
        /// them (each of one letter, so the queue plays one change a tick,
        /// 480 a second, and each text's letter tells it apart): the queue
        /// fills, and each text is played whole or refused whole as a flood.
        @Test("3: texts sent faster than they play are each typed whole or refused whole (reason 5)")
        func textStream() throws {
            let r = try Rig()
            var texts: [(UInt32, String)] = []
            let start = MonotonicClock.seconds()
            var i = 0
            while MonotonicClock.seconds() - start < 6 {
                let s = String(repeating: Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(i % 26))), count: 16)
                texts.append((try r.text(s), s))
                i += 1
                usleep(20_000)
            }
            try r.settle()
            let refused = texts.filter { r.refused[$0.0] != nil }
            #expect(!refused.isEmpty, "\(texts.count) texts: none met a full queue")
            #expect(refused.allSatisfy { r.refused[$0.0] == KeyRefused(sequence: $0.0, reason: .flood, count: 1) },
                    "\(Set(refused.map { "\(r.refused[$0.0]!.reason.name) \(r.refused[$0.0]!.count)" }))")
            let want = texts.filter { r.refused[$0.0] == nil }.flatMap { Self.us.strokes(for: $0.1).strokes }
            let played = r.keys(want.count, timeout: 30)
            #expect(played.count == want.count, "played \(played.count) changes, the taken texts are \(want.count)")
            #expect(played == want)
        }
    }
}
