import Foundation
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import RemoloTestSupport
import RemoloTrace
import Testing

/// Gestures end to end (docs/protocol.md, "Gestures (feature bit 3)"): a
/// real sender and receiver over loopback TCP and UDP, feature bit 3 agreed
/// in hello, the receiver's touchpad on a socket pair, read back as the
/// evdev frames the uinput touchpad would get. Never a finger left down,
/// however the session ends; older peers see nothing new.
extension RxSuite {
    @Suite struct GestureEndToEndTests {
        typealias Pair = ReceiverTests.Pair
        // Event codes (linux/input-event-codes.h).
        static let evAbs: UInt16 = 3, absX: UInt16 = 0x00, mtSlot: UInt16 = 0x2f, mtTrackingID: UInt16 = 0x39
        static let btnTouch: UInt16 = 0x14a, btnToolDouble: UInt16 = 0x14d, btnToolTriple: UInt16 = 0x14e
        /// The pad's middle and units (remolo_tpdev.h): 120 x 80 mm at 40 per mm.
        static let midX: Int32 = 2_400, unitsPerMm: Int32 = 40, spacing: Int32 = 18 * 40

        /// A receiver whose touchpad writes into `pad` and a sender that asks
        /// for gestures (or not).
        static func rig(_ pair: Pair, pad: FrameSink, pointer: FrameSink, gestures: Bool = true,
                        asks: Bool = true, limits: SessionLimits = SessionLimits(),
                        log: LineLog = LineLog()) throws -> (Receiver, Sender) {
            let rx = try Receiver(host: "127.0.0.1", port: 0, trust: pair.trust, output: .fileDescriptor(pointer.writeFD),
                                  limits: limits, gestures: gestures, touchpad: .fileDescriptor(pad.writeFD))
            do {
                let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: pair.senderID,
                                            receiver: pair.receiverID.publicKey, gestures: asks, log: { log.add($0) })
                return (rx, tx)
            } catch { rx.stop(); throw error }
        }

        /// A gesture's states, one a frame (8.3 ms) in real time.
        static func play(_ tx: Sender, id: UInt8, kind: GestureDatagram.Kind, fingers: UInt8, states: Int,
                         x: (Int) -> Int32, scale: (Int) -> Int32 = { _ in 65_536 }, last: Bool) throws -> UInt64 {
            var t: UInt64 = 0
            for i in 1...states {
                t = senderClockUs()
                try tx.send(gesture: GestureDatagram(id: id, kind: kind, fingers: fingers, isLast: last && i == states,
                                                     xUm: x(i), yUm: 0, scaleQ16: scale(i), angleUrad: 0), at: t)
                usleep(8_333)
            }
            return t
        }

        static func values(_ sink: FrameSink, _ type: UInt16, _ code: UInt16) -> [Int32] {
            sink.events.filter { $0.type == type && $0.code == code }.map(\.value)
        }

        /// Every finger up as far as the frames say: BTN_TOUCH's last value 0,
        /// and every slot that got a tracking id got -1 after it.
        static func allLifted(_ sink: FrameSink) -> Bool {
            var slot: Int32 = 0
            var ids: [Int32: Int32] = [:]
            for e in sink.events where e.type == evAbs {
                if e.code == mtSlot { slot = e.value } else if e.code == mtTrackingID { ids[slot] = e.value }
            }
            return values(sink, Event.evKey, btnTouch).last == 0 && ids.values.allSatisfy { $0 == -1 }
        }

