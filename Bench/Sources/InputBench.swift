import Glibc
import RemoloPlayout
import RemoloReceiver
import RemoloSender
import RemoloInput
import RemoloSession

/// `tx.frame_ns`: one sender frame: the samples of a frame accelerated one
/// by one and summed into Q8 (no sealing, no send). Eight samples a frame:
/// a 1000 Hz mouse with the curve on, framed at 120 Hz, about the most a
/// frame gathers.
private func frameNs(_ s: BenchSettings) -> Double {
    var config = InputConfig()
    config.accelerateMouse = true
    guard var core = try? InputCore(config: config, startUs: 0) else { return .nan }
    var t: UInt64 = 0
    var k: Int32 = 0
    return medianNsPerIteration(s, iterations: 200_000) { n in
        for _ in 0..<n {
            let end = core.nextFrameUs
            while t < end {
                t += 1_000
                k &+= 1
                core.mouseMotion(dx: (k & 15) - 7, dy: (k & 7) - 3, atUs: t)
            }
            blackHole(core.endFrame())
        }
    }
}

func inputBenches() -> [BenchCase] {
    [
        BenchCase(name: "tx.frame_ns") { s in
            [BenchResult(name: "tx.frame_ns", value: frameNs(s), unit: "ns")]
        },
        BenchCase(name: "tx.send_frame_ns") { s in
            [BenchResult(name: "tx.send_frame_ns", value: sendFrameNs(s), unit: "ns")]
        },
    ]
}

/// `tx.send_frame_ns`: what the device loop spends per frame after the
/// core: `Sender.send(frame:)` with one motion datagram (seal, send on
/// loopback UDP, the control channel's keepAlive), into a real receiver.
/// With `tx.frame_ns` and the evdev read it is the sender's CPU per frame;
/// at 120 frames a second, 10 us is 0.12% of a core.
private func sendFrameNs(_ s: BenchSettings) -> Double {
    let sender = Identity.generate(), receiver = Identity.generate()
    var list = PeerList()
    list.add(sender.publicKey, label: "bench")
    let null = open("/dev/null", O_WRONLY)
    defer { close(null) }
    guard let trust = try? ReceiverTrust(identity: receiver, directory: nil, authorized: list),
          let rx = try? Receiver(host: "127.0.0.1", port: 0, trust: trust, output: .fileDescriptor(null)),
          let tx = try? Sender.connect(host: "127.0.0.1", port: rx.port, identity: sender, receiver: receiver.publicKey),
          var core = try? InputCore(config: InputConfig(), startUs: senderClockUs()) else { return .nan }
    defer { tx.close(); rx.stop() }
    core.isSessionOpen = true
    var k: Int32 = 0
    return medianNsPerIteration(s, iterations: 20_000) { n in
        for _ in 0..<n {
            k &+= 1
            core.mouseMotion(dx: (k & 15) - 7, dy: (k & 7) - 3, atUs: core.nextFrameUs - 1)
            _ = try? tx.send(frame: core.endFrame(), reconnect: false, onEvent: { _ in })
        }
    }
}
