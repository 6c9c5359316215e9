import Remolo
import RemoloTrace

extension TraceRecord {
    /// The packet the receiver decodes from this datagram.
    public var packet: PointerPacket {
        switch kind {
        case .move: return .motion(dx: dx, dy: dy, at: sendUs)
        // The core's scroll is (vertical, horizontal).
        case .scroll: return .scroll(vertical: dy, horizontal: dx, at: sendUs)
        case .button: return .button(UInt16(0x110 + max(0, min(7, Int(dx) - 1))), down: dy != 0, at: sendUs)
        case .heartbeat: return .heartbeat(at: sendUs)
        }
    }
}
