import Testing
@testable import Remolo
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
    ]

    @Test("1: every message round-trips through seal and open", arguments: messages)
    func roundTrip(_ m: ControlMessage) throws {
        let (k1, k2) = keyPair()
        let frame = try ControlFrameSealer(key: k1).seal(m)
        #expect(frame.count == ControlFrame.headerSize + m.kind.encodedLength + 16)
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
    ] as [[UInt8]])
    func hostilePlaintext(_ bytes: [UInt8]) {
        #expect(throws: ControlFrameError.self) { _ = try ControlMessage.decode(bytes) }
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
