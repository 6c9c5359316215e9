// The Noise Protocol Framework, revision 34 (https://noiseprotocol.org/noise.html),
// for exactly two patterns and one cipher suite:
//
//   Noise_IK_25519_ChaChaPoly_BLAKE2b      every session of a paired sender
//   Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b  pairing, with the pairing secret as PSK
//
// Built only from libsodium: X25519 (crypto_scalarmult), BLAKE2b
// (crypto_generichash, HMAC and HKDF as section 4.3 defines them) and
// ChaCha20-Poly1305 IETF. The state machine follows section 5 step by step;
// the names (MixHash, MixKey, MixKeyAndHash, EncryptAndHash, Split) are the
// spec's, so the code can be read side by side with it.
//
// This file depends only on Foundation/Glibc and CSodium (fuzz harnesses
// compile it directly).

internal import CSodium

/// Why a handshake message was refused. A value type, so callers can switch
/// on it; the descriptions say what to do about it.
public enum NoiseError: Error, Equatable, Sendable {
    /// The message is shorter or longer than the pattern allows.
    case malformedMessage
    /// A ciphertext (static key or payload) failed to authenticate: wrong
    /// keys, a wrong PSK, or tampering on the way.
    case decryptFailed
    /// X25519 gave all zeros: the peer sent a low-order point.
    case invalidPublicKey
    /// A message was written or read out of turn.
    case outOfOrder
}

/// CipherState (Noise rev 34, section 5.1): a key k (or none) and a 64-bit
/// nonce n, never reused (the handshake uses each key at most once or twice).
final class CipherState {
    private var key: SecretBytes?
    private(set) var nonce: UInt64 = 0

    var hasKey: Bool { key != nil }

    func initializeKey(_ k: SecretBytes) {
        key = k
        nonce = 0
    }

    func encryptWithAd(_ ad: [UInt8], _ plaintext: [UInt8]) -> [UInt8] {
        guard let key else { return plaintext }
        precondition(nonce < UInt64.max, "Noise nonce exhausted (2^64-1 is reserved)")
        defer { nonce += 1 }
        return ChaChaPoly.seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
    }

    func decryptWithAd(_ ad: [UInt8], _ ciphertext: ArraySlice<UInt8>) throws(NoiseError) -> [UInt8] {
        guard let key else { return Array(ciphertext) }
        guard nonce < UInt64.max else { throw .decryptFailed }
        // Section 5.1: the nonce advances only after a successful decryption.
        guard let plain = ChaChaPoly.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext) else {
            throw .decryptFailed
        }
        nonce += 1
        return plain
    }
}

/// SymmetricState (section 5.2): chaining key ck, handshake hash h and a
/// CipherState.
final class SymmetricState {
    let cipher = CipherState()
    let ck = SecretBytes(count: Blake2b.hashLength)
    private(set) var h: [UInt8]

