// The receiver: the C hot loop (CSources/RemoloCore/rx*.c) on a thread of
// its own, the TCP control plane (handshakes, buttons, bye) around it.
//
//   UDP datagrams ---------------------> io_uring loop --> playout --> uinput
//   TCP: handshake -> add session ------> command ring ----^
//        button / bye / close ----------> command ring ----^
//
// No C type appears in this API.
internal import Glibc
internal import RemoloCore
internal import RemoloPlayoutCore
import Foundation
import RemoloSession
import RemoloSystem
import Synchronization
import RemoloTypes
import RemoloPlayout
import RemoloDevices

/// The whole receiver: a UDP receive loop and a TCP control server on the
/// same address and port. Each confirmed session registers its datagram key
/// with the loop; buttons from its control channel go into the loop; its
/// end (bye, close, idle timeout) removes it, releasing its buttons.
public final class Receiver: @unchecked Sendable {
    // @unchecked Sendable: immutable after init except `sessions`, which is
    // behind a Mutex; the loop and the server are thread-safe.
    public let loop: ReceiveLoop
    public let server: ControlServer
    public let trust: ReceiverTrust
    /// The TCP and UDP port.
    public let port: UInt16
    private let udp: Int32
    /// The UDP socket's receive buffer: asked for and got
    /// (docs/architecture.md, "The receiver's sockets").
    public let receiveBuffer: ReceiveBuffer
    private let udpClosed = Mutex(false)
    /// The socket's kernel drops as read when it closed.
    private let closedDrops = Mutex<UInt64?>(nil)
    private let sessions = SessionTable()
    private let serverDone = DispatchSemaphore(value: 0)
    private let onEvent: @Sendable (String) -> Void
    /// What the receiver does with keys, and what it counted.
    public let keyboard: ReceiverKeyboard
    /// Whether it grants the redundancy feature to senders that ask.
    public let redundancy: Bool
    /// Whether it grants gestures (feature bit 3) to senders that ask, where
    /// its touchpad can be made.
    public let gestures: Bool
    private let keyTally = KeyboardTally()
    /// The web page's data-channel endpoint, once attached.
    private let channels = DataChannelSlot()
    /// Which browser a loopback control connection relays, once the web
    /// bridge is attached (attachRelay).
    private let relays = RelaySlot()

    /// Time a session's last datagrams get to land after its bye: the bye
    /// travels over TCP and may overtake them.
    static let endGrace: UInt32 = 50_000

