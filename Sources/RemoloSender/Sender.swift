// The sender: a confirmed control session (ControlChannel) plus a UDP socket
// for sealed pointer datagrams to the same receiver address and port.
//
// Motion and scroll go as datagrams (design note, part 2: timestamped, sealed, never
// retransmitted); buttons go over the control channel (TCP: never lost, so a
// release can never go missing and leave a button stuck), stamped with the
// same sender clock so the receiver plays them in step with the motion.
internal import Glibc
import Foundation
import RemoloInput
import RemoloSession
import RemoloInput
import RemoloSystem
import RemoloPlayout

/// The sender's clock: CLOCK_MONOTONIC in microseconds. Datagrams and
/// control-channel buttons are stamped with it (buttons in nanoseconds).
public func senderClockUs() -> UInt64 { MonotonicClock.nowUs() }

/// Why sending failed.
public struct SenderError: Error, Equatable, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
    public init(_ message: String) { self.message = message }
}

/// What a sender has sent.
public struct SenderStats: Sendable, Equatable {
    public var motionDatagrams: UInt64 = 0
    public var heartbeats: UInt64 = 0
    public var buttons: UInt64 = 0
    public var sendErrors: UInt64 = 0
    /// Q8 totals of the motion sent.
    public var totalDX: Int64 = 0
    public var totalDY: Int64 = 0
    public var buttonsDown: UInt64 = 0
    public var buttonsUp: UInt64 = 0
    /// Sessions found dead (receiver gone, silent, or said bye) and new
    /// sessions opened in their place.
    public var sessionsLost: UInt64 = 0
    public var reconnects: UInt64 = 0
    /// Frames that fell in an outage: their motion was dropped, never sent late.
    public var framesDropped: UInt64 = 0
    /// Scroll datagrams and their Q8 totals (hi-res wheel units).
    public var scrollDatagrams: UInt64 = 0
    public var totalScrollV: Int64 = 0
    public var totalScrollH: Int64 = 0
    /// Motion sent in the control channel's fallback messages (Q8), and
    /// how often the sender moved to the control channel and back.
    public var fallbackMessages: UInt64 = 0
    /// Gesture states sent as datagrams, and gesture ends on the session.
    public var gestureStates: UInt64 = 0
    public var gestureEnds: UInt64 = 0
    public var fallbackDX: Int64 = 0
    public var fallbackDY: Int64 = 0
    public var switchesToTCP: UInt64 = 0
    public var switchesToUDP: UInt64 = 0

    public init() {}
}

/// How motion travels.
public enum SenderTransport: Sendable, Equatable {
    /// Datagrams, falling back to the control channel when they do not get through.
    case udp
    /// Always the control channel (`--over tcp`).
    case tcp
}

/// A sender session: control channel plus datagrams. One thread uses it.
public final class Sender {
    public private(set) var channel: ControlChannel
    private var sealer: DatagramSealer
    private let fd: Int32
    private let host: String
    private let port: UInt16
    /// Opens a new session with the same receiver (no pairing); nil: none.
    private let reconnector: (() throws -> ControlChannel)?
    private var buffer = [UInt8](repeating: 0, count: Datagram.redundantByteCount)
    private var buttonSequence: UInt32 = 0
    private var lastDatagram: UInt64 = 0
    private var lastPing: Double = 0
    /// Buttons the source holds down (pressed again on a new session).
    private var held: [MouseButton] = []
    public private(set) var stats = SenderStats()
    /// Motion goes in control messages now (forced, or UDP found blocked).
    public private(set) var onControlChannel = false
    private var forcedTCP = false
    /// Datagrams sent in this session; and at each unanswered ping.
    private var sessionDatagrams: UInt64 = 0
    private var pingSent: [UInt64: UInt64] = [:]
    private var lastReceipt: (sent: UInt64, opened: UInt64)?
    /// Fallback motion not yet sent, and when the last message went.
    private var pending: (dx: Int64, dy: Int64, atUs: UInt64) = (0, 0, 0)
    /// When the next fallback message is due: a fixed 30 Hz grid, so frames
    /// of any rate average 30 messages a second.
    private var nextFallbackUs: UInt64 = 0
    var log: (String) -> Void = { _ in }
    /// The keyboard (SenderKeyboard.swift).
    var keys = SenderKeys()
    /// Set while the session is lost and a run reconnects: when to try next.
    private var outage: (backoff: Double, nextAttempt: Double)?

