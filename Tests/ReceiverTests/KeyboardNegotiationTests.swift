import Foundation
import Synchronization
@testable import Remolo
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