        /// 1. A three-finger swipe: granted, fingers down (BTN_TOOL_TRIPLETAP),
        ///    the first finger's x moving from the pad's middle less one
        ///    spacing by the sent offset (40 units a mm), ending exactly
        ///    there, then every finger lifted.
        @Test func swipeReachesTheTouchpad() throws {
            let pair = try Pair(), pad = try FrameSink(), pointer = try FrameSink()
            let (rx, tx) = try Self.rig(pair, pad: pad, pointer: pointer)
            defer { tx.close(); rx.stop() }
            #expect(tx.gesturesGranted)
            let end = try Self.play(tx, id: 0, kind: .swipe, fingers: 3, states: 12, x: { Int32($0) * 500 }, last: true)
            try tx.endGesture(0, at: end)
            #expect(eventually { pad.drain(); return !Self.values(pad, Event.evKey, Self.btnTouch).isEmpty && Self.allLifted(pad) })
            #expect(Self.values(pad, Event.evKey, Self.btnToolTriple) == [1, 0])
            let xs = Self.values(pad, Self.evAbs, Self.absX)
            let first = Self.midX - Self.spacing
            #expect(xs.last == first + 6_000 * Self.unitsPerMm / 1000, "x \(xs)")
            #expect(xs.count > 12 && zip(xs, xs.dropFirst()).allSatisfy { $0 <= $1 }, "spread and never back: \(xs)")
            let s = rx.loop.stats
            #expect(s.touchpad && s.gestures == 1 && s.gestureStates == 13 && s.gesturesRefused == 0, "\(s.gesturesJSONFields)")
            #expect(pointer.drain().flatMap { $0 }.filter { $0.type == Event.evRel }.isEmpty, "the pointer did not move")
        }

        /// 2. A pinch to scale 2: two fingers whose row doubles, 18 mm to 36.
        @Test func pinchSpreadsTheFingers() throws {
            let pair = try Pair(), pad = try FrameSink(), pointer = try FrameSink()
            let (rx, tx) = try Self.rig(pair, pad: pad, pointer: pointer)
            defer { tx.close(); rx.stop() }
            _ = try Self.play(tx, id: 4, kind: .pinch, fingers: 2, states: 10, x: { _ in 0 },
                              scale: { 65_536 + Int32($0) * 6_554 - ($0 == 10 ? 4 : 0) }, last: true)
            #expect(eventually { pad.drain(); return Self.allLifted(pad) && !Self.values(pad, Event.evKey, Self.btnTouch).isEmpty })
            #expect(Self.values(pad, Event.evKey, Self.btnToolDouble) == [1, 0])
            let xs = Self.values(pad, Self.evAbs, Self.absX)
            // Two fingers at -0.5 and +0.5 spacings, times the scale.
            #expect(xs.first.map { $0 > Self.midX - Self.spacing / 2 - 20 } == true, "starts near 18 mm apart: \(xs)")
            #expect(xs.last == Self.midX - Self.spacing, "36 mm apart at scale 2: \(xs)")
        }

        enum Ending: String, CaseIterable, Sendable { case close, bye, replaced, idle, receiverStops }

