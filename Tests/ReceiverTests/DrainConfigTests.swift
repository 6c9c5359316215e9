import Foundation
@testable import RemoloPlayout
@testable import RemoloDevices
@testable import RemoloReceiver
import RemoloCore
import RemoloPlayoutCore
import RemoloSystem
import Testing

/// rx_loop_init takes the drain period from rx_config.tick_ns: 0 keeps
/// 480 Hz, REMOLO_TICK_NS_MIN..MAX (2000..120 Hz) is accepted, anything else
/// is refused (the loop in the VM at 576 Hz: VMTests' DrainRate576).
@Suite struct DrainConfigTests {
    @Test("tick_ns bounds", arguments: [
        (UInt32(0), true), (500_000, true), (1_736_111, true), (8_333_334, true),
        (1, false), (499_999, false), (8_333_335, false), (1_000_000_000, false),
    ])
    func tickBounds(_ c: (ns: UInt32, ok: Bool)) throws {
        let sock = try Socket.bindUDP(host: "127.0.0.1", port: 0)
        defer { close(sock) }
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        var cfg = rx_config()
        playout_config_default(&cfg.playout)
        cfg.sock = sock
        cfg.record_fd = -1
        cfg.tick_ns = c.ns
        let made = Result { try RawLoop(config: cfg, device: try PointerDevice(fileDescriptor: null)) }
        switch made {
        case .success: #expect(c.ok, "tick_ns \(c.ns) was accepted")
        case .failure(let e): #expect(!c.ok, "tick_ns \(c.ns): \(e)")
        }
    }

    @Test func everyAutoPickFitsTheLoop() {
        for hz in [60, 75, 90, 100, 120, 144, 165, 170, 180, 200, 240, 280, 300, 360, 480, 500] {
            let c = DrainRule.auto([DisplayMode(connector: "x", width: 1, height: 1, refreshHz: Double(hz),
                                                nominalHz: hz, inUse: true)])
            let ns = c.rate.tickNanoseconds
            #expect(ns >= REMOLO_TICK_NS_MIN && ns <= REMOLO_TICK_NS_MAX, "\(hz) Hz: \(c.line)")
            #expect(c.rate.hz >= 480 && c.rate.hz < 480 + Double(hz), "\(hz) Hz: \(c.line)")
        }
    }
}
