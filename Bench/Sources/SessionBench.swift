import RemoloPlayout
import RemoloSession

// The session benchmarks.
//
// wire.handshake_us: one complete in-memory Noise IK session handshake, both
// ends (sender message 1, receiver processing and message 2, sender
// processing and Split), through the public API and the wire encoding.
// Four X25519 operations per side dominate.
func sessionBenches() -> [BenchCase] {
    [BenchCase(name: "wire.handshake_us") { settings in
        let sender = Identity.generate(), receiver = Identity.generate()
        var list = PeerList()
        list.add(sender.publicKey, label: "bench")
        let trust = try! ReceiverTrust(identity: receiver, directory: nil, authorized: list)
        // Strictly increasing fake time, so no handshake is refused as a replay.
        final class Tick: @unchecked Sendable { var t = 1_700_000_000.0 }
        let tick = Tick()
        let clock: SessionClock = { tick.t += 0.000_001; return tick.t }
        let ns = medianNsPerIteration(settings, iterations: 2_000) { n in
            for _ in 0..<n {
                let s = SenderHandshake(identity: sender, mode: .session(receiver: receiver.publicKey), clock: clock)
                let r = ReceiverHandshake(trust: trust)
                let m2 = try! r.receive(s.start())!
                _ = try! s.receive(m2)
                blackHole((s.result!.keys.sessionID, r.result!.keys.sessionID))
            }
        }
        return [BenchResult(name: "wire.handshake_us", value: ns / 1000, unit: "us")]
    }]
}
