// Pairing: once per sender/receiver pair, the receiver shows a single-use
// secret, the sender's user types it, and the XXpsk3 handshake proves both
// sides know it (it is the Noise PSK). Then each side stores the other's key.

import Foundation
import RemoloSystem
import Synchronization
internal import CSodium

/// Seconds on some clock; injectable so tests can expire secrets and end
/// lockouts without sleeping.
public typealias SessionClock = @Sendable () -> Double

public enum SessionClocks {
    /// Wall-clock Unix time (for handshake timestamps, which must survive restarts).
    public static let wall: SessionClock = { Date().timeIntervalSince1970 }
    /// CLOCK_MONOTONIC seconds (for expiries and lockouts).
    public static let monotonic: SessionClock = { MonotonicClock.seconds() }
}

/// A pairing secret: 120 random bits, shown as 24 Crockford base32 characters
/// in six groups of four (`7KQ2-M9XD-...`). 120 bits makes online guessing
/// hopeless (one try per secret) and also offline guessing by someone who
/// impersonates the receiver during pairing and sees the sender's PSK-keyed
/// message 3 (docs/security.md).
public struct PairingSecret: Sendable, Equatable, CustomStringConvertible {
    public static let byteCount = 15
    static let pskLabel = Array("remolo pairing psk v1".utf8)

    /// The code's 15 bytes, wiped when the last copy of this value goes
    /// (a burned, used or expired code leaves nothing behind).
    let bytes: SecretBytes

    init(bytes: SecretBytes) {
        precondition(bytes.count == Self.byteCount)
        self.bytes = bytes
    }

    /// A code with known bytes (tests and fuzz harnesses).
    init(raw: [UInt8]) { self.init(bytes: SecretBytes(copying: raw)) }

    static func random() -> PairingSecret { PairingSecret(bytes: .random(count: byteCount)) }

    /// Parses what a person typed: any case, hyphens and spaces optional,
    /// O read as 0 and I/L as 1.
    public init?(typed: String) {
        let b = SecretBytes(count: Self.byteCount)
        guard Crockford32.decode(typed, into: b.mutableBuffer) else { return nil }
        bytes = b
    }

    /// The form to show: six groups of four.
    public var display: String { Crockford32.grouped(Crockford32.encode(bytes.buffer), groupSize: 4) }
    public var description: String { display }

    /// Constant time, like every comparison of secret bytes.
    public static func == (a: PairingSecret, b: PairingSecret) -> Bool { a.bytes.constantTimeEquals(b.bytes) }

    /// The 32-byte Noise PSK: BLAKE2b-256("remolo pairing psk v1" || secret).
    func psk() -> SecretBytes {
        let out = SecretBytes(count: 32)
        var h = Blake2b(outLength: 32)
        h.update(Self.pskLabel)
        h.update(bytes.buffer)
        h.finish(into: out.mutableBuffer)
        return out
    }
}

/// Why no pairing code can be issued now.
public enum PairingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A wrong code was tried recently; pairing is locked out for `remaining` seconds.
    case lockedOut(remaining: Double)
    /// The lockout could not be recorded or read.
    case config(ConfigError)

    public var description: String {
        switch self {
        case .lockedOut(let r):
            let s = max(1, Int(r.rounded(.up)))
            return "pairing is locked out for another \(s) s after a wrong code; issue a new code after that"
        case .config(let c): return c.description
        }
    }
}

/// What became of the last code issued (for a command waiting on it).
public enum PairingCodeState: Equatable, Sendable {
    /// No code was issued, or it was withdrawn.
    case none
    /// Live for `remaining` more seconds (perhaps held by a handshake).
    case live(remaining: Double)
    /// A sender proved it: pairing succeeded.
    case used
    /// A wrong code was tried: the code is gone and pairing is locked out.
    case burned
    /// Its 5 minutes ran out.
    case expired
}

/// The receiver's pairing state: at most one live secret, single use,
/// expiring, burned by a wrong attempt, with a growing lockout after
/// failures so that even fresh secrets cannot be hammered.
///
/// Every issued secret gets a new generation, and a reservation names the
/// generation it took. A handshake that reserved a secret since replaced or
/// withdrawn can neither complete a pairing, nor burn, release or use up
/// the current one: it can only fail.
///
/// With a lockout file (`ReceiverTrust` with a config directory), failures
/// and the lockout live on disk too: every process issuing codes from the
/// same directory honours a lockout another one started, and failures keep
/// doubling it across processes.
public final class PairingAuthority: Sendable {
    /// A code's lifetime (docs/protocol.md, "Pairing code"); no option makes it longer.
    public static let defaultLifetime: Double = 300
    /// Lockout after the n-th consecutive failure: min(maxLockout, base * 2^(n-1)).
    public static let baseLockout: Double = 2
    public static let maxLockout: Double = 60