    /// Whether a session is open now (false during an outage).
    public var isConnected: Bool { outage == nil }

    /// Heartbeat period while nothing moves (design note, part 3): the
    /// sender rules' own constant, shared with the lab's model of a sender.
    public static let heartbeatUs: UInt64 = Framer.heartbeatIntervalUs
    /// Fallback motion goes at about 30 messages a second (design note:
    /// the internet path over the encrypted TCP connection).
    public static let fallbackIntervalUs: UInt64 = 33_333
    /// A ping interval with at least this many datagrams sent and none
    /// opened means UDP does not get through.
    public static let blockedAfter: UInt64 = 5
    /// Back-off between reconnection attempts: doubles from the first to the last.
    public static let reconnectBackoff: (first: Double, last: Double) = (0.25, 4)

    /// Sends datagrams of `channel`'s session to host:port over UDP (or to
    /// `datagramsTo`, e.g. a relay in front of the receiver); `reconnect`
    /// opens a new session when this one dies.
    public convenience init(channel: ControlChannel, host: String, port: UInt16, datagramsTo: (host: String, port: UInt16)? = nil,
                reconnect: (() throws -> ControlChannel)? = nil) throws(SenderError) {
        try self.init(channel: channel, host: host, port: port, datagramsTo: datagramsTo, reconnect: reconnect, negotiator: nil)
    }

    init(channel: ControlChannel, host: String, port: UInt16, datagramsTo: (host: String, port: UInt16)?,
         reconnect: (() throws -> ControlChannel)?, negotiator: HelloNegotiator?) throws(SenderError) {
        keys.negotiator = negotiator
        self.channel = channel
        self.host = host
        self.port = port
        self.reconnector = reconnect
        sealer = try Self.sealer(for: channel, redundancy: negotiator?.redundancyGranted == true)
        let udp = datagramsTo ?? (host, port)
        do { fd = try Socket.connectUDP(host: udp.host, port: udp.port) } catch { throw SenderError(error.description) }
        lastPing = MonotonicClock.seconds()
    }

    deinit { Glibc.close(fd) }

    /// `redundancy`: the receiver's hello granted the feature on this
    /// session (the sealer then adds the running totals).
    private static func sealer(for channel: ControlChannel, redundancy: Bool) throws(SenderError) -> DatagramSealer {
        do {
            let key = try DatagramKey(secret: channel.keys.datagramKey)
            let id = channel.keys.sessionID
            var s = DatagramSealer(key: key, session: id)
            if redundancy { s.useRedundancy() }
            return s
        } catch {
            throw SenderError("bad session keys: \(error)")
        }
    }

    /// Connects to a paired receiver. `keyboard`: say hello asking for the
    /// keyboard (`keyboardGranted` tells the answer); `redundancy`: asking
    /// for redundant datagrams (`redundancyGranted`); `gestures`: asking
    /// for gestures (`gesturesGranted`; `send(gesture:at:)` and
    /// `endGesture(_:at:)` need it); `log` hears what the receiver said to it.
    public static func connect(host: String, port: UInt16, identity: Identity,
                               receiver: PublicKey, limits: SessionLimits = SessionLimits(),
                               datagramsTo: (host: String, port: UInt16)? = nil,
                               keyboard: Bool = false, redundancy: Bool = false, gestures: Bool = false,
                               log: @escaping (String) -> Void = { _ in }) throws -> Sender {
        let connect = { try ControlChannel.connect(host: host, port: port, identity: identity, receiver: receiver, limits: limits) }
        let n = HelloNegotiator(wanted: features(keyboard: keyboard, redundancy: redundancy, gestures: gestures), log: log)
        let open = { try n.open(connect) }
        let ch = try open()
        do {
            let s = try Sender(channel: ch, host: host, port: port, datagramsTo: datagramsTo, reconnect: open, negotiator: n)
            s.log = log
            return s
        } catch {
            ch.close(); throw error
        }
    }

