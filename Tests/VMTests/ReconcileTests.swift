import CEvdev
import Foundation
import RemoloCore
import RemoloPlayoutCore
import Testing

/// A write to the device that fails must not lose a button change: the
/// next write first brings the buttons back to what was asked for. Runs on
/// any host: the device is in fd mode over a pipe here (what is checked is
/// ptrdev's bookkeeping and the bytes it writes, not uinput; the uinput
/// path itself is checked in the VM by UinputTests).
@Suite struct PtrdevReconcile {
    /// A ptrdev in fd mode over a pipe. A write fails (EBADF) while `fd`
    /// points at the pipe's read end.
    final class PipeDevice {
        var d = ptrdev()
        let rd: Int32, wr: Int32

        init() throws {
            var fds: [Int32] = [0, 0]
            try #require(pipe(&fds) == 0)
            rd = fds[0]; wr = fds[1]
            _ = fcntl(rd, F_SETFL, O_NONBLOCK)
            try #require(ptrdev_init_fd(&d, wr) == 0)
        }
        deinit { close(rd); close(wr) }

        func write(dx: Int32 = 0, buttons: [(Int32, Bool)] = []) -> Int32 {
            var o = playout_out()
            o.dx = dx
            for (i, b) in buttons.enumerated() { ptrdev_out_set_btn(&o, UInt32(i), UInt16(b.0), b.1 ? 1 : 0) }
            o.nbtn = UInt32(buttons.count)
            return ptrdev_write(&d, &o)
        }

        /// Every event written so far, as (type, code, value).
        func drain() -> [Ev] {
            var evs: [Ev] = []
            var e = input_event()
            while read(rd, &e, MemoryLayout<input_event>.stride) == MemoryLayout<input_event>.stride {
                evs.append(Ev(Int32(e.type), Int32(e.code), e.value))
            }
            return evs
        }
    }

    @Test func lostReleaseIsWrittenNextTime() throws {
        let p = try PipeDevice()
        #expect(p.write(buttons: [(BTN_LEFT, true)]) > 0)
        #expect(p.drain() == [.key(BTN_LEFT, true), .syn])
        // The release fails (bad fd): nothing reaches the device.
        p.d.fd = p.rd
        #expect(p.write(buttons: [(BTN_LEFT, false)]) == -EBADF)
        #expect(p.d.held == 1 && p.d.want == 0)
        // The next frame, with motion only, is preceded by the release.
        p.d.fd = p.wr
        #expect(p.write(dx: 3) > 0)
        #expect(p.drain() == [.key(BTN_LEFT, false), .syn, .rel(REL_X, 3), .syn])
        #expect(p.d.held == 0 && p.d.want == 0)
    }

    @Test func lostPressThenReleaseWritesNothingSpurious() throws {
        let p = try PipeDevice()
        p.d.fd = p.rd
        #expect(p.write(buttons: [(BTN_RIGHT, true)]) == -EBADF)
        p.d.fd = p.wr
        #expect(p.write(buttons: [(BTN_RIGHT, false)]) > 0)
        // The press is restored first, then the release: the click happens.
        #expect(p.drain() == [.key(BTN_RIGHT, true), .syn, .key(BTN_RIGHT, false), .syn])
        #expect(p.d.held == 0)
    }

    @Test func releaseAllAfterAFailure() throws {
        let p = try PipeDevice()
        #expect(p.write(buttons: [(BTN_LEFT, true), (BTN_MIDDLE, true)]) > 0)
        _ = p.drain()
        p.d.fd = p.rd
        #expect(p.write(buttons: [(BTN_MIDDLE, false)]) == -EBADF)
        p.d.fd = p.wr
        #expect(ptrdev_release(&p.d) > 0)
        #expect(p.drain() == [.key(BTN_LEFT, false), .key(BTN_MIDDLE, false), .syn])
        #expect(p.d.held == 0 && p.d.want == 0)
        #expect(ptrdev_release(&p.d) == 0, "nothing held: nothing written")
    }

    /// fd mode: the caller owns the fd. Deinit releases what is held into
    /// it and leaves it open; a bad fd fails at init, not at every write.
    @Test func fdModeDeinitReleasesAndLeavesTheFdOpen() throws {
        let p = try PipeDevice()
        #expect(p.write(buttons: [(BTN_LEFT, true)]) > 0)
        _ = p.drain()
        ptrdev_deinit(&p.d)
        #expect(p.drain() == [.key(BTN_LEFT, false), .syn])
        #expect(fcntl(p.wr, F_GETFD) >= 0, "the caller's fd stays open")
        #expect(p.write(dx: 1) == -ENODEV)
        var d = ptrdev()
        #expect(ptrdev_init_fd(&d, -1) == -EBADF)
        #expect(ptrdev_init_fd(&d, 1_000_000) == -EBADF)
        #expect(ptrdev_devnode(&d) == nil)
    }
}
