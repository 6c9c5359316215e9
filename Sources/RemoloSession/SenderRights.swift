// What each paired sender may do beyond pointing, kept on the receiver in
// `sender-rights` beside `authorized-senders` (which keeps its format, so an
// older receiver reading the same directory still works: it ignores this
// file and never lets anybody type).

internal import Glibc
import Foundation

/// Whether a sender may type on the receiver (key and text messages).
public enum KeyboardRight: String, Sendable, CaseIterable {
    case allow
    case deny
}

/// `sender-rights`: one line per sender, the 64 hex digits of its public
/// key, then `name=value` fields separated by blanks:
///
///     # Remolo sender rights: <X25519 public key, hex> name=value ...
///     3f...c1 keyboard=allow paired=2025-06-01T10:20:30Z seen=2025-06-02T08:00:00Z
///
/// `keyboard` is `allow` or `deny` (absent: `deny`); `paired` and `seen` are
/// ISO 8601 / RFC 3339 times (written in UTC with `Z`). Fields of other
/// names are kept as they are, for a newer version's sake. A sender with no
/// line may point but not type: it was paired before typing existed and
/// never agreed to it. Lines starting with `#` and blank lines are ignored;
/// any other malformed line is an error naming the line, never skipped.
public struct SenderRights: Sendable, Equatable {
    public static let fileName = "sender-rights"

    /// A field this version does not know, kept verbatim.
    public struct Field: Sendable, Equatable {
        public let name: String
        public let value: String
    }

    public struct Entry: Sendable, Equatable {
        public let key: PublicKey
        public var keyboard: KeyboardRight
        /// When the sender paired (nil: not recorded).
        public var paired: Date?
        /// When a session of this sender was last confirmed (nil: not yet).
        public var seen: Date?
        public var otherFields: [Field]

        public init(key: PublicKey, keyboard: KeyboardRight, paired: Date? = nil, seen: Date? = nil,
                    otherFields: [Field] = []) {
            self.key = key
            self.keyboard = keyboard
            self.paired = paired
            self.seen = seen
            self.otherFields = otherFields
        }
    }

    public private(set) var entries: [Entry] = []

    public init() {}

    public subscript(key: PublicKey) -> Entry? { entries.first { $0.key == key } }

    /// True only for a sender whose line says `keyboard=allow`.
    public func mayType(_ key: PublicKey) -> Bool { self[key]?.keyboard == .allow }

    /// Changes a sender's entry, creating it (`keyboard=deny`, nothing
    /// recorded) if it has none.
    public mutating func modify(_ key: PublicKey, _ change: (inout Entry) -> Void) {
        if let i = entries.firstIndex(where: { $0.key == key }) {
            change(&entries[i])
        } else {
            var e = Entry(key: key, keyboard: .deny)
            change(&e)
            entries.append(e)
        }
    }

    /// A sender that just paired: its right, the time, nothing older kept
    /// (a sender that pairs again agrees afresh).
    public mutating func paired(_ key: PublicKey, keyboard: KeyboardRight, at time: Date) {
        remove(key)
        entries.append(Entry(key: key, keyboard: keyboard, paired: Self.whole(time)))
    }

    public mutating func remove(_ key: PublicKey) { entries.removeAll { $0.key == key } }

    /// Removes the lines of every sender not in `keep` (after a forget, so
    /// that a line left by a hand edit cannot hand its right to a later
    /// pairing of that key by an older version).
    public mutating func keepOnly(_ keep: (PublicKey) -> Bool) { entries.removeAll { !keep($0.key) } }

    /// Whole seconds: what the file holds, so a value round-trips exactly.
    static func whole(_ d: Date) -> Date { Date(timeIntervalSince1970: d.timeIntervalSince1970.rounded(.down)) }

    // MARK: The file