    /// Pairs with the code the receiver showed, then sends over that session
    /// (and reconnects as a paired sender).
    public static func pair(host: String, port: UInt16, identity: Identity, code: PairingSecret,
                            directory: ConfigDirectory?, label: String,
                            limits: SessionLimits = SessionLimits(),
                            datagramsTo: (host: String, port: UInt16)? = nil,
                            keyboard: Bool = false, redundancy: Bool = false, gestures: Bool = false,
                            log: @escaping (String) -> Void = { _ in }) throws -> Sender {
        let paired = try ControlChannel.pair(host: host, port: port, identity: identity, secret: code,
                                           directory: directory, label: label, limits: limits)
        let receiver = paired.peer
        let connect = { try ControlChannel.connect(host: host, port: port, identity: identity, receiver: receiver, limits: limits) }
        let n = HelloNegotiator(wanted: features(keyboard: keyboard, redundancy: redundancy, gestures: gestures), log: log)
        let open = { try n.open(connect) }
        // The pairing's own session says hello too: the pairing completed
        // at key confirmation, so an older receiver's bye costs a reconnect only.
        let ch = n.wanted.isEmpty ? paired : try n.negotiate(paired, connect)
        do {
            let s = try Sender(channel: ch, host: host, port: port, datagramsTo: datagramsTo, reconnect: open, negotiator: n)
            s.log = log
            return s
        } catch {
            ch.close(); throw error
        }
    }

    /// What a sender asks for in its hello.
    static func features(keyboard: Bool, redundancy: Bool, gestures: Bool = false) -> ControlFeatures {
        var f: ControlFeatures = []
        if keyboard { f.insert(.keyboard) }
        if redundancy { f.insert(.redundancy) }
        if gestures { f.insert(.gestures) }
        return f
    }

    /// Bytes each datagram takes on this session (49, or 65 with redundancy).
    public var datagramBytes: Int { sealer.byteCount }

    /// Seals and sends one datagram stamped `at` (sender clock, us).
    public func send(_ payload: DatagramPayload, at timeUs: UInt64) throws {
        let n = try buffer.withUnsafeMutableBytes { try sealer.seal(Datagram(payload, senderTimeUs: timeUs), into: $0) }
        let sent = buffer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
        lastDatagram = timeUs
        sessionDatagrams += 1
        if sent != n {
            // UDP: a refused or dropped datagram is lost motion, not an error
            // worth stopping for (the receiver may be restarting).
            stats.sendErrors += 1
            return
        }
        switch payload {
        case .motion(let dx, let dy):
            stats.motionDatagrams += 1
            stats.totalDX += Int64(dx)
            stats.totalDY += Int64(dy)
        case .heartbeat: stats.heartbeats += 1
        case .scroll(let v, let h):
            stats.scrollDatagrams += 1
            stats.totalScrollV += Int64(v)
            stats.totalScrollH += Int64(h)
        default: break
        }
    }

    /// Why gesture traffic is refused on a session that was not granted it.
    static let gesturesNotGranted = SenderError(
        "the receiver did not grant gestures on this session: connect with `gestures: true`, "
            + "and check `gesturesGranted` (an older receiver, `--no-gestures` there, or no /dev/uinput there grant none)")

    /// One gesture state as a datagram (65 bytes, kind 6, on the session's
    /// datagram counter), stamped `at` (us). Only where the receiver
    /// granted gestures: elsewhere it would be dropped, or end an older
    /// receiver's session.
    public func send(gesture g: GestureDatagram, at timeUs: UInt64) throws {
        guard gesturesGranted else { throw Self.gesturesNotGranted }
        let n = try buffer.withUnsafeMutableBytes { try sealer.seal(gesture: g, senderTimeUs: timeUs, into: $0) }
        let sent = buffer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
        lastDatagram = timeUs
        sessionDatagrams += 1
        if sent != n { stats.sendErrors += 1; return }
        stats.gestureStates += 1
    }

