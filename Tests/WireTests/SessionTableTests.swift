import Glibc
import RemoloPlayout
import RemoloLab
import RemoloTrace
import RemoloSession
import RemoloSystem
import RemoloPlayoutCore
import Testing
import RemoloTestSupport

@Suite struct SessionTableTests {
    @Test func capacityAndDuplicates() throws {
        let opener = DatagramOpener()
        var ids: [SessionID] = []
        for i in 0..<DatagramOpener.capacity {
            let id = try SessionID(bytes: le64(UInt64(i) * 0x1_0000_0001))
            ids.append(id)
            #expect(try opener.addSession(id, key: keyA) == i)
        }
        #expect(opener.sessionCount == DatagramOpener.capacity)
        #expect(throws: DatagramError.tableFull) { try opener.addSession(idB, key: keyB) }
        #expect(throws: DatagramError.sessionExists) { try opener.addSession(ids[3], key: keyB) }
        #expect(opener.removeSession(ids[3]))
        #expect(!opener.removeSession(ids[3]))
        #expect(try opener.addSession(idB, key: keyB) == 3) // the freed slot
        for (i, id) in ids.enumerated() { #expect(opener.contains(id) == (i != 3)) }
        // Every live session still opens its own datagrams.
        for id in ids where id != ids[3] {
            let d = DatagramSealer.seal(Datagram(.heartbeat, senderTimeUs: 1), counter: 1, key: keyA, session: id)
            #expect(try opener.open(d).get().session == id)
        }
    }

    /// Random adds and removes (fixed seed) against a plain set: lookups
    /// agree after every step, so deletion never strands an entry.
    @Test(arguments: [1, 2, 3, 4]) func churnAgreesWithAModel(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var w = wire()
        #expect(wire_init(&w) == 0)
        defer { wire_deinit(&w) }
        // A small id universe so homes collide and probe runs wrap.
        let universe: [[UInt8]] = (0..<80).map { _ in le64(rng.next() | 1) }
        var live = Set<Int>()
        for _ in 0..<3_000 {
            let k = Int(rng.next() % UInt64(universe.count))
            if rng.next() % 2 == 0 {
                let r = wire_add_session(&w, universe[k], keyBytesA)
                if live.contains(k) { #expect(r == -EEXIST) }
                else if live.count == DatagramOpener.capacity { #expect(r == -ENOSPC) }
                else { #expect(r >= 0); live.insert(k) }
            } else {
                let r = wire_remove_session(&w, universe[k])
                #expect(r == (live.remove(k) != nil ? 0 : -ENOENT))
            }
            #expect(Int(w.nsessions) == live.count)
            let wrong = universe.indices.filter { (wire_lookup(&w, universe[$0]) >= 0) != live.contains($0) }
            #expect(wrong.isEmpty, "lookup disagrees for \(wrong)")
        }
    }

    /// Removing a session and deinit wipe its key bytes in the C table.
    @Test func keysAreWiped() {
        var w = wire()
        #expect(wire_init(&w) == 0)
        let slot = Int(wire_add_session(&w, idBytesA, keyBytesA))
        _ = wire_add_session(&w, idBytesB, keyBytesB)
        func key(_ s: Int) -> [UInt8] {
            withUnsafeBytes(of: w.sess) {
                let sess = $0.load(fromByteOffset: s * MemoryLayout<wire_session>.stride, as: wire_session.self)
                return withUnsafeBytes(of: sess.key) { Array($0) }
            }
        }
        #expect(key(slot) == keyBytesA)
        #expect(wire_remove_session(&w, idBytesA) == 0)
        #expect(key(slot) == [UInt8](repeating: 0, count: 32))
        #expect(key(1) == keyBytesB)
        wire_deinit(&w)
        #expect(key(1) == [UInt8](repeating: 0, count: 32))
    }
}

