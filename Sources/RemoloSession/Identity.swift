// Long-term host identity: one X25519 key pair per host, created on first
// use, kept in a private config directory.


internal import Glibc
import Foundation
internal import CSodium

/// Errors from the identity and peer files. Each says how to fix it.
public struct ConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    public let path: String
    public let message: String

    public var description: String { "\(path): \(message)" }

    /// A failed system call on `path`, with what to do about it. `code`
    /// defaults to the errno of the call that just failed.
    static func errno(_ path: String, _ what: String, code: Int32 = Glibc.errno) -> ConfigError {
        ConfigError(path: path, message: "\(what) failed: \(String(cString: strerror(code))); \(hint(errno: code, path: path))")
    }

    /// How to fix the usual causes of each errno on a config file or directory.
    static func hint(errno code: Int32, path: String) -> String {
        let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let override = ConfigDirectory.environmentOverride
        switch code {
        case EACCES, EPERM:
            return "check who owns it (another user, or root after a sudo run, may have created it); run: sudo chown -R \"$USER\" '\(dir.isEmpty ? "/" : dir)'"
        case EROFS:
            return "the file system is read-only; set \(override) to a writable directory"
        case ENOSPC, EDQUOT:
            return "the disk or your quota is full; free some space and retry"
        case ENOENT:
            return "a directory on the way is missing or was removed meanwhile; retry, or set \(override) to an existing directory"
        case ENOTDIR:
            return "a component of the path is a file, not a directory; move it away or set \(override)"
        case EISDIR:
            return "it is a directory; move it away so the file can be created"
        case ELOOP:
            return "it is a symbolic link, which is refused for secrets; replace it with the file itself"
        case EMFILE, ENFILE:
            return "too many open files; raise the limit (ulimit -n) or close other programs, then retry"
        case EIO:
            return "the disk reported an I/O error; check it (dmesg) and retry"
        default:
            return "check the path, or set \(override) to another directory"
        }
    }
}

/// Where Remolo keeps its identity and peer files.
///
/// Users: `$XDG_CONFIG_HOME/remolo` (or `~/.config/remolo`). The service:
/// `/var/lib/remolo`. `REMOLO_CONFIG_DIR` overrides both, and so does an
/// explicit path. The directory is created with mode 0700.
public struct ConfigDirectory: Sendable, Equatable {
    public static let environmentOverride = "REMOLO_CONFIG_DIR"
    public static let serviceDefault = "/var/lib/remolo"

    public let path: String

    public init(path: String) { self.path = path }

    /// The directory for an interactive user.
    public static func forUser(environment: [String: String] = ProcessInfo.processInfo.environment) -> ConfigDirectory {
        if let o = environment[environmentOverride], !o.isEmpty { return ConfigDirectory(path: o) }
        if let x = environment["XDG_CONFIG_HOME"], x.hasPrefix("/") { return ConfigDirectory(path: x + "/remolo") }
        let home = environment["HOME"] ?? "/root"
        return ConfigDirectory(path: home + "/.config/remolo")
    }

    /// The directory for the system service.
    public static func forService(environment: [String: String] = ProcessInfo.processInfo.environment) -> ConfigDirectory {
        if let o = environment[environmentOverride], !o.isEmpty { return ConfigDirectory(path: o) }
        return ConfigDirectory(path: serviceDefault)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    /// Creates the directory (and parents) if needed; the last component gets
    /// mode 0700. An existing directory that others can read is refused: the
    /// secret key would be exposed.
    public func ensureExists() throws(ConfigError) {
        var st = stat()
        if stat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else {
                throw ConfigError(path: path, message: "exists but is not a directory; move it away or set \(Self.environmentOverride)")
            }
            if st.st_mode & 0o077 != 0 {
                throw ConfigError(path: path, message: "is accessible by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); run: chmod 700 '\(path)'")
            }
            return
        }
        var prefix = ""
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        for (i, part) in parts.enumerated() {
            prefix += "/" + part
            let last = i == parts.count - 1
            if mkdir(prefix, last ? 0o700 : 0o755) != 0 && Glibc.errno != EEXIST {
                throw .errno(prefix, "mkdir")
            }
        }
        // mkdir's mode is filtered by the umask; set it exactly.
        if chmod(path, 0o700) != 0 { throw .errno(path, "chmod 700") }
    }
}