    /// - Parameters:
    ///   - host, port: where to listen (TCP and UDP); port 0 picks one.
    ///   - recordArrivals: records datagram arrivals as a lab trace; `stop()`
    ///     finishes it.
    ///   - drain: how often the loop lets motion out (480 Hz by default;
    ///     `Displays.autoDrain()` matches the display).
    ///   - redundancy: grant the redundancy feature (datagrams with running
    ///     totals: the motion of lost ones is played) to senders that ask.
    ///   - gestures: grant gestures (a virtual touchpad, made at the first
    ///     grant) to senders that ask; `touchpad` says where they go (nil:
    ///     `ReceiveLoop`'s choice).
    ///   - delayMemory: where each sender's sessions leave what they learned
    ///     of their network, and where the next session on that network
    ///     starts from; used with a `playout` that keeps one
    ///     (`PlayoutConfig.keepsRecall`), nil keeps nothing.
    ///   - onEvent: one line per session event (for logs).
    public init(host: String = "0.0.0.0", port: UInt16, trust: ReceiverTrust, output: ReceiverOutput,
                playout: PlayoutConfig = .default, drain: DrainRate = .default, realtimePriority: Int32 = 0,
                limits: SessionLimits = SessionLimits(), recordArrivals: ArrivalRecorder? = nil,
                keyboard: ReceiverKeyboard = ReceiverKeyboard(), redundancy: Bool = true,
                gestures: Bool = true, touchpad: TouchpadOutput? = nil, delayMemory: DelayMemory? = nil,
                onEvent: @escaping @Sendable (String) -> Void = { _ in }) throws {
        try ReceiveLoop.probe()
        let (listener, udp) = try Self.bindPair(host: host, port: port)
        do {
            loop = try ReceiveLoop(socket: udp, output: output, playout: playout, drain: drain,
                                   realtimePriority: realtimePriority,
                                   recordArrivals: recordArrivals, touchpad: gestures ? touchpad : TouchpadOutput.none)
        } catch {
            listener.close()
            close(udp)
            throw error
        }
        self.udp = udp
        receiveBuffer = Socket.growReceiveBuffer(udp)
        self.port = listener.port
        self.trust = trust
        self.onEvent = onEvent
        self.keyboard = keyboard
        self.redundancy = redundancy
        self.gestures = gestures
        // The data channel is offered only while an endpoint is attached
        // (attachDataChannels): a receiver without the web page has none.
        // Gestures only while the touchpad can be made (asked per session:
        // a udev rule may come later).
        let offered: ControlFeatures = ControlFeatures.all.subtracting(redundancy ? [.dataChannel, .gestures]
                                                                                  : [.dataChannel, .redundancy, .gestures])
        if gestures, let why = loop.touchpadUnavailable {
            onEvent("gestures: not offered to senders: \(why)")
        }
        let channels = self.channels
        let loop = self.loop
        let sessions = self.sessions
        let keyTally = self.keyTally
        let relays = self.relays
        server = ControlServer(
            listener: listener, trust: trust, limits: limits,
            onRejected: { e in onEvent("refused a connection: \(e)") },
            onConfirmed: { result throws(SessionError) in
                let id = result.keys.sessionID
                let network = relays.network(of: result.endpoint)
                let (recall, ended) = Receiver.memory(result, network: network, playout: playout,
                                                      store: delayMemory, onEvent: onEvent)
                do {
                    try loop.addSession(id, key: DatagramKey(secret: result.keys.datagramKey),
                                        recall: recall, recallEnded: ended)
                } catch {
                    throw .io("cannot register the session: \(error)")
                }
                // One sender drives one session: a new session from the same
                // key replaces the old one (bye 4), whose datagrams stop
                // counting now and whose buttons are released.
                let replaced = sessions.register(id, peer: result.peer)
                for (old, ender) in replaced {
                    _ = try? loop.removeSession(old)
                    ender?.end(.replaced)
                    onEvent("session \(old) replaced by \(id)")
                }
            },
            onAbandoned: { result in
                let id = result.keys.sessionID
                _ = try? loop.removeSession(id)
                sessions.forget(id)
            },
            onSession: { channel in
                Receiver.noteSession(channel, trust: trust, onEvent: onEvent)
                let host = channels.host
                var mine = host == nil ? offered : offered.union(.dataChannel)
                if gestures, loop.touchpadUnavailable == nil { mine.insert(.gestures) }
                var kb = SessionKeyboard(policy: keyboard, mayType: trust.mayType(channel.peer),
                                         hasDevice: loop.hasKeyboard, hasKey: KeyboardDevice.hasKey,
                                         offered: mine)
                Receiver.serve(channel, loop: loop, sessions: sessions, keyboard: &kb, tally: keyTally,
                               channels: host, onEvent: onEvent)
            })
        let server = self.server
        let done = serverDone
        let t = Thread {
            server.run()
            done.signal()
        }
        t.name = "remolo-accept"
        t.start()
    }

    deinit { stop() }

    /// Offers the data channel (feature bit 2) to the sessions confirmed
    /// from now on, signaled through `host` (the web bridge's endpoint).
    public func attachDataChannels(_ host: DataChannelHost) {
        channels.host = host
    }

    /// A phone page's control connection reaches the receiver from its web
    /// bridge, on this machine; `client` names the browser behind a peer
    /// the bridge relays (nil: not relayed), so that the sessions confirmed
    /// from now on keep their delay memory under the phone's own network,
    /// not the bridge's.
    public func attachRelay(_ client: @escaping @Sendable (PeerEndpoint) -> PeerEndpoint?) {
        relays.client = client
    }

    public var stats: ReceiverStats { loop.stats }
    /// The keyboard's control-plane counters (messages taken and refused).
    public var keyboardCounters: KeyboardCounters { keyTally.snapshot }

