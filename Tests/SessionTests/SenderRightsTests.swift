import Testing
import Foundation
import Synchronization
@testable import RemoloSession

/// `sender-rights`: who may type. Every line either parses or is refused
/// naming the file and the line; a sender without a line may point but not
/// type; the receiver follows the file as other processes change it.
struct SenderRightsTests {
    static let a = PublicKey(hex: String(repeating: "a1", count: 32))!
    static let b = PublicKey(hex: String(repeating: "b2", count: 32))!
    static let t0 = Date(timeIntervalSince1970: 1_748_773_230) // 2025-06-01T10:20:30Z

    struct Good: Sendable, CustomStringConvertible {
        let id: Int
        let text: String
        let keyboard: [KeyboardRight?] // for a, b
        let paired: Date?
        let seen: Date?
        let other: [SenderRights.Field]
        var description: String { "\(id)" }
    }

    static let ah = a.hex, bh = b.hex
    static let good: [Good] = [
        Good(id: 1, text: "", keyboard: [nil, nil], paired: nil, seen: nil, other: []),
        Good(id: 2, text: "# only a comment\n\n   \n# another\n", keyboard: [nil, nil], paired: nil, seen: nil, other: []),
        Good(id: 3, text: "\(ah) keyboard=allow\n", keyboard: [.allow, nil], paired: nil, seen: nil, other: []),
        Good(id: 4, text: "\(ah) keyboard=deny\n\(bh) keyboard=allow\n", keyboard: [.deny, .allow], paired: nil, seen: nil, other: []),
        Good(id: 5, text: "\(ah.uppercased()) keyboard=allow", keyboard: [.allow, nil], paired: nil, seen: nil, other: []),
        Good(id: 6, text: "\(ah)\n", keyboard: [.deny, nil], paired: nil, seen: nil, other: []),
        Good(id: 7, text: "\(ah) keyboard=allow paired=2025-06-01T10:20:30Z seen=2025-06-01T10:21:30Z\n",
             keyboard: [.allow, nil], paired: t0, seen: t0 + 60, other: []),
        Good(id: 8, text: "\(ah) seen=2025-06-01T12:20:30+02:00 keyboard=allow\n",
             keyboard: [.allow, nil], paired: nil, seen: t0, other: []),
        Good(id: 9, text: "  \(ah)\tkeyboard=allow   colour=blue  note=a=b\r\n",
             keyboard: [.allow, nil], paired: nil, seen: nil,
             other: [SenderRights.Field(name: "colour", value: "blue"), SenderRights.Field(name: "note", value: "a=b")]),
    ]

    @Test("1: good lines", arguments: good)
    func goodLines(_ c: Good) throws {
        let r = try SenderRights.parse(c.text, path: "/cfg/sender-rights")
        for (k, want) in zip([Self.a, Self.b], c.keyboard) {
            #expect(r[k]?.keyboard == want, "case \(c.id)")
            #expect(r.mayType(k) == (want == .allow), "case \(c.id)")
        }
        #expect(r[Self.a]?.paired == c.paired, "case \(c.id)")
        #expect(r[Self.a]?.seen == c.seen, "case \(c.id)")
        #expect((r[Self.a]?.otherFields ?? []) == c.other, "case \(c.id)")
        // What is written reads back the same, unknown fields included.
        #expect(try SenderRights.parse(r.text, path: "x") == r, "case \(c.id): \(r.text)")
    }

    static let bad: [(Int, String, Int, String)] = [
        (1, "zz keyboard=allow", 1, "64 hex digits"),
        (2, "\(ah.dropLast()) keyboard=allow", 1, "64 hex digits"),
        (3, "\(ah)00 keyboard=allow", 1, "64 hex digits"),
        (4, "keyboard=allow \(ah)", 1, "64 hex digits"),
        (5, "\(ah) keyboard=maybe", 1, "keyboard takes allow or deny, not 'maybe'"),
        (6, "\(ah) keyboard=Allow", 1, "keyboard takes allow or deny"),
        (7, "\(ah) keyboard", 1, "'keyboard' is not name=value"),
        (8, "\(ah) =allow", 1, "is not name=value"),
        (9, "\(ah) keyboard=", 1, "is not name=value"),
        (10, "\(ah) paired=yesterday", 1, "paired takes an ISO 8601 time"),
        (11, "\(ah) seen=2025-06-01", 1, "seen takes an ISO 8601 time"),
        (12, "\(ah) keyboard=allow keyboard=deny", 1, "'keyboard' is given twice"),
        (13, "# rights\n\(ah) keyboard=allow\n\n\(ah.uppercased()) keyboard=deny\n", 4, "a second line for the sender of line 2"),
        (14, "# fine\n\(bh) keyboard=allow\n\(ah) keyboard=on\n", 3, "allow or deny"),
    ]

