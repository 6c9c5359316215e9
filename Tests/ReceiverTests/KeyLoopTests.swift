import Foundation
@testable import RemoloPlayout
@testable import RemoloDevices
@testable import RemoloReceiver
@testable import RemoloSender
@testable import RemoloSession
import RemoloSystem
import RemoloCore
import RemoloPlayoutCore
import Testing
import RemoloTypes

/// Keys through the real receive loop (io_uring, the command ring, the
/// playout, the keyboard device's own frames), written in fd mode to a
/// SOCK_SEQPACKET sink: every keyboard frame is one message.
extension RxSuite {
    @Suite struct KeyLoopTests {
        static let ctrl: UInt16 = 29, shift: UInt16 = 42, altGr: UInt16 = 100
        static let a: UInt16 = 30, b: UInt16 = 48, c: UInt16 = 46

        static func ch(_ code: UInt16, _ down: Bool) -> KeyChange { KeyChange(code: code, down: down) }

        /// Waits until the sink holds `n` keyboard key changes; returns them.
        @discardableResult
        static func waitKeys(_ rig: LoopRig, _ n: Int, timeout: Double = 5) -> [Event] {
            _ = eventually(timeout) { rig.sink.drain(); return rig.sink.keyboardKeys.count >= n }
            return rig.sink.keyboardKeys
        }

        /// Every keyboard frame is KEY_* changes only, ends in SYN_REPORT,
        /// and changes no key twice between two SYN_REPORTs.
        static func checkFrames(_ sink: FrameSink) {
            for f in sink.keyboardFrames {
                #expect(f.last == Event(type: Event.evSyn, code: 0, value: 0), "\(f)")
                #expect(f.allSatisfy { $0.isKeyboardKey || $0.type == Event.evSyn }, "a keyboard frame with other events: \(f)")
                var seen = Set<UInt16>()
                for e in f {
                    if e.type == Event.evSyn { seen = []; continue }
                    #expect(seen.insert(e.code).inserted, "key \(e.code) changes twice in one SYN frame: \(f)")
                }
            }
        }

        @Test("1: keys pushed through the loop come out in order as EV_KEY frames on the pointer's descriptor")
        func keysInOrder() throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            #expect(rig.loop.hasKeyboard && rig.stats.keyboard)
            // Motion first, so the pointer's frames share the descriptor.
            rig.send(s.seal(.motion(dx: 20 * 256, dy: 0)))
            let text: [KeyChange] = [Self.ch(Self.shift, true), Self.ch(Self.a, true), Self.ch(Self.a, false),
                                     Self.ch(Self.shift, false), Self.ch(Self.b, true), Self.ch(Self.b, false)]
            let r = try #require(try rig.loop.keys(s.id, text, senderTimeUs: senderClockUs()))
            #expect(r == KeyPushResult(accepted: 6) && r.allAccepted)
            // One key through the Datagram API too.
            #expect(try rig.loop.push(s.id, Datagram(.key(code: Self.c, down: true), senderTimeUs: senderClockUs())))
            #expect(try rig.loop.push(s.id, Datagram(.key(code: Self.c, down: false), senderTimeUs: senderClockUs())))
            let keys = Self.waitKeys(rig, 8)
            #expect(keys == text.map { Event.key($0.code, $0.down) } + [.key(Self.c, true), .key(Self.c, false)])
            Self.checkFrames(rig.sink)
            #expect(rig.waitTimerStopped())
            rig.sink.drain()
            let st = rig.stats
            #expect(st.keys == 8 && st.keyFrames == UInt64(rig.sink.keyboardFrames.count) && st.keyWriteErrors == 0)
            #expect(rig.sink.sum(Event.relX) == 20, "the pointer's frames are there too")
            #expect(LoopKeyRefusal.allCases.allSatisfy { st.keysRefused($0) == 0 })
        }

