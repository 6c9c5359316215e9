// What the receiver needs of a data-channel endpoint (the web bridge's
// WebRTC side, RemoloWeb's DataChannelEndpoint): take a session's offer and
// answer it, forget the session when it ends, and say what it saw. The
// receiver does not link the endpoint; the command that starts both joins
// them with this (docs/protocol.md, "The data channel").
import RemoloSession
import RemoloSystem
import Synchronization

public struct DataChannelHost: Sendable {
    /// Registers the session's browser (a second offer replaces the first)
    /// and answers it.
    public var answer: @Sendable (_ session: SessionID, _ offer: ChannelOffer) -> ChannelAnswer
    /// Frees everything the endpoint holds for the session.
    public var remove: @Sendable (_ session: SessionID) -> Void
    /// The endpoint's view of one session (JSON object fields, without
    /// braces), or nil when it has none.
    public var sessionFields: @Sendable (_ session: SessionID) -> String?
    /// The endpoint's counters, one JSON object.
    public var json: @Sendable () -> String

    public init(answer: @escaping @Sendable (SessionID, ChannelOffer) -> ChannelAnswer,
                remove: @escaping @Sendable (SessionID) -> Void,
                sessionFields: @escaping @Sendable (SessionID) -> String?,
                json: @escaping @Sendable () -> String) {
        self.answer = answer
        self.remove = remove
        self.sessionFields = sessionFields
        self.json = json
    }
}

/// The receiver's endpoint, set once the web bridge is up.
final class DataChannelSlot: Sendable {
    private let slot = Mutex<DataChannelHost?>(nil)
    var host: DataChannelHost? {
        get { slot.withLock { $0 } }
        set { slot.withLock { $0 = newValue } }
    }
}

/// The web bridge's answer to "which browser is behind this peer", once
/// attached (Receiver.attachRelay).
final class RelaySlot: Sendable {
    private let slot = Mutex<(@Sendable (PeerEndpoint) -> PeerEndpoint?)?>(nil)
    var client: (@Sendable (PeerEndpoint) -> PeerEndpoint?)? {
        get { slot.withLock { $0 } }
        set { slot.withLock { $0 = newValue } }
    }

    /// The network a session's memory is kept under: the browser's for a
    /// connection the bridge relays, else the peer's own. Every peer is
    /// asked, not only loopback ones: a receiver that listens on one LAN
    /// address is reached by its bridge from that address. No other peer
    /// can match, since a relay's end is one of this machine's own
    /// addresses and a port the bridge holds.
    func network(of peer: PeerEndpoint?) -> String? {
        guard let peer else { return nil }
        if let client, let browser = client(peer) { return browser.network }
        return peer.network
    }
}
