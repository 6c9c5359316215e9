// Sealed pointer datagrams: the Swift face of CSources/RemoloPlayoutCore/wire.c.
// The layout and the replay rule are specified in remolo_wire.h (and
// docs/protocol.md). No C type appears in this API.
internal import CSodium
package import RemoloPlayoutCore
import RemoloSession
import RemoloSystem
import RemoloTypes

/// Why `DatagramOpener` refused a datagram. Raw values are the C
/// `enum wire_drop`.
public enum DatagramDropReason: Int, Error, CaseIterable, Sendable {
    /// Fewer than `Datagram.byteCount` bytes.
    case short = 1
    /// More than `Datagram.byteCount` bytes.
    case long = 2
    /// No live session has this id.
    case unknownSession = 3
    /// The counter is not newer than the newest accepted one (replayed,
    /// duplicated, or late).
    case replay = 4
    /// Forged, corrupted, or sealed under another key.
    case badTag = 5
    /// Authentic, but the kind is unknown.
    case badKind = 6
    /// Authentic, known kind, fields out of range.
    case badField = 7

    /// The name in docs/protocol.md, `--stats` and the JSON statistics.
    public var name: String {
        switch self {
        case .short: "short"
        case .long: "long"
        case .unknownSession: "unknown_session"
        case .replay: "replay"
        case .badTag: "bad_tag"
        case .badKind: "bad_kind"
        case .badField: "bad_field"
        }
    }
}

/// Datagram layer errors outside the receive path.
public enum DatagramError: Error, Equatable, Sendable {
    case badKeyLength(Int)
    case sessionExists
    case tableFull
    /// The sealer used the last counter; the session must be rekeyed.
    case counterExhausted
    case bufferTooSmall(needed: Int)
    /// A key change: it travels on the control channel, never as a
    /// datagram (datagram kind 5 is `badKind`).
    case notADatagram
    /// A gesture state outside the wire's bounds (remolo_limits.h).
    case badGesture
}

/// One gesture state in the wire's units (docs/protocol.md, "Gestures
/// (feature bit 3)"): what a gesture datagram seals.
public struct GestureDatagram: Equatable, Sendable {
    public enum Kind: UInt8, Sendable { case swipe = 1, pinch = 2 }
    public var id: UInt8
    public var kind: Kind
    public var fingers: UInt8
    public var isLast: Bool
    /// Centroid offset since the gesture began, micrometres (x right, y down).
    public var xUm: Int32, yUm: Int32
    /// Q16 (65536 = 1) and microradians (counter-clockwise).
    public var scaleQ16: Int32, angleUrad: Int32

    public init(id: UInt8, kind: Kind, fingers: UInt8, isLast: Bool, xUm: Int32, yUm: Int32,
                scaleQ16: Int32, angleUrad: Int32) {
        self.id = id; self.kind = kind; self.fingers = fingers; self.isLast = isLast
        self.xUm = xUm; self.yUm = yUm; self.scaleQ16 = scaleQ16; self.angleUrad = angleUrad
    }
}

/// What one datagram carries. Deltas are Q8 fixed point: 256 units per
/// pixel (motion) or per 1/120 wheel notch (scroll).
public enum DatagramPayload: Equatable, Sendable {
    /// Pointer movement, x right and y down.
    case motion(dx: Int32, dy: Int32)
    /// Wheel movement, positive = up / right.
    case scroll(vertical: Int32, horizontal: Int32)
    /// A Linux `BTN_*` code pressed or released.
    case button(code: UInt16, down: Bool)
    /// Keeps the sender's radio awake and the clock estimate fresh.
    case heartbeat
    /// A Linux `KEY_*` code pressed or released on the Remolo keyboard
    /// (`KeyboardDevice.hasKey`). Not a datagram: keys come over the
    /// control channel and are played through `ReceiveLoop.push`.
    case key(code: UInt16, down: Bool)

    /// The datagram kind; nil for a key, which is never a datagram.
    public var kind: PacketKind? {
        switch self {
        case .motion: .motion
        case .scroll: .scroll
        case .button: .button
        case .heartbeat: .heartbeat
        case .key: nil
        }
    }
}

