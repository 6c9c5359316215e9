import Foundation
import RemoloTrace
import Testing
@testable import RemoloLab

/// A roc-streaming receiver dump read as a trace (RocDump): numbered
/// made-up dumps, each expectation worked out from the dump's lines.
@Suite struct RocDumpTests {
    /// One `m,` line: arrival in ns, RTP timestamp (44.1 kHz).
    static func m(_ recvNs: Int, _ rtp: Int) -> String { "m,\(recvNs).000000,\(rtp).000000,0.000000,0.000000,0.000000" }

    /// 441 RTP units are 10 ms at 44.1 kHz.
    static let step = 441

    /// A gesture at 100 Hz: `moving` frames of 1 px right each, then
    /// `still` frames of heartbeats only (every one: RocDump keeps its own).
    static func gesture(moving: Int, still: Int) -> Trace {
        var r: [TraceRecord] = []
        for i in 0..<(moving + still) {
            let send = UInt64(5_000_000 + i * 10_000)
            r.append(i < moving ? TraceRecord(sendUs: send, arriveUs: send + 1_000, kind: .motion, dx: 256, dy: 0)
                                : TraceRecord(sendUs: send, arriveUs: send + 1_000, kind: .heartbeat))
        }
        return Trace(records: r)
    }

    // 1: send times from the RTP clock, arrivals from the first packet's,
    // other line kinds skipped, duplicates dropped, the 32-bit timestamp
    // unwrapped.
    @Test func case1_packets() throws {
        let start = 4_294_967_296 - 2 * Self.step   // wraps after two packets
        let lines = ["d,1.0,0.0,0.0,0.0", Self.m(1_000_000_000, start), "t,5.0,6.0,7.0",
                     Self.m(1_010_000_000, start + Self.step), Self.m(1_011_000_000, start + Self.step),
                     Self.m(1_025_000_000, 0), Self.m(1_030_000_000, Self.step)]
        let p = try RocDump.packets(lines.joined(separator: "\n"))
        #expect(p.map(\.sendUs) == [0, 10_000, 20_000, 30_000], "\(p)")
        #expect(p.map(\.arriveUs) == [0, 10_000, 25_000, 30_000], "\(p)")
    }

    // 2: what is not a dump is refused, with the line and the fix.
    @Test func case2_notADump() {
        #expect(throws: LabError.self) { try RocDump.packets("send_us,arrive_us,kind,dx,dy\n1,2,move,0,0\n") }
        do {
            _ = try RocDump.packets(Self.m(0, 0) + "\nm,notanumber,5\n")
            Issue.record("a bad m line was read")
        } catch {
            #expect(error.description.contains("dump line 2"), "\(error.description)")
        }
        do {
            _ = try RocDump.packets("d,1,2,3\n")
            Issue.record("a dump with no packets was read")
        } catch {
            #expect(error.description.contains("unpack the .xz first"), "\(error.description)")
        }
    }

    // 3: the gesture laid over the dump's send times. 100 frames of 1 px
    // then 55 still; the dump has every 10 ms packet for 2 s but those of
    // frames 20-27, which the link lost: frame 28 carries its own and the
    // 4 before it (5 frames at most, as R2's file does), 5 px. Every other
    // moving frame carries 1 px; the still half second keeps one packet per
    // 100 ms as a heartbeat; the dump past the gesture's 1.54 s is left out.
    @Test func case3_gestureLaidOver() throws {
        var lines: [String] = []
        for i in 0..<200 where !(20...27).contains(i) {
            lines.append(Self.m(2_000_000_000 + i * 10_000_000 + (i % 3) * 1_000_000, 1_000 + i * Self.step))
        }
        let t = try RocDump.trace(dump: lines.joined(separator: "\n"), gesture: Self.gesture(moving: 100, still: 55))
        let moves = t.records.filter { $0.kind == .motion }
        #expect(moves.count == 100 - 8, "\(moves.count) moves")
        let after = try #require(moves.first { $0.sendUs == 7_000_000_000 + 280_000 }, "frame 28")
        #expect(after.dx == 5 * 256 && after.dy == 0, "frame 28 carries \(after.dx)")
        #expect(moves.dropFirst().filter { $0.sendUs != after.sendUs }.allSatisfy { $0.dx == 256 }, "one frame each")
        let beats = t.records.filter { $0.kind == .heartbeat }
        #expect(beats.count == 5, "\(beats.map(\.sendUs))")
        #expect(zip(beats.dropFirst(), beats).allSatisfy { $0.0.sendUs - $0.1.sendUs == 100_000 })
        #expect((t.records.last?.sendUs ?? 0) <= 7_000_000_000 + 1_540_000)
        // The arrivals keep the dump's timing: frame 1 arrived 11 ms after frame 0.
        #expect(t.records[1].arriveUs == 123_011_000, "\(String(describing: t.records[1].arriveUs))")
    }

    // 4: --from: the dump from that second on, its first packet at the
    // origin of both clocks.
    @Test func case4_fromASecondOn() throws {
        var lines: [String] = []
        for i in 0..<300 { lines.append(Self.m(i * 10_000_000 + 3_000_000 * (i / 150), i * Self.step)) }
        let t = try RocDump.trace(dump: lines.joined(separator: "\n"), gesture: Self.gesture(moving: 100, still: 0),
                                  fromS: 1.5)
        #expect(t.records.first?.sendUs == 7_000_000_000 && t.records.first?.arriveUs == 123_000_000)
        #expect(t.records.count == 100, "\(t.records.count)")
        #expect(throws: LabError.self) {
            try RocDump.trace(dump: lines.joined(separator: "\n"), gesture: Self.gesture(moving: 100, still: 0), fromS: 10)
        }
    }
}