    /// The end of gesture `id` on the session (reliable: its last state's
    /// datagram may be lost), stamped with that state's time.
    public func endGesture(_ id: UInt8, at timeUs: UInt64) throws {
        // An ungranted end is a protocol error: the receiver would end the session.
        guard gesturesGranted else { throw Self.gesturesNotGranted }
        try channel.send(.gestureEnd(GestureEndMessage(id: id, senderTimeNs: timeUs * 1000)))
        stats.gestureEnds += 1
    }

    /// A button change over the control channel, stamped `at` (us).
    public func button(_ b: MouseButton, down: Bool, at timeUs: UInt64) throws {
        try channel.send(.button(ButtonEvent(button: b, isDown: down, senderTimeNs: timeUs * 1000,
                                             sequence: buttonSequence)))
        buttonSequence &+= 1
        stats.buttons += 1
        if down { stats.buttonsDown += 1 } else { stats.buttonsUp += 1 }
    }

    /// Keeps the session alive and checks that it is: answers the
    /// receiver's frames, pings every keepalive interval, and throws when
    /// the receiver said bye, closed, or sent nothing (not even a pong)
    /// for the ping interval plus the answer margin.
    public func keepAlive() throws(SessionError) {
        var pongFor: UInt64?
        for m in try channel.receiveAvailable() {
            switch m {
            case .pong(let token): pongFor = pingSent.removeValue(forKey: token)
            case .receipt(let opened): if let sent = pongFor { receipt(opened: opened, sentAtPing: sent) }
            case .refused(let r): refused(r)
            default: break
            }
        }
        let now = MonotonicClock.seconds()
        let l = channel.limits
        if now - channel.lastHeard > l.keepaliveInterval + l.answerMargin {
            channel.close()
            throw .peerSilent(now - channel.lastHeard)
        }
        if now - lastPing >= l.keepaliveInterval {
            let token = MonotonicClock.nowUs()
            try channel.send(.ping(token))
            // Answers never come for a session that died: forget old ones.
            pingSent = pingSent.filter { token - $0.key < 60_000_000 }
            pingSent[token] = sessionDatagrams
            lastPing = now
        }
    }

    /// The receiver had opened `opened` of this session's datagrams when it
    /// answered a ping sent after `sentAtPing` of them. A whole ping
    /// interval of datagrams with none opened: UDP is blocked, motion moves
    /// to the control channel. Any opened while there (heartbeats still go
    /// as datagrams, as probes): back to UDP.
    private func receipt(opened: UInt64, sentAtPing: UInt64) {
        defer { lastReceipt = (sentAtPing, opened) }
        guard let last = lastReceipt, !forcedTCP else { return }
        let sent = sentAtPing - min(sentAtPing, last.sent), got = opened - min(opened, last.opened)
        if !onControlChannel && sent >= Self.blockedAfter && got == 0 {
            onControlChannel = true
            stats.switchesToTCP += 1
            log("datagrams do not get through (0 of \(sent) opened): motion goes over the control channel, about 30 a second")
        } else if onControlChannel && got > 0 {
            flushFallback(force: true)
            onControlChannel = false
            stats.switchesToUDP += 1
            log("datagrams get through again (\(got) opened): back to UDP")
        }
    }

    /// One frame's motion: a datagram, or (on the control channel) into the
    /// next fallback message.
    private func move(dx: Int32, dy: Int32, at now: UInt64) throws {
        guard onControlChannel else {
            try send(.motion(dx: dx, dy: dy), at: now)
            return
        }
        pending.dx += Int64(dx)
        pending.dy += Int64(dy)
        pending.atUs = now
        flushFallback(force: false)
    }