    /// `--stats-json`: the loop's counters and, under "keys", the keyboard's.
    public var statsJSON: String {
        let drops = kernelDrops
        let socket = "{\"rcvbuf_bytes\":\(receiveBuffer.bytes),\"rcvbuf_forced\":\(receiveBuffer.forced),"
            + "\"kernel_drops\":\(drops.map(String.init) ?? "null")}"
        var extra = [("socket", socket)]
        if let host = channels.host { extra.append(("datachannel", dataChannelJSON(host))) }
        return stats.json(keys: keyboardCounters.jsonFields, extra: extra)
    }
    /// Datagrams the kernel dropped at the UDP socket (queue full), or nil
    /// where the kernel does not say.
    public var kernelDrops: UInt64? {
        udpClosed.withLock { closed in closed ? closedDrops.withLock { $0 } : Socket.kernelDrops(udp) }
    }
    public var liveSessions: Int { sessions.count }

    /// One live session, for status views.
    public struct SessionInfo: Sendable {
        public var id: SessionID
        public var peer: PublicKey
        /// Datagrams of this session opened so far.
        public var opened: UInt64
    }

    /// The live sessions, oldest first by id order.
    public var sessionInfo: [SessionInfo] {
        sessions.snapshot().map { SessionInfo(id: $0.0, peer: $0.1, opened: loop.datagramsOpened($0.0) ?? 0) }
            .sorted { $0.id.description < $1.id.description }
    }

    /// A small table for a person: the loop's delay and lateness, drops by
    /// reason, and one row per session (`remolo receive --stats` on a terminal).
    public var statusTable: String {
        let s = stats
        var out = "remolo receive  port \(port)  sessions \(liveSessions)  delay \(String(format: "%.1f", Double(s.delayUs) / 1000)) ms"
        out += "  late packets \(s.latePackets) of \(s.opened)  ticks late \(s.lateTicks) missed \(s.missedTicks)\n"
        out += "datagrams \(s.datagrams)  opened \(s.opened)  dropped \(s.dropped)"
        out += "  kernel drops \(kernelDrops.map(String.init) ?? "?") (rcvbuf \(receiveBuffer.bytes / 1024) KiB)"
        for r in DatagramDropReason.allCases { out += "  \(r.name) \(s[r])" }
        out += "\n\n  session           sender fingerprint                         opened\n"
        for i in sessionInfo {
            out += "  \(i.id)  \(i.peer.fingerprint)  \(i.opened)\n"
        }
        if liveSessions == 0 { out += "  (no session)\n" }
        return out
    }

    /// How long `stop()` waits at most for sessions to say bye before the
    /// loop goes: each bye's send is bounded by 0.5 s, but a loaded machine
    /// may take a while to run every session's thread, and a receiver that
    /// exits before a thread ran loses that session's bye.
    static let byeWait = 5.0

    /// Stops accepting, ends every session (bye 3, shutting down) and the
    /// loop. Idempotent.
    public func stop() {
        if !server.listener.isClosed {
            server.stop()
            serverDone.wait()
        }
        // Each session's own thread wakes, says bye and removes its session;
        // one confirmed but not yet served says bye when it finds the
        // receiver stopping. Every registered session is waited for, so
        // each has said its bye before the loop (and the process) goes.
        sessions.endAll(.shuttingDown)
        let deadline = MonotonicClock.seconds() + Self.byeWait
        while (sessions.serving > 0 || sessions.count > 0) && MonotonicClock.seconds() < deadline { usleep(2000) }
        loop.stop()
        // The loop's ring is gone: nothing reads the socket any more.
        udpClosed.withLock { closed in
            if !closed {
                let d = Socket.kernelDrops(udp)
                closedDrops.withLock { $0 = d }
                close(udp)
                closed = true
            }
        }
    }

    /// The memory a session of `result`'s sender on its network starts
    /// from (empty the first time), and where what it leaves goes; none
    /// without a store, a playout that keeps one, or a known network. A
    /// file that cannot be read costs a cold start and a note, never the
    /// session.
    static func memory(_ result: HandshakeResult, network: String?, playout: PlayoutConfig, store: DelayMemory?,
                       onEvent: @escaping @Sendable (String) -> Void)
        -> (DelayRecall?, (@Sendable (DelayRecall) -> Void)?) {
        guard playout.keepsRecall, let store, let network else { return (nil, nil) }
        let peer = result.peer
        var memory = DelayRecall()
        do {
            if let m = try store.load(sender: peer, network: network) { memory = m }
        } catch {
            onEvent("note: \(error)")
        }
        if memory.isUsable {
            let ms = Double(memory.delayUs(permille: playout.recallPermille)) / 1000
            onEvent("sender \(peer.fingerprint) on \(network): starts at \(String(format: "%.0f", ms)) ms, "
                    + "what its \(String(format: "%.0f", memory.movedSeconds)) s of movement there needed")
        }
        return (memory, { left in
            do { try store.save(left, sender: peer, network: network) } catch {
                onEvent("note: the sender's delay memory is not kept: \(error)")
            }
        })
    }