    @Test("2: bad lines are refused, naming the file and the line", arguments: bad)
    func badLines(_ id: Int, _ text: String, _ line: Int, _ why: String) {
        do {
            let r = try SenderRights.parse(text, path: "/cfg/sender-rights")
            Issue.record("case \(id) parsed: \(r.entries)")
        } catch {
            #expect(error.path == "/cfg/sender-rights", "case \(id)")
            #expect(error.message.hasPrefix("line \(line): "), "case \(id): \(error.message)")
            #expect(error.message.contains(why), "case \(id): \(error.message)")
            #expect(error.message.contains("fix or delete the line"), "case \(id)")
        }
    }

    /// A directory written before sender-rights existed: the senders in it
    /// may point, none may type, and nothing about authorized-senders
    /// changes when the receiver notes them.
    @Test("3: an old directory without the file: may point, may not type")
    func oldDirectory() throws {
        let root = tempDir("oldrights")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        try dir.ensureExists()
        var list = PeerList()
        list.add(Self.a, label: "old phone")
        let listPath = dir.file(PeerList.authorizedSendersFile)
        try list.save(to: listPath)
        let before = try Data(contentsOf: URL(fileURLWithPath: listPath))
        let trust = try ReceiverTrust(identity: .generate(), directory: dir)
        #expect(trust.isAuthorized(Self.a))
        #expect(!trust.mayType(Self.a))
        #expect(try trust.currentRights().entries.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.file(SenderRights.fileName)))
        #expect(trust.noteSeen(Self.a) == nil)
        let r = try SenderRights.load(from: dir.file(SenderRights.fileName))
        #expect(r[Self.a]?.keyboard == .deny && r[Self.a]?.seen != nil && r[Self.a]?.paired == nil)
        #expect(!trust.mayType(Self.a), "being seen grants nothing")
        #expect(mode(dir.file(SenderRights.fileName)) == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: listPath)) == before, "authorized-senders keeps its format and content")
        // An unknown sender is not given a line.
        #expect(trust.noteSeen(Self.b) == nil)
        #expect(try SenderRights.load(from: dir.file(SenderRights.fileName))[Self.b] == nil)
    }

    /// Pairing records the right the code was issued with, and when.
    @Test("4: pairing with keyboard deny or allow", arguments: [(1, KeyboardRight.deny), (2, .allow)])
    func pairingRecordsRight(_ id: Int, _ right: KeyboardRight) throws {
        let root = tempDir("pairright")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        let sender = Identity.generate()
        let trust = try ReceiverTrust(identity: .generate(), directory: dir)
        let code = try trust.pairing.issue(keyboard: right)
        let before = SenderRights.whole(Date())
        let r = runHandshake(SenderHandshake(identity: sender, mode: .pairing(code)), ReceiverHandshake(trust: trust))
        #expect(r.error == nil, "case \(id)")
        #expect(trust.isAuthorized(sender.publicKey), "case \(id)")
        #expect(trust.mayType(sender.publicKey) == (right == .allow), "case \(id)")
        let e = try #require(try SenderRights.load(from: dir.file(SenderRights.fileName))[sender.publicKey])
        #expect(e.keyboard == right, "case \(id)")
        let paired = try #require(e.paired)
        #expect(paired >= before && paired <= Date(), "case \(id)")
        // Forgetting removes both lines.
        try trust.revoke(sender.publicKey)
        #expect(!trust.isAuthorized(sender.publicKey) && !trust.mayType(sender.publicKey))
        #expect(try SenderRights.load(from: dir.file(SenderRights.fileName))[sender.publicKey] == nil)
    }

