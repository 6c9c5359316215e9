// Where the pointer's frames end up when it is not the loop's own uinput
// device: an X server through XTest, later the RemoteDesktop portal. The
// 480 Hz drain stays the one source of output frames; it writes them to a
// pipe that never blocks it (OutputAdapter), and a thread of its own turns
// them into a backend's calls. A backend therefore may block (an X server
// that is slow to read) without making a tick late.
import RemoloTypes

/// What the adapter hands a backend at once: the motion and wheel of every
/// frame since the previous batch, summed, and then the key and button
/// changes of the last of those frames, in order. A frame's motion comes
/// before its buttons (a press lands where the pointer has moved to), so a
/// batch ends at the first frame that carries a transition: a drag's press,
/// motion and release are three batches, never one summed click.
public struct OutputBatch: Sendable, Equatable {
    /// Relative motion in whole pixels (REL_X, REL_Y).
    public var dx: Int32 = 0
    public var dy: Int32 = 0
    /// Wheel in 1/120 of a notch (REL_WHEEL_HI_RES: positive = up;
    /// REL_HWHEEL_HI_RES: positive = right).
    public var wheelHiRes: Int32 = 0
    public var hwheelHiRes: Int32 = 0
    /// Key and button changes after the motion, in the order written.
    public var transitions: [KeyChange] = []

    public init(dx: Int32 = 0, dy: Int32 = 0, wheelHiRes: Int32 = 0, hwheelHiRes: Int32 = 0,
                transitions: [KeyChange] = []) {
        self.dx = dx
        self.dy = dy
        self.wheelHiRes = wheelHiRes
        self.hwheelHiRes = hwheelHiRes
        self.transitions = transitions
    }

    public var isEmpty: Bool { dx == 0 && dy == 0 && wheelHiRes == 0 && hwheelHiRes == 0 && transitions.isEmpty }
}

/// Why a backend could not apply a batch.
public struct OutputBackendError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The peer is gone for good (the X server closed the connection):
        /// the adapter falls back to uinput or stops.
        case disconnected
        /// This batch failed; the backend can take the next one.
        case failed
    }

    public let kind: Kind
    /// A sentence for a person: what happened and what to do.
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// A place the adapter delivers batches to. Called only from the adapter's
/// thread, one call at a time, so a backend may keep connections that are
/// not thread-safe (an Xlib Display).
public protocol OutputBackend: AnyObject {
    /// Short name for logs and `--output` ("x11", "uinput", "portal").
    var name: String { get }
    /// Applies one batch: motion, wheel, then the transitions in order.
    /// Throws when the batch could not be delivered; `.disconnected` means
    /// the backend will not work again.
    func apply(_ batch: OutputBatch) throws(OutputBackendError)
    /// Lets go of every key and button this backend has pressed and not
    /// released (the receiver stops, or the backend is being replaced).
    /// Best effort; never throws.
    func releaseAll()
}
