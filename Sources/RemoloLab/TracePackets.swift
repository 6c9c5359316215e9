import RemoloPlayout
import RemoloTrace

extension TraceRecord {
    /// The packet the receiver decodes from this datagram.
    public var packet: PointerPacket {
        switch kind {
        case .motion: return .motion(dx: dx, dy: dy, at: sendUs)
        // The core's scroll is (vertical, horizontal).
        case .scroll: return .scroll(vertical: dy, horizontal: dx, at: sendUs)
        case .button: return .button(EvdevButton.code(traceNumber: dx), down: dy != 0, at: sendUs)
        case .heartbeat: return .heartbeat(at: sendUs)
        }
    }
}