    /// Records when the sender was last seen and, for a sender that has
    /// just paired, says whether it may type. Never ends the session: a
    /// rights file that cannot be written is only reported.
    static func noteSession(_ channel: ControlChannel, trust: ReceiverTrust, onEvent: @Sendable (String) -> Void) {
        let peer = channel.peer
        if channel.result.isPairing {
            let fp = peer.fingerprint
            onEvent("paired with sender \(fp): " + (trust.mayType(peer) ? "may type" : "may not type (remolo peers allow-keyboard \(fp))"))
        }
        if let problem = trust.noteSeen(peer) { onEvent("note: \(problem)") }
    }

    /// `--stats-json`'s "datachannel": the endpoint's counters, then each
    /// live session's path (as its page last said) and the endpoint's view of it.
    private func dataChannelJSON(_ host: DataChannelHost) -> String {
        let rows = sessions.paths().sorted { $0.0.description < $1.0.description }.map { id, path in
            var f = "\"session\":\"\(id)\",\"path\":" + (path.map { "\"\($0.path.name)\",\"reason\":\"\($0.reason.name)\"" } ?? "null")
            if let e = host.sessionFields(id) { f += "," + e }
            return "{" + f + "}"
        }
        return "{\"endpoint\":\(host.json()),\"sessions\":[\(rows.joined(separator: ","))]}"
    }

    /// Runs on the connection's thread until the session ends.
    private static func serve(_ channel: ControlChannel, loop: ReceiveLoop,
                              sessions: SessionTable, keyboard kb: inout SessionKeyboard, tally: KeyboardTally,
                              channels: DataChannelHost?, onEvent: @Sendable (String) -> Void) {
        let id = channel.keys.sessionID
        // Replaced (or the receiver stopping) between key confirmation and here.
        guard sessions.attach(id, channel.ender) else {
            let stopping = sessions.isStopping
            channel.close(saying: stopping ? .shuttingDown : .replaced)
            if stopping {
                // Still registered (only a replacement unregisters): stop()
                // waits for this entry to go.
                _ = try? loop.removeSession(id)
                sessions.forget(id)
            }
            return
        }
        defer { sessions.detach() }
        // Whatever the endpoint holds for this session goes with it.
        defer { channels?.remove(id) }
        onEvent("session \(id) from \(channel.peer.fingerprint)\(channel.result.isPairing ? " (newly paired)" : "")")
        var why = "closed"
        var grace = true
        channel.afterPong = { .receipt(loop.datagramsOpened(id) ?? 0) }
        var lastButton: UInt32?
        loop: while true {
            do throws(SessionError) {
                let m = try channel.receive()
                // A hello is taken only as the sender's frame 1: the first
                // message after the key-confirmation ping (message 1). Any
                // frame between them, a ping included, makes it late.
                let isFirst = channel.messagesReceived == 2
                if case .pong = m { continue }   // nothing asked for it; it renewed the idle deadline
                switch m {
                case .hello, .key, .text:
                    do throws(SessionKeyboard.Violation) {
                        try keyboardMessage(m, isFirst: isFirst, kb: &kb, channel: channel, loop: loop, id: id, tally: tally,
                                            onEvent: onEvent)
                        continue loop
                    } catch {
                        channel.close(saying: .protocolError)
                        why = "\(error); said bye (protocol error)"
                        break loop
                    }
                case .gestureEnd(let g):
                    // Only after the receiver's hello granted gestures.
                    guard kb.spoken?.contains(.gestures) == true else {
                        channel.close(saying: .protocolError)
                        why = "a gesture end without the feature granted; said bye (protocol error)"
                        break loop
                    }
                    _ = try? loop.endGesture(id, gesture: g.id, senderTimeUs: g.senderTimeNs / 1000)
                    continue loop
                case .channelOffer, .channelPath:
                    // Only after the receiver's hello granted the data channel.
                    guard let host = channels, kb.spoken?.contains(.dataChannel) == true else {
                        channel.close(saying: .protocolError)
                        why = "a data-channel message without the feature granted; said bye (protocol error)"
                        break loop
                    }
                    if case .channelOffer(let o) = m {
                        let a = host.answer(id, o)
                        onEvent("session \(id): data channel offer answered (\(a.status))")
                        try? channel.send(.channelAnswer(a))
                    } else if case .channelPath(let p) = m {
                        if sessions.setPath(id, p) != p {
                            onEvent("session \(id): datagrams over the \(p.path.name) (\(p.reason.name))")
                        }
                    }
                    continue loop
                default: break
                }
                if case .button(let b) = m {
                    if let last = lastButton, b.sequence != last &+ 1 {
                        channel.close(saying: .protocolError)
                        why = "button sequence \(b.sequence) after \(last); said bye (protocol error)"
                        break loop
                    }
                    lastButton = b.sequence
                }
                guard let d = played(m) else {
                    // Settings belong to the sender (the curve runs where the
                    // samples are); a receiver that took them would apply
                    // acceleration twice. Unsupported: the session ends.
                    channel.close(saying: .protocolError)
                    why = "unsupported control message \(m); said bye (protocol error)"
                    break loop
                }
                _ = try? loop.push(id, d)
            } catch {
                why = "\(error)"
                if case .ended = error { grace = false }
                if case .timedOut = error { grace = false }
                break loop
            }
        }
        // After the sender's own end (bye or close), its last datagrams may
        // still be in flight behind the faster TCP segment: they count for
        // `endGrace` more (docs/protocol.md, "Timeouts and limits").
        if grace { usleep(endGrace) }
        _ = try? loop.removeSession(id)
        sessions.forget(id)
        onEvent("session \(id) ended: \(why)")
    }