    /// What `reserve()` hands one handshake: the PSK, which secret it is,
    /// and whether the sender pairing with it may type.
    struct Reservation {
        let psk: SecretBytes
        let generation: UInt64
        let keyboard: KeyboardRight
    }

    enum Outcome { case used, burned, expired }

    struct State {
        var secret: PairingSecret?
        /// The keyboard right the sender pairing with `secret` gets.
        var keyboard = KeyboardRight.allow
        var expires: Double = 0
        /// Bumped by every issue and cancel, so older reservations go stale.
        var generation: UInt64 = 0
        /// The generation a handshake holds, if any (at most one at a time).
        var reservedBy: UInt64?
        var lockout = PairingLockout()
        /// What ended the last issued secret, if it ended by use or a wrong guess.
        var outcome: Outcome?

        /// Whether `g` is the live secret's generation.
        func isCurrent(_ g: UInt64) -> Bool { secret != nil && generation == g }
    }

    let clock: SessionClock
    let lifetime: Double
    let lockoutFile: PairingLockoutFile?
    let state = Mutex(State())

    /// - Parameters:
    ///   - lifetime: at most `defaultLifetime` (shorter only for tests).
    ///   - lockoutFile: where failures are shared with other processes;
    ///     nil keeps them in this process's memory.
    init(clock: @escaping SessionClock = SessionClocks.monotonic, lifetime: Double = defaultLifetime,
         lockoutFile: PairingLockoutFile?) {
        self.clock = clock
        self.lifetime = min(lifetime, Self.defaultLifetime)
        self.lockoutFile = lockoutFile
    }

    /// An authority that shares its lockout with every process using `directory`.
    public convenience init(clock: @escaping SessionClock = SessionClocks.monotonic, directory: ConfigDirectory?) {
        self.init(clock: clock, lockoutFile: directory.map { PairingLockoutFile(path: $0.file(PairingLockoutFile.name)) })
    }

    /// An authority whose lockout lives in memory only (tests, embedding).
    public convenience init(clock: @escaping SessionClock = SessionClocks.monotonic) {
        self.init(clock: clock, lockoutFile: nil)
    }

    /// The lockout in force: this process's, or a newer one from the file.
    /// Never more than `maxLockout` ahead, so a clock that went backwards
    /// (or a file from before a reboot) cannot lock pairing out for longer.
    private func lockoutRemaining(_ st: inout State, now: Double) -> Double {
        if let f = lockoutFile?.read(), f.lockedUntil > st.lockout.lockedUntil || f.failures > st.lockout.failures {
            st.lockout.lockedUntil = max(st.lockout.lockedUntil, f.lockedUntil)
            st.lockout.failures = max(st.lockout.failures, f.failures)
        }
        return min(Self.maxLockout, max(0, st.lockout.lockedUntil - now))
    }

    /// Creates a new secret (replacing any previous one) to show to the user.
    /// A handshake still holding the previous one can no longer pair with it.
    /// Refused while a lockout is in force.
    /// - Parameter keyboard: whether the sender that pairs with this code may
    ///   type (`sender-rights`); the person issuing the code is at the
    ///   receiver, so allowed unless they say otherwise. Nothing of it goes
    ///   on the wire.
    public func issue(keyboard: KeyboardRight = .allow) throws(PairingError) -> PairingSecret {
        let now = clock()
        return try state.withLock { st throws(PairingError) -> PairingSecret in
            let left = lockoutRemaining(&st, now: now)
            guard left <= 0 else { throw .lockedOut(remaining: left) }
            let s = PairingSecret.random()
            st.secret = s
            st.keyboard = keyboard
            st.expires = now + lifetime
            st.generation &+= 1
            st.reservedBy = nil
            st.outcome = nil
            return s
        }
    }

    /// Withdraws the current secret, if any, including from a handshake
    /// that has already reserved it.
    public func cancel() {
        state.withLock {
            $0.secret = nil
            $0.generation &+= 1
            $0.reservedBy = nil
            $0.outcome = nil
        }
    }

