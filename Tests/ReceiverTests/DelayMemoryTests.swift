import Foundation
import Glibc
import RemoloPlayoutCore
@testable import RemoloPlayout
@testable import RemoloSender
@testable import RemoloLab
@testable import RemoloReceiver
@testable import RemoloSession
import RemoloSystem
import Testing
import RemoloTestSupport

/// A returning sender through the whole receiver (docs/playout.md, "A
/// returning sender"): real sockets on loopback, the receive loop's
/// sessions, the memory files. The sender's network on loopback is
/// 127.0.0.0/24.
extension RxSuite {
    @Suite struct DelayMemoryTests {
        typealias Pair = ReceiverTests.Pair
        static let loopback = "127.0.0.0/24"

        /// A memory a session would hold: `packets` movement packets, every
        /// 10th `spikeUs` late at no delay (10% over the 4.5% share).
        static func memory(packets: Int, spikeUs: UInt64) -> DelayRecall {
            var r = recall()
            recall_init(&r)
            for i in 0..<packets { recall_add(&r, i % 10 == 5 ? spikeUs : 0, 8_333) }
            return DelayRecall(r)
        }

        static func directory() -> String {
            var template = Array("/tmp/remolo-delay-memory-XXXXXX".utf8CString)
            return String(cString: mkdtemp(&template)!)
        }

        static func receiver(_ p: Pair, into sink: FrameSink, memory: DelayMemory,
                             playout: PlayoutConfig = .default, events: Events? = nil) throws -> Receiver {
            try Receiver(host: "127.0.0.1", port: 0, trust: p.trust, output: .fileDescriptor(sink.writeFD),
                         playout: playout, delayMemory: memory, onEvent: { e in events?.add(e) })
        }

        final class Events: @unchecked Sendable {
            private let lock = NSLock()
            private var lines: [String] = []
            func add(_ s: String) { lock.lock(); lines.append(s); lock.unlock() }
            var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
        }

        /// One session of `seconds` of circles; the delay the loop reported
        /// while it ran (the only session: its own delay).
        static func session(_ p: Pair, _ rx: Receiver, seconds: Double) throws -> (delayUs: UInt64, sent: UInt64) {
            let before = rx.stats.sessionsRemoved
            let tx = try p.connect(to: rx)
            var g = SyntheticGesture(.circle, size: 100)
            try tx.run(&g, seconds: seconds)
            let delay = rx.stats.delayUs
            let sent = tx.stats.motionDatagrams
            tx.close()
            // Forgotten only once its removal ran and its memory was saved.
            #expect(eventually(3) { rx.stats.sessionsRemoved == before + 1 && rx.liveSessions == 0 })
            return (delay, sent)
        }

        @Test("1: a first session leaves a memory of its packets, kept per sender and network")
        func firstSessionLeavesMemory() throws {
            let p = try Pair()
            let store = DelayMemory(directory: Self.directory() + "/delay-memory")
            let sink = try FrameSink()
            let rx = try Self.receiver(p, into: sink, memory: store)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let (_, sent) = try Self.session(p, rx, seconds: 0.6)
            let m = try #require(try store.load(sender: p.senderID.publicKey, network: Self.loopback))
            // The movement the chooser saw is the session's: 0.6 s of it,
            // give or take the first packet's frame.
            #expect(sent > 0 && (0.3...0.7).contains(m.movedSeconds), "\(m.movedSeconds) s in \(sent) datagrams")
            #expect(!m.isUsable, "one short session is not enough to hold a delay")
            #expect(store.count == 1)
            var st = stat()
            #expect(stat(store.directory, &st) == 0 && st.st_mode & 0o077 == 0, "the directory is private")
        }

        @Test("2: a returning sender's session starts at the delay its memory reads, and adds its packets to it",
              arguments: ["default", "window", "chooser"])
        func returningSenderHolds(_ policy: String) throws {
            let p = try Pair()
            let store = DelayMemory(directory: Self.directory())
            // 75 ms: past the window's 60 ms cap, which a held delay is not
            // bound by (docs/playout.md, "A returning sender").
            let before = Self.memory(packets: 9_000, spikeUs: 75_000)
            let config: PlayoutConfig = policy == "default" ? .default : policy == "window" ? .window : .chooser
            let held = before.delayUs(permille: config.recallPermille)
            // The bin of (74, 75] ms: a delay no spike is later than.
            #expect(before.isUsable && held == 75_000, "held \(held)")
            try store.save(before, sender: p.senderID.publicKey, network: Self.loopback)
            let sink = try FrameSink()
            let events = Events()
            let rx = try Self.receiver(p, into: sink, memory: store, playout: config, events: events)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let (delay, _) = try Self.session(p, rx, seconds: 0.6)
            #expect(delay == UInt64(held), "delay \(delay) us, memory \(held) us")
            #expect(events.all.contains { $0.contains("on \(Self.loopback): starts at \(held / 1000) ms") }, "\(events.all)")
            let after = try #require(try store.load(sender: p.senderID.publicKey, network: Self.loopback))
            #expect(after.moved > before.moved, "\(after.moved) after \(before.moved)")
            #expect(after.delayUs(permille: config.recallPermille) == held, "a short quiet session does not move it")
        }

