import Testing
import Foundation
import Synchronization
@testable import RemoloPlayout
@testable import RemoloSession
import RemoloSystem

/// Peer files and config errors: unreadable files are errors, concurrent
/// saves neither collide nor reorder, and every message says how to fix it.
struct ConfigFileTests {
    /// A peer file that exists but cannot be read must not load as "nobody
    /// paired": the next save would then drop every paired peer for good.
    @Test("1: unreadable peer files are errors; only an absent one is empty", arguments: [
        (1, "absent", false),
        (2, "a directory where the file should be", true),
        (3, "a file where its directory should be", true),
    ] as [(Int, String, Bool)])
    func unreadablePeerFile(_ id: Int, _ what: String, _ isError: Bool) throws {
        let root = tempDir("peerfile")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        try dir.ensureExists()
        var path = dir.file(PeerList.authorizedSendersFile)
        switch id {
        case 2: try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        case 3:
            try "".write(toFile: root + "/not-a-dir", atomically: false, encoding: .utf8)
            path = root + "/not-a-dir/" + PeerList.authorizedSendersFile
        default: break
        }
        if isError {
            do {
                let l = try PeerList.load(from: path)
                Issue.record("case \(id) (\(what)) loaded \(l.entries.count) entries instead of failing")
            } catch {
                #expect(error.path == path)
                #expect(error.message.contains("move it away"), "case \(id): \(error.message)")
            }
        } else {
            #expect(try PeerList.load(from: path).entries.isEmpty, "case \(id)")
        }
        if id == 2 {
            // And the receiver refuses to start rather than forget its senders.
            #expect(throws: ConfigError.self) { _ = try ReceiverTrust(identity: .generate(), directory: dir) }
        }
    }

    @Test("2: errno messages say how to fix", arguments: [
        (1, EACCES, "chown"), (2, EPERM, "chown"), (3, EROFS, ConfigDirectory.environmentOverride),
        (4, ENOSPC, "free some space"), (5, EDQUOT, "free some space"), (6, ENOENT, "retry"),
        (7, ENOTDIR, "move it away"), (8, EISDIR, "move it away"), (9, ELOOP, "symbolic link"),
        (10, EMFILE, "ulimit -n"), (11, EIO, "dmesg"), (12, EINVAL, ConfigDirectory.environmentOverride),
    ] as [(Int, Int32, String)])
    func errnoHints(_ id: Int, _ code: Int32, _ fix: String) {
        let e = ConfigError.errno("/cfg/remolo/authorized-senders", "open", code: code)
        #expect(e.message.hasPrefix("open failed: \(String(cString: strerror(code)));"), "case \(id)")
        #expect(e.message.contains(fix), "case \(id): \(e.message)")
        if code == EACCES { #expect(e.message.contains("'/cfg/remolo'"), "names the directory to fix") }
    }

    /// A file that ends before its size said (rewritten meanwhile) is
    /// reported as such, not with whatever errno happens to hold.
    @Test("3: a file that shrinks while being read", arguments: [(1, 0), (2, 10), (3, 31)])
    func shrinkingFile(_ id: Int, _ available: Int) throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let bytes = [UInt8](repeating: 7, count: available)
        #expect(write(fds[1], bytes, bytes.count) == available)
        close(fds[1])
        let secret = SecretBytes(count: 32)
        do {
            try readExactly(fds[0], into: secret.mutableBuffer, path: "/cfg/identity.key")
            Issue.record("case \(id): a short read passed")
        } catch {
            #expect(error.message.contains("changed while being read"), "case \(id): \(error.message)")
            #expect(error.message.contains("after \(available) of 32 bytes"), "case \(id)")
            #expect(error.message.contains("retry"), "case \(id)")
            #expect(!error.message.contains("Success"), "case \(id)")
        }
    }