    /// Whether a secret is live (issued, unexpired, unused) right now.
    public var hasLiveSecret: Bool {
        let now = clock()
        return state.withLock { $0.secret != nil && now < $0.expires }
    }

    /// What became of the last code issued.
    public var codeState: PairingCodeState {
        let now = clock()
        return state.withLock { st in
            if st.secret != nil { return now < st.expires ? .live(remaining: st.expires - now) : .expired }
            switch st.outcome {
            case .used: return .used
            case .burned: return .burned
            case .expired: return .expired
            case nil: return .none
            }
        }
    }

    /// Seconds until pairing attempts are accepted again (0 if not locked out).
    public var lockoutRemaining: Double {
        let now = clock()
        return state.withLock { lockoutRemaining(&$0, now: now) }
    }

    /// Takes the secret for one handshake. Only one pairing handshake runs at
    /// a time, so a secret can never be tried twice in parallel.
    func reserve() -> Result<Reservation, RefusalReason> {
        let now = clock()
        return state.withLock { st in
            guard lockoutRemaining(&st, now: now) <= 0 else { return .failure(.pairingUnavailable) }
            guard let s = st.secret, st.reservedBy == nil else { return .failure(.pairingUnavailable) }
            guard now < st.expires else { st.secret = nil; st.outcome = .expired; return .failure(.pairingUnavailable) }
            st.reservedBy = st.generation
            return .success(Reservation(psk: s.psk(), generation: st.generation, keyboard: st.keyboard))
        }
    }

    /// The handshake holding `generation` proved the secret. Returns false,
    /// and changes nothing, if that secret was replaced or withdrawn in the
    /// meantime: the pairing must then be refused.
    func succeeded(_ generation: UInt64) -> Bool {
        let ok = state.withLock { st in
            guard st.isCurrent(generation) else { return false }
            st.secret = nil
            st.reservedBy = nil
            st.lockout = PairingLockout()
            st.outcome = .used
            return true
        }
        if ok { _ = try? lockoutFile?.update { $0 = PairingLockout() } }
        return ok
    }

    /// The handshake holding `generation` tried a wrong secret: burn it and
    /// lock out further attempts and new codes. A stale handshake burns
    /// nothing (its secret is already gone) and must not punish the current one.
    func failed(_ generation: UInt64) {
        let now = clock()
        state.withLock { st in
            guard st.isCurrent(generation) else { return }
            st.secret = nil
            st.reservedBy = nil
            st.outcome = .burned
            // Count on top of what any process has recorded, under the
            // file's lock, so two processes failing at once both double it.
            var next = st.lockout
            let bump = { (l: inout PairingLockout) in
                l.failures += 1
                let lock = min(Self.maxLockout, Self.baseLockout * Double(1 << min(l.failures - 1, 16)))
                l.lockedUntil = max(l.lockedUntil, now + lock)
            }
            if let f = lockoutFile, let stored = try? f.update({ l in
                l.failures = max(l.failures, st.lockout.failures)
                bump(&l)
            }) {
                next = stored
            } else {
                bump(&next)
            }
            st.lockout = next
        }
    }

    /// The handshake holding `generation` stopped before the secret was
    /// tested (the peer went away before message 3): nothing about the
    /// secret was revealed, keep it. Only that generation's reservation is
    /// released; a stale handshake cannot free another one's.
    func released(_ generation: UInt64) {
        state.withLock { if $0.reservedBy == generation { $0.reservedBy = nil } }
    }
}

/// Everything the receiver consults during handshakes, shared by all
/// connections: the authorized senders and their rights (persisted if a
/// directory is given), the newest handshake timestamp per sender, and the
/// pairing authority.
///
/// With a directory, `authorized-senders` and `sender-rights` are read again
/// whenever they change on disk (a stat per look-up, a read only after a
/// change), so `remolo peers forget` or `deny-keyboard` in another process
/// holds for this receiver's next handshake or session. A file that has
/// become unreadable or malformed refuses everybody (nobody is authorized,
/// nobody may type) until it is fixed: keeping the old list could keep a
/// sender somebody just removed.
public final class ReceiverTrust: Sendable {
    public let identity: Identity
    public let pairing: PairingAuthority
    let directory: ConfigDirectory?

