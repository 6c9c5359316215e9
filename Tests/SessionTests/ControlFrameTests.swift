import Testing
@testable import RemoloPlayout
@testable import RemoloSession
import RemoloSystem

func keyPair() -> (SecretBytes, SecretBytes) {
    let k = SecretBytes.random(count: 32)
    return (k, SecretBytes(copying: k.bytesCopy))
}

struct ControlFrameTests {
    static let messages: [ControlMessage] = [
        .settings(PointerSettings(pointerSpeed: 1.5, acceleration: 0.8, scrollSpeed: 2, naturalScrolling: true)),
        .button(ButtonEvent(button: .left, isDown: true, senderTimeNs: 123_456_789_012, sequence: 7)),
        .button(ButtonEvent(button: .extra, isDown: false, senderTimeNs: .max, sequence: .max)),
        .motion(MotionEvent(dx: -5, dy: 1_000_000, senderTimeNs: 42)),
        .scroll(MotionEvent(dx: .min, dy: .max, senderTimeNs: 0)),
        .ping(0xdead_beef_cafe_f00d), .pong(1), .bye(.idleTimeout),
        .hello(ControlHello(features: .keyboard)), .hello(ControlHello(features: [], keyboard: .notAllowed)),
        .hello(ControlHello(features: ControlFeatures(rawValue: 0xffff_ffff), keyboard: .other(200))),
        .key(KeyEvent(code: 30, isDown: true, senderTimeNs: 99, sequence: 0)),
        .key(KeyEvent(code: .max, isDown: false, senderTimeNs: .max, sequence: .max)),
        .text(TextInput("Hello, World! 123 @#", senderTimeNs: 5, sequence: 1)),
        .text(TextInput(senderTimeNs: 0, sequence: 2, utf8: [0xff, 0xfe])),   // invalid UTF-8 decodes; the receiver refuses it
        .text(TextInput(senderTimeNs: 0, sequence: 3, utf8: [UInt8](repeating: 0x61, count: ControlFrame.maxPlaintextLength - 13))),
        .refused(KeyRefused(sequence: 7, reason: .untypable, count: 2)),
        .refused(KeyRefused(sequence: 8, reason: .other(77), count: 1)),
        .gestureEnd(GestureEndMessage(id: 0, senderTimeNs: 0)),
        .gestureEnd(GestureEndMessage(id: .max, senderTimeNs: .max)),
    ]

    /// The extension messages' bytes, written out by hand from docs/protocol.md
    /// table (the page's tests hold the same vectors).
    @Test("7: extension messages encode exactly as the table says", arguments: [
        (1, ControlMessage.hello(ControlHello(features: .keyboard)), [0x09, 0, 0, 0, 1, 0]),
        (2, .hello(ControlHello(features: [], keyboard: .notAllowed)), [0x09, 0, 0, 0, 0, 2]),
        (3, .key(KeyEvent(code: 30, isDown: true, senderTimeNs: 0x0102_0304_0506_0708, sequence: 5)),
         [0x0a, 0x00, 0x1e, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 5]),
        (4, .text(TextInput("Hé", senderTimeNs: 1, sequence: 2)), [0x0b, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0x48, 0xc3, 0xa9]),
        (5, .refused(KeyRefused(sequence: 3, reason: .untypable, count: 2)), [0x0c, 0, 0, 0, 3, 8, 0, 2]),
        (6, .gestureEnd(GestureEndMessage(id: 7, senderTimeNs: 0x0102_0304_0506_0708)), [0x10, 7, 1, 2, 3, 4, 5, 6, 7, 8]),
        (7, .hello(ControlHello(features: .gestures)), [0x09, 0, 0, 0, 8, 0]),
        (8, .hello(ControlHello(features: .all)), [0x09, 0, 0, 0, 0x0f, 0]),
    ] as [(Int, ControlMessage, [UInt8])])
    func extensionBytes(_ n: Int, _ m: ControlMessage, _ bytes: [UInt8]) throws {
        #expect(m.encoded() == bytes, "\(n)")
        #expect(try ControlMessage.decode(bytes) == m, "\(n)")
    }

    @Test("1: every message round-trips through seal and open", arguments: messages)
    func roundTrip(_ m: ControlMessage) throws {
        let (k1, k2) = keyPair()
        let frame = try ControlFrameSealer(key: k1).seal(m)
        #expect(frame.count == ControlFrame.headerSize + m.encoded().count + 16)
        #expect(try ControlFrameOpener(key: k2).feed(frame) == [m])
        #expect(try ControlMessage.decode(m.encoded()) == m)
    }

    @Test("2: a stream split anywhere yields the same messages")
    func byteByByte() throws {
        let (k1, k2) = keyPair()
        let s = ControlFrameSealer(key: k1)
        var stream: [UInt8] = []
        for m in Self.messages { stream += try s.seal(m) }
        let o = ControlFrameOpener(key: k2)
        var got: [ControlMessage] = []
        for b in stream { got += try o.feed([b]) }
        #expect(got == Self.messages)
        #expect(o.expectedCounter == UInt64(Self.messages.count))
    }

