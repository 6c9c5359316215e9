import Glibc
import RemoloPlayout
import RemoloSession
import RemoloSystem
import RemoloPlayoutCore
import Testing

/// wire_newest reads a session's newest counter in place (no session, and
/// so no key, is copied out of the table), and DatagramOpener.newestCounter
/// is built on it.
@Suite struct NewestCounterTests {
    /// One step against a table that starts with session A live: open a
    /// datagram (or forge one), remove A, then ask both layers.
    enum Step: Sendable, CustomStringConvertible {
        case open(UInt64)
        case forge(UInt64)
        case remove
        var description: String {
            switch self {
            case let .open(c): "open \(c)"
            case let .forge(c): "forge \(c)"
            case .remove: "remove A"
            }
        }
    }

    /// Expected after each step: wire_newest's return value and counter.
    struct Case: Sendable, CustomTestStringConvertible {
        let id: Int
        let name: String
        let steps: [Step]
        let rc: Int32
        let newest: UInt64?
        var testDescription: String { "\(id): \(name)" }
    }

    static let cases = [
        Case(id: 1, name: "live, nothing accepted yet", steps: [], rc: 0, newest: nil),
        Case(id: 2, name: "counter 0 accepted", steps: [.open(0)], rc: 1, newest: 0),
        Case(id: 3, name: "gaps are fine", steps: [.open(3), .open(90)], rc: 1, newest: 90),
        Case(id: 4, name: "a forged datagram moves nothing", steps: [.open(5), .forge(1_000)], rc: 1, newest: 5),
        Case(id: 5, name: "only forgeries: still none", steps: [.forge(7)], rc: 0, newest: nil),
        Case(id: 6, name: "a replay moves nothing", steps: [.open(9), .open(4)], rc: 1, newest: 9),
        Case(id: 7, name: "the largest counter", steps: [.open(.max)], rc: 1, newest: .max),
        Case(id: 8, name: "removed", steps: [.open(2), .remove], rc: -ENOENT, newest: nil),
    ]

    @Test("newest counter", arguments: cases)
    func newest(_ c: Case) throws {
        var w = wire()
        #expect(wire_init(&w) == 0)
        defer { wire_deinit(&w) }
        #expect(wire_add_session(&w, idBytesA, keyBytesA) >= 0)
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        for step in c.steps {
            switch step {
            case let .open(n), let .forge(n):
                let key = if case .forge = step { keyBytesB } else { keyBytesA }
                let d = rawDatagram(key: key, id: idBytesA, counter: n, kind: 4, a: 0, b: 0)
                var rx = wire_rx()
                _ = wire_open(&w, d, d.count, &rx)
                _ = opener.open(d)
            case .remove:
                #expect(wire_remove_session(&w, idBytesA) == 0)
                #expect(opener.removeSession(idA))
            }
        }
        // A sentinel shows *out is written only when there is an answer.
        var out: UInt64 = 0xdead_beef
        #expect(wire_newest(&w, idBytesA, &out) == c.rc, "case \(c.id)")
        #expect(out == c.newest ?? 0xdead_beef, "case \(c.id)")
        #expect(opener.newestCounter(of: idA) == c.newest, "case \(c.id)")
        // Another id is unknown to both.
        #expect(wire_newest(&w, idBytesB, &out) == -ENOENT)
        #expect(opener.newestCounter(of: idB) == nil)
    }
}