/// A peer's or our own X25519 public key.
public struct PublicKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    public init?(hex: some StringProtocol) {
        guard let b = Hex.decode(hex) else { return nil }
        self.init(bytes: b)
    }

    public var hex: String { Hex.encode(bytes) }

    /// For people comparing two screens: BLAKE2b-160 of the key ("remolo
    /// fingerprint" domain-separated), Crockford base32 in groups of four,
    /// e.g. `7Q2M-9XKD-...` (8 groups, 160 bits).
    public var fingerprint: String {
        let digest = Blake2b.hash(Array("remolo fingerprint v1".utf8), bytes, outLength: 20)
        return Crockford32.grouped(Crockford32.encode(digest), groupSize: 4)
    }

    public var description: String { fingerprint }
}

/// This host's long-term key pair. The secret is wiped when the identity goes away.
public final class Identity: Sendable {
    public static let fileName = "identity.key"

    let keyPair: KeyPair
    public var publicKey: PublicKey { PublicKey(bytes: keyPair.publicKey)! }
    public var fingerprint: String { publicKey.fingerprint }

    init(keyPair: KeyPair) { self.keyPair = keyPair }

    /// A fresh identity that is not stored anywhere (tests, benchmarks).
    public static func generate() -> Identity { Identity(keyPair: .generate()) }

    /// Loads `identity.key` from the directory, creating the key pair (and
    /// the directory) on first use. The file holds the 32 secret bytes and
    /// must be mode 0600.
    public static func loadOrCreate(in dir: ConfigDirectory) throws(ConfigError) -> Identity {
        try dir.ensureExists()
        let path = dir.file(fileName)
        if let secret = try readSecretFile(path) { return Identity(keyPair: KeyPair(secret: secret)) }
        let kp = KeyPair.generate()
        try writeFileAtomically(path, bytes: kp.secret.buffer, mode: 0o600, replace: false)
        // Another process may have won the race to create it: use whatever is there now.
        guard let stored = try readSecretFile(path) else { throw ConfigError(path: path, message: "vanished after creation") }
        return Identity(keyPair: KeyPair(secret: stored))
    }

    private static func readSecretFile(_ path: String) throws(ConfigError) -> SecretBytes? {
        guard let (fd, st) = try openForReading(path, flags: O_NOFOLLOW) else { return nil }
        defer { close(fd) }
        if st.st_mode & 0o077 != 0 {
            throw ConfigError(path: path, message: "secret key is readable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); run: chmod 600 '\(path)'")
        }
        guard st.st_size == 32 else {
            throw ConfigError(path: path, message: "is \(st.st_size) bytes, expected a 32-byte X25519 secret; move it away to create a new identity (peers must pair again)")
        }
        let secret = SecretBytes(count: 32)
        try readExactly(fd, into: secret.mutableBuffer, path: path)
        return secret
    }
}

/// Opens a file of the configuration directory for reading, with its
/// status; nil when it does not exist. The caller closes the descriptor.
func openForReading(_ path: String, flags: Int32 = 0) throws(ConfigError) -> (Int32, stat)? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | flags)
    if fd < 0 {
        if Glibc.errno == ENOENT { return nil }
        throw .errno(path, "open")
    }
    var st = stat()
    guard fstat(fd, &st) == 0 else {
        let e = ConfigError.errno(path, "fstat")
        close(fd)
        throw e
    }
    return (fd, st)
}