    /// Sends the pending fallback motion when the 30 Hz grid says so (or
    /// now), stamped with the time of its latest frame.
    private func flushFallback(force: Bool) {
        guard pending.dx != 0 || pending.dy != 0 else { return }
        guard force || pending.atUs >= nextFallbackUs else { return }
        let dx = Int32(clamping: pending.dx), dy = Int32(clamping: pending.dy)
        do {
            try channel.send(.motion(MotionEvent(dx: dx, dy: dy, senderTimeNs: pending.atUs * 1000)))
        } catch {
            return   // the session is ending; keepAlive reports it
        }
        stats.fallbackMessages += 1
        stats.fallbackDX += Int64(dx)
        stats.fallbackDY += Int64(dy)
        pending.dx -= Int64(dx)
        pending.dy -= Int64(dy)
        // The next slot of the grid, or one interval from now after a pause.
        nextFallbackUs = max(nextFallbackUs + Self.fallbackIntervalUs, pending.atUs + Self.fallbackIntervalUs / 2)
    }

    /// Opens a new session in place of a dead one and presses again the
    /// buttons the source still holds (the receiver released them when the
    /// old session ended).
    private func reopen(at timeUs: UInt64) throws {
        guard let reconnector else { throw SenderError("no way to reconnect") }
        let ch = try reconnector()
        let newSealer: DatagramSealer
        do { newSealer = try Self.sealer(for: ch, redundancy: keys.negotiator?.redundancyGranted == true) } catch { ch.close(); throw error }
        channel = ch
        sealer = newSealer
        lastPing = MonotonicClock.seconds()
        sessionDatagrams = 0
        pingSent = [:]
        lastReceipt = nil
        pending = (0, 0, 0)
        onControlChannel = forcedTCP
        stats.reconnects += 1
        for b in held { try button(b, down: true, at: timeUs) }
        try pressHeldKeys(at: timeUs)
    }

    /// Plays `source` for `seconds` at `rate` frames per second (at most 120):
    /// one motion datagram per moving frame, stamped with the frame's time;
    /// a heartbeat every 100 ms while nothing moves; a ping every keepalive
    /// interval. A dead session throws, unless `reconnect`: then the sender
    /// says so (`onEvent`), drops the frames of the outage and opens a new
    /// session with back-off until it works or the time is up.
    public func run(_ source: inout some MotionSource, seconds: Double, rate: Double = 120,
                    reconnect: Bool = false, over transport: SenderTransport = .udp,
                    onEvent: @escaping (String) -> Void = { _ in }) throws {
        let saved = log
        log = onEvent
        defer { log = saved; flushFallback(force: true) }
        if transport == .tcp && !forcedTCP { forcedTCP = true; onControlChannel = true }
        let hz = min(max(rate, 1), 120)
        let count = max(1, Int((seconds * hz).rounded()))
        let period = 1 / hz
        let start = senderClockUs()
        outage = nil
        for i in 0..<count {
            let due = start + UInt64(Double(i + 1) * period * 1_000_000)
            MonotonicClock.sleep(untilUs: due)
            let f = source.frame(index: i, of: count, seconds: Double(i + 1) * period)
            for b in f.buttons {
                if b.down { held.append(b.button) } else { held.removeAll { $0 == b.button } }
            }
            guard retry(onEvent: onEvent) else { stats.framesDropped += 1; continue }
            let now = senderClockUs()
            do {
                for b in f.buttons where b.down { try button(b.button, down: true, at: now) }
                if f.dx != 0 || f.dy != 0 {
                    try move(dx: f.dx, dy: f.dy, at: now)
                }
                // Heartbeats while no datagram moves: on the control channel
                // they are also the probes that tell when UDP works again.
                if now - lastDatagram >= Self.heartbeatUs && (onControlChannel || (f.dx == 0 && f.dy == 0)) {
                    try send(.heartbeat, at: now)
                }
                for b in f.buttons where !b.down { try button(b.button, down: false, at: now) }
                try keepAlive()
            } catch let e as SessionError {
                try lost(e, reconnect: reconnect, onEvent: onEvent)
            }
        }
        if outage != nil { throw SenderError("the session to \(host):\(port) was lost and not restored by the end of the run") }
    }