        @Test("3: a memory of another network, or of another sender, is not used")
        func otherNetworkStartsCold() throws {
            let p = try Pair()
            let store = DelayMemory(directory: Self.directory())
            let m = Self.memory(packets: 9_000, spikeUs: 60_000)
            try store.save(m, sender: p.senderID.publicKey, network: "192.168.7.0/24")
            try store.save(m, sender: Identity.generate().publicKey, network: Self.loopback)
            let sink = try FrameSink()
            let rx = try Self.receiver(p, into: sink, memory: store)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            let (delay, _) = try Self.session(p, rx, seconds: 0.4)
            #expect(delay < 40_000, "cold: \(delay) us")
            #expect(store.count == 3, "its own memory beside the other two")
        }

        @Test("4: a damaged file costs a cold start and a note, and is replaced by the session's memory")
        func damagedFile() throws {
            let p = try Pair()
            let store = DelayMemory(directory: Self.directory())
            let path = store.path(sender: p.senderID.publicKey, network: Self.loopback)
            try Data(repeating: 7, count: 100).write(to: URL(fileURLWithPath: path))
            #expect(throws: DelayMemoryError.self) { _ = try store.load(sender: p.senderID.publicKey, network: Self.loopback) }
            let sink = try FrameSink()
            let events = Events()
            let rx = try Self.receiver(p, into: sink, memory: store, events: events)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            _ = try Self.session(p, rx, seconds: 0.3)
            #expect(events.all.contains { $0.hasPrefix("note: \(path): not a delay memory") }, "\(events.all)")
            let m = try #require(try store.load(sender: p.senderID.publicKey, network: Self.loopback))
            #expect(m.moved > 0)
        }

        @Test("5: a playout without the memory (the design note's) keeps none")
        func seedKeepsNone() throws {
            let p = try Pair()
            let store = DelayMemory(directory: Self.directory())
            let sink = try FrameSink()
            let rx = try Self.receiver(p, into: sink, memory: store, playout: .seed)
            defer { rx.stop(); withExtendedLifetime(sink) {} }
            _ = try Self.session(p, rx, seconds: 0.3)
            #expect(store.count == 0)
        }

        @Test("6: a session still live when the receiver stops leaves its memory too")
        func stopKeepsMemory() throws {
            let p = try Pair()
            let store = DelayMemory(directory: Self.directory())
            let sink = try FrameSink()
            let rx = try Self.receiver(p, into: sink, memory: store)
            defer { withExtendedLifetime(sink) {} }
            let tx = try p.connect(to: rx)
            var g = SyntheticGesture(.circle, size: 100)
            try tx.run(&g, seconds: 0.3)
            usleep(100_000)
            rx.stop()
            let m = try #require(try store.load(sender: p.senderID.publicKey, network: Self.loopback))
            #expect(m.moved > 0)
        }

        @Test("7: networks are the IPv4 /24 and the IPv6 /64; a mapped IPv4 address is IPv4")
        func networks() {
            #expect(TCPConnection.network(of: [192, 168, 1, 77]) == "192.168.1.0/24")
            #expect(TCPConnection.network(of: [0xfd, 0, 0, 1, 0x12, 0x34, 0, 0xab] + [UInt8](repeating: 9, count: 8))
                    == "fd00:1:1234:ab::/64")
            #expect(TCPConnection.network(of: [1, 2]) == nil)
            // ::ffff:192.168.1.77 (a dual-stack socket's view of an IPv4 peer) is IPv4.
            let mapped = PeerEndpoint(address: [UInt8](repeating: 0, count: 10) + [0xff, 0xff, 192, 168, 1, 77], port: 9)
            #expect(mapped.address == [192, 168, 1, 77] && mapped.network == "192.168.1.0/24")
            #expect(PeerEndpoint(address: [UInt8](repeating: 0, count: 15) + [1], port: 1).address.count == 16, "::1 stays IPv6")
        }

        @Test("8: past maxFiles, saving a new memory removes the one untouched longest")
        func pruned() throws {
            let store = DelayMemory(directory: Self.directory())
            let m = Self.memory(packets: 10, spikeUs: 0)
            let key = Identity.generate().publicKey
            for i in 0...DelayMemory.maxFiles {
                try store.save(m, sender: key, network: "10.0.\(i / 256).\(i % 256)/24")
                if i == 0 {
                    // The oldest by a clear margin, whatever the clock's grain.
                    var t = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
                    _ = utimensat(AT_FDCWD, store.path(sender: key, network: "10.0.0.0/24"), &t, 0)
                }
            }
            #expect(store.count == DelayMemory.maxFiles)
            #expect(try store.load(sender: key, network: "10.0.0.0/24") == nil)
            #expect(try store.load(sender: key, network: "10.0.1.0/24") != nil)
        }
    
        @Test("9: forgetting a sender removes its memories on every network, and no other sender's")
        func forgetSender() throws {
            let store = DelayMemory(directory: Self.directory())
            let m = Self.memory(packets: 10, spikeUs: 0)
            let gone = Identity.generate().publicKey, kept = Identity.generate().publicKey
            for net in ["10.0.0.0/24", "fd00:1:2:3::/64"] {
                try store.save(m, sender: gone, network: net)
                try store.save(m, sender: kept, network: net)
            }
            #expect(store.forget(sender: gone) == 2)
            #expect(store.count == 2)
            #expect(try store.load(sender: kept, network: "10.0.0.0/24") != nil)
            #expect(try store.load(sender: gone, network: "10.0.0.0/24") == nil)
        }
}
}