        /// 3. Never a finger left down: the session ends mid-gesture (its
        ///    connection closed as a killed sender's is, a bye, a second
        ///    session from the same sender, the idle timeout (0.6 s here,
        ///    before the gesture's own 1 s), the receiver stopping).
        @Test(arguments: Ending.allCases)
        func noFingerStaysDown(_ ending: Ending) throws {
            let pair = try Pair(), pad = try FrameSink(), pointer = try FrameSink()
            let (rx, tx) = try Self.rig(pair, pad: pad, pointer: pointer,
                                        limits: ending == .idle ? .testing(idle: 0.6) : SessionLimits())
            defer { rx.stop() }
            _ = try Self.play(tx, id: 9, kind: .swipe, fingers: 3, states: 8, x: { Int32($0) * 400 }, last: false)
            #expect(eventually { pad.drain(); return Self.values(pad, Event.evKey, Self.btnTouch) == [1] }, "fingers down")
            var second: Sender?
            switch ending {
            case .close: tx.channel.close()
            case .bye: tx.close()
            case .replaced:
                second = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: pair.senderID,
                                            receiver: pair.receiverID.publicKey, gestures: true)
            case .idle: break   // the sender says nothing more, not even a ping
            case .receiverStops: rx.stop()
            }
            #expect(eventually(5) { pad.drain(); return Self.allLifted(pad) }, "\(ending): \(pad.events)")
            #expect(rx.loop.stats.gestureTimeouts == 0, "lifted by the session's end, not the timeout")
            second?.close()
            if ending != .close && ending != .bye { tx.close() }
        }

        /// 4. Older peers and refusals (numbered): nothing new unless both ask.
        @Test func olderPeersSeeNothingNew() throws {
            // 4.1 A sender that does not ask: not granted, and it cannot send one.
            do {
                let pair = try Pair(), pad = try FrameSink(), pointer = try FrameSink()
                let (rx, tx) = try Self.rig(pair, pad: pad, pointer: pointer, asks: false)
                defer { tx.close(); rx.stop() }
                #expect(!tx.gesturesGranted)
                #expect(throws: SenderError.self) {
                    try tx.send(gesture: GestureDatagram(id: 0, kind: .swipe, fingers: 3, isLast: false, xUm: 0, yUm: 0,
                                                         scaleQ16: 65_536, angleUrad: 0), at: senderClockUs())
                }
                #expect(!rx.loop.stats.touchpad, "no touchpad made for a sender that did not ask")
                // Sealed anyway, past the library's guard: the receiver drops
                // it (65 bytes on a session granted neither bit 1 nor bit 3).
                let state = GestureDatagram(id: 0, kind: .swipe, fingers: 3, isLast: false, xUm: 1_000, yUm: 0,
                                            scaleQ16: 65_536, angleUrad: 0)
                let bytes = try Self.sealedOutsideTheLibrary(state, on: tx)
                #expect(bytes.count == 65)
                try Self.sendUDP(bytes, to: rx.port)
                #expect(eventually { rx.loop.stats.datagrams >= 1 })
                let s = rx.loop.stats
                #expect(s.opened == 0 && s[.badKind] + s[.long] == 1 && s.gestureStates == 0, "\(s.json)")
                #expect(pad.drain().isEmpty, "nothing reached a touchpad")
            }
            // 4.2 A receiver with --no-gestures: not granted, no touchpad;
            //     the sender says once that it sends none.
            do {
                let pair = try Pair(), pad = try FrameSink(), pointer = try FrameSink(), said = LineLog()
                let (rx, tx) = try Self.rig(pair, pad: pad, pointer: pointer, gestures: false, log: said)
                defer { tx.close(); rx.stop() }
                #expect(!tx.gesturesGranted && !rx.loop.stats.touchpad)
                #expect(said.lines.filter { $0.hasPrefix("the receiver does not take gestures") }.count == 1, "\(said.lines)")
            }
            // 4.3 A gesture end from a session not granted gestures: bye 2.
            do {
                let pair = try Pair(), pad = try FrameSink(), pointer = try FrameSink()
                let (rx, tx) = try Self.rig(pair, pad: pad, pointer: pointer, asks: false)
                defer { rx.stop() }
                try tx.channel.send(.gestureEnd(GestureEndMessage(id: 1, senderTimeNs: 5)))
                #expect(eventually(3) { rx.liveSessions == 0 }, "the session ended")
                let bye = Self.bye(tx.channel)
                #expect(bye == .protocolError, "\(String(describing: bye))")
                tx.channel.close()
            }
        }

        /// 5. A receiver that cannot make a touchpad (here: no /dev/uinput)
        ///    offers no gestures and says why once.
        @Test(.enabled(if: access("/dev/uinput", W_OK) != 0, "this host can open /dev/uinput"))
        func noUinputNoGestures() throws {
            let pair = try Pair(), pointer = try FrameSink()
            let said = LineLog()
            let rx = try Receiver(host: "127.0.0.1", port: 0, trust: pair.trust, output: .fileDescriptor(pointer.writeFD),
                                  touchpad: .uinput(name: "Remolo touchpad test"), onEvent: { said.add($0) })
            defer { rx.stop() }
            let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: pair.senderID,
                                        receiver: pair.receiverID.publicKey, gestures: true)
            defer { tx.close() }
            #expect(!tx.gesturesGranted)
            #expect(said.lines.contains { $0.hasPrefix("gestures: not offered to senders: /dev/uinput") }, "\(said.lines)")
        }
    }
}