    /// While a session is lost: opens a new one once the back-off allows.
    /// True when a session is open.
    private func retry(onEvent: (String) -> Void) -> Bool {
        guard var o = outage else { return true }
        guard MonotonicClock.seconds() >= o.nextAttempt else { return false }
        do {
            try reopen(at: senderClockUs())
            outage = nil
            onEvent("reconnected to \(host):\(port) (\(stats.framesDropped) frames dropped so far)")
            return true
        } catch {
            o.nextAttempt = MonotonicClock.seconds() + o.backoff
            o.backoff = min(o.backoff * 2, Self.reconnectBackoff.last)
            outage = o
            return false
        }
    }

    /// The session died: throws, unless `reconnect` (then the outage starts).
    private func lost(_ e: SessionError, reconnect: Bool, onEvent: (String) -> Void) throws {
        stats.sessionsLost += 1
        channel.close()
        guard reconnect, reconnector != nil else { throw e }
        onEvent("session lost: \(e); reconnecting")
        outage = (Self.reconnectBackoff.first, 0)
    }

    /// One frame of an `InputCore` (a device's samples, `remolo send
    /// --device`), stamped with the frame's own time: presses first, then
    /// its motion (a datagram, or the control channel's fallback) and
    /// scroll, a heartbeat when the core asks for one (or as a UDP probe
    /// while motion goes over the control channel), releases, then
    /// keepAlive. During an outage (`reconnect`) the frame's motion is
    /// dropped and counted, never sent late, and a new session is tried
    /// with the same back-off as `run`; buttons still held are pressed again
    /// on it. Returns whether the frame went out.
    @discardableResult
    public func send(frame f: Frame, over transport: SenderTransport = .udp, reconnect: Bool,
                     onEvent: @escaping (String) -> Void) throws -> Bool {
        log = onEvent
        if transport == .tcp && !forcedTCP { forcedTCP = true; onControlChannel = true }
        for c in f.buttons {
            guard let b = MouseButton(c.button) else { continue }
            if c.isDown { if !held.contains(b) { held.append(b) } } else { held.removeAll { $0 == b } }
        }
        guard retry(onEvent: onEvent) else {
            if !f.motion.isZero || !f.scroll.isZero { stats.framesDropped += 1 }
            return false
        }
        let t = f.timeUs
        do {
            for c in f.buttons where c.isDown { if let b = MouseButton(c.button) { try button(b, down: true, at: c.timeUs) } }
            if !f.motion.isZero { try move(dx: f.motion.a, dy: f.motion.b, at: t) }
            if !f.scroll.isZero { try send(.scroll(vertical: f.scroll.a, horizontal: f.scroll.b), at: t) }
            // Gestures only ever come where they were granted (the rules
            // are turned on then); a frame of an older session drops them.
            if gesturesGranted {
                for g in f.gestures { try send(gesture: GestureDatagram(g), at: t) }
                for e in f.gestureEnds { try endGesture(e.id, at: e.timeUs) }
            }
            if f.isHeartbeat || (onControlChannel && t &- lastDatagram >= Self.heartbeatUs) {
                try send(.heartbeat, at: t)
            }
            for c in f.buttons where !c.isDown { if let b = MouseButton(c.button) { try button(b, down: false, at: c.timeUs) } }
            flushFallback(force: false)
            try keepAlive()
        } catch let e as SessionError {
            try lost(e, reconnect: reconnect, onEvent: onEvent)
            return false
        }
        return true
    }

    /// Says bye and closes the session.
    public func close(_ reason: ByeReason = .normal) {
        channel.close(saying: reason)
    }

}

extension GestureDatagram {
    /// The touchpad rules' state (RemoloInput) in the wire's units.
    init(_ g: GestureState) {
        self.init(id: g.id, kind: g.kind == .pinch ? .pinch : .swipe, fingers: UInt8(clamping: g.fingers),
                  isLast: g.isLast, xUm: g.xUm, yUm: g.yUm, scaleQ16: g.scaleQ16, angleUrad: g.angleUrad)
    }
}