    /// The keyboard right belongs to the code: a code issued after another
    /// one carries its own.
    @Test("5: the right travels with the code, not with the last call")
    func rightPerCode() throws {
        let trust = try ReceiverTrust(identity: .generate(), directory: nil)
        let sender = Identity.generate()
        _ = try trust.pairing.issue(keyboard: .allow)
        let code = try trust.pairing.issue(keyboard: .deny)
        #expect(runHandshake(SenderHandshake(identity: sender, mode: .pairing(code)), ReceiverHandshake(trust: trust)).error == nil)
        #expect(trust.isAuthorized(sender.publicKey) && !trust.mayType(sender.publicKey))
        try trust.setKeyboard(sender.publicKey, .allow)
        #expect(trust.mayType(sender.publicKey))
    }

    /// Another process (`remolo peers`) changes the files under a running
    /// receiver: the next look-up follows; a broken file refuses everybody
    /// until it is fixed.
    @Test("6: the receiver follows the files as other processes change them")
    func followsTheFiles() throws {
        let root = tempDir("follow")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        try dir.ensureExists()
        let listPath = dir.file(PeerList.authorizedSendersFile), rightsPath = dir.file(SenderRights.fileName)
        try PeerList.update(at: listPath) { $0.add(Self.a, label: "a"); $0.add(Self.b, label: "b") }
        let trust = try ReceiverTrust(identity: .generate(), directory: dir)
        #expect(!trust.mayType(Self.a))
        try SenderRights.update(at: rightsPath) { $0.modify(Self.a) { $0.keyboard = .allow } }
        #expect(trust.mayType(Self.a) && !trust.mayType(Self.b))
        try "\(Self.ah) keyboard=allow\n\(Self.bh) keyboard=sometimes\n".write(toFile: rightsPath, atomically: true, encoding: .utf8)
        #expect(!trust.mayType(Self.a), "a broken file lets nobody type")
        #expect(throws: ConfigError.self) { _ = try trust.currentRights() }
        do { _ = try trust.currentRights() } catch {
            #expect(error.path == rightsPath && error.message.hasPrefix("line 2: "), "\(error)")
        }
        try "\(Self.ah) keyboard=allow\n".write(toFile: rightsPath, atomically: true, encoding: .utf8)
        #expect(trust.mayType(Self.a))
        // Forgotten by another process: refused at the next handshake.
        try PeerList.update(at: listPath) { $0.remove(Self.a) }
        #expect(!trust.isAuthorized(Self.a) && trust.isAuthorized(Self.b))
        try "not a key\n".write(toFile: listPath, atomically: true, encoding: .utf8)
        #expect(!trust.isAuthorized(Self.b), "a broken authorized-senders lets nobody in")
        // And a bad rights file stops a receiver from starting, naming it.
        try "\(Self.ah) keyboard=sometimes\n".write(toFile: rightsPath, atomically: true, encoding: .utf8)
        try PeerList().save(to: listPath)
        #expect(throws: ConfigError.self) { _ = try ReceiverTrust(identity: .generate(), directory: dir) }
    }