    /// The playout packet for what a control message asks to play; nil for
    /// a message the receiver does not accept. Sender times are ns on the
    /// wire and us in the playout: converted here, once.
    static func played(_ m: ControlMessage) -> Datagram? {
        switch m {
        case .button(let b):
            return Datagram(.button(code: b.button.evdevCode, down: b.isDown), senderTimeUs: b.senderTimeNs / 1000)
        case .motion(let e):
            return Datagram(.motion(dx: e.dx, dy: e.dy), senderTimeUs: e.senderTimeNs / 1000)
        case .scroll(let e):
            // dx horizontal (right positive), dy vertical (up positive), Q8 hi-res units.
            return Datagram(.scroll(vertical: e.dy, horizontal: e.dx), senderTimeUs: e.senderTimeNs / 1000)
        case .settings, .receipt, .ping, .pong, .bye, .hello, .key, .text, .refused,
             .channelOffer, .channelAnswer, .channelPath, .gestureEnd:
            return nil
        }
    }

    /// A hello, key or text message: answered, played or refused (with a
    /// refused message back); a violation ends the session (bye 2).
    private static func keyboardMessage(_ m: ControlMessage, isFirst: Bool, kb: inout SessionKeyboard,
                                        channel: ControlChannel, loop: ReceiveLoop, id: SessionID,
                                        tally: KeyboardTally,
                                        onEvent: @Sendable (String) -> Void) throws(SessionKeyboard.Violation) {
        var reply: ControlMessage?
        var played = SessionKeyboard.Play.none
        var refused: KeyRefused?
        switch m {
        case .hello(let h):
            var answer = try kb.hello(h, isFirst: isFirst)
            // The loop opens the 65-byte layout before the sender hears it
            // may send it; a loop that cannot (the session just went) grants
            // nothing.
            if answer.features.contains(.redundancy), (try? loop.grantRedundancy(id)) != true {
                answer.features.remove(.redundancy)
            }
            // The touchpad is made at the first grant; one that cannot be
            // made grants nothing, and says why.
            if answer.features.contains(.gestures) {
                do throws(ReceiverError) {
                    if try !loop.grantGestures(id) { answer.features.remove(.gestures) }
                } catch {
                    answer.features.remove(.gestures)
                    onEvent("session \(id): gestures not granted: \(error)")
                }
            }
            // A gesture end is then a protocol error, as from any sender
            // not granted gestures.
            kb.answered(answer.features)
            reply = .hello(answer)
        case .key(let k): (played, refused) = try kb.key(k)
        case .text(let t): (played, refused) = try kb.text(t)
        default: return
        }
        if case .strokes(let strokes, let at) = played {
            let r = try? loop.keys(id, strokes.map { KeyChange(code: $0.code, down: $0.down) }, senderTimeUs: at)
            if let r, !r.allAccepted, refused == nil || refused?.reason == .untypable {
                // What the session's checks passed, the loop still refused:
                // its key queue had no room, and the loop takes a text
                // whole or not at all, so none of it plays (flood, count 1,
                // like every refusal but untypable). Its presses are not
                // held and take no token.
                let (why, _) = r.refused.max { $0.value < $1.value }!
                refused = KeyRefused(sequence: kb.lastSequence ?? 0, reason: KeyRefusal(rawValue: why.rawValue), count: 1)
                played = .none
                kb.forget(strokes)
            }
        }
        tally.count(m, played: played, refused: refused)
        if let r = refused { reply = .refused(r) }
        // A failed send ends the session on the next receive.
        if let reply { try? channel.send(reply) }
    }