/// One pointer datagram's content: a payload stamped with the sender's clock.
public struct Datagram: Equatable, Sendable {
    /// Bytes on the wire: id 8 + counter 8 + sealed 17 + tag 16.
    public static let byteCount = Int(WIRE_DATAGRAM_LEN)
    /// The redundant layout (a session whose hello granted the redundancy
    /// feature): the sealed part also carries the session's running totals,
    /// 16 bytes more.
    public static let redundantByteCount = Int(WIRE_TOTALS_DATAGRAM_LEN)

    public var payload: DatagramPayload
    /// Sender clock, microseconds.
    public var senderTimeUs: UInt64

    public init(_ payload: DatagramPayload, senderTimeUs: UInt64) {
        self.payload = payload
        self.senderTimeUs = senderTimeUs
    }

    /// What the playout takes: this content as a `PointerPacket`. A key
    /// (never a datagram: PacketKind has no case for it) is button-shaped.
    public var pointerPacket: PointerPacket {
        switch payload {
        case let .motion(dx, dy): .motion(dx: dx, dy: dy, at: senderTimeUs)
        case let .scroll(v, h): .scroll(vertical: v, horizontal: h, at: senderTimeUs)
        case let .button(code, down), let .key(code, down): .button(code, down: down, at: senderTimeUs)
        case .heartbeat: .heartbeat(at: senderTimeUs)
        }
    }

    /// The core's packet: PointerPacket's one conversion (`c`), with the
    /// core's key kind for a key.
    package var packet: playout_pkt {
        var p = pointerPacket.c
        if case .key = payload { p.kind = UInt8(PLAYOUT_KIND_KEY.rawValue) }
        return p
    }

    /// From a packet that wire_open accepted (kind and fields already checked).
    package init(packet p: playout_pkt) {
        let payload: DatagramPayload
        switch Int(p.kind) {
        case Int(PLAYOUT_KIND_MOTION.rawValue): payload = .motion(dx: p.a, dy: p.b)
        case Int(PLAYOUT_KIND_SCROLL.rawValue): payload = .scroll(vertical: p.a, horizontal: p.b)
        case Int(PLAYOUT_KIND_BUTTON.rawValue): payload = .button(code: p.code, down: p.down != 0)
        case Int(PLAYOUT_KIND_KEY.rawValue): payload = .key(code: p.code, down: p.down != 0)
        default: payload = .heartbeat
        }
        self.init(payload, senderTimeUs: p.tx_us)
    }
}

/// The 32-byte datagram key (sender to receiver) from the handshake.
public struct DatagramKey: Sendable {
    public static let byteCount = Int(WIRE_KEY_LEN)
    /// The session layer's wiped owner (SecretBytes zeroes it with
    /// sodium_memzero when the last copy of the key goes away).
    let secret: SecretBytes

    public init(bytes: some Collection<UInt8>) throws {
        guard bytes.count == Self.byteCount else { throw DatagramError.badKeyLength(bytes.count) }
        secret = SecretBytes(copying: bytes)
    }

    /// The handshake's datagram key, copied from its owner straight into
    /// this key's own wiped storage (no intermediate array to forget).
    public init(secret: SecretBytes) throws {
        guard secret.count == Self.byteCount else { throw DatagramError.badKeyLength(secret.count) }
        self.secret = SecretBytes(count: Self.byteCount)
        secret.withUnsafeBytes { src in
            self.secret.pointer.copyMemory(from: src.baseAddress!, byteCount: Self.byteCount)
        }
    }

    /// A fresh random key (libsodium's CSPRNG); for tests and benchmarks.
    public static func random() -> DatagramKey {
        _ = wire_crypto_init()
        let k = try! DatagramKey(secret: SecretBytes(count: byteCount))
        randombytes_buf(k.secret.pointer, byteCount)
        return k
    }

