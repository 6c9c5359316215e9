// Where the receiver keeps what each sender's sessions learned of their
// network (DelayRecall), between sessions and across restarts.
internal import Glibc
import Foundation
import RemoloPlayout
import RemoloSession

/// The receiver's memories of its senders' networks: one 524-byte file per
/// sender and network in a directory of their own
/// (`delay-memory/` in the config directory). A session from a sender on a
/// network it used before starts at the delay that network needed
/// (docs/playout.md, "A returning sender"); one from a new network starts
/// cold, so a phone that moves from the home Wi-Fi to another one never
/// plays its first seconds at the old network's delay.
public struct DelayMemory: Sendable {
    /// The directory's name inside the config directory.
    public static let directoryName = "delay-memory"
    /// Files kept at most: past it, saving a new one removes the one
    /// untouched for longest (a sender on many networks cannot fill a disk).
    public static let maxFiles = 256

    public let directory: String

    public init(directory: String) { self.directory = directory }

    /// In the receiver's config directory.
    public init(in dir: ConfigDirectory) { directory = dir.file(Self.directoryName) }

    /// The file of `sender` on `network` (`PeerEndpoint.network`).
    public func path(sender: PublicKey, network: String) -> String {
        let net = String(network.map { $0 == "/" ? "_" : $0 })
        return directory + "/" + sender.fingerprint + "@" + net
    }

    /// The memory of `sender` on `network`: nil for none yet. Throws for a
    /// file that cannot be read or is damaged (the error says how to fix).
    public func load(sender: PublicKey, network: String) throws -> DelayRecall? {
        let p = path(sender: sender, network: network)
        do {
            guard let bytes = try readSmallFile(p, max: DelayRecall().data.count) else { return nil }
            return try DelayRecall(data: bytes)
        } catch let e as ConfigError {
            throw DelayMemoryError(path: p, message: e.message + "; the sender's next session starts cold")
        } catch {
            throw DelayMemoryError(path: p, message: "\(error)")
        }
    }

    /// Saves what a session of `sender` on `network` left; replaces the
    /// file in one rename (a reader never sees half of it).
    public func save(_ memory: DelayRecall, sender: PublicKey, network: String) throws {
        try ConfigDirectory(path: directory).ensureExists()
        let p = path(sender: sender, network: network)
        let isNew = access(p, F_OK) != 0
        try writePrivateFileAtomically(p, bytes: memory.data)
        if isNew { prune() }
    }

    /// Removes every memory of `sender` (a forgotten sender leaves
    /// nothing); the number removed.
    @discardableResult
    public func forget(sender: PublicKey) -> Int {
        let prefix = sender.fingerprint + "@"
        var n = 0
        for (name, _) in files() where name.hasPrefix(prefix) {
            if unlink(directory + "/" + name) == 0 { n += 1 }
        }
        return n
    }

    /// The number of memories kept.
    public var count: Int { files().count }

    /// Removes the oldest files past `maxFiles`.
    private func prune() {
        let all = files()
        guard all.count > Self.maxFiles else { return }
        for (name, _) in all.sorted(by: { $0.1 < $1.1 }).prefix(all.count - Self.maxFiles) {
            unlink(directory + "/" + name)
        }
    }

    /// Each memory file with its modification time.
    private func files() -> [(String, Double)] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { $0.contains("@") && !$0.contains(".tmp.") }.compactMap { n in
            var st = stat()
            guard stat(directory + "/" + n, &st) == 0 else { return nil }
            return (n, Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)
        }
    }
}

/// A memory file that cannot be read, and how to fix it.
public struct DelayMemoryError: Error, CustomStringConvertible, Sendable, Equatable {
    public let path: String
    public let message: String
    public var description: String { "\(path): \(message)" }
}
