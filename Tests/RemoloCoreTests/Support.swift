import RemoloPlayoutCore


func seedConfig() -> playout_config {
    var c = playout_config()
    playout_config_seed(&c)
    return c
}

/// A C playout on the heap, initialised with the seed policy (or `cfg`).
final class CorePlayout {
    let p = UnsafeMutablePointer<playout>.allocate(capacity: 1)
    init(_ cfg: playout_config = seedConfig()) {
        var c = cfg
        precondition(playout_init(p, &c) == 0)
    }
    deinit { p.deallocate() }

    @discardableResult
    func push(rx: UInt64, tx: UInt64, kind: playout_kind = PLAYOUT_KIND_MOTION,
              a: Int32 = 0, b: Int32 = 0, code: UInt16 = 0, down: Bool = false,
              lost: (Int32, Int32, Int32, Int32) = (0, 0, 0, 0), lostCount: UInt32 = 0) -> Int32 {
        var pkt = playout_pkt(tx_us: tx, a: a, b: b, code: code, kind: UInt8(kind.rawValue), down: down ? 1 : 0,
                              lost_n: lostCount, lost: lost, g: playout_gesture())
        return playout_push(p, rx, &pkt)
    }

    func tick(_ now: UInt64) -> playout_out {
        var o = playout_out()
        playout_tick(p, now, &o)
        return o
    }

    var delay: UInt32 { p.pointee.delay.delay_us }
    var offset: Int64 { p.pointee.clock.offset_us }
    var queued: UInt32 { p.pointee.q.tail &- p.pointee.q.head }
    func segment(_ i: UInt32) -> segq_seg {
        withUnsafeBytes(of: p.pointee.q.seg) { raw in
            raw.bindMemory(to: segq_seg.self)[Int((p.pointee.q.head &+ i) & (REMOLO_SEGQ_CAP - 1))]
        }
    }
}

let tickUs = UInt64(REMOLO_TICK_NS) / 1000

extension playout_out {
    var buttons: [(UInt16, Bool)] {
        withUnsafeBytes(of: btn) { raw in
            let b = raw.bindMemory(to: playout_btn.self)
            return (0..<Int(nbtn)).map { (b[$0].code, b[$0].down != 0) }
        }
    }
}