    /// Threads saving one file at once (as pairing and revoking threads do)
    /// must never trip over each other's temporary file.
    @Test("4: concurrent saves of one peer file all succeed")
    func concurrentSaves() throws {
        let root = tempDir("saves")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        try dir.ensureExists()
        let path = dir.file(PeerList.authorizedSendersFile)
        let lists: [PeerList] = (0..<8).map { i in
            var l = PeerList()
            for j in 0...i { l.add(Identity.generate().publicKey, label: "peer \(i).\(j)") }
            return l
        }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: lists.count) { i in
            for _ in 0..<40 {
                do throws(ConfigError) { try lists[i].save(to: path) } catch {
                    failures.withLock { $0.append(error.description) }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        #expect(lists.contains(try PeerList.load(from: path)))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.contains(".tmp.") }
        #expect(leftovers.isEmpty)
    }

    /// Authorize and revoke from several threads, in rounds: after every
    /// round the file must equal the list in memory (a revoked sender must
    /// not come back from an older snapshot that was saved late).
    @Test("5: the saved list follows the order of authorize and revoke")
    func persistenceOrder() throws {
        let root = tempDir("order")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        let path = dir.file(PeerList.authorizedSendersFile)
        let trust = try ReceiverTrust(identity: .generate(), directory: dir)
        let keys = (0..<4).map { _ in Identity.generate().publicKey }
        let failures = Mutex<[String]>([])
        var stale: [Int] = []
        for round in 0..<60 {
            DispatchQueue.concurrentPerform(iterations: keys.count) { i in
                do throws(ConfigError) {
                    try trust.authorize(keys[i], label: "k\(i) round \(round)")
                    try trust.revoke(keys[i])
                } catch {
                    failures.withLock { $0.append(error.description) }
                }
            }
            if try PeerList.load(from: path) != trust.authorizedSenders { stale.append(round) }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        #expect(trust.authorizedSenders.entries.isEmpty)
        #expect(stale.isEmpty, "the file kept revoked senders after rounds \(stale)")
    }

    /// Two receivers on one config directory (say `remolo pair` and
    /// `remolo receive --pair`), each with its own list in memory, pairing
    /// from two threads at once: every sender must end up in the file, and
    /// a revoke by one must not bring back or drop the other's senders.
    @Test("6: two ReceiverTrust objects on one directory keep each other's changes")
    func twoTrustsOneDirectory() throws {
        let root = tempDir("twotrusts")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        let path = dir.file(PeerList.authorizedSendersFile)
        let id = Identity.generate()
        let trusts = [try ReceiverTrust(identity: id, directory: dir), try ReceiverTrust(identity: id, directory: dir)]
        let keys = (0..<2).map { _ in (0..<60).map { _ in Identity.generate().publicKey } }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { t in
            for k in keys[t] {
                do throws(ConfigError) { try trusts[t].authorize(k, label: "trust \(t)") } catch {
                    failures.withLock { $0.append(error.description) }
                }
            }
        }
        let afterAuthorize = try PeerList.load(from: path)
        let missing = keys.joined().filter { !afterAuthorize.contains($0) }
        #expect(missing.isEmpty, "\(missing.count) of 120 senders lost by a concurrent save")
        // Each revokes the even-numbered half of its own senders, at once.
        DispatchQueue.concurrentPerform(iterations: 2) { t in
            for (i, k) in keys[t].enumerated() where i % 2 == 0 {
                do throws(ConfigError) { try trusts[t].revoke(k) } catch {
                    failures.withLock { $0.append(error.description) }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        let file = try PeerList.load(from: path)
        let want = Set(keys.flatMap { $0.enumerated().filter { $0.offset % 2 == 1 }.map(\.element) })
        #expect(Set(file.entries.map(\.key)) == want, "file holds \(file.entries.count) senders, want \(want.count)")
        #expect(file.entries.count == want.count, "a sender is listed twice")
        // The last writer's memory is the file; the lock file is private too.
        #expect(trusts.contains { $0.authorizedSenders == file })
        #expect(mode(PeerList.lockPath(for: path)) == 0o600)
    }
}