/// Fills `buffer` from `fd`. End of file first means the file shrank after
/// its size was checked (someone rewrote it meanwhile): errno says nothing
/// then, so say that.
func readExactly(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String) throws(ConfigError) {
    var got = 0
    while got < buffer.count {
        let n = read(fd, buffer.baseAddress! + got, buffer.count - got)
        if n < 0 && Glibc.errno == EINTR { continue }
        if n < 0 { throw .errno(path, "read") }
        if n == 0 {
            throw ConfigError(path: path, message: "changed while being read (ended after \(got) of \(buffer.count) bytes); retry, and make sure no other program rewrites it")
        }
        got += n
    }
}

/// Writes a file via a temporary in the same directory and rename(2), so a
/// reader never sees a half-written file; the temporary is created with
/// `mode` from the start (O_EXCL), never wider.
/// With `replace: false` an existing file is kept (link(2) never overwrites),
/// so two processes creating an identity at once agree on one key.
func writeFileAtomically(_ path: String, bytes: UnsafeRawBufferPointer, mode: mode_t, replace: Bool = true) throws(ConfigError) {
    // A name no other writer uses, even threads of this process saving the
    // same file at once: with a shared name one writer's unlink and create
    // would replace the other's half-written temporary, which the other then
    // renames into place.
    let tmp = path + ".tmp.\(getpid()).\(Hex.encode(randomBytes(8)))"
    let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
    guard fd >= 0 else { throw .errno(tmp, "create") }
    do { try giveToDirectoryOwner(fd, path: tmp) } catch { close(fd); unlink(tmp); throw error }
    var off = 0
    while off < bytes.count {
        let n = write(fd, bytes.baseAddress! + off, bytes.count - off)
        if n < 0 && Glibc.errno == EINTR { continue }
        guard n > 0 else { let e = ConfigError.errno(tmp, "write"); close(fd); unlink(tmp); throw e }
        off += n
    }
    if fchmod(fd, mode) != 0 || fsync(fd) != 0 {
        let e = ConfigError.errno(tmp, "fchmod/fsync"); close(fd); unlink(tmp); throw e
    }
    close(fd)
    if !replace {
        defer { unlink(tmp) }
        if link(tmp, path) != 0 && Glibc.errno != EEXIST { throw .errno(path, "link") }
        return
    }
    guard rename(tmp, path) == 0 else { let e = ConfigError.errno(path, "rename"); unlink(tmp); throw e }
}

/// A small file of the configuration directory, whole (not followed if a
/// symbolic link); nil when it does not exist. One larger than `max` bytes
/// is refused unread.
package func readSmallFile(_ path: String, max: Int) throws(ConfigError) -> [UInt8]? {
    guard let (fd, st) = try openForReading(path, flags: O_NOFOLLOW) else { return nil }
    defer { close(fd) }
    guard st.st_size <= max else {
        throw ConfigError(path: path, message: "is \(st.st_size) bytes, more than the \(max) it may be; remove it")
    }
    var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
    var failure: ConfigError?
    bytes.withUnsafeMutableBytes { b in
        do throws(ConfigError) { try readExactly(fd, into: b, path: path) } catch { failure = error }
    }
    if let failure { throw failure }
    return bytes
}

/// `writeFileAtomically` for other modules: `bytes`, mode 0600.
package func writePrivateFileAtomically(_ path: String, bytes: [UInt8]) throws(ConfigError) {
    var failure: ConfigError?
    bytes.withUnsafeBytes { b in
        do throws(ConfigError) { try writeFileAtomically(path, bytes: b, mode: 0o600) } catch { failure = error }
    }
    if let failure { throw failure }
}

