import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSession
import Testing
import RemoloTypes

/// One session's keyboard rules, message by message, in virtual time: the
/// hello it answers, and each refusal (docs/protocol.md, "Extensions and the
/// keyboard").
@Suite struct SessionKeyboardTests {
    static let a: UInt16 = 30, shift: UInt16 = 42, ctrl: UInt16 = 29

    static func kb(enabled: Bool = true, mayType: Bool = true, device: Bool = true,
                   offered: ControlFeatures = .all) -> SessionKeyboard {
        SessionKeyboard(policy: ReceiverKeyboard(enabled: enabled, keymap: nil), mayType: mayType, hasDevice: device,
                        hasKey: { $0 >= 1 && $0 <= 0x2ff && $0 != 0x200 }, offered: offered, now: 0)
    }

    static func key(_ code: UInt16, _ down: Bool, _ seq: UInt32) -> KeyEvent {
        KeyEvent(code: code, isDown: down, senderTimeNs: UInt64(seq) * 1_000_000, sequence: seq)
    }

    /// Redundancy, the data channel and gestures are granted whatever the
    /// keyboard's status where the receiver offers them (here everything: a
    /// receiver with its web page's endpoint and a touchpad), unless it does not
    /// (`remolo receive --no-redundancy`, and no endpoint: case 6).
    @Test("1: the hello answers what this sender may do", arguments: [
        (1, true, true, true, ControlFeatures.all, KeyboardStatus.allowed),
        (2, false, true, true, [.redundancy, .dataChannel, .gestures], .off),
        (3, true, false, true, [.redundancy, .dataChannel, .gestures], .notAllowed),
        (4, true, true, false, [.redundancy, .dataChannel, .gestures], .noDevice),
        (5, false, false, false, [.redundancy, .dataChannel, .gestures], .off),
        (6, true, true, true, .keyboard, .allowed),
    ] as [(Int, Bool, Bool, Bool, ControlFeatures, KeyboardStatus)])
    func hello(_ n: Int, _ enabled: Bool, _ mayType: Bool, _ device: Bool, _ features: ControlFeatures, _ status: KeyboardStatus) throws {
        var k = Self.kb(enabled: enabled, mayType: mayType, device: device, offered: n == 6 ? .keyboard : .all)
        // Bits this build does not know are not granted.
        let reply = try k.hello(ControlHello(features: ControlFeatures(rawValue: 0xffff_ffff)), isFirst: true)
        #expect(reply == ControlHello(features: features, keyboard: status), "\(n)")
    }

