package import RemoloPlayoutCore

/// A sender's lateness over its earlier sessions on one network (recall.c):
/// what the receiver keeps between sessions so that a returning sender's
/// session starts at the delay its network needs. A value: 129 words, saved
/// as a small file (`data`, `init(data:)`).
public struct DelayRecall: Sendable, Equatable {
    /// Weight per millisecond of lateness at no delay, aged.
    public var bins: [UInt32]
    /// Movement packets it has seen (saturating).
    public var packets: UInt32

    /// No memory: a first session.
    public init() {
        bins = Array(repeating: 0, count: Int(REMOLO_RECALL_BINS))
        packets = 0
    }

    package init(_ r: recall) {
        bins = withUnsafeBytes(of: r.bins) { Array($0.bindMemory(to: UInt32.self)) }
        packets = r.packets
    }

    package var c: recall {
        var r = recall()
        withUnsafeMutableBytes(of: &r.bins) { raw in
            let b = raw.bindMemory(to: UInt32.self)
            for i in 0..<min(b.count, bins.count) { b[i] = bins[i] }
        }
        r.packets = packets
        return r
    }

    /// Whether a session would hold the delay it reads (enough packets).
    public var isUsable: Bool {
        var r = c
        return recall_usable(&r)
    }

    /// The delay it reads at `permille`, microseconds.
    public func delayUs(permille: UInt32) -> UInt32 {
        var r = c
        return recall_delay_us(&r, permille)
    }

    static let magic: [UInt8] = Array("RRC1".utf8)

    /// The file's bytes: "RRC1", the packet count, then each bin, all
    /// little-endian 32-bit words (520 bytes).
    public var data: [UInt8] {
        var out = Self.magic
        out.reserveCapacity(4 * (2 + bins.count))
        func word(_ v: UInt32) { for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        word(packets)
        for b in bins { word(b) }
        return out
    }

    /// Reads `data`'s form back; throws on anything else (a different
    /// length or magic, or more weight than a memory can gather), so that a
    /// damaged file costs a cold start, not a wrong delay.
    public init(data: [UInt8]) throws(PlayoutError) {
        let n = Int(REMOLO_RECALL_BINS)
        guard data.count == 4 * (2 + n), Array(data[0..<4]) == Self.magic else {
            throw PlayoutError(description: "not a delay memory (want \(4 * (2 + n)) bytes starting with RRC1, got \(data.count) bytes); delete the file and the next session starts cold")
        }
        func word(_ i: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[4 * i + $1]) << (8 * $1) }
        }
        packets = word(1)
        bins = (0..<n).map { word(2 + $0) }
        var r = c
        guard recall_valid(&r) else {
            throw PlayoutError(description: "the delay memory holds more weight than a memory can gather; delete the file and the next session starts cold")
        }
    }
}
