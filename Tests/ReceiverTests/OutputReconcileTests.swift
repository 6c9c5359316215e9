import Foundation
@testable import RemoloPlayout
import RemoloCore
import RemoloPlayoutCore
import Testing

extension RxSuite {
    /// The loop's output is ptrdev's own write path, fd mode included: a
    /// tick whose write fails loses no button change, because the device's
    /// next write first brings the buttons back to what was asked for.
    @Suite struct OutputReconcileTests {
        @Test func lostReleaseIsWrittenBeforeTheNextFrame() throws {
            let rig = try LoopRig()
            var s = TestSession()
            try rig.loop.addSession(s.id, key: s.key)
            let good = dup(rig.sink.writeFD)
            let readOnly = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(good >= 0 && readOnly >= 0)
            defer { close(good); close(readOnly) }

            rig.send(s.seal(.button(code: Event.btnLeft, down: true)))
            #expect(eventually(1) { rig.sink.drain(); return rig.sink.keys().count == 1 })

            // The release's tick fails: the loop's fd now names a file open
            // for reading only (EBADF), so nothing reaches the sink.
            try #require(dup2(readOnly, rig.sink.writeFD) == rig.sink.writeFD)
            rig.send(s.seal(.button(code: Event.btnLeft, down: false)))
            let failed = eventually(1) { rig.stats.writeErrors >= 1 }
            try #require(dup2(good, rig.sink.writeFD) == rig.sink.writeFD)
            #expect(failed, "the release's write did not fail")
            #expect(rig.stats.lastWriteErrno == EBADF)
            #expect(rig.sink.drain().isEmpty)

            // The next frame, motion only, is preceded by the lost release.
            rig.send(s.seal(.motion(dx: 2560, dy: 0)))
            #expect(eventually(1) { rig.sink.drain(); return rig.sink.sum(Event.relX) == 10 })
            #expect(rig.sink.keys().map(\.value) == [1, 0], "keys \(rig.sink.keys())")
            let frames = rig.sink.frames
            let release = frames.firstIndex { $0.contains { $0.type == Event.evKey && $0.value == 0 } }
            let motion = frames.firstIndex { $0.contains { $0.type == Event.evRel } }
            #expect(release != nil && motion != nil && release! < motion!, "frames \(frames)")
        }
    }
}
