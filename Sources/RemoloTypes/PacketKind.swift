// The types every layer shares, defined once: this module depends on
// nothing, so the wire, the playout, the devices, the outputs, the sender
// and the lab can all name them (docs/architecture.md).

/// What a pointer packet carries: the one kind enum of the datagram, the
/// playout and the trace. Raw values are the wire's kind byte (the C
/// `enum playout_kind`, checked by WireTests); `traceName` is the word a
/// trace file writes.
public enum PacketKind: UInt8, Sendable, CaseIterable {
    case motion = 1, scroll = 2, button = 3, heartbeat = 4

    /// The trace file's word for the kind (the traces' column 3).
    public var traceName: String {
        switch self {
        case .motion: "move"
        case .scroll: "scroll"
        case .button: "button"
        case .heartbeat: "heartbeat"
        }
    }

    public init?(traceName: some StringProtocol) {
        guard let k = Self.allCases.first(where: { $0.traceName == traceName }) else { return nil }
        self = k
    }
}
