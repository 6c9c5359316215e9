// The pairing lockout on disk, next to the peer files: a wrong code seen by
// one process (say `remolo pair`) must also stop a code being issued by the
// next one (a second `remolo pair`, or `remolo receive --pair`), or the
// lockout could be sidestepped by restarting the command.

internal import Glibc

/// Consecutive pairing failures and the end of the lockout they caused.
struct PairingLockout: Equatable, Sendable {
    var failures = 0
    /// On the authority's clock (CLOCK_MONOTONIC by default: one clock for
    /// every process of a boot).
    var lockedUntil: Double = 0
}

/// `pairing-lockout` in the config directory, mode 0600: two lines,
/// `failures N` and `locked_until S`. Read and rewritten under an exclusive
/// `flock(2)`, so two processes failing at once both count.
struct PairingLockoutFile: Sendable {
    static let name = "pairing-lockout"
    let path: String

    /// What the file says; a missing or unreadable file is no lockout.
    /// (Reading fails open only for a file that cannot be parsed: this
    /// process's own memory still holds the failures it saw.)
    func read() -> PairingLockout {
        var out = PairingLockout()
        _ = try? withLockedFile(write: false) { out = $0 }
        return out
    }

    /// Applies `change` to the stored state under the file's lock and
    /// writes the result back; returns it.
    @discardableResult
    func update(_ change: (inout PairingLockout) -> Void) throws(ConfigError) -> PairingLockout {
        var result = PairingLockout()
        try withLockedFile(write: true) { st in
            change(&st)
            result = st
        }
        return result
    }

    private func withLockedFile(write: Bool, _ body: (inout PairingLockout) -> Void) throws(ConfigError) {
        let fd = open(path, write ? (O_RDWR | O_CREAT | O_CLOEXEC) : (O_RDONLY | O_CLOEXEC), 0o600)
        guard fd >= 0 else {
            throw ConfigError(path: path, message: "cannot open: \(String(cString: strerror(errno))); check the config directory's owner")
        }
        defer { close(fd) }
        while flock(fd, write ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else {
                throw ConfigError(path: path, message: "cannot lock: \(String(cString: strerror(errno)))")
            }
        }
        var buf = [UInt8](repeating: 0, count: 256)
        let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        var st = Self.parse(n > 0 ? String(decoding: buf[0..<n], as: UTF8.self) : "")
        body(&st)
        guard write else { return }
        let text = Array(Self.format(st).utf8)
        let w = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        guard w == text.count, ftruncate(fd, off_t(text.count)) == 0 else {
            throw ConfigError(path: path, message: "cannot write: \(String(cString: strerror(errno)))")
        }
        _ = fchmod(fd, 0o600)
    }

    static func parse(_ text: String) -> PairingLockout {
        var st = PairingLockout()
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count == 2 else { continue }
            switch f[0] {
            case "failures": st.failures = max(0, Int(f[1]) ?? 0)
            case "locked_until": st.lockedUntil = Double(f[1]) ?? 0
            default: continue
            }
        }
        return st
    }

    static func format(_ st: PairingLockout) -> String {
        "failures \(st.failures)\nlocked_until \(st.lockedUntil)\n"
    }
}
