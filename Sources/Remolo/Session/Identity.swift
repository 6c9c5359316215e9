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

    static func errno(_ path: String, _ what: String) -> ConfigError {
        ConfigError(path: path, message: "\(what) failed: \(String(cString: strerror(Glibc.errno)))")
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
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if Glibc.errno == ENOENT { return nil }
            throw .errno(path, "open")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .errno(path, "fstat") }
        if st.st_mode & 0o077 != 0 {
            throw ConfigError(path: path, message: "secret key is readable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); run: chmod 600 '\(path)'")
        }
        guard st.st_size == 32 else {
            throw ConfigError(path: path, message: "is \(st.st_size) bytes, expected a 32-byte X25519 secret; move it away to create a new identity (peers must pair again)")
        }
        let secret = SecretBytes(count: 32)
        var got = 0
        while got < 32 {
            let n = read(fd, secret.pointer + got, 32 - got)
            if n < 0 && Glibc.errno == EINTR { continue }
            guard n > 0 else { throw .errno(path, "read") }
            got += n
        }
        return secret
    }
}

/// Writes a file via a temporary in the same directory and rename(2), so a
/// reader never sees a half-written file; the temporary is created with
/// `mode` from the start (O_EXCL), never wider.
/// With `replace: false` an existing file is kept (link(2) never overwrites),
/// so two processes creating an identity at once agree on one key.
func writeFileAtomically(_ path: String, bytes: UnsafeRawBufferPointer, mode: mode_t, replace: Bool = true) throws(ConfigError) {
    let tmp = path + ".tmp.\(getpid())"
    unlink(tmp)
    let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
    guard fd >= 0 else { throw .errno(tmp, "create") }
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

    public static func load(from path: String) throws(ConfigError) -> PeerList {
        guard let data = FileManager.default.contents(atPath: path) else {
            return PeerList() // absent: nobody paired yet
        }
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

    static func encode(_ bytes: [UInt8]) -> String {
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

    /// Decodes exactly `byteCount` bytes; nil on a bad character or length.
    static func decode(_ s: String, byteCount: Int) -> [UInt8]? {
        var symbols: [Int] = []
        for c in s.utf8 {
            if c == UInt8(ascii: "-") || c == UInt8(ascii: " ") { continue }
            guard let v = value(of: c) else { return nil }
            symbols.append(v)
        }
        guard symbols.count == (byteCount * 8 + 4) / 5 else { return nil }
        var out: [UInt8] = []
        var acc = 0, bits = 0
        for v in symbols {
            acc = (acc << 5) | v; bits += 5
            if bits >= 8 { bits -= 8; out.append(UInt8((acc >> bits) & 0xff)) }
            acc &= (1 << bits) - 1
        }
        guard out.count == byteCount, acc == 0 else { return nil } // leftover bits must be zero
        return out
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