/// Root changing a file in a directory it does not own (`sudo remolo peers
/// forget ...` on the service's directory, which belongs to the service's
/// user) gives the file to the directory's owner: a file left to root,
/// mode 0600, is one the service can no longer read, and a lock file left
/// to root is one it can no longer open. Nothing to do for anyone else.
func giveToDirectoryOwner(_ fd: Int32, path: String) throws(ConfigError) {
    guard geteuid() == 0 else { return }
    let slash = path.lastIndex(of: "/")
    let dir = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    var d = stat(), f = stat()
    guard stat(dir, &d) == 0 else { throw .errno(dir, "stat") }
    guard fstat(fd, &f) == 0 else { throw .errno(path, "fstat") }
    if f.st_uid == d.st_uid && f.st_gid == d.st_gid { return }
    if fchown(fd, d.st_uid, d.st_gid) != 0 { throw .errno(path, "chown to the directory's owner") }
}

/// Runs `body` holding an exclusive `flock(2)` on the file `lock` (created
/// mode 0600 if absent). The lock file is never renamed over, unlike the
/// file it guards, so one flock on it serializes every writer of that file,
/// in this process and in others.
func withExclusiveLock<T>(_ lock: String, _ body: () throws(ConfigError) -> T) throws(ConfigError) -> T {
    let fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw .errno(lock, "open") }
    defer { close(fd) } // releases the lock, after the body's rename
    try giveToDirectoryOwner(fd, path: lock)
    while flock(fd, LOCK_EX) != 0 {
        guard Glibc.errno == EINTR else { throw .errno(lock, "flock") }
    }
    return try body()
}

/// The whole of a small config file, or nil if it does not exist. Read to
/// end of file rather than trusting st_size: a save renames a new file into
/// place, it never rewrites the one being read. `movedAway` says what is
/// lost when the user moves a non-file out of the way.
func readConfigFile(_ path: String, movedAway: String) throws(ConfigError) -> [UInt8]? {
    guard let (fd, st) = try openForReading(path) else { return nil }
    defer { close(fd) }
    guard (st.st_mode & S_IFMT) == S_IFREG else {
        throw ConfigError(path: path, message: "is not a regular file; move it away (\(movedAway))")
    }
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if n < 0 && Glibc.errno == EINTR { continue }
        if n < 0 { throw .errno(path, "read") }
        if n == 0 { return data }
        data += chunk[0..<n]
    }
}

/// A list of peer public keys with labels, one per line: `<64 hex> <label>`.
/// `authorized-senders` on a receiver, `known-receivers` on a sender. Lines
/// starting with `#` and blank lines are ignored; a malformed line is an
/// error (naming the line), never silently skipped.
public struct PeerList: Sendable, Equatable {
    public static let authorizedSendersFile = "authorized-senders"
    public static let knownReceiversFile = "known-receivers"

    public struct Entry: Sendable, Equatable {
        public let key: PublicKey
        public var label: String
    }

    public private(set) var entries: [Entry] = []

    public init() {}

    public func contains(_ key: PublicKey) -> Bool { entries.contains { $0.key == key } }
    public func key(labelled label: String) -> PublicKey? { entries.last { $0.label == label }?.key }

    /// Adds or relabels a key.
    public mutating func add(_ key: PublicKey, label: String) {
        let clean = String(label.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
        if let i = entries.firstIndex(where: { $0.key == key }) { entries[i].label = clean } else {
            entries.append(Entry(key: key, label: clean))
        }
    }

    public mutating func remove(_ key: PublicKey) { entries.removeAll { $0.key == key } }

    /// The list in `path`; empty only if the file does not exist. A file
    /// that exists but cannot be read is an error: treating it as empty
    /// would forget every peer, and the next save would make that final.
    public static func load(from path: String) throws(ConfigError) -> PeerList {
        let data = try readConfigFile(path, movedAway: "peers listed in it must pair again")
        guard let data else { return PeerList() } // absent: nobody paired yet
        var list = PeerList()
        for (n, raw) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let hexPart = line.prefix { !$0.isWhitespace }
            guard let key = PublicKey(hex: hexPart) else {
                throw ConfigError(path: path, message: "line \(n + 1): expected 64 hex digits then a label; fix or delete the line")
            }
            list.add(key, label: line.dropFirst(hexPart.count).trimmingCharacters(in: .whitespaces))
        }
        return list
    }