    struct State {
        var authorized: PeerList
        /// `authorized-senders` as it was when `authorized` was read from
        /// it; nil makes the next look-up read it again.
        var authorizedStamp: FileStamp?
        var latestTimestamp: [PublicKey: TAI64N] = [:]
    }
    let state: Mutex<State>
    /// The sender rights, with the stamp of the file they were read from
    /// (as for `authorized`).
    struct Rights {
        var rights: SenderRights
        var stamp: FileStamp?
    }
    let rights: Mutex<Rights>
    /// Held across "change the list, snapshot it, save the snapshot", so
    /// saves reach the file in the order of the changes. Without it a
    /// `revoke` could be overwritten by an `authorize` snapshot taken before
    /// it, and the revoked sender would be authorized again at the next
    /// start. Separate from `state` so handshakes never wait for a disk.
    let persistence = Mutex(())

    /// - Parameters:
    ///   - directory: where `authorized-senders` and `sender-rights` are
    ///     read and written; nil keeps them in memory only (tests).
    ///   - pairing: nil makes one that shares its lockout through `directory`.
    ///   - authorized, rights: the initial lists when there is no directory
    ///     (with one, the files are read). A sender without rights may
    ///     point but not type.
    public init(identity: Identity, directory: ConfigDirectory?, pairing: PairingAuthority? = nil,
                authorized: PeerList? = nil, rights: SenderRights? = nil) throws(ConfigError) {
        self.identity = identity
        self.pairing = pairing ?? PairingAuthority(directory: directory)
        self.directory = directory
        var list = authorized ?? PeerList()
        var granted = rights ?? SenderRights()
        var listStamp: FileStamp?, rightsStamp: FileStamp?
        if let d = directory {
            try d.ensureExists()
            // Read now so that a bad file stops the start, naming the line.
            let listPath = d.file(PeerList.authorizedSendersFile), rightsPath = d.file(SenderRights.fileName)
            listStamp = FileStamp(path: listPath)
            if authorized == nil { list = try PeerList.load(from: listPath) }
            rightsStamp = FileStamp(path: rightsPath)
            if rights == nil { granted = try SenderRights.load(from: rightsPath) }
        }
        state = Mutex(State(authorized: list, authorizedStamp: listStamp))
        self.rights = Mutex(Rights(rights: granted, stamp: rightsStamp))
    }

    public var authorizedSenders: PeerList { currentAuthorized() }

    public func isAuthorized(_ key: PublicKey) -> Bool { currentAuthorized().contains(key) }

    /// The list as the file holds it now (see the type's comment).
    private func currentAuthorized() -> PeerList {
        guard let d = directory else { return state.withLock { $0.authorized } }
        let path = d.file(PeerList.authorizedSendersFile)
        // The stamp before the read: if the file changes in between, the
        // next look-up sees a newer stamp and reads it again.
        let stamp = FileStamp(path: path)
        if let stamp, let list = state.withLock({ $0.authorizedStamp == stamp ? $0.authorized : nil }) { return list }
        let list = (try? PeerList.load(from: path)) ?? PeerList()
        state.withLock { st in
            st.authorized = list
            st.authorizedStamp = stamp
        }
        return list
    }

    /// Removes a sender and its rights (it must pair again).
    public func revoke(_ key: PublicKey) throws(ConfigError) {
        try changeAuthorized { $0.remove(key) }
        try changeRights { $0.remove(key) }
    }

    /// Adds a sender. With `keyboard`, a pairing: its rights line is
    /// written afresh (the right, paired now); without, its rights are left
    /// as they are (none: it may point but not type).
    func authorize(_ key: PublicKey, label: String, keyboard: KeyboardRight? = nil) throws(ConfigError) {
        try changeAuthorized { $0.add(key, label: label) }
        if let keyboard {
            let now = Date()
            try changeRights { $0.paired(key, keyboard: keyboard, at: now) }
        }
    }

    /// Applies `change`, one change at a time (see `persistence`). With a
    /// directory the change is applied to the file as it is now, re-read
    /// under its lock (`PeerList.update(at:)`), and the list in memory
    /// becomes what was written: a `remolo pair` in another process may have
    /// authorized a sender meanwhile, and saving this process's older list
    /// would drop that sender.
    private func changeAuthorized(_ change: (inout PeerList) -> Void) throws(ConfigError) {
        try persistence.withLock { _ throws(ConfigError) in
            guard let d = directory else {
                state.withLock { change(&$0.authorized) }
                return
            }
            let list = try PeerList.update(at: d.file(PeerList.authorizedSendersFile), change)
            // Another process may write the file right after this one: read
            // it again at the next look-up rather than trust this stamp.
            state.withLock { st in
                st.authorized = list
                st.authorizedStamp = nil
            }
        }
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
