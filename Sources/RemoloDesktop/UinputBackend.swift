// A uinput pointer as an adapter's backend: what an X11 output falls back
// to when its X server goes away. The loop keeps writing into the adapter's
// pipe; this relays the batches to a pointer device of its own.

internal import Glibc
import RemoloTypes
import RemoloPlayout
import RemoloDevices

/// Batches written to a new uinput pointer device (`PointerDevice`), and
/// keyboard keys to a keyboard device of its own beside it (when one can be
/// made; else keys are dropped and the receiver says so).
public final class UinputBackend: OutputBackend {
    public let name = "uinput"
    public let device: PointerDevice
    public let keyboard: KeyboardDevice?
    /// Hi-res wheel units not yet a whole legacy notch (REL_WHEEL follows
    /// REL_WHEEL_HI_RES, one per 120, as the drain's own frames do).
    private var carry: (v: Int32, h: Int32) = (0, 0)

    public init(name: String = PointerDevice.defaultName) throws(OutputBackendError) {
        do { device = try PointerDevice(name: name) } catch {
            throw OutputBackendError(.failed, error.message)
        }
        keyboard = try? KeyboardDevice(name: KeyboardDevice.name(besidePointer: name))
    }

    public func apply(_ batch: OutputBatch) throws(OutputBackendError) {
        var f = PointerFrame(dx: batch.dx, dy: batch.dy, wheelHiRes: batch.wheelHiRes, hwheelHiRes: batch.hwheelHiRes)
        f.wheel = Self.notches(&carry.v, batch.wheelHiRes)
        f.hwheel = Self.notches(&carry.h, batch.hwheelHiRes)
        for t in batch.transitions where EvdevButton.codes.contains(t.code) {
            // A frame holds PLAYOUT_BTN_PER_TICK changes; more go in frames
            // of their own (ptrdev splits a repeated button itself).
            if f.buttons.count == ButtonChanges.capacity {
                try write(f)
                f = PointerFrame()
            }
            f.buttons.append(KeyChange(code: t.code, down: t.down))
        }
        try write(f)
        // Keys after the pointer's frame, in order, a frame at most
        // maxChangesPerFrame long. A release of a key pressed before the
        // fall-back (through XTest) finds it not held here and is skipped.
        let keys = batch.transitions.filter { !$0.isButton && KeyboardDevice.hasKey($0.code) }.map { KeyChange(code: $0.code, down: $0.down) }
        if let kb = keyboard, !keys.isEmpty {
            var i = 0
            while i < keys.count {
                let part = Array(keys[i..<min(keys.count, i + KeyboardDevice.maxChangesPerFrame)])
                do { try kb.write(part) } catch { throw OutputBackendError(.failed, error.message) }
                i += part.count
            }
        }
    }

    public func releaseAll() {
        _ = try? device.releaseAll()
        _ = try? keyboard?.releaseAll()
    }

    private func write(_ f: PointerFrame) throws(OutputBackendError) {
        do { try device.write(f) } catch {
            throw OutputBackendError(error.errno == ENODEV ? .disconnected : .failed, error.message)
        }
    }

    /// Whole notches in `acc + hires`, truncated toward zero; the rest
    /// stays (the one notch rule, `Wheel.notches`).
    static func notches(_ acc: inout Int32, _ hires: Int32) -> Int32 {
        Wheel.notches(adding: hires, to: &acc)
    }
}
