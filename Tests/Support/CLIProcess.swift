// What several test targets share: a `remolo` subprocess, polling in real
// time, and a pair of config directories holding a paired sender and
// receiver.
import Foundation
import RemoloPlayout
import RemoloSession
import RemoloSystem

/// Polls `condition` until it holds or `seconds` pass.
public func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(5000)
    }
    return condition()
}

public struct CLIError: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}

/// A `remolo` subprocess, its output going to a file read as it grows (a
/// file, not a pipe: no reader thread, no waiting for EOF).
public final class CLIProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is only started, signalled and waited
    // for; the log file is only read.
    public let process = Process()
    public let logPath: String

    /// The `remolo` binary beside the running test bundle, or
    /// `$REMOLO_TEST_BINARY` (e.g. a release build, for measurements).
    public static var binary: String {
        if let b = ProcessInfo.processInfo.environment["REMOLO_TEST_BINARY"], !b.isEmpty { return b }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("remolo").path
    }

    /// - Parameters:
    ///   - prefix: a command that runs `remolo` (e.g. `ip netns exec NS`, to
    ///     start it inside a network namespace); empty runs it directly.
    ///   - environment: added to (or replacing in) this process's environment.
    public init(_ args: [String], configDir: String, log: String, prefix: [String] = [],
                environment: [String: String] = [:]) throws {
        let bin = Self.binary
        guard FileManager.default.isExecutableFile(atPath: bin) else {
            throw CLIError("no remolo binary at \(bin): run `swift build` first")
        }
        logPath = log
        guard FileManager.default.createFile(atPath: log, contents: nil),
              let out = FileHandle(forWritingAtPath: log) else { throw CLIError("cannot create \(log)") }
        if let first = prefix.first {
            process.executableURL = URL(fileURLWithPath: first)
            process.arguments = prefix.dropFirst() + [bin] + args
        } else {
            process.executableURL = URL(fileURLWithPath: bin)
            process.arguments = args
        }
        var env = ProcessInfo.processInfo.environment
        env["REMOLO_CONFIG_DIR"] = configDir
        env.merge(environment) { _, new in new }
        process.environment = env
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try out.close()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }

    /// Everything printed so far. Read with read(2): the file grows while it
    /// is read, and Foundation's whole-file reader leaks its buffer when the
    /// size changes under it (LeakSanitizer sees it in the CLI tests).
    public var output: String {
        let fd = open(logPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first line starting with `prefix`, once it has been printed.
    public func line(_ prefix: String, timeout: Double = 20) -> String? {
        var found: String?
        _ = eventually(timeout) {
            found = output.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init)
            return found != nil
        }
        return found
    }

    public func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    public func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Waits up to `seconds` for the process to end; its status, or nil.
    public func wait(upTo seconds: Double) -> Int32? {
        guard eventually(seconds, { !process.isRunning }) else { return nil }
        return wait()
    }

    /// A field's value in a line of `key value` pairs (`sent: motion 12 ...`).
    public static func field(_ key: String, in line: String) -> Int64? {
        let f = line.split(separator: " ").map(String.init)
        return f.firstIndex(of: key).flatMap { $0 + 1 < f.count ? Int64(f[$0 + 1]) : nil }
    }
}

/// Two config directories under a fresh temporary directory: a receiver's
/// and a sender's, each with its identity, already paired with each other;
/// with `typing`, the sender may type too (docs/peers.md), else it is a
/// sender paired before typing existed (it may point only).
public struct PairedConfigs {
    public let root: String
    public let receiver: String
    public let sender: String

    public init(label: String, paired: Bool = true, typing: Bool = false) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        receiver = root + "/rx"
        sender = root + "/tx"
        let rxDir = ConfigDirectory(path: receiver), txDir = ConfigDirectory(path: sender)
        let rxID = try Identity.loadOrCreate(in: rxDir)
        let txID = try Identity.loadOrCreate(in: txDir)
        guard paired else { return }
        var senders = PeerList()
        senders.add(txID.publicKey, label: "test sender")
        try senders.save(to: rxDir.file(PeerList.authorizedSendersFile))
        var receivers = PeerList()
        receivers.add(rxID.publicKey, label: "test receiver")
        try receivers.save(to: txDir.file(PeerList.knownReceiversFile))
        if typing {
            try ReceiverTrust(identity: rxID, directory: rxDir).setKeyboard(txID.publicKey, .allow)
        }
    }

    public func log(_ name: String) -> String { root + "/" + name + ".log" }

    public func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// A TCP+UDP port on 127.0.0.1 that was free a moment ago.
/// Both are tried: a TCP port the kernel hands out may be some other
/// socket's UDP port already.
public func freePort() throws -> UInt16 {
    var attempt = 0
    while true {
        attempt += 1
        let l = try TCPListener(host: "127.0.0.1", port: 0)
        defer { l.close() }
        do {
            let fd = try Socket.bindUDP(host: "127.0.0.1", port: l.port)
            close(fd)
            return l.port
        } catch {
            if attempt == 16 { throw error }
        }
    }
}

/// The tests' one seeded generator (SplitMix64): the same seed, the same
/// numbers, so every random test replays exactly.
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension SessionLimits {
    /// Short limits for tests that must outlast every timeout: idle `idle`
    /// seconds, a ping every third of it, an answer margin of a third.
    public static func testing(idle: Double) -> SessionLimits {
        var l = SessionLimits()
        l.idleTimeout = idle
        l.keepaliveInterval = idle / 3
        l.answerMargin = idle / 3
        return l
    }
}

extension CLIProcess {
    /// The --stats-json lines printed so far.
    public var statsLineCount: Int { output.split(separator: "\n").filter { $0.hasPrefix("{") }.count }

    /// The newest --stats-json object, once more than `n` have been printed (at most 5 s).
    public func stats(after n: Int) -> [String: Any]? {
        var found: [String: Any]?
        _ = eventually(5) {
            let lines = output.split(separator: "\n").filter { $0.hasPrefix("{") }
            guard lines.count > n, let d = lines.last!.data(using: .utf8) else { return false }
            found = try? JSONSerialization.jsonObject(with: d) as? [String: Any]
            return found != nil
        }
        return found
    }
}