    /// Numbered cases: how a frame is damaged, and the error that must result.
    @Test("3: damaged frames are refused with the right reason", arguments: [
        (1, "length below minimum"), (2, "oversize length"), (3, "flipped ciphertext bit"),
        (4, "flipped length-covered counter"), (5, "frames swapped"), (6, "frame replayed"),
        (7, "wrong key"), (8, "valid tag, unknown message type"), (9, "valid tag, wrong length for type"),
        (10, "valid tag, NaN setting"),
    ])
    func damaged(_ n: Int, _ what: String) throws {
        let (k1, k2) = keyPair()
        let s = ControlFrameSealer(key: k1)
        let o = ControlFrameOpener(key: k2)
        let f0 = try s.seal(.ping(1)), f1 = try s.seal(.pong(2))
        var input: [UInt8]
        var expected: ControlFrameError
        switch n {
        case 1: input = [0, UInt8(ControlFrame.minFrameLength - 1)]; expected = .badLength(ControlFrame.minFrameLength - 1)
        case 2: input = [0xff, 0xff]; expected = .oversize(0xffff)
        case 3: input = f0; input[input.count - 3] ^= 0x10; expected = .badTag
        case 4: input = f0; input[9] ^= 1; expected = .outOfOrder(expected: 0, got: 1)
        case 5: input = f1 + f0; expected = .outOfOrder(expected: 0, got: 1)
        case 6: input = f0 + f0; expected = .outOfOrder(expected: 1, got: 0)
        case 7: input = try ControlFrameSealer(key: .random(count: 32)).seal(.ping(1)); expected = .badTag
        case 8: input = try s.seal(plaintext: [0x7e]); expected = .badMessage("unknown type 0x7e")
        case 9: input = try s.seal(plaintext: [0x05, 1, 2]); expected = .badMessage("type 0x5 is 9 bytes, got 3")
        default:
            var p: [UInt8] = [0x01]
            p.appendBE(Float.nan.bitPattern); p.appendBE(Float(1).bitPattern); p.appendBE(Float(1).bitPattern); p.append(0)
            input = try s.seal(plaintext: p); expected = .badMessage("settings out of range")
        }
        if n == 8 || n == 9 || n == 10 {
            // The sealer used counter 2 after f0/f1: feed those first.
            _ = try o.feed(f0 + f1)
        }
        #expect(throws: expected, "\(n): \(what)") { _ = try o.feed(input) }
        // Once failed, the opener stays failed (the connection must close).
        #expect(throws: ControlFrameError.self) { _ = try o.feed(f0) }
    }

    @Test("4: a forged frame does not advance the counter")
    func forgedDoesNotAdvance() throws {
        let (k1, k2) = keyPair()
        let o = ControlFrameOpener(key: k2)
        var forged = try ControlFrameSealer(key: k1).seal(.ping(9))
        forged[forged.count - 1] ^= 1
        #expect(throws: ControlFrameError.badTag) { _ = try o.feed(forged) }
        #expect(o.expectedCounter == 0)
    }

    @Test("5: plaintext decoder refuses hostile inputs", arguments: [
        [], [0x00], [0x02, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0x02, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0x07], [0x07, 0, 0], [0x07, 9], [0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0x09, 0, 0, 0, 1], [0x09, 0, 0, 0, 1, 0, 0],                        // hello of 5 and 7 bytes
        [0x0a, 0, 30, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],               // key state 2
        [0x0a, 0, 30, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],                  // key of 15 bytes
        [0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],                         // text with no text
        [0x0b] + [UInt8](repeating: 0x61, count: ControlFrame.maxPlaintextLength),  // over a frame
        [0x0c, 0, 0, 0, 1, 0, 0, 1],                                        // refused reason 0
        [0x0c, 0, 0, 0, 1, 8, 0],                                           // refused of 7 bytes
        [0x10, 7, 0, 0, 0, 0, 0, 0, 0],                                     // gesture end of 9 bytes
        [0x10, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0],                               // gesture end with a byte after it
        [0x11, 7, 0, 0, 0, 0, 0, 0, 0, 1],                                  // the type after it: unknown
    ] as [[UInt8]])
    func hostilePlaintext(_ bytes: [UInt8]) {
        #expect(throws: ControlFrameError.self) { _ = try ControlMessage.decode(bytes) }
    }

    /// Feature bit 3 is gestures; `.all` is every bit this version knows,
    /// and a receiver grants no bit beyond it.
    @Test("8: gestures is feature bit 3, and the last bit known")
    func gestureBit() {
        #expect(ControlFeatures.gestures.rawValue == 1 << 3)
        #expect(ControlFeatures.all.rawValue == 0x0f)
        #expect(ControlFeatures(rawValue: 0xffff_fff0).intersection(.all).isEmpty)
        #expect(ControlMessage.Kind.gestureEnd.encodedLengths == 10...10)
    }

    @Test("6: the largest frame is accepted, one byte more is oversize")
    func maxSize() throws {
        let (k1, _) = keyPair()
        let s = ControlFrameSealer(key: k1)
        #expect(throws: ControlFrameError.self) { _ = try s.seal(plaintext: [UInt8](repeating: 1, count: ControlFrame.maxPlaintextLength + 1)) }
        let big = try s.seal(plaintext: [UInt8](repeating: 1, count: ControlFrame.maxPlaintextLength))
        #expect(big.count == ControlFrame.lengthFieldSize + ControlFrame.maxFrameLength)
        let l = ControlFrame.maxFrameLength + 1
        #expect(throws: ControlFrameError.oversize(l)) { _ = try ControlFrame.frameLength(UInt8(l >> 8), UInt8(l & 0xff)) }
    }
}
