import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloInput
import RemoloSystem
import Testing
import RemoloTypes

/// `Sender.send(frame:)`, the entry point of `remolo send --device`, on
/// loopback: an InputCore fed a scripted touchpad in real time, its frames
/// sent as they fall due, into a receiver's recording sink.
extension RxSuite {
    @Suite struct DeviceFramesTests {
        static func core() throws -> InputCore {
            var c = InputConfig(touchpad: TouchpadConfig(geometry: try TouchpadGeometry(widthMm: 100, heightMm: 60)))
            c.acceleration = 0
            var core = try InputCore(config: c, startUs: senderClockUs())
            core.isSessionOpen = true
            return core
        }

        /// Drives `core` for `seconds`: one finger circles (1 mm a sample
        /// every 4 ms) and lifts every 0.5 s; `at(t)` runs every sample.
        static func drive(_ core: inout InputCore, _ tx: Sender, seconds: Double,
                          at: (Double) -> Void = { _ in }) throws {
            let start = senderClockUs()
            var i = 0
            while true {
                let now = senderClockUs()
                let t = Double(now - start) / 1e6
                if t >= seconds { break }
                at(t)
                let phase = Double(i) * 0.05
                let down = Int(t * 2) % 2 == 0 || t < 0.5
                core.contact(ContactSample(slot: 0, xMm: 50 + 20 * cos(phase), yMm: 30 + 15 * sin(phase),
                                           isTouching: down, timeUs: now))
                while core.nextFrameUs <= senderClockUs() {
                    try tx.send(frame: core.endFrame(), reconnect: true, onEvent: { _ in })
                }
                i += 1
                usleep(4000)
            }
            let end = senderClockUs()
            var f = Frame(timeUs: end)
            f.buttons = core.releaseAll(atUs: end)
            while core.nextFrameUs <= end { try tx.send(frame: core.endFrame(), reconnect: true, onEvent: { _ in }) }
            try tx.send(frame: f, reconnect: true, onEvent: { _ in })
        }

        @Test func framesReachTheSinkExactly() throws {
            let (rx, tx, sink) = try ReceiverTests.Pair().session()
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            var core = try Self.core()
            try Self.drive(&core, tx, seconds: 1.2)
            tx.close()
            #expect(eventually(3) { rx.stats.sessionsRemoved == 1 })
            sink.drain()
            let s = tx.stats
            #expect(s.motionDatagrams > 50, "\(s)")
            #expect(rx.stats.opened == s.motionDatagrams + s.heartbeats + s.scrollDatagrams)
            #expect(nearestPixel(sink.sum(Event.relX), s.totalDX), "x: \(sink.sum(Event.relX)) px, sent \(s.totalDX) Q8")
            #expect(nearestPixel(sink.sum(Event.relY), s.totalDY), "y: \(sink.sum(Event.relY)) px, sent \(s.totalDY) Q8")
            #expect(s.framesDropped == 0 && s.sessionsLost == 0)
        }

        @Test func receiverRestartedMidRunTheSenderReconnects() throws {
            let p = try ReceiverTests.Pair()
            let sinkA = try FrameSink(), sinkB = try FrameSink()
            let a: Receiver? = try p.receiver(into: sinkA)
            let port = a!.port
            var b: Receiver?
            defer { a?.stop(); b?.stop(); withExtendedLifetime((sinkA, sinkB)) {} }
            let tx = try Sender.connect(host: "127.0.0.1", port: port, identity: p.senderID,
                                        receiver: p.receiverID.publicKey)
            var core = try Self.core()
            var stopped = false, restarted = false
            try Self.drive(&core, tx, seconds: 3) { t in
                if t > 0.8 && !stopped { a?.stop(); stopped = true }
                if t > 1.2 && !restarted {
                    b = try? Receiver(host: "127.0.0.1", port: port, trust: p.trust, output: .fileDescriptor(sinkB.writeFD))
                    restarted = true
                }
            }
            tx.close()
            #expect(b != nil, "the new receiver could not listen on \(port)")
            #expect(eventually(3) { (b?.stats.sessionsRemoved ?? 0) >= 1 })
            sinkB.drain()
            let s = tx.stats
            #expect(s.sessionsLost == 1 && s.reconnects == 1, "\(s)")
            #expect(s.framesDropped > 0, "the outage's motion is dropped, not sent late: \(s)")
            #expect((b?.stats.opened ?? 0) > 50, "motion resumed on the new receiver")
            #expect(abs(sinkB.sum(Event.relX)) + abs(sinkB.sum(Event.relY)) > 20)
        }

        /// The sender core names buttons by plain numbers (it needs no
        /// platform header); they are the Linux codes the receiver writes,
        /// and every control-channel button maps to one and back.
        @Test func senderButtonsAreTheLinuxCodes() {
            let pairs: [(Button, MouseButton)] = [(.left, .left), (.right, .right), (.middle, .middle),
                                                  (.side, .side), (.extra, .extra)]
            for (b, m) in pairs {
                #expect(b.rawValue == m.evdevCode)
                #expect(MouseButton(b) == m)
                #expect(MouseButton(evdevCode: m.evdevCode) == m)
            }
            #expect(MouseButton.allCases.count == pairs.count)
            #expect(EvdevButton.code(traceNumber: 1) == MouseButton.left.evdevCode)
            #expect(EvdevButton.traceNumber(code: Int32(MouseButton.extra.evdevCode)) == 5)
            #expect(EvdevButton.traceNumber(code: Int32(EvdevButton.codes.upperBound) + 1) == nil)
        }

        /// `--touchpad-size WIDTHxHEIGHT`, millimetres, 10-1000 each way.
        @Test(arguments: [
            (1, "100x60", TouchpadSize(width: 100, height: 60)),
            (2, "104.5X68", TouchpadSize(width: 104.5, height: 68)),
            (3, "10x1000", TouchpadSize(width: 10, height: 1000)),
            (4, "9x60", nil), (5, "100x", nil), (6, "x60", nil), (7, "100x60x2", nil),
            (8, "100*60", nil), (9, "nanx60", nil), (10, "", nil),
        ] as [(Int, String, TouchpadSize?)])
        func touchpadSizeParses(_ c: (Int, String, TouchpadSize?)) {
            #expect(TouchpadSize(c.1) == c.2, "case \(c.0): '\(c.1)'")
        }
    }
}