    package func withPointer<R>(_ body: (UnsafePointer<UInt8>) throws -> R) rethrows -> R {
        try withExtendedLifetime(secret) {
            try body(UnsafePointer(secret.pointer.assumingMemoryBound(to: UInt8.self)))
        }
    }
}

/// Running totals of the motion a session's datagrams carried (the
/// redundancy feature, remolo_wire.h): motion x, y, scroll vertical,
/// horizontal, Q8, modulo 2^32.
public struct DatagramTotals: Equatable, Sendable {
    public var values: SIMD4<UInt32> = .zero
    public init() {}

    /// Adds a datagram's own motion (what the sender does before sealing it).
    public mutating func add(_ d: Datagram) {
        var t = (values[0], values[1], values[2], values[3])
        var pkt = d.packet
        withUnsafeMutableBytes(of: &t) { wire_totals_add($0.baseAddress!.assumingMemoryBound(to: UInt32.self), &pkt) }
        values = SIMD4(t.0, t.1, t.2, t.3)
    }
}

/// Seals the datagrams of one session, numbering them with the counter
/// nonce. Not copyable: two copies would seal with the same counters, that
/// is reuse nonces under one key (RFC 8439 section 4).
public struct DatagramSealer: ~Copyable, Sendable {
    public let key: DatagramKey
    public let session: SessionID
    /// The counter the next datagram gets.
    public private(set) var nextCounter: UInt64
    private var exhausted = false
    /// The motion of every datagram sealed so far, this session.
    public private(set) var totals = DatagramTotals()
    /// Seal in the redundant layout (the receiver's hello granted it).
    public private(set) var redundant = false

    public init(key: DatagramKey, session: SessionID, firstCounter: UInt64 = 0) {
        precondition(wire_crypto_init() == 0, "libsodium failed to initialise")
        self.key = key
        self.session = session
        nextCounter = firstCounter
    }

    /// The receiver granted the redundancy feature on this session: every
    /// datagram from now on carries the running totals (65 bytes).
    public mutating func useRedundancy() { redundant = true }

    /// Bytes the next datagram takes.
    public var byteCount: Int { redundant ? Datagram.redundantByteCount : Datagram.byteCount }

    /// Seals into `buffer` (at least `byteCount` bytes); returns the byte
    /// count. For a send loop that reuses one buffer.
    public mutating func seal(_ datagram: Datagram, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !exhausted else { throw DatagramError.counterExhausted }
        guard datagram.payload.kind != nil else { throw DatagramError.notADatagram }
        guard buffer.count >= byteCount else { throw DatagramError.bufferTooSmall(needed: byteCount) }
        // Every datagram sealed counts, sent or not: one the socket
        // refused is lost, and the next one recovers it.
        totals.add(datagram)
        let n = try redundant
            ? Self.seal(datagram, counter: nextCounter, totals: totals, key: key, session: session, into: buffer)
            : Self.seal(datagram, counter: nextCounter, key: key, session: session, into: buffer)
        if nextCounter == .max { exhausted = true } else { nextCounter += 1 }
        return n
    }

    /// Seals a gesture state (the session granted gestures) stamped
    /// `senderTimeUs` into `buffer`: always the 65-byte gesture layout, on
    /// this session's counter. It carries no motion: the totals stay.
    public mutating func seal(gesture g: GestureDatagram, senderTimeUs: UInt64,
                              into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !exhausted else { throw DatagramError.counterExhausted }
        guard buffer.count >= Datagram.redundantByteCount, let base = buffer.baseAddress else {
            throw DatagramError.bufferTooSmall(needed: Datagram.redundantByteCount)
        }
        var pkt = playout_pkt()
        pkt.kind = UInt8(PLAYOUT_KIND_GESTURE.rawValue)
        pkt.tx_us = senderTimeUs
        pkt.a = g.xUm
        pkt.b = g.yUm
        pkt.g = playout_gesture(scale_q16: g.scaleQ16, angle_urad: g.angleUrad, id: g.id, type: g.kind.rawValue,
                                fingers: g.fingers, flags: g.isLast ? UInt8(PLAYOUT_GESTURE_FLAG_LAST) : 0)
        let counter = nextCounter
        let r = key.withPointer { k in
            session.bytes.withUnsafeBufferPointer { id in
                wire_seal_gesture(k, id.baseAddress, counter, &pkt, base.assumingMemoryBound(to: UInt8.self), buffer.count)
            }
        }
        guard r == Datagram.redundantByteCount else { throw DatagramError.badGesture }
        if nextCounter == .max { exhausted = true } else { nextCounter += 1 }
        return Int(r)
    }