    @Test("2: protocol violations end the session", arguments: [1, 2, 3, 4])
    func violations(_ n: Int) throws {
        var k = Self.kb()
        switch n {
        case 1:   // a second hello
            _ = try k.hello(ControlHello(features: .keyboard), isFirst: true)
            #expect(throws: SessionKeyboard.Violation.helloTwice) { _ = try k.hello(ControlHello(features: .keyboard), isFirst: false) }
        case 2:   // hello after other messages
            #expect(throws: SessionKeyboard.Violation.helloLate) { _ = try k.hello(ControlHello(features: .keyboard), isFirst: false) }
        case 3:   // a key without hello
            #expect(throws: SessionKeyboard.Violation.keyWithoutHello) { _ = try k.key(Self.key(Self.a, true, 0), now: 0) }
        default:  // a gap in the shared key/text sequence
            _ = try k.hello(ControlHello(features: .keyboard), isFirst: true)
            _ = try k.key(Self.key(Self.a, true, 5), now: 0)
            #expect(throws: SessionKeyboard.Violation.sequenceGap(got: 7, after: 5)) {
                _ = try k.text(TextInput("x", senderTimeNs: 0, sequence: 7), now: 0)
            }
        }
    }

    /// Numbered cases: a session's messages and what each one gets.
    @Test("3: keys are played or refused with a reason; nothing is ever left held", arguments: 1...9)
    func keys(_ n: Int) throws {
        var k = Self.kb(mayType: n != 1)
        _ = try k.hello(ControlHello(features: .keyboard), isFirst: true)
        var seq: UInt32 = 0
        func send(_ code: UInt16, _ down: Bool, now: Double = 0) throws -> (SessionKeyboard.Play, KeyRefusal?) {
            defer { seq += 1 }
            let (p, r) = try k.key(Self.key(code, down, seq), now: now)
            return (p, r?.reason)
        }
        let played = { (code: UInt16, down: Bool, seq: UInt32) in
            SessionKeyboard.Play.strokes([KeyChange(code: code, down: down)], senderTimeUs: UInt64(seq) * 1000)
        }
        switch n {
        case 1:   // paired without the right to type
            #expect(try send(Self.a, true) == (.none, .notAllowed))
        case 2:   // press then release
            #expect(try send(Self.a, true) == (played(Self.a, true, 0), nil))
            #expect(try send(Self.a, false) == (played(Self.a, false, 1), nil))
            #expect(k.held.isEmpty)
        case 3:   // a code the keyboard does not have
            #expect(try send(0x200, true) == (.none, .unknownKey))
            #expect(try send(0x300, false) == (.none, .unknownKey))
        case 4:   // pressed twice
            _ = try send(Self.a, true)
            #expect(try send(Self.a, true) == (.none, .alreadyHeld))
            #expect(k.held == [Self.a])
        case 5:   // released without a press
            #expect(try send(Self.a, false) == (.none, .notHeld))
        case 6:   // more keys held at once than any keyboard rolls over
            for c in 1...UInt16(SessionKeyboard.maxHeld) { #expect(try send(c, true).1 == nil) }
            #expect(try send(100, true) == (.none, .flood))
            // Releases still go through.
            #expect(try send(1, false).1 == nil)
            #expect(try send(100, true).1 == nil)
        case 7:   // over the rate: presses refused, releases never
            var refused = 0
            for _ in 0..<Int(SessionKeyboard.burst) + 10 {
                if try send(Self.a, true).1 == .flood { refused += 1; break }
                #expect(try send(Self.a, false).1 == nil)
            }
            #expect(refused == 1)
            // A second later the bucket has refilled.
            #expect(try send(Self.a, true, now: 1).1 == nil)
        case 8:   // forget: the loop could not take a press
            _ = try send(Self.a, true)
            k.forget([KeyChange(code: Self.a, down: true)])
            #expect(k.held.isEmpty)
        default:  // off for everyone
            var off = Self.kb(enabled: false)
            _ = try off.hello(ControlHello(features: .keyboard), isFirst: true)
            #expect(try off.key(Self.key(Self.a, true, 0), now: 0).1?.reason == .keyboardOff)
            #expect(try off.text(TextInput("a", senderTimeNs: 0, sequence: 1), now: 0).1?.reason == .keyboardOff)
        }
    }

    @Test("4: text that cannot be typed at all is refused whole", arguments: [
        (1, [UInt8](repeating: 0x61, count: TextInput.maxBytes + 1), KeyRefusal.tooLong, 1),
        (2, [0x61, 0xff, 0x62], .invalidUTF8, 1),
        (3, [0xed, 0xa0, 0x80], .invalidUTF8, 1),      // a UTF-16 surrogate, encoded
        (4, Array("abc".utf8), .untypable, 3),         // no keymap: nothing is typable
    ] as [(Int, [UInt8], KeyRefusal, Int)])
    func textRefused(_ n: Int, _ bytes: [UInt8], _ reason: KeyRefusal, _ count: Int) throws {
        var k = Self.kb()
        _ = try k.hello(ControlHello(features: .keyboard), isFirst: true)
        let (p, r) = try k.text(TextInput(senderTimeNs: 0, sequence: 0, utf8: bytes), now: 0)
        #expect(p == .none, "\(n)")
        #expect(r == KeyRefused(sequence: 0, reason: reason, count: UInt16(count)), "\(n)")
    }
}