extension RxSuite.GestureEndToEndTests {
    /// 6. A touchpad the receiver cannot make at the first grant (here a
    ///    closed descriptor): the hello answers without bit 3 and the
    ///    receiver says why; the answer is what counts, so a gesture end
    ///    after it is a protocol error (bye 2) like any ungranted sender's.
    @Test func aTouchpadThatCannotBeMadeGrantsNothing() throws {
        let pair = try Pair(), pointer = try FrameSink()
        let said = LineLog()
        let rx = try Receiver(host: "127.0.0.1", port: 0, trust: pair.trust, output: .fileDescriptor(pointer.writeFD),
                              touchpad: .fileDescriptor(-1), onEvent: { said.add($0) })
        defer { rx.stop() }
        let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: pair.senderID,
                                    receiver: pair.receiverID.publicKey, gestures: true)
        #expect(!tx.gesturesGranted)
        #expect(eventually { said.lines.contains { $0.contains("gestures not granted: cannot make the gesture touchpad") } },
                "\(said.lines)")
        #expect(!rx.loop.stats.touchpad)
        try tx.channel.send(.gestureEnd(GestureEndMessage(id: 0, senderTimeNs: 5)))
        let bye = Self.bye(tx.channel)
        #expect(bye == .protocolError, "\(String(describing: bye))")
        tx.channel.close()
    }

    /// 7. `--record-arrivals` beside gestures: the trace still reads, its
    ///    rows are the pointer's datagrams only, and each gesture state is
    ///    counted in the closing comment's `left_out`.
    @Test func arrivalRecordingLeavesGestureStatesOut() throws {
        let pair = try Pair(), pad = try FrameSink(), pointer = try FrameSink()
        let path = NSTemporaryDirectory() + "remolo-arrivals-gestures-\(getpid()).csv"
        defer { unlink(path) }
        let recorder = try ArrivalRecorder(path: path)
        let rx = try Receiver(host: "127.0.0.1", port: 0, trust: pair.trust, output: .fileDescriptor(pointer.writeFD),
                              recordArrivals: recorder, touchpad: .fileDescriptor(pad.writeFD))
        defer { rx.stop() }
        let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: pair.senderID,
                                    receiver: pair.receiverID.publicKey, gestures: true)
        try tx.send(.motion(dx: 512, dy: 0), at: senderClockUs())
        let end = try Self.play(tx, id: 1, kind: .swipe, fingers: 3, states: 5, x: { Int32($0) * 300 }, last: true)
        try tx.endGesture(1, at: end)
        try tx.send(.heartbeat, at: senderClockUs())
        #expect(eventually { rx.loop.stats.opened == 7 }, "\(rx.loop.stats.json)")
        tx.close()
        rx.stop()
        let trace = try Trace.read(from: path)
        #expect(trace.records.map(\.kind) == [.motion, .heartbeat], "\(trace.records)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("other_sessions=0 not_recorded=0 left_out=5"), "\(text)")
        #expect(recorder.rows == 2)
    }

    /// The 65-byte gesture layout sealed on `tx`'s session with its key,
    /// whatever was granted: what a sender that ignores the answer sends.
    static func sealedOutsideTheLibrary(_ g: GestureDatagram, on tx: Sender) throws -> [UInt8] {
        var sealer = DatagramSealer(key: try DatagramKey(secret: tx.channel.keys.datagramKey),
                                    session: tx.channel.keys.sessionID)
        var out = [UInt8](repeating: 0, count: Datagram.redundantByteCount)
        let n = try out.withUnsafeMutableBytes { try sealer.seal(gesture: g, senderTimeUs: senderClockUs(), into: $0) }
        return Array(out[..<n])
    }

    static func sendUDP(_ bytes: [UInt8], to port: UInt16) throws {
        let fd = try Socket.connectUDP(host: "127.0.0.1", port: port)
        defer { close(fd) }
        #expect(bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) } == bytes.count)
    }

    /// The bye that ends the session, as the channel reports it.
    static func bye(_ ch: ControlChannel) -> ByeReason? {
        var bye: ByeReason?
        _ = eventually(2) {
            do throws(SessionError) { _ = try ch.receive(timeout: 3) } catch {
                if case .peerSaidBye(let r) = error { bye = r }
                return true
            }
            return false
        }
        return bye
    }
}

/// Lines a receiver said, from any thread.
final class LineLog: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func add(_ s: String) { lock.lock(); stored.append(s); lock.unlock() }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
