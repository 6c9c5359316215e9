// The drain's evdev frames, read back into batches for a backend: the
// struct input_event records ptrdev writes (one write() per tick, ending in
// SYN_REPORT; remolo_ptrdev.h), and the keyboard's frames on the same fd.

internal import Glibc
internal import RemoloCore
internal import RemoloPlayoutCore
import RemoloTypes

/// Turns a byte stream of `struct input_event` records into `OutputBatch`es.
/// Motion and wheel are summed across frames; a frame that carries a key or
/// button change closes the batch after that change (see `OutputBatch`).
/// Whole records only: a record cut between two reads waits for its rest.
public struct FrameDecoder: Sendable {
    /// The size of one record: two longs of time, type, code, value.
    public static let recordSize = MemoryLayout<input_event>.size

    private var pending = OutputBatch()
    /// The current frame (events since the last SYN_REPORT).
    private var frame = OutputBatch()
    private var frameHasHiRes = (v: false, h: false)
    private var frameNotches: (v: Int32, h: Int32) = (0, 0)
    private var partial: [UInt8] = []
    /// Records read, and frames (SYN_REPORTs) among them.
    public private(set) var records: UInt64 = 0
    public private(set) var frames: UInt64 = 0

    public init() {}

    /// Feeds bytes; appends every batch completed by a key or button change
    /// to `out`. Motion-only frames stay pending until `flush`.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, into out: inout [OutputBatch]) {
        var rest = bytes
        if !partial.isEmpty {
            let need = Self.recordSize - partial.count
            let take = min(need, rest.count)
            partial += rest.prefix(take)
            rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst(take))
            guard partial.count == Self.recordSize else { return }
            partial.withUnsafeBytes { one($0, into: &out) }
            partial.removeAll(keepingCapacity: true)
        }
        let whole = rest.count / Self.recordSize * Self.recordSize
        var i = 0
        while i < whole {
            one(UnsafeRawBufferPointer(rebasing: rest[i..<(i + Self.recordSize)]), into: &out)
            i += Self.recordSize
        }
        if whole < rest.count { partial += rest[whole...] }
    }

    /// Convenience for tests and tools: decodes a whole byte array and flushes.
    public static func batches(_ bytes: [UInt8]) -> [OutputBatch] {
        var d = FrameDecoder()
        var out: [OutputBatch] = []
        bytes.withUnsafeBytes { d.feed($0, into: &out) }
        d.flush(into: &out)
        return out
    }

    /// Hands over the motion still pending (everything read so far that no
    /// transition closed). An unterminated frame stays for the next read.
    public mutating func flush(into out: inout [OutputBatch]) {
        if !pending.isEmpty { out.append(pending) }
        pending = OutputBatch()
    }

    private mutating func one(_ raw: UnsafeRawBufferPointer, into out: inout [OutputBatch]) {
        let ev = raw.loadUnaligned(as: input_event.self)
        records += 1
        switch Int32(ev.type) {
        case EV_SYN where Int32(ev.code) == SYN_REPORT:
            endFrame(into: &out)
        case EV_REL:
            switch Int32(ev.code) {
            case REL_X: frame.dx &+= ev.value
            case REL_Y: frame.dy &+= ev.value
            case REL_WHEEL_HI_RES: frame.wheelHiRes &+= ev.value; frameHasHiRes.v = true
            case REL_HWHEEL_HI_RES: frame.hwheelHiRes &+= ev.value; frameHasHiRes.h = true
            // Legacy notches follow the hi-res stream in the drain's frames
            // (playout.c); they count only from a writer that sends no hi-res.
            case REL_WHEEL: frameNotches.v &+= ev.value
            case REL_HWHEEL: frameNotches.h &+= ev.value
            default: break
            }
        case EV_KEY:
            // 2 is the kernel's autorepeat: a backend's own desktop repeats.
            if ev.value == 0 || ev.value == 1 {
                frame.transitions.append(KeyChange(code: ev.code, down: ev.value == 1))
            }
        default:
            break
        }
    }

    private mutating func endFrame(into out: inout [OutputBatch]) {
        frames += 1
        if !frameHasHiRes.v { frame.wheelHiRes &+= frameNotches.v &* Int32(REMOLO_HIRES_PER_NOTCH) }
        if !frameHasHiRes.h { frame.hwheelHiRes &+= frameNotches.h &* Int32(REMOLO_HIRES_PER_NOTCH) }
        pending.dx &+= frame.dx
        pending.dy &+= frame.dy
        pending.wheelHiRes &+= frame.wheelHiRes
        pending.hwheelHiRes &+= frame.hwheelHiRes
        if !frame.transitions.isEmpty {
            pending.transitions = frame.transitions
            out.append(pending)
            pending = OutputBatch()
        }
        frame = OutputBatch()
        frameHasHiRes = (false, false)
        frameNotches = (0, 0)
    }
}
