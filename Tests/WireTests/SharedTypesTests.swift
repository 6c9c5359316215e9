import RemoloPlayoutCore
import RemoloTypes
import Testing

// RemoloTypes depends on nothing, so it cannot read the C core's headers:
// the numbers it restates are held equal to the core's here.
@Suite struct SharedTypesTests {
    @Test("1: Wheel's notch is REMOLO_HIRES_PER_NOTCH")
    func notchMatchesTheCore() {
        #expect(Wheel.unitsPerNotch == Int32(REMOLO_HIRES_PER_NOTCH))
    }

    @Test("2: PacketKind's raw values are enum playout_kind's")
    func kindsMatchTheCore() {
        #expect(PacketKind.motion.rawValue == UInt8(PLAYOUT_KIND_MOTION.rawValue))
        #expect(PacketKind.scroll.rawValue == UInt8(PLAYOUT_KIND_SCROLL.rawValue))
        #expect(PacketKind.button.rawValue == UInt8(PLAYOUT_KIND_BUTTON.rawValue))
        #expect(PacketKind.heartbeat.rawValue == UInt8(PLAYOUT_KIND_HEARTBEAT.rawValue))
    }

    /// (units added, carry before) -> (notches, carry after): toward zero,
    /// the sign kept, nothing lost. The table is built in the test.
    @Test("3: the notch rule")
    func notchRule() {
        let cases: [(Int, Int32, Int32, Int32, Int32)] = [
            (1, 120, 0, 1, 0), (2, 119, 0, 0, 119), (3, 1, 119, 1, 0), (4, -120, 0, -1, 0),
            (5, -60, -60, -1, 0), (6, 240, 10, 2, 10), (7, -1, 0, 0, -1), (8, 60, -100, 0, -40),
        ]
        for c in cases {
            var carry = c.2
            let n = Wheel.notches(adding: c.1, to: &carry)
            #expect(n == c.3 && carry == c.4, "case \(c.0): \(n) notches, carry \(carry)")
        }
    }
}
