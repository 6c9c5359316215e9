// Writes the seed corpus (run once; the outputs are committed):
//   (build RemoloSystem as Tests/Fuzz/swift/run does, then) swiftc -parse-as-library -module-name RemoloSession -I CSources/CSodium -I SYS -L SYS \
//     Sources/RemoloSession/*.swift Tests/Fuzz/swift/make_corpus.swift -lRemoloSystem -lsodium -o /tmp/mk && /tmp/mk Tests/Fuzz/swift/corpus
import Foundation

@main struct MakeCorpus {
    static func write(_ dir: String, _ name: String, _ bytes: [UInt8]) {
        FileManager.default.createFile(atPath: "\(dir)/\(name)", contents: Data(bytes))
    }

    static func main() throws {
        let root = CommandLine.arguments[1]
        let hs = root + "/handshake", cf = root + "/control_frame"
        let receiver = Identity(keyPair: KeyPair(secret: SecretBytes(copying: [UInt8](repeating: 7, count: 32))))
        let sender = Identity(keyPair: KeyPair(secret: SecretBytes(copying: [UInt8](repeating: 9, count: 32))))
        let secret = PairingSecret(raw: [UInt8](repeating: 3, count: 15))
        var list = PeerList()
        list.add(sender.publicKey, label: "fuzz")
        let trust = try ReceiverTrust(identity: receiver, directory: nil, authorized: list)

        let ik = SenderHandshake(identity: sender, mode: .session(receiver: receiver.publicKey))
        let m1 = ik.start()
        let r = ReceiverHandshake(trust: trust)
        let m2 = try r.receive(m1)!
        write(hs, "0-stream-ik1", [0] + m1.encoded())
        write(hs, "1-ik1", [1] + m1.noiseMessage)
        write(hs, "2-ik2", [2] + m2.noiseMessage)
        _ = try trust.pairing.issue()
        let xx = SenderHandshake(identity: sender, mode: .pairing(secret))
        let p1 = xx.start()
        let r2 = ReceiverHandshake(trust: trust)
        let p2 = try r2.receive(p1)!
        let p3 = try xx.receive(p2)!
        write(hs, "0-stream-pair", [0] + p1.encoded() + p3.encoded())
        write(hs, "3-pair1", [3] + p1.noiseMessage)
        write(hs, "4-pair2", [4] + p2.noiseMessage)
        write(hs, "5-pair3", [5] + p3.noiseMessage)
        write(hs, "0-refusal", [0, 0, 2, 0x7f, 1])

        let key = SecretBytes(copying: [UInt8](repeating: 0x42, count: 32))
        let sealer = ControlFrameSealer(key: key)
        var stream: [UInt8] = []
        let messages: [ControlMessage] = [
            .settings(PointerSettings(pointerSpeed: 1, acceleration: 1, scrollSpeed: 1, naturalScrolling: false)),
            .button(ButtonEvent(button: .left, isDown: true, senderTimeNs: 1, sequence: 1)),
            .motion(MotionEvent(dx: 1, dy: -1, senderTimeNs: 2)), .scroll(MotionEvent(dx: 0, dy: 3, senderTimeNs: 3)),
            .ping(1), .pong(1), .bye(.normal),
            .hello(ControlHello(features: .keyboard)),
            .key(KeyEvent(code: 30, isDown: true, senderTimeNs: 0x0102_0304_0506_0708, sequence: 5)),
            .text(TextInput("Hé @#", senderTimeNs: 1, sequence: 2)),
            .refused(KeyRefused(sequence: 3, reason: .untypable, count: 2)),
            .text(TextInput(senderTimeNs: 1, sequence: 3, utf8: [0xff, 0xc3])),
            .channelOffer(ChannelOffer(ufrag: "aB3+", password: "abcdefghijklmnopqrst/+", fingerprint: [UInt8](0..<32))),
            .channelAnswer(ChannelAnswer(status: .ready, port: 8443, fingerprint: [UInt8](repeating: 0xAA, count: 32),
                                         ufrag: "U1u2U3u4U5u6U7u8", password: "P1p2P3p4P5p6P7p8P9p0P1p2",
                                         addresses: [.v4([192, 168, 1, 20]), .v6([0xfd] + [UInt8](repeating: 0, count: 14) + [1])])),
            .channelAnswer(.refused(.busy)),
            .channelPath(ChannelPath(.dataChannel, .opened)),
            .gestureEnd(GestureEndMessage(id: 7, senderTimeNs: 123_456_789_000)),
        ]
        for (i, m) in messages.enumerated() {
            stream += try sealer.seal(m)
            write(cf, "1-plain-\(i)", [1, 0] + m.encoded())
            write(cf, "2-sealed-\(i)", [2, UInt8(m.encoded().count)] + m.encoded())
        }
        write(cf, "0-stream", [0, 7] + stream)
        write(cf, "0-oversize", [0, 1, 0xff, 0xff])
    }
}