    /// Parses the file's text; `path` only names the file in errors.
    public static func parse(_ text: String, path: String) throws(ConfigError) -> SenderRights {
        var rights = SenderRights()
        var lineOf: [PublicKey: Int] = [:]
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = n + 1
            func bad(_ what: String) -> ConfigError {
                ConfigError(path: path, message: "line \(number): \(what); fix or delete the line "
                            + "(without a line the sender may point but not type)")
            }
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words[0].utf8.count == 64, let key = PublicKey(hex: words[0]) else {
                throw bad("expected the 64 hex digits of a sender's public key first, not '\(words[0].prefix(70))'")
            }
            if let first = lineOf[key] { throw bad("a second line for the sender of line \(first)") }
            lineOf[key] = number
            var entry = Entry(key: key, keyboard: .deny)
            var names: Set<Substring> = []
            for w in words.dropFirst() {
                guard let eq = w.firstIndex(of: "="), eq != w.startIndex, w.index(after: eq) != w.endIndex else {
                    throw bad("'\(w)' is not name=value")
                }
                let name = w[..<eq], value = String(w[w.index(after: eq)...])
                guard names.insert(name).inserted else { throw bad("'\(name)' is given twice") }
                switch name {
                case "keyboard":
                    guard let k = KeyboardRight(rawValue: value) else { throw bad("keyboard takes allow or deny, not '\(value)'") }
                    entry.keyboard = k
                case "paired", "seen":
                    guard let d = parseTime(value) else {
                        throw bad("\(name) takes an ISO 8601 time such as 2025-06-01T10:20:30Z, not '\(value)'")
                    }
                    if name == "paired" { entry.paired = d } else { entry.seen = d }
                default:
                    entry.otherFields.append(Field(name: String(name), value: value))
                }
            }
            rights.entries.append(entry)
        }
        return rights
    }

    /// The file's text, as `save` writes it.
    public var text: String {
        var out = "# Remolo sender rights: <X25519 public key, hex> name=value ...\n"
            + "# keyboard=allow|deny, paired=<ISO 8601>, seen=<ISO 8601>; no line: may point, may not type\n"
        for e in entries {
            out += "\(e.key.hex) keyboard=\(e.keyboard.rawValue)"
            if let p = e.paired { out += " paired=\(Self.formatTime(p))" }
            if let s = e.seen { out += " seen=\(Self.formatTime(s))" }
            for f in e.otherFields { out += " \(f.name)=\(f.value)" }
            out += "\n"
        }
        return out
    }

    /// The rights in `path`; none (nobody may type) if the file does not
    /// exist, as in a directory written by a version without it.
    public static func load(from path: String) throws(ConfigError) -> SenderRights {
        let data = try readConfigFile(path, movedAway: "every sender then may point but not type until allowed again")
        guard let data else { return SenderRights() }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    /// Writes the rights as they are, replacing the file (mode 0600, a new
    /// file renamed into place). Prefer `update(at:)`.
    public func save(to path: String) throws(ConfigError) {
        let bytes = Array(text.utf8)
        let failure: ConfigError? = bytes.withUnsafeBytes { b -> ConfigError? in
            do throws(ConfigError) { try writeFileAtomically(path, bytes: b, mode: 0o600); return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// The lock beside the file, as for the peer files.
    public static func lockPath(for path: String) -> String { path + ".lock" }

    /// Re-reads the file, applies `change` and writes the result, under an
    /// exclusive `flock(2)` on `lockPath(for:)`, so that two processes
    /// changing rights at once both keep their change. Returns what was
    /// written.
    @discardableResult
    public static func update(at path: String, _ change: (inout SenderRights) -> Void) throws(ConfigError) -> SenderRights {
        try withExclusiveLock(lockPath(for: path)) { () throws(ConfigError) -> SenderRights in
            var rights = try load(from: path)
            change(&rights)
            try rights.save(to: path)
            return rights
        }
    }

    /// `2025-06-01T10:20:30Z`. A new formatter each time: these are rare,
    /// and a shared one would need a lock.
    public static func formatTime(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.string(from: d)
    }

    static func parseTime(_ s: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: s).map(whole)
    }
}

extension ReceiverTrust {
    /// How often at most `noteSeen` rewrites a sender's `seen` time: a
    /// phone that reconnects every few seconds must not mean a synced file
    /// write each time. `remolo peers` shows times to the minute.
    public static let seenResolution: Double = 60

    /// The rights as the file holds them now; throws when the file cannot
    /// be read or has a bad line (then nobody may type).
    public func currentRights() throws(ConfigError) -> SenderRights {
        guard let d = directory else { return rights.withLock { $0.rights } }
        let path = d.file(SenderRights.fileName)
        let stamp = FileStamp(path: path)
        if let stamp, let r = rights.withLock({ $0.stamp == stamp ? $0.rights : nil }) { return r }
        let r: SenderRights
        do { r = try SenderRights.load(from: path) } catch {
            rights.withLock { $0 = Rights(rights: SenderRights(), stamp: nil) }
            throw error
        }
        rights.withLock { $0 = Rights(rights: r, stamp: stamp) }
        return r
    }

    /// Whether `peer` may type (key and text messages): only with
    /// `keyboard=allow` in `sender-rights`. False for a sender paired before
    /// the file existed, and for everybody while the file is unreadable or
    /// malformed (`currentRights()` says why). Cheap: one stat(2) unless the
    /// file changed since the last call.
    public func mayType(_ peer: PublicKey) -> Bool {
        (try? currentRights())?.mayType(peer) ?? false
    }

    /// Records that a session of `peer` was confirmed just now (`seen=` in
    /// `sender-rights`), at most once per `seenResolution`. Never throws:
    /// a session must not fail because a file could not be written. Returns
    /// what went wrong, for the log, or nil.
    @discardableResult
    public func noteSeen(_ peer: PublicKey) -> String? {
        let now = SenderRights.whole(Date())
        if let seen = (try? currentRights())?[peer]?.seen, seen <= now, now.timeIntervalSince(seen) < Self.seenResolution {
            return nil
        }
        // A sender forgotten meanwhile gets no line back.
        guard isAuthorized(peer) else { return nil }
        do throws(ConfigError) {
            try changeRights { $0.modify(peer) { $0.seen = now } }
            return nil
        } catch {
            return "cannot record when sender \(peer.fingerprint) was last seen: \(error)"
        }
    }

    /// Grants or withdraws typing for a paired sender; its next session
    /// follows the new right.
    public func setKeyboard(_ peer: PublicKey, _ right: KeyboardRight) throws(ConfigError) {
        try changeRights { $0.modify(peer) { $0.keyboard = right } }
    }

    /// Applies `change` to `sender-rights` under its lock (or to the rights
    /// in memory without a directory); the next look-up reads the file again.
    func changeRights(_ change: (inout SenderRights) -> Void) throws(ConfigError) {
        guard let d = directory else {
            rights.withLock { change(&$0.rights) }
            return
        }
        let written = try SenderRights.update(at: d.file(SenderRights.fileName), change)
        rights.withLock { $0 = Rights(rights: written, stamp: nil) }
    }
}

/// What identifies a file's content without reading it: a save renames a
/// new file (a new inode) into place, so a changed stamp means a new
/// content. `absent` for a file that does not exist.
struct FileStamp: Equatable {
    var device: UInt64 = 0, inode: UInt64 = 0, size: Int64 = 0, mtimeSec: Int = 0, mtimeNsec: Int = 0
    var absent = false

    /// nil when the file cannot be examined (then read it to get the error).
    init?(path: String) {
        var st = stat()
        if stat(path, &st) != 0 {
            guard Glibc.errno == ENOENT else { return nil }
            absent = true
            return
        }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        mtimeSec = st.st_mtim.tv_sec
        mtimeNsec = st.st_mtim.tv_nsec
    }
}

/// Why a typed fingerprint names no single key.
public enum FingerprintMatchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not Crockford base32 (nor 64 hex digits), or too short to be safe.
    case malformed(String)
    case unknown(String)
    /// Several keys' fingerprints start with it.
    case ambiguous(String, [PublicKey])

    public var description: String {
        switch self {
        case .malformed(let why): return why
        case .unknown(let t):
            return "no paired sender has the fingerprint '\(t)'; run `remolo peers` to list them"
        case .ambiguous(let t, let keys):
            return "'\(t)' starts the fingerprints of \(keys.count) senders ("
                + keys.map(\.fingerprint).joined(separator: ", ") + "); type more of it"
        }
    }
}

extension PublicKey {
    /// Fewest symbols of a fingerprint accepted as a prefix: 40 bits, so a
    /// prefix that matches names one key unless somebody made keys to collide.
    public static let minimumFingerprintPrefix = 8

    /// The one key in `keys` that `typed` names: its fingerprint as
    /// `remolo identity` prints it, or a prefix of it of at least
    /// `minimumFingerprintPrefix` symbols (case, hyphens and blanks ignored,
    /// O read as 0 and I/L as 1), or its 64 hex digits.
    public static func matching(_ typed: String, in keys: [PublicKey]) -> Result<PublicKey, FingerprintMatchError> {
        matching(typed, in: keys, minimumPrefix: minimumFingerprintPrefix)
    }

    /// With a shorter minimum, tests can find keys whose fingerprints share
    /// a prefix (8 symbols in common would take 2^40 tries).
    static func matching(_ typed: String, in keys: [PublicKey], minimumPrefix: Int) -> Result<PublicKey, FingerprintMatchError> {
        let compact = typed.filter { $0 != "-" && $0 != " " }
        if compact.utf8.count == 64, let k = PublicKey(hex: compact) {
            return keys.contains(k) ? .success(k) : .failure(.unknown(typed))
        }
        var symbols = ""
        for c in compact.utf8 {
            guard let v = Crockford32.value(of: c) else {
                return .failure(.malformed("'\(typed)' is not a fingerprint: '\(Character(Unicode.Scalar(c)))' is not one of "
                                           + "its symbols (0-9 and A-Z without I, L, O, U)"))
            }
            symbols.append(Character(Unicode.Scalar(Crockford32.alphabet[v])))
        }
        guard symbols.count >= minimumPrefix else {
            return .failure(.malformed("'\(typed)' is too short: give at least \(minimumPrefix) symbols of the fingerprint"))
        }
        let found = keys.filter { $0.fingerprint.replacingOccurrences(of: "-", with: "").hasPrefix(symbols) }
        switch found.count {
        case 0: return .failure(.unknown(typed))
        case 1: return .success(found[0])
        default: return .failure(.ambiguous(typed, found))
        }
    }
}