    /// Threads changing the rights of different senders at once, each with
    /// its own flock on the lock file, as separate processes would: every
    /// change stays.
    @Test("7: concurrent changes all stay")
    func concurrentChanges() throws {
        let root = tempDir("rightsrace")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        try dir.ensureExists()
        let path = dir.file(SenderRights.fileName)
        let keys = (0..<8).map { _ in Identity.generate().publicKey }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: keys.count) { i in
            for round in 0..<20 {
                do throws(ConfigError) {
                    try SenderRights.update(at: path) {
                        $0.modify(keys[i]) { $0.keyboard = round % 2 == 0 ? .deny : .allow }
                    }
                } catch {
                    failures.withLock { $0.append(error.description) }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        let r = try SenderRights.load(from: path)
        #expect(r.entries.count == keys.count)
        #expect(keys.allSatisfy { r.mayType($0) }, "a change was lost")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.contains(".tmp.") }
        #expect(leftovers.isEmpty)
    }

    /// noteSeen writes at most once a `seenResolution` and never throws.
    @Test("8: noteSeen: recorded, not rewritten within a minute, errors only reported")
    func noteSeen() throws {
        let root = tempDir("seen")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        let trust = try ReceiverTrust(identity: .generate(), directory: dir)
        try trust.authorize(Self.a, label: "a", keyboard: .allow)
        #expect(trust.noteSeen(Self.a) == nil)
        let path = dir.file(SenderRights.fileName)
        let first = try #require(try SenderRights.load(from: path)[Self.a])
        #expect(first.seen != nil && first.keyboard == .allow && first.paired != nil)
        let inode = { () -> UInt64 in var st = stat(); stat(path, &st); return UInt64(st.st_ino) }
        let before = inode()
        #expect(trust.noteSeen(Self.a) == nil)
        #expect(inode() == before, "rewritten within seenResolution")
        // A directory where the file should be: reported, not thrown.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let problem = try #require(trust.noteSeen(Self.a))
        #expect(problem.contains(Self.a.fingerprint) && problem.contains(path), "\(problem)")
    }

    static let fps: [PublicKey] = (0..<6).map { _ in Identity.generate().publicKey }

    @Test("9: fingerprints typed by a person", arguments: [
        (1, "full, as printed", 0, true),
        (2, "lower case", 0, true),
        (3, "without hyphens", 0, true),
        (4, "first 8 symbols", 0, true),
        (5, "first 9 symbols with a hyphen", 0, true),
        (6, "first 7 symbols", 0, false),
        (7, "64 hex digits", 0, true),
        (8, "O for 0, I/L for 1", 0, true),
    ] as [(Int, String, Int, Bool)])
    func fingerprints(_ id: Int, _ what: String, _ which: Int, _ found: Bool) {
        let k = Self.fps[which], fp = k.fingerprint, bare = fp.replacingOccurrences(of: "-", with: "")
        let typed: String
        switch id {
        case 1: typed = fp
        case 2: typed = fp.lowercased()
        case 3: typed = bare
        case 4: typed = String(bare.prefix(8))
        case 5: typed = String(fp.prefix(10))
        case 6: typed = String(bare.prefix(7))
        case 7: typed = k.hex
        default: typed = String(fp.map { $0 == "0" ? "o" : $0 == "1" ? "l" : $0 })
        }
        let r = PublicKey.matching(typed, in: Self.fps)
        if found {
            #expect(r == .success(k), "case \(id) (\(what)): \(typed)")
        } else {
            guard case .failure(.malformed(let m)) = r else { Issue.record("case \(id): \(r)"); return }
            #expect(m.contains("at least 8"), "case \(id): \(m)")
        }
    }

    @Test("10: unknown, malformed and ambiguous fingerprints are refused")
    func fingerprintRefusals() {
        let other = Identity.generate().publicKey
        #expect(PublicKey.matching(other.fingerprint, in: Self.fps) == .failure(.unknown(other.fingerprint)))
        #expect(PublicKey.matching(other.hex, in: Self.fps) == .failure(.unknown(other.hex)))
        guard case .failure(.malformed(let m)) = PublicKey.matching("UUUU-UUUU", in: Self.fps) else {
            Issue.record("U is not a Crockford symbol"); return
        }
        #expect(m.contains("'U'"), "\(m)")
        #expect(PublicKey.matching(Self.fps[0].fingerprint + "-AAAA", in: Self.fps) == .failure(.unknown(Self.fps[0].fingerprint + "-AAAA")))
        // Two keys whose fingerprints share their first symbol, matched with
        // a minimum of one symbol: neither is picked.
        var keys = [Identity.generate().publicKey]
        while keys.count < 2 {
            let k = Identity.generate().publicKey
            if k.fingerprint.first == keys[0].fingerprint.first { keys.append(k) }
        }
        let first = String(keys[0].fingerprint.prefix(1))
        guard case .failure(.ambiguous(_, let both)) = PublicKey.matching(first, in: keys, minimumPrefix: 1) else {
            Issue.record("not ambiguous"); return
        }
        #expect(Set(both) == Set(keys))
        #expect(FingerprintMatchError.ambiguous(first, both).description.contains("type more of it"))
    }
}