    /// The TCP listener and the UDP socket on one port number. With port 0
    /// the kernel picks the TCP port, and that number may already be some
    /// other socket's UDP port (a sender's ephemeral socket, say: both come
    /// from ip_local_port_range), so the pair is tried again on a fresh
    /// number; a port the user chose is tried once.
    static func bindPair(host: String, port: UInt16) throws -> (TCPListener, Int32) {
        var attempt = 0
        while true {
            attempt += 1
            let listener = try TCPListener(host: host, port: port)
            do {
                return (listener, try bindUDP(host: host, port: listener.port))
            } catch {
                listener.close()
                if port != 0 || attempt == 16 { throw error }
            }
        }
    }

    /// A UDP socket bound to host:port (IPv4 or IPv6 literal, or a name).
    static func bindUDP(host: String, port: UInt16) throws(ReceiverError) -> Int32 {
        do { return try Socket.bindUDP(host: host, port: port) } catch { throw ReceiverError(error.description) }
    }
}

/// The sessions the control plane has registered, by datagram session id:
/// whose they are and how to end them from another thread.
private final class SessionTable: Sendable {
    struct Entry {
        let peer: PublicKey
        var ender: ChannelEnder?
        /// The path its page last said its datagrams take.
        var path: ChannelPath?
    }
    struct State {
        var entries: [SessionID: Entry] = [:]
        var serving = 0
        var stopping = false
    }
    let state = Mutex(State())

    var count: Int { state.withLock { $0.entries.count } }

    func snapshot() -> [(SessionID, PublicKey)] { state.withLock { $0.entries.map { ($0.key, $0.value.peer) } } }
    var serving: Int { state.withLock { $0.serving } }
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Adds a confirmed session; returns the sessions of the same peer it replaces.
    func register(_ id: SessionID, peer: PublicKey) -> [(SessionID, ChannelEnder?)] {
        state.withLock { st in
            let old = st.entries.filter { $0.value.peer == peer }.map { ($0.key, $0.value.ender) }
            for (o, _) in old { st.entries[o] = nil }
            st.entries[id] = Entry(peer: peer)
            return old
        }
    }

    /// The session's thread starts serving it; false if it was replaced
    /// (or the receiver is stopping) in the meantime.
    func attach(_ id: SessionID, _ ender: ChannelEnder) -> Bool {
        state.withLock { st in
            guard !st.stopping, st.entries[id] != nil else { return false }
            st.entries[id]?.ender = ender
            st.serving += 1
            return true
        }
    }

    func detach() { state.withLock { $0.serving -= 1 } }

    /// Records a session's path; returns the one it had.
    func setPath(_ id: SessionID, _ p: ChannelPath) -> ChannelPath? {
        state.withLock { st in
            let old = st.entries[id]?.path
            st.entries[id]?.path = p
            return old
        }
    }

    /// Every live session with its path, for those whose sender speaks the data channel.
    func paths() -> [(SessionID, ChannelPath?)] { state.withLock { $0.entries.map { ($0.key, $0.value.path) } } }

    func forget(_ id: SessionID) { state.withLock { _ = $0.entries.removeValue(forKey: id) } }

    /// Asks every session's thread to end its session with `reason`.
    func endAll(_ reason: ByeReason) {
        let enders = state.withLock { st -> [ChannelEnder] in
            st.stopping = true
            return st.entries.values.compactMap(\.ender)
        }
        for e in enders { e.end(reason) }
    }
}
