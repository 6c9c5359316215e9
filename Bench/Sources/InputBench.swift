import RemoloInput

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
    ]
}
