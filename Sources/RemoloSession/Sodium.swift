// Thin, allocation-conscious helpers over libsodium for the session layer.
//
// This file depends only on Foundation/Glibc and CSodium so the fuzz
// harnesses in Tests/Fuzz/swift can compile it directly with swiftc.


internal import Glibc
internal import CSodium

/// libsodium must be initialised once before any other call (its random
/// generator and CPU feature detection). `sodium_init` is idempotent and
/// thread-safe; the lazy global makes Swift run it exactly once.
let sodiumReady: Bool = sodium_init() >= 0

@inline(__always)
func requireSodium() {
    precondition(sodiumReady, "libsodium failed to initialise (sodium_init < 0): is /dev/urandom readable?")
}

/// Fixed-size secret bytes with an owner that wipes them.
///
/// Swift arrays copy and move freely, leaving stale copies behind, so every
/// key, chaining key and pairing secret lives in one of these instead: a
/// single heap buffer, never copied implicitly, zeroed with `sodium_memzero`
/// (which the compiler cannot elide) when the owner goes away.
public final class SecretBytes: @unchecked Sendable {
    // @unchecked Sendable: the buffer is written only during initialisation
    // and by the owning type's methods, which are never shared mid-update
    // (handshake states are used by one thread at a time).
    public let count: Int
    package let pointer: UnsafeMutableRawPointer

    package init(count: Int) {
        self.count = count
        pointer = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 16)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: max(count, 1))
    }

    package convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count)
        var i = 0
        for b in bytes { pointer.storeBytes(of: b, toByteOffset: i, as: UInt8.self); i += 1 }
    }

    /// Fresh random bytes from libsodium's CSPRNG (getrandom(2) on Linux).
    static func random(count: Int) -> SecretBytes {
        requireSodium()
        let s = SecretBytes(count: count)
        randombytes_buf(s.pointer, count)
        return s
    }

    deinit {
        sodium_memzero(pointer, max(count, 1))
        pointer.deallocate()
    }

    var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: pointer, count: count) }
    var mutableBuffer: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: pointer, count: count) }

    /// Runs `body` over the secret bytes without copying them.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(buffer)
    }

    /// A copy as an array, for tests only: an array is never wiped. Other
    /// code passes secrets pointer to pointer (`DatagramKey(secret:)`).
    var bytesCopy: [UInt8] { Array(buffer) }

    /// Constant-time equality (sodium_memcmp), so comparing keys leaks no timing.
    func constantTimeEquals(_ other: SecretBytes) -> Bool {
        count == other.count && sodium_memcmp(pointer, other.pointer, count) == 0
    }
}

/// Wipes an array's storage in place (for temporaries that had to be arrays).
@inline(__always)
func wipe(_ bytes: inout [UInt8]) {
    let n = bytes.count
    if n == 0 { return }
    bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress!, n) }
}

/// Cryptographically random bytes (public values: session ids, tokens).
func randomBytes(_ count: Int) -> [UInt8] {
    requireSodium()
    var out = [UInt8](repeating: 0, count: count)
    out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
    return out
}

/// Constant-time comparison of two public-but-sensitive byte strings.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in sodium_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 } }
}

// MARK: - Primitives as Noise uses them (Noise spec rev 34, sections 4 and 12)

enum X25519 {
    static let keyLength = 32

    /// Public key for a secret scalar: crypto_scalarmult_base (clamps internally).
    static func publicKey(secret: SecretBytes) -> [UInt8] {
        requireSodium()
        var pub = [UInt8](repeating: 0, count: 32)
        _ = pub.withUnsafeMutableBytes { p in
            crypto_scalarmult_base(p.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                   secret.pointer.assumingMemoryBound(to: UInt8.self))
        }
        return pub
    }

    /// DH(key_pair, public_key) into `out` (32 bytes). libsodium returns -1
    /// when the result is all zeros (a low-order peer point); Noise permits
    /// rejecting that (rev 34, section 12.1) and WireGuard does, so we do too.
    static func dh(secret: SecretBytes, publicKey: [UInt8], into out: SecretBytes) -> Bool {
        guard publicKey.count == 32, out.count == 32 else { return false }
        return publicKey.withUnsafeBytes { pk in
            crypto_scalarmult(out.pointer.assumingMemoryBound(to: UInt8.self),
                              secret.pointer.assumingMemoryBound(to: UInt8.self),
                              pk.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
        }
    }
}

/// BLAKE2b with a 64-byte digest: Noise's HASH for "BLAKE2b" (HASHLEN 64,
/// BLOCKLEN 128).
struct Blake2b: ~Copyable {
    static let hashLength = 64
    static let blockLength = 128
    private let state: UnsafeMutableRawPointer

    /// `outLength` 64 for Noise; other lengths are for fingerprints and PSKs.
    init(outLength: Int = 64) {
        requireSodium()
        // The C struct is declared 64-byte aligned; allocate it ourselves
        // rather than trust Swift's stack layout for an imported aligned type.
        state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        crypto_generichash_init(OpaquePointer(state), nil, 0, outLength)
    }

    deinit {
        sodium_memzero(state, crypto_generichash_statebytes())
        state.deallocate()
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if bytes.isEmpty { return }
        crypto_generichash_update(OpaquePointer(state), bytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                  UInt64(bytes.count))
    }

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    mutating func finish(into out: UnsafeMutableRawBufferPointer) {
        crypto_generichash_final(OpaquePointer(state), out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count)
    }