    /// InitializeSymmetric(protocol_name): names of at most HASHLEN bytes are
    /// zero-padded, longer ones hashed; ck = h.
    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        if name.count <= Blake2b.hashLength {
            h = name + [UInt8](repeating: 0, count: Blake2b.hashLength - name.count)
        } else {
            h = Blake2b.hash(name)
        }
        for i in 0..<Blake2b.hashLength { ck.pointer.storeBytes(of: h[i], toByteOffset: i, as: UInt8.self) }
    }

    /// MixKey(ikm): ck, temp_k = HKDF(ck, ikm, 2); temp_k truncated to 32
    /// bytes because HASHLEN is 64 (section 5.2).
    func mixKey(_ ikm: UnsafeRawBufferPointer) {
        let newCK = SecretBytes(count: 64), tempK = SecretBytes(count: 64)
        noiseHKDF(chainingKey: ck, inputKeyMaterial: ikm, outputs: [newCK, tempK])
        ck.mutableBuffer.copyMemory(from: newCK.buffer)
        cipher.initializeKey(truncated(tempK))
    }

    /// MixHash(data): h = HASH(h || data).
    func mixHash(_ data: [UInt8]) {
        h = Blake2b.hash(h, data)
    }

    func mixHash(_ data: ArraySlice<UInt8>) { mixHash(Array(data)) }

    /// MixKeyAndHash(ikm), used for the "psk" token: ck, temp_h, temp_k =
    /// HKDF(ck, ikm, 3); MixHash(temp_h); InitializeKey(temp_k[0..<32]).
    func mixKeyAndHash(_ ikm: UnsafeRawBufferPointer) {
        let newCK = SecretBytes(count: 64), tempH = SecretBytes(count: 64), tempK = SecretBytes(count: 64)
        noiseHKDF(chainingKey: ck, inputKeyMaterial: ikm, outputs: [newCK, tempH, tempK])
        ck.mutableBuffer.copyMemory(from: newCK.buffer)
        mixHash(Array(tempH.buffer))
        cipher.initializeKey(truncated(tempK))
    }

    func encryptAndHash(_ plaintext: [UInt8]) -> [UInt8] {
        let c = cipher.encryptWithAd(h, plaintext)
        mixHash(c)
        return c
    }

    func decryptAndHash(_ ciphertext: ArraySlice<UInt8>) throws(NoiseError) -> [UInt8] {
        let p = try cipher.decryptWithAd(h, ciphertext)
        mixHash(ciphertext)
        return p
    }

    /// Split() (section 5.2): temp_k1, temp_k2 = HKDF(ck, zerolen, 2), each
    /// truncated to 32 bytes. k1 protects initiator->responder, k2 the reverse.
    func split() -> (initiatorToResponder: SecretBytes, responderToInitiator: SecretBytes) {
        let t1 = SecretBytes(count: 64), t2 = SecretBytes(count: 64)
        noiseHKDF(chainingKey: ck, inputKeyMaterial: UnsafeRawBufferPointer(start: nil, count: 0), outputs: [t1, t2])
        return (truncated(t1), truncated(t2))
    }

    /// An extra 32-byte key bound to the finished handshake: HKDF(ck, label,
    /// 2) first output, truncated. Different input key material than Split's
    /// zero-length one, so it is independent of the Split keys.
    func deriveExtraKey(label: String) -> SecretBytes {
        let t1 = SecretBytes(count: 64), t2 = SecretBytes(count: 64)
        let l = Array(label.utf8)
        l.withUnsafeBytes { noiseHKDF(chainingKey: ck, inputKeyMaterial: $0, outputs: [t1, t2]) }
        return truncated(t1)
    }

    private func truncated(_ s: SecretBytes) -> SecretBytes {
        let k = SecretBytes(count: 32)
        k.mutableBuffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: s.buffer[0..<32]))
        return k
    }
}

/// A static or ephemeral X25519 key pair whose secret is wiped on release.
final class KeyPair: @unchecked Sendable {
    // @unchecked Sendable: immutable after init.
    let secret: SecretBytes
    let publicKey: [UInt8]

    init(secret: SecretBytes) {
        precondition(secret.count == 32)
        self.secret = secret
        publicKey = X25519.publicKey(secret: secret)
    }

    static func generate() -> KeyPair { KeyPair(secret: .random(count: 32)) }
}

/// The two handshake patterns Remolo uses, as Noise token lists (section 7).
enum NoisePattern: Sendable {
    /// IK:  <- s  ...  -> e, es, s, ss   <- e, ee, se
    case ik
    /// XXpsk3:  -> e   <- e, ee, s, es   -> s, se, psk   (section 9)
    case xxpsk3

    enum Token { case e, s, ee, es, se, ss, psk }

    var protocolName: String {
        switch self {
        case .ik: return "Noise_IK_25519_ChaChaPoly_BLAKE2b"
        case .xxpsk3: return "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b"
        }
    }

    var messages: [[Token]] {
        switch self {
        case .ik: return [[.e, .es, .s, .ss], [.e, .ee, .se]]
        case .xxpsk3: return [[.e], [.e, .ee, .s, .es], [.s, .se, .psk]]
        }
    }

    var usesPSK: Bool { self == .xxpsk3 }
    /// IK's responder static key is a pre-message known to the initiator.
    var responderStaticIsPremessage: Bool { self == .ik }
}

/// HandshakeState (section 5.3) for one role of one pattern.
final class NoiseHandshake {
    let pattern: NoisePattern
    let isInitiator: Bool
    let symmetric: SymmetricState
    private let s: KeyPair
    private var e: KeyPair?
    private(set) var remoteStatic: [UInt8]?
    private(set) var remoteEphemeral: [UInt8]?
    private let psk: SecretBytes?
    private var messageIndex = 0

    /// Called when the remote static key has just been decrypted, before any
    /// DH with it and before the payload is read: lets the receiver refuse an
    /// unpaired key before accepting anything else.
    var remoteStaticCheck: (([UInt8]) -> Bool)?

    var isFinished: Bool { messageIndex >= pattern.messages.count }
    var handshakeHash: [UInt8] { symmetric.h }