    public mutating func seal(_ datagram: Datagram) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        _ = try out.withUnsafeMutableBytes { try seal(datagram, into: $0) }
        return out
    }

    /// One datagram with an explicit counter (tests, tools). The caller
    /// must never seal two datagrams with one counter under one key, nor
    /// pass a key (not a datagram).
    public static func seal(_ datagram: Datagram, counter: UInt64, key: DatagramKey,
                            session: SessionID) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Datagram.byteCount)
        _ = out.withUnsafeMutableBytes { try! seal(datagram, counter: counter, key: key, session: session, into: $0) }
        return out
    }

    /// One datagram in the redundant layout with explicit totals (this
    /// datagram's own motion included), for tests and tools.
    public static func seal(_ datagram: Datagram, counter: UInt64, totals: DatagramTotals, key: DatagramKey,
                            session: SessionID) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Datagram.redundantByteCount)
        _ = out.withUnsafeMutableBytes { try! seal(datagram, counter: counter, totals: totals, key: key, session: session, into: $0) }
        return out
    }

    static func seal(_ datagram: Datagram, counter: UInt64, key: DatagramKey, session: SessionID,
                     into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count >= Datagram.byteCount, let base = buffer.baseAddress else {
            throw DatagramError.bufferTooSmall(needed: Datagram.byteCount)
        }
        guard datagram.payload.kind != nil else { throw DatagramError.notADatagram }
        var pkt = datagram.packet
        let r = key.withPointer { k in
            session.bytes.withUnsafeBufferPointer { id in
                wire_seal(k, id.baseAddress, counter, &pkt, base.assumingMemoryBound(to: UInt8.self), buffer.count)
            }
        }
        // Every other payload the enum can express is sealable.
        precondition(r == Datagram.byteCount, "wire_seal: \(r)")
        return Int(r)
    }

    static func seal(_ datagram: Datagram, counter: UInt64, totals: DatagramTotals, key: DatagramKey,
                     session: SessionID, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count >= Datagram.redundantByteCount, let base = buffer.baseAddress else {
            throw DatagramError.bufferTooSmall(needed: Datagram.redundantByteCount)
        }
        guard datagram.payload.kind != nil else { throw DatagramError.notADatagram }
        var pkt = datagram.packet
        var t = (totals.values[0], totals.values[1], totals.values[2], totals.values[3])
        let r = withUnsafeBytes(of: &t) { tp in
            key.withPointer { k in
                session.bytes.withUnsafeBufferPointer { id in
                    wire_seal_totals(k, id.baseAddress, counter, &pkt, tp.baseAddress!.assumingMemoryBound(to: UInt32.self),
                                     base.assumingMemoryBound(to: UInt8.self), buffer.count)
                }
            }
        }
        precondition(r == Datagram.redundantByteCount, "wire_seal_totals: \(r)")
        return Int(r)
    }
}

/// A datagram that opened: which session, its counter, and its content.
public struct OpenedDatagram: Equatable, Sendable {
    public let session: SessionID
    /// The session's slot in the table (0 ..< DatagramOpener.capacity).
    public let slot: Int
    public let counter: UInt64
    public let datagram: Datagram
    /// The redundant layout: datagrams the counter skipped just before
    /// this one, and the motion they carried (motion x, y, scroll
    /// vertical, horizontal, Q8), recovered from the running totals. Zero
    /// for a 49-byte datagram.
    public var lostDatagrams: UInt32 = 0
    public var recovered: SIMD4<Int32> = .zero
}

/// Counters of the open path.
public struct DatagramStats: Equatable, Sendable {
    public var opened: UInt64
    public var drops: [DatagramDropReason: UInt64]