    /// The lock file beside a peer file (`authorized-senders.lock`): it is
    /// never renamed over, unlike the peer file itself, so one flock on it
    /// serializes every writer.
    public static func lockPath(for path: String) -> String { path + ".lock" }

    /// Re-reads the file at `path`, applies `change` and writes the result,
    /// all under an exclusive `flock(2)` on `lockPath(for: path)`. Two
    /// processes (or two threads) changing one peer file at once then both
    /// keep their change: without the lock each would save the list it read
    /// before the other's save, and one pairing would be lost. Returns the
    /// list as written.
    @discardableResult
    public static func update(at path: String, _ change: (inout PeerList) -> Void) throws(ConfigError) -> PeerList {
        try withExclusiveLock(lockPath(for: path)) { () throws(ConfigError) -> PeerList in
            var list = try load(from: path)
            change(&list)
            try list.save(to: path)
            return list
        }
    }

    /// Writes the list as it is, replacing the file. Prefer `update(at:)`
    /// wherever another process may be changing the same file.
    public func save(to path: String) throws(ConfigError) {
        var text = "# Remolo peer keys: <X25519 public key, hex> <label>\n"
        for e in entries { text += "\(e.key.hex) \(e.label)\n" }
        let bytes = Array(text.utf8)
        let failure: ConfigError? = bytes.withUnsafeBytes { b -> ConfigError? in
            do throws(ConfigError) { try writeFileAtomically(path, bytes: b, mode: 0o600); return nil } catch { return error }
        }
        if let failure { throw failure }
    }
}

/// Crockford's base32 (https://www.crockford.com/base32.html): digits and
/// capitals without I, L, O, U. Decoding ignores case, hyphens and spaces and
/// reads I/L as 1 and O as 0, so a code typed from a screen still works.
enum Crockford32 {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        var acc = 0, bits = 0
        for b in bytes {
            acc = (acc << 8) | Int(b); bits += 8
            while bits >= 5 { bits -= 5; out.append(alphabet[(acc >> bits) & 31]) }
            acc &= (1 << bits) - 1
        }
        if bits > 0 { out.append(alphabet[(acc << (5 - bits)) & 31]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func value(of c: UInt8) -> Int? {
        var u = c
        if (97...122).contains(u) { u -= 32 } // lower to upper
        switch u {
        case UInt8(ascii: "O"): return 0
        case UInt8(ascii: "I"), UInt8(ascii: "L"): return 1
        default: return alphabet.firstIndex(of: u)
        }
    }

    /// Decodes exactly `out.count` bytes into `out`, symbol by symbol, so the
    /// decoded bytes (a pairing secret) exist nowhere else; false on a bad
    /// character or length (then `out` holds garbage for its owner to wipe).
    static func decode(_ s: String, into out: UnsafeMutableRawBufferPointer) -> Bool {
        var symbols = 0, written = 0
        var acc = 0, bits = 0
        for c in s.utf8 {
            if c == UInt8(ascii: "-") || c == UInt8(ascii: " ") { continue }
            guard let v = value(of: c) else { return false }
            symbols += 1
            acc = (acc << 5) | v; bits += 5
            if bits >= 8 {
                bits -= 8
                guard written < out.count else { return false }
                out[written] = UInt8((acc >> bits) & 0xff)
                written += 1
            }
            acc &= (1 << bits) - 1
        }
        // Exactly ceil(8n/5) symbols, and the leftover bits must be zero.
        return symbols == (out.count * 8 + 4) / 5 && written == out.count && acc == 0
    }

    static func grouped(_ s: String, groupSize: Int) -> String {
        var out = ""
        for (i, c) in s.enumerated() {
            if i > 0 && i % groupSize == 0 { out.append("-") }
            out.append(c)
        }
        return out
    }
}