    /// - Parameters:
    ///   - remoteStatic: the responder's static key for IK initiators.
    ///   - ephemeral: a fixed ephemeral key, for test vectors only.
    init(pattern: NoisePattern, initiator: Bool, prologue: [UInt8], staticKey: KeyPair,
         remoteStatic: [UInt8]? = nil, psk: SecretBytes? = nil, ephemeral: KeyPair? = nil) {
        precondition(!pattern.usesPSK || psk?.count == 32, "a PSK pattern needs a 32-byte PSK")
        precondition(!(pattern.responderStaticIsPremessage && initiator) || remoteStatic?.count == 32,
                     "an IK initiator needs the responder's static key")
        self.pattern = pattern
        isInitiator = initiator
        symmetric = SymmetricState(protocolName: pattern.protocolName)
        s = staticKey
        e = ephemeral
        self.psk = psk
        self.remoteStatic = initiator ? remoteStatic : nil
        symmetric.mixHash(prologue)
        // Pre-message "<- s" for IK: both sides hash the responder's static key.
        if pattern.responderStaticIsPremessage {
            symmetric.mixHash(initiator ? remoteStatic! : staticKey.publicKey)
        }
    }

    private var isMyTurn: Bool { (messageIndex % 2 == 0) == isInitiator }

    /// WriteMessage(payload): processes this side's next token list.
    func writeMessage(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !isFinished, isMyTurn else { throw .outOfOrder }
        var out: [UInt8] = []
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                let eph = e ?? KeyPair.generate()
                e = eph
                out += eph.publicKey
                symmetric.mixHash(eph.publicKey)
                // Section 9.2: with a PSK, "e" also calls MixKey(e.public_key).
                if pattern.usesPSK { eph.publicKey.withUnsafeBytes { symmetric.mixKey($0) } }
            case .s:
                out += symmetric.encryptAndHash(s.publicKey)
            case .psk:
                psk!.withUnsafeBytes { symmetric.mixKeyAndHash($0) }
            default:
                try mixDH(token)
            }
        }
        out += symmetric.encryptAndHash(payload)
        messageIndex += 1
        return out
    }

    /// ReadMessage(message): returns the decrypted payload.
    func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !isFinished, !isMyTurn else { throw .outOfOrder }
        var reader = ByteReader(message)
        for token in pattern.messages[messageIndex] {
            switch token {
            case .e:
                guard let re = reader.read(count: 32) else { throw .malformedMessage }
                remoteEphemeral = Array(re)
                symmetric.mixHash(re)
                if pattern.usesPSK { Array(re).withUnsafeBytes { symmetric.mixKey($0) } }
            case .s:
                let len = symmetric.cipher.hasKey ? 32 + ChaChaPoly.tagLength : 32
                guard let c = reader.read(count: len) else { throw .malformedMessage }
                let rs = try symmetric.decryptAndHash(c)
                if let check = remoteStaticCheck, !check(rs) { throw .decryptFailed }
                remoteStatic = rs
            case .psk:
                psk!.withUnsafeBytes { symmetric.mixKeyAndHash($0) }
            default:
                try mixDH(token)
            }
        }
        // The payload is everything left; it must at least hold the tag once a key is set.
        let rest = reader.readRest()
        if symmetric.cipher.hasKey && rest.count < ChaChaPoly.tagLength { throw .malformedMessage }
        let payload = try symmetric.decryptAndHash(rest)
        messageIndex += 1
        return payload
    }

    /// ee / es / se / ss (section 5.3): which local and remote keys each uses
    /// depends on the role.
    private func mixDH(_ token: NoisePattern.Token) throws(NoiseError) {
        let local: KeyPair?
        let remote: [UInt8]?
        switch (token, isInitiator) {
        case (.ee, _): local = e; remote = remoteEphemeral
        case (.es, true): local = e; remote = remoteStatic
        case (.es, false): local = s; remote = remoteEphemeral
        case (.se, true): local = s; remote = remoteEphemeral
        case (.se, false): local = e; remote = remoteStatic
        case (.ss, _): local = s; remote = remoteStatic
        default: throw .outOfOrder
        }
        guard let local, let remote else { throw .outOfOrder }
        let shared = SecretBytes(count: 32)
        guard X25519.dh(secret: local.secret, publicKey: remote, into: shared) else { throw .invalidPublicKey }
        symmetric.mixKey(shared.buffer)
    }

    /// Split() once the last message is processed; also drops the ephemeral.
    func split() -> (initiatorToResponder: SecretBytes, responderToInitiator: SecretBytes) {
        precondition(isFinished, "Split() before the handshake finished")
        e = nil
        return symmetric.split()
    }
}