    public subscript(reason: DatagramDropReason) -> UInt64 { drops[reason] ?? 0 }
    public var dropped: UInt64 { drops.values.reduce(0, +) }
}

/// The receiver's session table: opens datagrams of up to `capacity` live
/// sessions, enforcing the replay rule per session. Not thread-safe: one
/// receive loop owns it. Keys are wiped on removal and on deinit.
public final class DatagramOpener {
    public static let capacity = Int(REMOLO_SESSIONS_MAX)
    private let table: UnsafeMutablePointer<wire>

    public init() {
        table = .allocate(capacity: 1)
        precondition(wire_init(table) == 0, "libsodium failed to initialise")
    }

    deinit {
        wire_deinit(table)
        table.deallocate()
    }

    public var sessionCount: Int { Int(table.pointee.nsessions) }

    /// Adds a session; returns its slot.
    @discardableResult
    public func addSession(_ id: SessionID, key: DatagramKey) throws -> Int {
        let r = key.withPointer { k in id.bytes.withUnsafeBufferPointer { wire_add_session(table, $0.baseAddress, k) } }
        if r >= 0 { return Int(r) }
        // The only refusals: the id is live (-EEXIST) or the table is full.
        if contains(id) { throw DatagramError.sessionExists }
        precondition(sessionCount == Self.capacity, "wire_add_session: \(r)")
        throw DatagramError.tableFull
    }

    /// Wipes and removes a session; false if it was not live.
    @discardableResult
    public func removeSession(_ id: SessionID) -> Bool {
        id.bytes.withUnsafeBufferPointer { wire_remove_session(table, $0.baseAddress) } == 0
    }

    public func contains(_ id: SessionID) -> Bool { slot(of: id) != nil }

    /// The session's hello granted the redundancy feature: its 65-byte
    /// datagrams open from now on. False if it is not live.
    @discardableResult
    public func grantRedundancy(_ id: SessionID) -> Bool {
        id.bytes.withUnsafeBufferPointer { wire_set_totals(table, $0.baseAddress, 1) } == 0
    }

    func slot(of id: SessionID) -> Int? {
        let r = id.bytes.withUnsafeBufferPointer { wire_lookup(table, $0.baseAddress) }
        return r >= 0 ? Int(r) : nil
    }

    /// The newest counter this session accepted, nil before the first (or
    /// if the session is not live). Reads the one field in C: copying a
    /// session out of the table would copy its key into memory nobody wipes.
    public func newestCounter(of id: SessionID) -> UInt64? {
        var newest: UInt64 = 0
        let r = id.bytes.withUnsafeBufferPointer { wire_newest(table, $0.baseAddress, &newest) }
        return r == 1 ? newest : nil
    }

    public func open(_ bytes: UnsafeRawBufferPointer) -> Result<OpenedDatagram, DatagramDropReason> {
        var rx = wire_rx()
        let r = wire_open(table, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &rx)
        guard r >= 0 else { return .failure(DatagramDropReason(rawValue: Int(-r))!) }
        let id = withUnsafeBytes(of: rx.id) { try! SessionID(bytes: $0) }
        let l = rx.pkt.lost
        return .success(OpenedDatagram(session: id, slot: Int(r), counter: rx.counter,
                                       datagram: Datagram(packet: rx.pkt), lostDatagrams: rx.pkt.lost_n,
                                       recovered: SIMD4(l.0, l.1, l.2, l.3)))
    }

    public func open(_ bytes: [UInt8]) -> Result<OpenedDatagram, DatagramDropReason> {
        bytes.withUnsafeBytes { open($0) }
    }

    public var stats: DatagramStats {
        let s = table.pointee.stats
        var drops: [DatagramDropReason: UInt64] = [:]
        withUnsafeBytes(of: s.drop) { raw in
            let counts = raw.bindMemory(to: UInt64.self)
            for reason in DatagramDropReason.allCases { drops[reason] = counts[reason.rawValue] }
        }
        return DatagramStats(opened: s.opened, drops: drops)
    }
}