        @Test("2: refused keys change nothing and are counted by reason")
        func refusalsCounted() throws {
            let rig = try LoopRig()
            let s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let t = senderClockUs()
            let cases: [(Int, [KeyChange], KeyPushResult)] = [
                (1, [Self.ch(Self.a, false)], KeyPushResult(accepted: 0, refused: [.notHeld: 1])),
                (2, [Self.ch(116, true)], KeyPushResult(accepted: 0, refused: [.unknownKey: 1])),      // KEY_POWER
                (3, [Self.ch(Self.a, true), Self.ch(Self.a, true)], KeyPushResult(accepted: 1, refused: [.alreadyHeld: 1])),
                (4, [Self.ch(Self.a, false), Self.ch(0x110, true), Self.ch(Self.a, false)],
                 KeyPushResult(accepted: 1, refused: [.unknownKey: 1, .notHeld: 1])),
            ]
            for (n, changes, want) in cases {
                #expect(try rig.loop.keys(s.id, changes, senderTimeUs: t) == want, "case \(n)")
            }
            #expect(try rig.loop.push(s.id, Datagram(.key(code: Self.b, down: false), senderTimeUs: t)) == false,
                    "a refused key is not played")
            #expect(try rig.loop.key(SessionID.random(), code: Self.a, down: true, senderTimeUs: t) == nil,
                    "an unknown session")
            let keys = Self.waitKeys(rig, 2)
            #expect(keys == [.key(Self.a, true), .key(Self.a, false)])
            #expect(eventually { rig.stats.keys == 2 })
            let st = rig.stats
            #expect(st.keysRefused(.notHeld) == 3 && st.keysRefused(.unknownKey) == 2 && st.keysRefused(.alreadyHeld) == 1)
            #expect(st.json.contains(#""keys":{"keyboard":true,"played":2,"unknown_key":2,"not_held":3,"flood":0,"already_held":1,"#),
                    "\(st.json)")
        }

        @Test("3: a session removed while holding keys releases them, and only them")
        func removalReleases() throws {
            let rig = try LoopRig()
            let s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let held = [Self.ctrl, Self.shift, Self.a]
            _ = try rig.loop.keys(s.id, held.map { Self.ch($0, true) }, senderTimeUs: senderClockUs())
            Self.waitKeys(rig, 3)
            #expect(try rig.loop.removeSession(s.id))
            let keys = Self.waitKeys(rig, 6)
            #expect(keys.prefix(3) == held.map { .key($0, true) }[...])
            #expect(Set(keys.suffix(3).map(\.code)) == Set(held) && keys.suffix(3).allSatisfy { $0.value == 0 })
            #expect(keys.count == 6)
            Self.checkFrames(rig.sink)
        }

        @Test("4: two sessions holding one key: the device sees one press, and the release when the last lets go")
        func twoSessionsShareAKey() throws {
            let rig = try LoopRig()
            let s1 = TestSession(), s2 = TestSession()
            try rig.loop.addSession(s1.id, key: s1.key)
            try rig.loop.addSession(s2.id, key: s2.key)
            let t = { senderClockUs() }
            _ = try rig.loop.key(s1.id, code: Self.ctrl, down: true, senderTimeUs: t())
            Self.waitKeys(rig, 1)
            _ = try rig.loop.keys(s2.id, [Self.ch(Self.ctrl, true), Self.ch(Self.a, true)], senderTimeUs: t())
            Self.waitKeys(rig, 2)
            // Session 1 lets go of Ctrl while 2 holds it: the device hears nothing.
            _ = try rig.loop.key(s1.id, code: Self.ctrl, down: false, senderTimeUs: t())
            _ = try rig.loop.key(s1.id, code: Self.shift, down: true, senderTimeUs: t())
            Self.waitKeys(rig, 3)
            #expect(try rig.loop.removeSession(s1.id))        // releases Shift, not Ctrl
            Self.waitKeys(rig, 4)
            _ = try rig.loop.key(s2.id, code: Self.a, down: false, senderTimeUs: t())
            Self.waitKeys(rig, 5)
            #expect(try rig.loop.removeSession(s2.id))        // the last holder of Ctrl
            let keys = Self.waitKeys(rig, 6)
            usleep(50_000)
            rig.sink.drain()
            #expect(rig.sink.keyboardKeys == [.key(Self.ctrl, true), .key(Self.a, true), .key(Self.shift, true),
                                              .key(Self.shift, false), .key(Self.a, false), .key(Self.ctrl, false)],
                    "\(keys)")
            #expect(eventually { rig.stats.keys == 8 }, "each session's changes count (\(rig.stats.keys)), the device's fewer")
        }

        @Test("5: stopping the loop releases every key")
        func stopReleases() throws {
            let rig = try LoopRig()
            let s1 = TestSession(), s2 = TestSession()
            try rig.loop.addSession(s1.id, key: s1.key)
            try rig.loop.addSession(s2.id, key: s2.key)
            _ = try rig.loop.keys(s1.id, [Self.ch(Self.ctrl, true), Self.ch(Self.a, true)], senderTimeUs: senderClockUs())
            _ = try rig.loop.keys(s2.id, [Self.ch(Self.ctrl, true), Self.ch(Self.b, true)], senderTimeUs: senderClockUs())
            Self.waitKeys(rig, 3)
            rig.loop.stop()
            rig.sink.drain()
            var down = Set<UInt16>()
            for e in rig.sink.keyboardKeys {
                if e.value == 1 { #expect(down.insert(e.code).inserted, "\(e.code) pressed twice") } else { #expect(down.remove(e.code) != nil) }
            }
            #expect(down.isEmpty, "still down after stop: \(down.sorted())")
            #expect(rig.sink.keyboardKeys.count == 6)
        }

        /// The largest text: 256 characters of 6 key events each (Shift,
        /// AltGr, the key), 1536 changes at one sender time. All are taken,
        /// the caller is not held for long, and they come out in order.
        @Test("6: a burst of 1536 key changes for one session is taken whole, fast, and played in order")
        func largestTextBurst() throws {
            let rig = try LoopRig()
            let s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let letters: [UInt16] = Array(16...25) + Array(30...38) + Array(44...50)
            var text: [KeyChange] = []
            for i in 0..<256 {
                let k = letters[i % letters.count]
                text += [Self.ch(Self.shift, true), Self.ch(Self.altGr, true), Self.ch(k, true),
                         Self.ch(k, false), Self.ch(Self.altGr, false), Self.ch(Self.shift, false)]
            }
            #expect(text.count == 1536 && text.count <= Int(REMOLO_KEYQ_CAP))
            let start = MonotonicClock.seconds()
            let r = try #require(try rig.loop.keys(s.id, text, senderTimeUs: senderClockUs()))
            let took = MonotonicClock.seconds() - start
            #expect(r == KeyPushResult(accepted: text.count), "\(r)")
            #expect(took < 0.5, "pushing took \(took) s")
            let keys = Self.waitKeys(rig, text.count, timeout: 10)
            #expect(keys == text.map { Event.key($0.code, $0.down) })
            Self.checkFrames(rig.sink)
            #expect(rig.stats.keysFolded == 0 && rig.stats.keysRefused(.flood) == 0)
        }

        @Test("7: without a keyboard, keys are refused and nothing is written")
        func noKeyboard() throws {
            let rig = try LoopRig(keyboard: false)
            let s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            #expect(!rig.loop.hasKeyboard && !rig.stats.keyboard)
            #expect(throws: ReceiverError.self) { try rig.loop.key(s.id, code: Self.a, down: true, senderTimeUs: senderClockUs()) }
            #expect(try rig.loop.push(s.id, Datagram(.key(code: Self.a, down: true), senderTimeUs: senderClockUs())) == false)
            usleep(30_000)
            rig.sink.drain()
            #expect(rig.sink.keyboardKeys.isEmpty)
        }
    }
}