    static func hash(_ parts: [UInt8]..., outLength: Int = 64) -> [UInt8] {
        var h = Blake2b(outLength: outLength)
        for p in parts { h.update(p) }
        var out = [UInt8](repeating: 0, count: outLength)
        out.withUnsafeMutableBytes { h.finish(into: $0) }
        return out
    }
}

/// HMAC-HASH(key, data) as in RFC 2104, with BLAKE2b as the hash (Noise rev 34
/// section 4.3). Noise always keys it with a 64-byte chaining key, which fits
/// in one 128-byte block, so the key never needs hashing first.
func hmacBlake2b(key: UnsafeRawBufferPointer, data: [UnsafeRawBufferPointer], into out: UnsafeMutableRawBufferPointer) {
    precondition(key.count <= Blake2b.blockLength && out.count == Blake2b.hashLength)
    var pad = [UInt8](repeating: 0, count: Blake2b.blockLength)
    defer { wipe(&pad) }
    for i in 0..<key.count { pad[i] = key[i] }
    for i in 0..<pad.count { pad[i] ^= 0x36 }
    var inner = Blake2b()
    inner.update(pad)
    for d in data { inner.update(d) }
    var innerDigest = [UInt8](repeating: 0, count: Blake2b.hashLength)
    defer { wipe(&innerDigest) }
    innerDigest.withUnsafeMutableBytes { inner.finish(into: $0) }
    for i in 0..<pad.count { pad[i] ^= 0x36 ^ 0x5c }
    var outer = Blake2b()
    outer.update(pad)
    outer.update(innerDigest)
    outer.finish(into: out)
}

/// Noise HKDF(chaining_key, input_key_material, num_outputs), rev 34 section
/// 4.3: temp_key = HMAC(ck, ikm); output1 = HMAC(temp_key, 0x01);
/// output_i = HMAC(temp_key, output_{i-1} || i). Each output is HASHLEN (64)
/// bytes; callers truncate cipher keys to 32.
func noiseHKDF(chainingKey: SecretBytes, inputKeyMaterial: UnsafeRawBufferPointer, outputs: [SecretBytes]) {
    precondition((2...3).contains(outputs.count) && outputs.allSatisfy { $0.count == Blake2b.hashLength })
    let tempKey = SecretBytes(count: Blake2b.hashLength)
    hmacBlake2b(key: chainingKey.buffer, data: [inputKeyMaterial], into: tempKey.mutableBuffer)
    var previous: UnsafeRawBufferPointer? = nil
    for (i, out) in outputs.enumerated() {
        var counter = UInt8(i + 1)
        withUnsafeBytes(of: &counter) { c in
            var parts: [UnsafeRawBufferPointer] = []
            if let p = previous { parts.append(p) }
            parts.append(c)
            hmacBlake2b(key: tempKey.buffer, data: parts, into: out.mutableBuffer)
        }
        previous = out.buffer
    }
}

/// ChaCha20-Poly1305 (IETF, RFC 8439) with Noise's nonce encoding: 32 bits of
/// zeros followed by the little-endian 64-bit counter (rev 34 section 12.3).
enum ChaChaPoly {
    static let keyLength = 32
    static let tagLength = 16

    static func nonce(_ n: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { out[4 + i] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i))) }
        return out
    }

    static func seal(key: SecretBytes, nonce n: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        requireSodium()
        precondition(key.count >= 32)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var outLen: UInt64 = 0
        let npub = nonce(n)
        out.withUnsafeMutableBytes { o in
            plaintext.withUnsafeBytes { p in
                ad.withUnsafeBytes { a in
                    npub.withUnsafeBytes { np in
                        _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                            o.baseAddress!.assumingMemoryBound(to: UInt8.self), &outLen,
                            p.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                            a.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count), nil,
                            np.baseAddress!.assumingMemoryBound(to: UInt8.self),
                            key.pointer.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        return out
    }

    /// nil when the tag does not verify (wrong key, nonce, data or ad).
    static func open(key: SecretBytes, nonce n: UInt64, ad: [UInt8], ciphertext: ArraySlice<UInt8>) -> [UInt8]? {
        requireSodium()
        precondition(key.count >= 32)
        guard ciphertext.count >= tagLength else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - tagLength)
        var outLen: UInt64 = 0
        let npub = nonce(n)
        let rc = out.withUnsafeMutableBytes { o in
            ciphertext.withUnsafeBytes { c in
                ad.withUnsafeBytes { a in
                    npub.withUnsafeBytes { np in
                        crypto_aead_chacha20poly1305_ietf_decrypt(
                            o.baseAddress?.assumingMemoryBound(to: UInt8.self), &outLen, nil,
                            c.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                            a.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                            np.baseAddress!.assumingMemoryBound(to: UInt8.self),
                            key.pointer.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        return rc == 0 ? out : nil
    }
}

// MARK: - Encoding helpers shared by the wire formats

extension Array where Element == UInt8 {
    mutating func appendBE<T: FixedWidthInteger>(_ v: T) {
        let size = MemoryLayout<T>.size
        for i in (0..<size).reversed() { append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }
}

/// A bounds-checked big-endian reader: every read is checked, so hostile
/// input can only make it return nil, never trap.
struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    private(set) var offset: Int

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes; offset = bytes.startIndex }
    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    var remaining: Int { bytes.endIndex - offset }
    var isAtEnd: Bool { remaining == 0 }

    mutating func read<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { return nil }
        var v: T = 0
        for i in 0..<size { v = (v << 8) | T(bytes[offset + i]) }
        offset += size
        return v
    }

    mutating func read(count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, remaining >= count else { return nil }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func readRest() -> ArraySlice<UInt8> {
        defer { offset = bytes.endIndex }
        return bytes[offset...]
    }
}

enum Hex {
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ s: some StringProtocol) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let hi = nibble(u[i]), let lo = nibble(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
