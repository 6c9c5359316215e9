package import RemoloPlayoutCore

/// A sender's lateness over its earlier sessions on one network (recall.c):
/// what the receiver keeps between sessions so that a returning sender's
/// session starts at the delay its network needs. A value: 130 words, saved
/// as a small file (`data`, `init(data:)`).
public struct DelayRecall: Sendable, Equatable {
    /// Weight per millisecond of lateness at no delay, aged.
    public var bins: [UInt32]
    /// Movement it has seen, in units of 2^5 us (each packet adds its
    /// frame); past 2^31 it steps back by 2^30 (recall.c).
    public var moved: UInt32
    /// The delay the last session held, microseconds; 0: none (a session
    /// that did not hold one, or let it go). The next keeps it while the
    /// memory reads near it (chooser.c, REMOLO_RECALL_KEEP_SHIFT).
    public var heldUs: UInt32

    /// No memory: a first session.
    public init() {
        bins = Array(repeating: 0, count: Int(REMOLO_RECALL_BINS))
        moved = 0
        heldUs = 0
    }

    package init(_ r: recall) {
        bins = withUnsafeBytes(of: r.bins) { Array($0.bindMemory(to: UInt32.self)) }
        moved = r.moved
        heldUs = r.held_us
    }

    package var c: recall {
        var r = recall()
        withUnsafeMutableBytes(of: &r.bins) { raw in
            let b = raw.bindMemory(to: UInt32.self)
            for i in 0..<min(b.count, bins.count) { b[i] = bins[i] }
        }
        r.moved = moved
        r.held_us = heldUs
        return r
    }

    /// The movement it has seen, seconds (folded past 2^31 units: 19 hours).
    public var movedSeconds: Double { Double(UInt64(moved) << REMOLO_RECALL_UNIT_SHIFT) / 1e6 }

    /// Whether a session would hold the delay it reads (enough movement).
    public var isUsable: Bool {
        var r = c
        return recall_usable(&r)
    }

    /// The delay it reads at `permille`, microseconds.
    public func delayUs(permille: UInt32) -> UInt32 {
        var r = c
        return recall_delay_us(&r, permille)
    }

    static let magic: [UInt8] = Array("RRC3".utf8)
    /// The forms that counted packets, not movement: "RRC2", and "RRC1"
    /// before the held delay was kept (read as holding none).
    static let magicV2: [UInt8] = Array("RRC2".utf8)
    static let magicV1: [UInt8] = Array("RRC1".utf8)

    /// The file's bytes: "RRC3", the movement count, the held delay, then
    /// each bin, all little-endian 32-bit words (524 bytes).
    public var data: [UInt8] {
        var out = Self.magic
        out.reserveCapacity(4 * (3 + bins.count))
        func word(_ v: UInt32) { for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        word(moved)
        word(heldUs)
        for b in bins { word(b) }
        return out
    }

    /// Reads `data`'s form back, or an earlier one ("RRC2"; "RRC1", no held
    /// delay, 520 bytes); throws on anything else (a different length or
    /// magic, more weight than a memory can gather, a held delay no memory
    /// reads), so that a damaged file costs a cold start, not a wrong delay.
    public init(data: [UInt8]) throws(PlayoutError) {
        let n = Int(REMOLO_RECALL_BINS)
        let head = Array(data.prefix(4))
        let v3 = data.count == 4 * (3 + n) && head == Self.magic
        let v2 = data.count == 4 * (3 + n) && head == Self.magicV2
        guard v3 || v2 || (data.count == 4 * (2 + n) && head == Self.magicV1) else {
            throw PlayoutError(description: "not a delay memory (want \(4 * (3 + n)) bytes starting with RRC3 or RRC2, or \(4 * (2 + n)) with RRC1, got \(data.count) bytes); delete the file and the next session starts cold")
        }
        func word(_ i: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[4 * i + $1]) << (8 * $1) }
        }
        // The earlier forms counted packets, each of weight 256: the
        // movement count is the weight added, as it is now (a 120 Hz
        // packet weighs 260), folded as recall.c folds it.
        moved = v3 ? word(1) : recall_fold(UInt64(word(1)) << 8)
        heldUs = v3 || v2 ? word(2) : 0
        let first = v3 || v2 ? 3 : 2
        bins = (0..<n).map { word(first + $0) }
        var r = c
        guard recall_valid(&r) else {
            throw PlayoutError(description: "the delay memory holds more weight or movement than a memory can gather, or a held delay past its last bin; delete the file and the next session starts cold")
        }
    }
}