extension RxSuite {
    /// The keyboard device's own write path in fd mode: frames, SysRq,
    /// recovery after a failed write, release of everything held.
    @Suite struct KeyboardDeviceTests {
        typealias K = KeyLoopTests
        static let alt: UInt16 = 56, sysrq: UInt16 = 99

        static func syn() -> Event { Event(type: Event.evSyn, code: 0, value: 0) }

        @Test("1: a press and its release in one frame are split by a SYN_REPORT, in one write")
        func pressAndReleaseSplit() throws {
            let sink = try FrameSink()
            let d = try KeyboardDevice(fileDescriptor: sink.writeFD)
            try d.write([K.ch(K.a, true), K.ch(K.b, true), K.ch(K.a, false)])
            #expect(sink.drain() == [[.key(K.a, true), .key(K.b, true), Self.syn(), .key(K.a, false), Self.syn()]])
            #expect(throws: KeyboardDeviceError.self) { try d.write([K.ch(116, true)]) }   // KEY_POWER
            #expect(throws: KeyboardDeviceError.self) { try d.write((16...32).map { K.ch($0, true) }) }
            #expect(try d.write([]) == 0)
            #expect(sink.drain().isEmpty)
        }

        @Test("2: SysRq is never written while Alt is held (Alt+SysRq is the kernel's)")
        func sysrqWithAlt() throws {
            let sink = try FrameSink()
            let d = try KeyboardDevice(fileDescriptor: sink.writeFD)
            let cases: [(Int, [KeyChange], [[Event]])] = [
                (1, [K.ch(Self.sysrq, true)], [[.key(Self.sysrq, true), Self.syn()]]),       // Print Screen alone
                (2, [K.ch(Self.sysrq, false)], [[.key(Self.sysrq, false), Self.syn()]]),
                (3, [K.ch(Self.alt, true), K.ch(Self.sysrq, true)], [[.key(Self.alt, true), Self.syn()]]),
                (4, [K.ch(Self.sysrq, false)], []),
                (5, [K.ch(Self.alt, false)], [[.key(Self.alt, false), Self.syn()]]),
                (6, [K.ch(100, true)], [[.key(100, true), Self.syn()]]),                     // AltGr is an Alt too
                (7, [K.ch(Self.sysrq, true)], []),
                (8, [K.ch(100, false), K.ch(Self.sysrq, false)], [[.key(100, false), Self.syn()]]),
            ]
            for (n, changes, want) in cases {
                try d.write(changes)
                #expect(sink.drain() == want, "case \(n)")
            }
            #expect(d.dev.pointee.sysrq_dropped == 2)
        }

