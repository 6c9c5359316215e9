import Testing
@testable import RemoloSession

/// The data-channel messages (docs/protocol.md, "The data channel"): bytes
/// written out by hand from the table (Tests/Web/control.test.mjs holds
/// the page to the same vectors), round trips, and hostile plaintexts.
struct ControlDataChannelTests {
    // Computed, not stored: a static array made once and kept by the test
    // runner until exit reads as a leak to LeakSanitizer.
    static var fp: [UInt8] { [UInt8](0..<32) }
    static var offer: ChannelOffer { ChannelOffer(ufrag: "aB3+", password: "abcdefghijklmnopqrst/+", fingerprint: fp) }
    static var answer: ChannelAnswer { ChannelAnswer(status: .ready, port: 8443, fingerprint: [UInt8](repeating: 0xAA, count: 32),
                                      ufrag: "U1u2U3u4U5u6U7u8", password: "P1p2P3p4P5p6P7p8P9p0P1p2",
                                      addresses: [.v4([192, 168, 1, 20]), .v6([0xfd, 0] + [UInt8](repeating: 0, count: 13) + [1])]) }

    static var offerBytes: [UInt8] { [0x0d, 4] + Array("aB3+".utf8) + [22] + Array("abcdefghijklmnopqrst/+".utf8) + fp }
    static var answerBytes: [UInt8] { [0x0e, 0, 0x20, 0xfb] + [UInt8](repeating: 0xAA, count: 32)
        + [16] + Array("U1u2U3u4U5u6U7u8".utf8) + [24] + Array("P1p2P3p4P5p6P7p8P9p0P1p2".utf8)
        + [2, 4, 192, 168, 1, 20, 6, 0xfd, 0] + [UInt8](repeating: 0, count: 13) + [1] }

    /// Built in the test, not passed as arguments: the runner keeps its
    /// arguments until exit, which LeakSanitizer reports.
    static func table() -> [(ControlMessage, [UInt8])] {
        [(.channelOffer(offer), offerBytes),
         (.channelAnswer(answer), answerBytes),
         (.channelAnswer(.refused(.unavailable)), [0x0e, 1]),
         (.channelAnswer(.refused(.busy)), [0x0e, 2]),
         (.channelAnswer(.refused(.badOffer)), [0x0e, 3]),
         (.channelPath(ChannelPath(.dataChannel, .opened)), [0x0f, 1, 0]),
         (.channelPath(ChannelPath(.webSocket, .stalled)), [0x0f, 0, 4]),
         (.channelPath(ChannelPath(.webSocket, .noPeerConnection)), [0x0f, 0, 1])]
    }

    @Test("1: the messages encode exactly as the table says", arguments: 1...8)
    func bytes(_ n: Int) throws {
        let (m, bytes) = Self.table()[n - 1]
        #expect(m.encoded() == bytes, "\(n)")
        #expect(try ControlMessage.decode(bytes) == m, "\(n)")
    }

    @Test("2: the longest offer and answer fit one control frame and round-trip sealed")
    func longest() throws {
        let o = ChannelOffer(ufrag: String(repeating: "u", count: 64), password: String(repeating: "p", count: 128), fingerprint: Self.fp)
        let a = ChannelAnswer(status: .ready, port: 1, fingerprint: Self.fp, ufrag: String(repeating: "u", count: 64),
                              password: String(repeating: "p", count: 128),
                              addresses: [ChannelAddress](repeating: .v6([UInt8](repeating: 1, count: 16)), count: 8))
        for m in [ControlMessage.channelOffer(o), .channelAnswer(a)] {
            #expect(m.encoded().count <= ControlFrame.maxPlaintextLength)
            let (k1, k2) = keyPair()
            #expect(try ControlFrameOpener(key: k2).feed(ControlFrameSealer(key: k1).seal(m)) == [m])
        }
    }

    static func hostileTable() -> [[UInt8]] {
        let fp = Self.fp, offerBytes = Self.offerBytes, answerBytes = Self.answerBytes
        let cases: [(Int, [UInt8])] = [
        (1, [0x0d]),                                                             // empty offer
        (2, [0x0d, 3] + Array("abc".utf8) + [22] + [UInt8](repeating: 0x61, count: 22) + fp),   // ufrag of 3
        (3, [0x0d, 4] + Array("ab c".utf8) + [22] + [UInt8](repeating: 0x61, count: 22) + fp),  // a space is no ice-char
        (4, [0x0d, 4] + Array("abcd".utf8) + [21] + [UInt8](repeating: 0x61, count: 21) + fp),  // password of 21
        (5, Array(offerBytes.dropLast())),                                             // fingerprint cut short
        (6, offerBytes + [0]),                                                         // a byte after it
        (7, [0x0d, 65] + [UInt8](repeating: 0x61, count: 65) + [22] + [UInt8](repeating: 0x61, count: 22) + fp), // ufrag of 65
        (8, [0x0e]),                                                                   // answer with no status
        (9, [0x0e, 4]),                                                                // unknown status
        (10, [0x0e, 1, 0]),                                                            // a refusal with more
        (11, [0x0e, 0, 0, 0] + Array(answerBytes.dropFirst(4))),                       // port 0
        (12, Array(answerBytes.dropLast())),                                           // address cut short
        (13, answerBytes + [9]),                                                       // a byte after it
        (14, Array(answerBytes.prefix(answerBytes.count - 27)) + [0]),                // no address
        (15, Array(answerBytes.prefix(answerBytes.count - 27)) + [1, 5, 1, 2, 3, 4]),  // family 5
        (16, [0x0f, 2, 0]), (17, [0x0f, 0, 6]), (18, [0x0f, 0]), (19, [0x0f, 0, 0, 0]),
    ]
        return cases.map { $0.1 }
    }

    @Test("3: hostile plaintexts are refused", arguments: 1...19)
    func hostile(_ n: Int) {
        let bytes = Self.hostileTable()[n - 1]
        #expect(throws: ControlFrameError.self, "\(n)") { _ = try ControlMessage.decode(bytes) }
    }

    @Test("4: a hello carries the data-channel bit as bit 2")
    func featureBit() throws {
        #expect(ControlFeatures.dataChannel.rawValue == 4)
        #expect(ControlMessage.hello(ControlHello(features: [.keyboard, .redundancy, .dataChannel])).encoded() == [0x09, 0, 0, 0, 7, 0])
    }
}
