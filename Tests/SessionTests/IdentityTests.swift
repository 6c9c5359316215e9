import Testing
import Foundation
@testable import RemoloPlayout
@testable import RemoloSession
import RemoloSystem

func tempDir(_ name: String) -> String {
    let d = NSTemporaryDirectory() + "remolo-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    return d
}

func mode(_ path: String) -> Int {
    var st = stat()
    precondition(stat(path, &st) == 0, "stat \(path)")
    return Int(st.st_mode & 0o777)
}

struct IdentityTests {
    @Test("1: identity file is created 0600 in a 0700 directory and reloads identical")
    func createAndReload() throws {
        let root = tempDir("id")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root + "/nested/remolo")
        let a = try Identity.loadOrCreate(in: dir)
        let file = dir.file(Identity.fileName)
        #expect(mode(file) == 0o600)
        #expect(mode(dir.path) == 0o700)
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int == 32)
        let b = try Identity.loadOrCreate(in: dir)
        #expect(a.publicKey == b.publicKey)
        #expect(a.keyPair.secret.constantTimeEquals(b.keyPair.secret))
        // The public key really belongs to the stored secret.
        let raw = try #require(FileManager.default.contents(atPath: file))
        #expect(X25519.publicKey(secret: SecretBytes(copying: Array(raw))) == a.publicKey.bytes)
        #expect(a.publicKey != Identity.generate().publicKey)
    }

    @Test("2: a key file others can read is refused, with the fix in the message")
    func widePermissionsRefused() throws {
        let root = tempDir("perm")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        _ = try Identity.loadOrCreate(in: dir)
        chmod(dir.file(Identity.fileName), 0o644)
        do {
            _ = try Identity.loadOrCreate(in: dir)
            Issue.record("a 0644 key file was accepted")
        } catch {
            #expect(error.message.contains("chmod 600"))
        }
        chmod(dir.path, 0o755)
        #expect(throws: ConfigError.self) { try dir.ensureExists() }
    }

    @Test("3: config directory resolution", arguments: [
        (["REMOLO_CONFIG_DIR": "/x/y", "XDG_CONFIG_HOME": "/c"], "/x/y", "/x/y"),
        (["XDG_CONFIG_HOME": "/c", "HOME": "/h"], "/c/remolo", "/var/lib/remolo"),
        (["HOME": "/h"], "/h/.config/remolo", "/var/lib/remolo"),
        (["XDG_CONFIG_HOME": "relative", "HOME": "/h"], "/h/.config/remolo", "/var/lib/remolo"),
    ] as [([String: String], String, String)])
    func directories(_ env: [String: String], _ user: String, _ service: String) {
        #expect(ConfigDirectory.forUser(environment: env).path == user)
        #expect(ConfigDirectory.forService(environment: env).path == service)
    }

    @Test("4: peer lists round-trip through their 0600 files; bad lines are errors")
    func peerLists() throws {
        let root = tempDir("peers")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        try dir.ensureExists()
        var list = PeerList()
        let a = Identity.generate().publicKey, b = Identity.generate().publicKey
        list.add(a, label: "phone")
        list.add(b, label: "laptop\nevil")
        let path = dir.file(PeerList.authorizedSendersFile)
        try list.save(to: path)
        #expect(mode(path) == 0o600)
        let back = try PeerList.load(from: path)
        #expect(back == list)
        #expect(back.key(labelled: "phone") == a)
        #expect(back.entries[1].label == "laptop evil")
        try "zz not-a-key\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: ConfigError.self) { _ = try PeerList.load(from: path) }
        #expect(try PeerList.load(from: root + "/absent").entries.isEmpty)
    }

    @Test("5: receiver trust persists authorized senders")
    func trustPersists() throws {
        let root = tempDir("trust")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = ConfigDirectory(path: root)
        let key = Identity.generate().publicKey
        let t1 = try ReceiverTrust(identity: .generate(), directory: dir)
        try t1.authorize(key, label: "x")
        let t2 = try ReceiverTrust(identity: .generate(), directory: dir)
        #expect(t2.isAuthorized(key))
        try t2.revoke(key)
        #expect(try !ReceiverTrust(identity: .generate(), directory: dir).isAuthorized(key))
    }

    @Test("6: pairing codes: >= 100 bits, typed forms tolerated, garbage refused")
    func pairingCodes() throws {
        let s = PairingSecret.random()
        #expect(PairingSecret.byteCount * 8 >= 100)
        let d = s.display
        #expect(d.count == 29 && d.split(separator: "-").count == 6)
        #expect(d.allSatisfy { $0 == "-" || "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains($0) })
        #expect(PairingSecret(typed: d) == s)
        #expect(PairingSecret(typed: d.lowercased()) == s)
        #expect(PairingSecret(typed: d.replacingOccurrences(of: "-", with: " ")) == s)
        // Confusables: O for 0, I and L for 1.
        let known = PairingSecret(raw: [UInt8](repeating: 0, count: 15))
        #expect(known.display == "0000-0000-0000-0000-0000-0000")
        #expect(PairingSecret(typed: "oooo-OOOO-0000-0000-0000-0000") == known)
        let ones = try #require(PairingSecret(typed: "0000-0000-0000-0000-0000-0001"))
        #expect(PairingSecret(typed: "0000-0000-0000-0000-0000-000i") == ones)
        #expect(PairingSecret(typed: "0000-0000-0000-0000-0000-000L") == ones)
        for bad in ["", "0000", "UUUU-0000-0000-0000-0000-0000", d + "0", "0000-0000-0000-0000-0000-000!"] {
            #expect(PairingSecret(typed: bad) == nil, "\(bad)")
        }
        #expect(PairingSecret.random() != s)
        // Different secrets give different PSKs; the same secret the same PSK.
        #expect(s.psk().constantTimeEquals(PairingSecret(typed: d)!.psk()))
        #expect(!s.psk().constantTimeEquals(PairingSecret.random().psk()))
    }

    @Test("7: fingerprints: 8 groups of 4 base32 characters, stable per key")
    func fingerprints() throws {
        let id = Identity.generate()
        let f = id.fingerprint
        #expect(f.split(separator: "-").count == 8)
        #expect(f.split(separator: "-").allSatisfy { $0.count == 4 })
        // Stable: the same key, rebuilt from its bytes, gives the same text.
        #expect(try #require(PublicKey(hex: id.publicKey.hex)).fingerprint == f)
        #expect(f != Identity.generate().fingerprint)
        // The fixed answers are in KnownAnswerTests.
    }
}
