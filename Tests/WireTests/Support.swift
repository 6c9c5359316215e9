import RemoloPlayout
import RemoloSession
import RemoloSystem
import RemoloPlayoutCore

// Fixed test material: key byte i = i (A) or 0x80 + i (B), as the fuzz
// corpus uses, so failures are reproducible by hand.
let keyBytesA: [UInt8] = (0..<32).map { UInt8($0) }
let keyBytesB: [UInt8] = (0..<32).map { UInt8(0x80 + $0) }
let idBytesA: [UInt8] = Array("remolo-A".utf8)
let idBytesB: [UInt8] = Array("remolo-B".utf8)
let keyA = try! DatagramKey(bytes: keyBytesA)
let keyB = try! DatagramKey(bytes: keyBytesB)
let idA = try! SessionID(bytes: idBytesA)
let idB = try! SessionID(bytes: idBytesB)

func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
}

func unhex(_ s: String) -> [UInt8] {
    let c = Array(s.filter { !$0.isWhitespace && $0 != ":" })
    precondition(c.count % 2 == 0, "odd hex")
    return stride(from: 0, to: c.count, by: 2).map { UInt8(String(c[$0...$0 + 1]), radix: 16)! }
}

func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
func le32(_ v: Int32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: UInt32(bitPattern: v) >> (8 * $0)) } }

/// A datagram with any plaintext (even invalid kinds or fields), sealed
/// through the exported AEAD wrapper exactly as the header's layout says.
func rawDatagram(key: [UInt8], id: [UInt8], counter: UInt64, kind: UInt8, a: Int32, b: Int32,
                 tx: UInt64 = 1_000) -> [UInt8] {
    let header = id + le64(counter)
    let plaintext = [kind] + le32(a) + le32(b) + le64(tx)
    var sealed = [UInt8](repeating: 0, count: plaintext.count + 16)
    let n = wire_aead_seal(&sealed, plaintext, plaintext.count, header, header.count,
                           WIRE_NONCE_FIXED, counter, key)
    precondition(n == 33)
    return header + sealed
}

/// Open result reduced to something comparable in tables.
enum Outcome: Equatable, CustomStringConvertible {
    case ok(DatagramPayload)
    case drop(DatagramDropReason)

    init(_ r: Result<OpenedDatagram, DatagramDropReason>) {
        switch r {
        case let .success(o): self = .ok(o.datagram.payload)
        case let .failure(why): self = .drop(why)
        }
    }

    var description: String {
        switch self {
        case let .ok(p): "ok(\(p))"
        case let .drop(r): "drop(\(r))"
        }
    }
}
