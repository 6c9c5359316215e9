// Pairing: once per sender/receiver pair, the receiver shows a single-use
// secret, the sender's user types it, and the XXpsk3 handshake proves both
// sides know it (it is the Noise PSK). Then each side stores the other's key.

import Foundation
import Synchronization
internal import CSodium

/// Seconds on some clock; injectable so tests can expire secrets and end
/// lockouts without sleeping.
public typealias SessionClock = @Sendable () -> Double

public enum SessionClocks {
    /// Wall-clock Unix time (for handshake timestamps, which must survive restarts).
    public static let wall: SessionClock = { Date().timeIntervalSince1970 }
    /// CLOCK_MONOTONIC seconds (for expiries and lockouts).
    public static let monotonic: SessionClock = {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// A pairing secret: 120 random bits, shown as 24 Crockford base32 characters
/// in six groups of four (`7KQ2-M9XD-...`). 120 bits makes online guessing
/// hopeless (one try per secret) and also offline guessing by someone who
/// impersonates the receiver during pairing and sees the sender's PSK-keyed
/// message 3 (README, Protocol, "Threat model").
public struct PairingSecret: Sendable, Equatable, CustomStringConvertible {
    public static let byteCount = 15
    static let pskLabel = Array("remolo pairing psk v1".utf8)

    let raw: [UInt8]

    init(raw: [UInt8]) {
        precondition(raw.count == Self.byteCount)
        self.raw = raw
    }

    static func random() -> PairingSecret { PairingSecret(raw: randomBytes(byteCount)) }

    /// Parses what a person typed: any case, hyphens and spaces optional,
    /// O read as 0 and I/L as 1.
    public init?(typed: String) {
        guard let raw = Crockford32.decode(typed, byteCount: Self.byteCount) else { return nil }
        self.raw = raw
    }

    /// The form to show: six groups of four.
    public var display: String { Crockford32.grouped(Crockford32.encode(raw), groupSize: 4) }
    public var description: String { display }

    /// The 32-byte Noise PSK: BLAKE2b-256("remolo pairing psk v1" || secret).
    func psk() -> SecretBytes {
        let out = SecretBytes(count: 32)
        var h = Blake2b(outLength: 32)
        h.update(Self.pskLabel)
        h.update(raw)
        h.finish(into: out.mutableBuffer)
        return out
    }
}

/// The receiver's pairing state: at most one live secret, single use,
/// expiring, burned by a wrong attempt, with a growing lockout after
/// failures so that even fresh secrets cannot be hammered.
public final class PairingAuthority: Sendable {
    public static let defaultLifetime: Double = 300
    /// Lockout after the n-th consecutive failure: min(maxLockout, base * 2^(n-1)).
    public static let baseLockout: Double = 2
    public static let maxLockout: Double = 60

    struct State {
        var secret: PairingSecret?
        var expires: Double = 0
        var reserved = false
        var failures = 0
        var lockedUntil: Double = 0
    }

    let clock: SessionClock
    let lifetime: Double
    let state = Mutex(State())

    public init(clock: @escaping SessionClock = SessionClocks.monotonic, lifetime: Double = defaultLifetime) {
        self.clock = clock
        self.lifetime = lifetime
    }

    /// Creates a new secret (replacing any previous one) to show to the user.
    public func issue() -> PairingSecret {
        let s = PairingSecret.random()
        let now = clock()
        state.withLock {
            $0.secret = s
            $0.expires = now + lifetime
            $0.reserved = false
        }
        return s
    }

    /// Withdraws the current secret, if any.
    public func cancel() { state.withLock { $0.secret = nil; $0.reserved = false } }

    /// Whether a secret is live (issued, unexpired, unused) right now.
    public var hasLiveSecret: Bool {
        let now = clock()
        return state.withLock { $0.secret != nil && now < $0.expires }
    }

    /// Seconds until pairing attempts are accepted again (0 if not locked out).
    public var lockoutRemaining: Double {
        let now = clock()
        return state.withLock { max(0, $0.lockedUntil - now) }
    }

    /// Takes the secret for one handshake. Only one pairing handshake runs at
    /// a time, so a secret can never be tried twice in parallel.
    func reserve() -> Result<SecretBytes, RefusalReason> {
        let now = clock()
        return state.withLock { st in
            guard now >= st.lockedUntil else { return .failure(.pairingUnavailable) }
            guard let s = st.secret, !st.reserved else { return .failure(.pairingUnavailable) }
            guard now < st.expires else { st.secret = nil; return .failure(.pairingUnavailable) }
            st.reserved = true
            return .success(s.psk())
        }
    }

    /// The handshake proved the secret: it is used up.
    func succeeded() {
        state.withLock { $0.secret = nil; $0.reserved = false; $0.failures = 0; $0.lockedUntil = 0 }
    }

    /// A wrong secret was tried: burn it and lock out further attempts.
    func failed() {
        let now = clock()
        state.withLock { st in
            st.secret = nil
            st.reserved = false
            st.failures += 1
            let lock = min(Self.maxLockout, Self.baseLockout * Double(1 << min(st.failures - 1, 16)))
            st.lockedUntil = now + lock
        }
    }

    /// The handshake stopped before the secret was tested (the peer went away
    /// before message 3): nothing about the secret was revealed, keep it.
    func released() { state.withLock { $0.reserved = false } }
}

/// Everything the receiver consults during handshakes, shared by all
/// connections: the authorized senders (persisted if a directory is given),
/// the newest handshake timestamp per sender, and the pairing authority.
public final class ReceiverTrust: Sendable {
    public let identity: Identity
    public let pairing: PairingAuthority
    let directory: ConfigDirectory?

    struct State {
        var authorized: PeerList
        var latestTimestamp: [PublicKey: TAI64N] = [:]
    }
    let state: Mutex<State>

    /// - Parameter directory: where `authorized-senders` is read and written;
    ///   nil keeps the list in memory only (tests).
    public init(identity: Identity, directory: ConfigDirectory?, pairing: PairingAuthority = PairingAuthority(),
                authorized: PeerList? = nil) throws(ConfigError) {
        self.identity = identity
        self.pairing = pairing
        self.directory = directory
        var list = authorized ?? PeerList()
        if authorized == nil, let d = directory {
            try d.ensureExists()
            list = try PeerList.load(from: d.file(PeerList.authorizedSendersFile))
        }
        state = Mutex(State(authorized: list))
    }

    public var authorizedSenders: PeerList { state.withLock { $0.authorized } }

    public func isAuthorized(_ key: PublicKey) -> Bool { state.withLock { $0.authorized.contains(key) } }

    /// Removes a sender (it must pair again).
    public func revoke(_ key: PublicKey) throws(ConfigError) {
        let list = state.withLock { st -> PeerList in st.authorized.remove(key); return st.authorized }
        if let d = directory { try list.save(to: d.file(PeerList.authorizedSendersFile)) }
    }

    func authorize(_ key: PublicKey, label: String) throws(ConfigError) {
        let list = state.withLock { st -> PeerList in st.authorized.add(key, label: label); return st.authorized }
        if let d = directory { try list.save(to: d.file(PeerList.authorizedSendersFile)) }
    }

    /// Accepts `ts` for `key` only if strictly newer than the last accepted
    /// one (WireGuard's rule against replayed first messages).
    func acceptTimestamp(_ ts: TAI64N, for key: PublicKey) -> Bool {
        state.withLock { st in
            if let last = st.latestTimestamp[key], ts <= last { return false }
            st.latestTimestamp[key] = ts
            return true
        }
    }
}