        @Test("3: a failed write's keys are written first on the next, releases before presses")
        func failedWriteReconciled() throws {
            let sink = try FrameSink()
            let d = try KeyboardDevice(fileDescriptor: sink.writeFD)
            let good = dup(sink.writeFD), readOnly = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(good >= 0 && readOnly >= 0)
            defer { close(good); close(readOnly) }
            try d.write([K.ch(K.ctrl, true), K.ch(K.a, true)])
            try #require(dup2(readOnly, sink.writeFD) == sink.writeFD)
            #expect(throws: KeyboardDeviceError.self) { try d.write([K.ch(K.a, false), K.ch(K.b, true)]) }
            try #require(dup2(good, sink.writeFD) == sink.writeFD)
            try d.write([K.ch(K.c, true)])
            #expect(sink.drain() == [[.key(K.ctrl, true), .key(K.a, true), Self.syn()],
                                     [.key(K.a, false), Self.syn()], [.key(K.b, true), Self.syn()],
                                     [.key(K.c, true), Self.syn()]])
        }

        @Test("4: releaseAll lets go of every held key, 16 a frame")
        func releaseAll() throws {
            let sink = try FrameSink()
            let d = try KeyboardDevice(fileDescriptor: sink.writeFD)
            let codes = Array(UInt16(16)...UInt16(35))
            try d.write(codes.prefix(16).map { K.ch($0, true) })
            try d.write(codes.suffix(4).map { K.ch($0, true) })
            sink.drain()
            #expect(try d.releaseAll() > 0)
            let frames = sink.drain()
            #expect(frames.map(\.count) == [17, 5])
            #expect(frames.flatMap { $0 }.filter(\.isKeyboardKey) == codes.map { .key($0, false) })
            #expect(try d.releaseAll() == 0)
        }
    }
}
