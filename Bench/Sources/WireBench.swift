import RemoloPlayout
import RemoloSession
import RemoloCore
import RemoloPlayoutCore
import CSodium

// The wire benchmarks (issue 4, item 9): the receiver's open path against
// the bare libsodium call it is built on, on the same bytes in the same
// run, and the sender's seal.
func wireBenches() -> [BenchCase] {
    [BenchCase(name: "wire.open") { s in wireOpenBench(s) },
     BenchCase(name: "wire.seal") { s in [wireSealBench(s)] }]
}

private let benchKey: [UInt8] = (0..<32).map { UInt8(0x40 + $0) }
private let benchID: [UInt8] = Array("benchid!".utf8)

/// n datagrams of one session in the redundant layout (65 bytes, running
/// totals), every 4th counter skipped so that one in three opens recovers
/// the motion of a lost one (untimed).
private func sealRedundantBatch(_ n: Int) -> [UInt8] {
    let len = Int(WIRE_TOTALS_DATAGRAM_LEN)
    var out = [UInt8](repeating: 0, count: n * len)
    var pkt = playout_pkt()
    pkt.kind = UInt8(PLAYOUT_KIND_MOTION.rawValue)
    var totals: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
    var counter: UInt64 = 0
    out.withUnsafeMutableBufferPointer { buf in
        var i = 0
        while i < n {
            pkt.a = Int32(counter % 512) * 256
            pkt.b = -256
            pkt.tx_us = 8_333 * counter
            withUnsafeMutableBytes(of: &totals) { wire_totals_add($0.baseAddress!.assumingMemoryBound(to: UInt32.self), &pkt) }
            if counter % 4 != 3 {
                let r = withUnsafeBytes(of: totals) {
                    wire_seal_totals(benchKey, benchID, counter, &pkt, $0.baseAddress!.assumingMemoryBound(to: UInt32.self),
                                     buf.baseAddress! + i * len, len)
                }
                precondition(r == Int32(len))
                i += 1
            }
            counter += 1
        }
    }
    return out
}

/// n datagrams of one session with counters base, base + 1, ... (untimed).
private func sealBatch(_ n: Int, base: UInt64) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: n * Int(WIRE_DATAGRAM_LEN))
    var pkt = playout_pkt()
    pkt.kind = UInt8(PLAYOUT_KIND_MOTION.rawValue)
    out.withUnsafeMutableBufferPointer { buf in
        for i in 0..<n {
            pkt.a = Int32(i % 512) * 256
            pkt.b = -256
            pkt.tx_us = 8_333 * UInt64(i)
            let r = wire_seal(benchKey, benchID, base + UInt64(i), &pkt,
                              buf.baseAddress! + i * Int(WIRE_DATAGRAM_LEN), Int(WIRE_DATAGRAM_LEN))
            precondition(r == Int32(WIRE_DATAGRAM_LEN))
        }
    }
    return out
}

private func wireOpenBench(_ settings: BenchSettings) -> [BenchResult] {
    precondition(wire_crypto_init() == 0)
    let n = settings.iterations(200_000)
    let len = Int(WIRE_DATAGRAM_LEN)
    // A table with several live sessions, so the lookup is not trivially
    // the first probe of an otherwise empty index.
    let w = UnsafeMutablePointer<wire>.allocate(capacity: 1)
    defer { wire_deinit(w); w.deallocate() }
    precondition(wire_init(w) == 0)
    func reset() {
        wire_deinit(w)
        precondition(wire_init(w) == 0)
        for i in 0..<8 where i != 3 {
            var id = benchID
            id[0] = UInt8(i)
            precondition(wire_add_session(w, id, benchKey) >= 0)
        }
        precondition(wire_add_session(w, benchID, benchKey) >= 0)
    }
    // Each datagram opens once per table, so every repetition starts from
    // a fresh table (untimed) and walks the same pre-sealed batch, whose
    // counters increase: each open does the full lookup, replay check,
    // tag check, decrypt and parse.
    let batch = sealBatch(n, base: 0)
    reset()
    var failures = 0
    let open = medianNsPerIteration(settings, iterations: n, setup: reset) { iters in
        var rx = wire_rx()
        batch.withUnsafeBufferPointer { b in
            for i in 0..<iters where wire_open(w, b.baseAddress! + i * len, len, &rx) < 0 {
                failures += 1
            }
        }
        blackHole(rx)
    }
    precondition(failures == 0, "wire.open: \(failures) datagrams refused")

    // The bare AEAD on the same bytes: the same batch, the nonce taken from
    // each datagram's counter, combined ciphertext || tag, header as aad;
    // no lookup, no replay check, no parse.
    var nonce = [UInt8](repeating: 0, count: 12)
    var pt = [UInt8](repeating: 0, count: 17)
    var bad = 0
    let bare = medianNsPerIteration(settings, iterations: n) { iters in
        batch.withUnsafeBufferPointer { b in
            nonce.withUnsafeMutableBufferPointer { nb in
                for i in 0..<iters {
                    let d = b.baseAddress! + i * len
                    var mlen: UInt64 = 0
                    (nb.baseAddress! + 4).update(from: d + 8, count: 8)
                    if crypto_aead_chacha20poly1305_ietf_decrypt(&pt, &mlen, nil, d + 16, 33, d, 16,
                                                                 nb.baseAddress!, benchKey) != 0 {
                        bad += 1
                    }
                }
            }
        }
        blackHole(pt)
    }
    precondition(bad == 0, "libsodium refused \(bad) datagrams")

    // The redundant layout on a session that granted it: 16 more bytes
    // to authenticate and decrypt, and the totals' bookkeeping.
    let rlen = Int(WIRE_TOTALS_DATAGRAM_LEN)
    let rbatch = sealRedundantBatch(n)
    func resetGranted() {
        reset()
        precondition(wire_set_totals(w, benchID, 1) == 0)
    }
    resetGranted()
    let openRedundant = medianNsPerIteration(settings, iterations: n, setup: resetGranted) { iters in
        var rx = wire_rx()
        rbatch.withUnsafeBufferPointer { b in
            for i in 0..<iters where wire_open(w, b.baseAddress! + i * rlen, rlen, &rx) < 0 {
                failures += 1
            }
        }
        blackHole(rx)
    }
    precondition(failures == 0, "wire.open: \(failures) redundant datagrams refused")
    return [BenchResult(name: "wire.open_ns", value: open, unit: "ns"),
            BenchResult(name: "wire.open_ns.redundant", value: openRedundant, unit: "ns"),
            BenchResult(name: "wire.libsodium_open_ns", value: bare, unit: "ns"),
            BenchResult(name: "wire.open_over_libsodium", value: open / bare, unit: "x")]
}

private func wireSealBench(_ settings: BenchSettings) -> BenchResult {
    precondition(wire_crypto_init() == 0)
    var out = [UInt8](repeating: 0, count: Int(WIRE_DATAGRAM_LEN))
    var pkt = playout_pkt()
    pkt.kind = UInt8(PLAYOUT_KIND_MOTION.rawValue)
    var counter: UInt64 = 0
    let ns = medianNsPerIteration(settings, iterations: 200_000) { iters in
        out.withUnsafeMutableBufferPointer { o in
            for _ in 0..<iters {
                pkt.a &+= 256
                pkt.tx_us &+= 8_333
                counter += 1
                _ = wire_seal(benchKey, benchID, counter, &pkt, o.baseAddress!, o.count)
            }
        }
        blackHole(out)
    }
    return BenchResult(name: "wire.seal_ns", value: ns, unit: "ns")
}
