import Foundation
import Synchronization
@testable import RemoloPlayout
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import Testing

/// What each side speaks, agreed per session over real TCP: a sender that
/// asks for the keyboard, a receiver that takes keys or not, and a receiver
/// written before extensions (docs/protocol.md, "Extensions and the keyboard").
extension RxSuite {
    @Suite struct KeyboardNegotiationTests {
        typealias Pair = ReceiverTests.Pair

        @Test("1: a sender that asks for the keyboard gets it from a receiver that takes keys")
        func granted() throws {
            let p = try Pair()
            let sink = try FrameSink()
            let rx = try p.receiver(into: sink)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: p.senderID,
                                        receiver: p.receiverID.publicKey, keyboard: true)
            #expect(tx.keyboardGranted)
            #expect(tx.receiverHello == ControlHello(features: .keyboard, keyboard: .allowed))
            tx.close()
        }

        @Test("2: a receiver that does not take keys says why in its hello; the sender sends none", arguments: [1, 2, 3])
        func refusedUpFront(_ n: Int) throws {
            let p = try Pair(typing: n != 3)
            let sink = try FrameSink()
            let rx = try Receiver(host: "127.0.0.1", port: 0, trust: p.trust, output: .fileDescriptor(sink.writeFD),
                                  keyboard: n == 1 ? .off : ReceiverKeyboard())
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let tx = try Sender.connect(host: "127.0.0.1", port: rx.port, identity: p.senderID,
                                        receiver: p.receiverID.publicKey, keyboard: n != 2)
            if n == 1 {
                // remolo receive --no-keyboard
                #expect(!tx.keyboardGranted)
                #expect(tx.receiverHello?.keyboard == .off)
            } else if n == 3 {
                // paired, but without the right to type
                #expect(!tx.keyboardGranted)
                #expect(tx.receiverHello == ControlHello(features: [], keyboard: .notAllowed))
            } else {
                // A sender that does not ask says no hello: the base protocol, as before.
                #expect(tx.receiverHello == nil)
            }
            #expect(try tx.key(30, down: true, at: senderClockUs()) == false)
            #expect(try tx.type("a", at: senderClockUs()) == false)
            tx.close()
            #expect(eventually(3) { rx.liveSessions == 0 })
            #expect(rx.keyboardCounters.keyMessages == 0)
        }

        @Test("3: against a receiver from before extensions the sender reconnects once without hello, then points")
        func olderReceiver() throws {
            let p = try Pair()
            let old = try OlderReceiver(trust: p.trust)
            var lines: [String] = []
            let tx = try Sender.connect(host: "127.0.0.1", port: old.port, identity: p.senderID,
                                        receiver: p.receiverID.publicKey, keyboard: true, log: { lines.append($0) })
            #expect(!tx.keyboardGranted)
            #expect(tx.receiverHello == nil)
            try tx.button(.left, down: true, at: senderClockUs())
            try tx.button(.left, down: false, at: senderClockUs())
            #expect(try tx.key(30, down: true, at: senderClockUs()) == false)
            tx.close()
            // Both sessions seen, and the second one's two messages recorded.
            #expect(eventually(5) { old.sessions.count == 2 && old.sessions.last?.count == 2 }, "\(old.sessions)")
            let s = old.sessions
            // The first session said hello and got bye 2; the second said none.
            #expect(s.first?.first.map { if case .hello = $0 { true } else { false } } == true)
            #expect(s.last?.count == 2)
            #expect(s.last?.contains { if case .hello = $0 { true } else { false } } == false)
            #expect(lines.contains { $0.contains("older version") }, "\(lines)")
        }

        struct LateHello: CustomTestStringConvertible, Sendable {
            let n: Int
            let name: String
            /// Frames the sender sends after the key-confirmation ping, before its hello.
            let before: [ControlMessage]
            var testDescription: String { "\(n): \(name)" }
        }

        /// docs/protocol.md: hello is the sender's frame 1, the first frame
        /// after the key-confirmation ping; any frame before it, a ping
        /// included, makes the hello a protocol error (bye 2).
        @Test("4: a hello that is not frame 1 ends the session with bye 2", arguments: [
            LateHello(n: 1, name: "hello as frame 1 is answered", before: []),
            LateHello(n: 2, name: "a ping, then hello", before: [.ping(7)]),
            LateHello(n: 3, name: "two pings, then hello", before: [.ping(7), .ping(8)]),
            LateHello(n: 4, name: "a button, then hello",
                      before: [.button(ButtonEvent(button: .left, isDown: false, senderTimeNs: 1, sequence: 0))]),
            LateHello(n: 5, name: "a motion message, then hello",
                      before: [.motion(MotionEvent(dx: 256, dy: 0, senderTimeNs: 1))]),
        ])
        func lateHello(_ c: LateHello) throws {
            let p = try Pair()
            let sink = try FrameSink()
            let rx = try p.receiver(into: sink)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let ch = try ControlChannel.connect(host: "127.0.0.1", port: rx.port, identity: p.senderID,
                                                receiver: p.receiverID.publicKey)
            defer { ch.close() }
            for m in c.before { try ch.send(m) }
            try ch.send(.hello(ControlHello(features: .keyboard)))
            // What comes back for the frames before (pongs and receipts),
            // then the answer to the hello: a hello, or bye 2.
            var answer: ControlMessage?
            var bye: ByeReason?
            do {
                while answer == nil {
                    let m = try ch.receive(timeout: 3)
                    if case .hello = m { answer = m }
                }
            } catch SessionError.peerSaidBye(let r) {
                bye = r
            }
            if c.before.isEmpty {
                #expect(answer == .hello(ControlHello(features: .keyboard, keyboard: .allowed)), "case \(c.n)")
                #expect(bye == nil, "case \(c.n)")
            } else {
                #expect(answer == nil, "case \(c.n): a late hello was answered")
                #expect(bye == .protocolError, "case \(c.n)")
            }
        }
    }
}

/// A receiver that speaks the control channel as it was before extensions:
/// any message it does not know is a protocol error (bye 2), exactly what
/// its decoder did with an unknown type. It records each session's messages.
final class OlderReceiver {
    final class Log: Sendable { let sessions = Mutex<[[ControlMessage]]>([]) }
    let server: ControlServer
    let log = Log()
    var sessions: [[ControlMessage]] { log.sessions.withLock { $0 } }
    let stopped = DispatchSemaphore(value: 0)
    var port: UInt16 { server.listener.port }

    init(trust: ReceiverTrust) throws {
        let log = self.log
        server = ControlServer(listener: try TCPListener(host: "127.0.0.1", port: 0), trust: trust, limits: SessionLimits(),
                               onRejected: { _ in }, onSession: { ch in
            let i = log.sessions.withLock { $0.append([]); return $0.count - 1 }
            while true {
                guard let m = try? ch.receive() else { break }
                log.sessions.withLock { $0[i].append(m) }
                switch m {
                case .hello, .key, .text, .refused:
                    ch.close(saying: .protocolError)
                    return
                default: continue
                }
            }
        })
        let server = self.server, stopped = self.stopped
        Thread { server.run(); stopped.signal() }.start()
    }

    deinit {
        server.stop()
        _ = stopped.wait(timeout: .now() + 5)
    }
}
