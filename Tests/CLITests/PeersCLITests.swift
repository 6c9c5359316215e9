import Foundation
import RemoloPlayout
import RemoloSession
import RemoloSystem
import RemoloTestSupport
import Testing

/// `remolo peers` and the keyboard right of pairing, each command its own
/// process over a temporary config directory, as a user runs them.
@Suite(.serialized) struct PeersCLITests {
    /// Runs one short command to its end: its status and output.
    static func run(_ args: [String], dir: String, log: String, prefix: [String] = []) throws -> (Int32, String) {
        let p = try CLIProcess(args, configDir: dir, log: log, prefix: prefix)
        let status = p.wait(upTo: 20) ?? -1
        return (status, p.output)
    }

    /// `remolo peers --json`'s senders.
    static func senders(_ dir: String, log: String) throws -> [[String: Any]] {
        let (status, out) = try run(["peers", "--json"], dir: dir, log: log)
        #expect(status == 0, "\(out)")
        let obj = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any], "\(out)")
        #expect(obj["directory"] as? String == dir)
        return try #require(obj["senders"] as? [[String: Any]], "\(out)")
    }

    @Test("1: a sender paired before sender-rights: listed as point; allow, deny, forget")
    func listAllowDenyForget() throws {
        let c = try PairedConfigs(label: "peers")
        defer { c.remove() }
        let tx = try Identity.loadOrCreate(in: ConfigDirectory(path: c.sender)).publicKey
        let fp = tx.fingerprint
        let rightsPath = c.receiver + "/" + SenderRights.fileName
        #expect(!FileManager.default.fileExists(atPath: rightsPath))

        let (status, table) = try Self.run(["peers"], dir: c.receiver, log: c.log("list"))
        #expect(status == 0, "\(table)")
        let lines = table.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(table)")
        #expect(lines[0].hasPrefix("fingerprint") && lines[0].contains("name") && lines[0].contains("paired")
                && lines[0].contains("last seen") && lines[0].hasSuffix("rights"), "\(lines[0])")
        #expect(lines[1].hasPrefix(fp) && lines[1].contains("test sender") && lines[1].contains("never")
                && lines[1].hasSuffix("point"), "\(lines[1])")

        var s = try Self.senders(c.receiver, log: c.log("json1"))
        #expect(s.count == 1)
        #expect(s[0]["fingerprint"] as? String == fp && s[0]["key"] as? String == tx.hex)
        #expect(s[0]["name"] as? String == "test sender")
        #expect(s[0]["paired"] is NSNull && s[0]["seen"] is NSNull)
        #expect(s[0]["rights"] as? [String] == ["point"])

        // A prefix, lower case, hyphens in other places: one sender.
        let typed = fp.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
        var (st, out) = try Self.run(["peers", "allow-keyboard", String(typed)], dir: c.receiver, log: c.log("allow"))
        #expect(st == 0 && out.contains("\(fp) (test sender) may type"), "\(out)")
        s = try Self.senders(c.receiver, log: c.log("json2"))
        #expect(s[0]["rights"] as? [String] == ["point", "type"])
        #expect(try SenderRights.load(from: rightsPath).mayType(tx))
        var info = stat()
        #expect(stat(rightsPath, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let (_, typeTable) = try Self.run(["peers"], dir: c.receiver, log: c.log("list2"))
        #expect(typeTable.split(separator: "\n").last?.hasSuffix("point, type") == true, "\(typeTable)")

        (st, out) = try Self.run(["peers", "deny-keyboard", fp], dir: c.receiver, log: c.log("deny"))
        #expect(st == 0 && out.contains("may point but not type"), "\(out)")
        s = try Self.senders(c.receiver, log: c.log("json3"))
        #expect(s[0]["rights"] as? [String] == ["point"])

        (st, out) = try Self.run(["peers", "forget", fp.lowercased()], dir: c.receiver, log: c.log("forget"))
        #expect(st == 0 && out.contains("forgot sender \(fp)"), "\(out)")
        #expect(try Self.senders(c.receiver, log: c.log("json4")).isEmpty)
        #expect(!(try PeerList.load(from: c.receiver + "/" + PeerList.authorizedSendersFile).contains(tx)))
        #expect(try SenderRights.load(from: rightsPath)[tx] == nil)
        (st, out) = try Self.run(["peers"], dir: c.receiver, log: c.log("list3"))
        #expect(st == 0 && out.contains("no sender is paired"), "\(out)")
    }

    @Test("2: clear errors", arguments: [
        (1, ["peers", "forget", "ZZZZ-ZZZZ-ZZZZ"], 1, "no paired sender has the fingerprint 'ZZZZ-ZZZZ-ZZZZ'"),
        (2, ["peers", "allow-keyboard", "ABC"], 1, "too short: give at least 8 symbols"),
        (3, ["peers", "deny-keyboard", "UUUUUUUU"], 1, "'U' is not one of its symbols"),
        (4, ["peers", "forget"], 2, "forget needs the sender's fingerprint"),
        (5, ["peers", "--verbose"], 2, "unknown option '--verbose'"),
        (6, ["peers", "forget", "A", "forget", "B"], 2, "one change at a time"),
        (7, ["peers", "--json", "forget", "ABCDEFGH"], 2, "--json goes with the list"),
        (8, ["peers"], 1, "no config directory at"),
        (9, ["peers"], 1, "it belongs to user"),
    ] as [(Int, [String], Int32, String)])
    func errors(_ id: Int, _ args: [String], _ want: Int32, _ message: String) throws {
        let c = try PairedConfigs(label: "peerserr")
        defer { c.remove() }
        var dir = c.receiver
        var prefix: [String] = []
        if id == 8 { dir = c.root + "/absent" }
        if id == 9 {
            // A directory this user may not read: as root, run the command
            // as nobody (root reads everything); else take the rights away.
            if geteuid() == 0 {
                prefix = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            } else {
                chmod(dir, 0)
            }
        }
        defer { chmod(dir, 0o700) }
        let (status, out) = try Self.run(args, dir: dir, log: c.log("err\(id)"), prefix: prefix)
        #expect(status == want, "case \(id): \(out)")
        #expect(out.contains(message), "case \(id): \(out)")
        #expect(out.hasPrefix("remolo: "), "case \(id): \(out)")
        if id == 8 { #expect(!FileManager.default.fileExists(atPath: dir), "peers must create nothing") }
    }

    /// Pairing says whether the new sender may type, and records it:
    /// `remolo pair --keyboard deny`, then `remolo receive --pair` (default
    /// allow). The receiver notes when each sender was last seen, the one
    /// paired before sender-rights existed too (it stays point-only).
    @Test("3: pair --keyboard deny, receive --pair allows by default; sessions are noted as seen")
    func pairingKeyboardRight() throws {
        let c = try PairedConfigs(label: "pairkbd")
        defer { c.remove() }
        let old = try Identity.loadOrCreate(in: ConfigDirectory(path: c.sender)).publicKey
        let denied = c.root + "/tx-denied", allowed = c.root + "/tx-allowed"
        let deniedKey = try Identity.loadOrCreate(in: ConfigDirectory(path: denied)).publicKey
        let allowedKey = try Identity.loadOrCreate(in: ConfigDirectory(path: allowed)).publicKey
        let port = try freePort()

        let pair = try CLIProcess(["pair", "--listen", "127.0.0.1:\(port)", "--keyboard", "deny", "--timeout", "30"],
                                  configDir: c.receiver, log: c.log("pair"))
        let codeLine = try #require(pair.line("pairing code: "), "\(pair.output)")
        let code = String(codeLine.dropFirst("pairing code: ".count))
        let (st, out) = try Self.run(["send", "--to", "127.0.0.1:\(port)", "--pair", code, "--seconds", "0"],
                                     dir: denied, log: c.log("send-denied"))
        #expect(st == 0, "\(out)")
        #expect(pair.wait(upTo: 10) == 0, "\(pair.output)")
        let fp = deniedKey.fingerprint
        #expect(pair.output.contains("paired with sender \(fp): may not type (remolo peers allow-keyboard \(fp))"), "\(pair.output)")

        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--sink", "/dev/null", "--pair",
                                 "--no-announce", "--seconds", "60"], configDir: c.receiver, log: c.log("rx"))
        defer { if rx.process.isRunning { rx.signal(SIGTERM) }; _ = rx.wait() }
        let rxCode = try #require(rx.line("pairing code: "), "\(rx.output)")
        let (st2, out2) = try Self.run(["send", "--to", "127.0.0.1:\(port)", "--pair", String(rxCode.dropFirst("pairing code: ".count)),
                                        "--seconds", "0"], dir: allowed, log: c.log("send-allowed"))
        #expect(st2 == 0, "\(out2)")
        #expect(rx.line("paired with sender \(allowedKey.fingerprint): may type") != nil, "\(rx.output)")
        // The sender from before sender-rights still points.
        let (st3, out3) = try Self.run(["send", "--to", "127.0.0.1:\(port)", "--seconds", "0"], dir: c.sender, log: c.log("send-old"))
        #expect(st3 == 0, "\(out3)")
        #expect(eventually(10) { rx.output.components(separatedBy: "ended").count - 1 >= 2 }, "\(rx.output)")

        let s = try Self.senders(c.receiver, log: c.log("json"))
        let byKey = Dictionary(uniqueKeysWithValues: s.map { ($0["key"] as? String ?? "", $0) })
        #expect(byKey[deniedKey.hex]?["rights"] as? [String] == ["point"])
        #expect(byKey[deniedKey.hex]?["paired"] is String)
        #expect(byKey[allowedKey.hex]?["rights"] as? [String] == ["point", "type"])
        #expect(byKey[allowedKey.hex]?["seen"] is String, "the pairing session is seen")
        #expect(byKey[old.hex]?["rights"] as? [String] == ["point"])
        #expect(byKey[old.hex]?["seen"] is String, "\(s)")
        #expect(byKey[old.hex]?["paired"] is NSNull)
    }

    /// Eight `remolo peers` processes at once, each allowing its own sender:
    /// each re-reads sender-rights under the lock, so none undoes another.
    @Test("4: processes changing rights at once all keep their change")
    func concurrentProcesses() throws {
        let c = try PairedConfigs(label: "peersrace", paired: false)
        defer { c.remove() }
        let keys = (0..<8).map { _ in Identity.generate().publicKey }
        try PeerList.update(at: c.receiver + "/" + PeerList.authorizedSendersFile) { l in
            for (i, k) in keys.enumerated() { l.add(k, label: "sender \(i)") }
        }
        for round in 0..<3 {
            let procs = try keys.enumerated().map { i, k in
                try CLIProcess(["peers", round % 2 == 0 ? "allow-keyboard" : "deny-keyboard", k.fingerprint],
                               configDir: c.receiver, log: c.log("p\(round).\(i)"))
            }
            for (i, p) in procs.enumerated() { #expect(p.wait(upTo: 20) == 0, "\(i): \(p.output)") }
            let r = try SenderRights.load(from: c.receiver + "/" + SenderRights.fileName)
            #expect(r.entries.count == keys.count, "round \(round)")
            let want = round % 2 == 0
            #expect(keys.allSatisfy { r.mayType($0) == want }, "round \(round): a change was lost")
        }
    }

    /// `sudo remolo peers ...` on the service's directory, which belongs to
    /// the service's user: the files root rewrites (and the lock files it
    /// creates) stay that user's, or the service could no longer read them.
    @Test("6: root changing another user's directory leaves the files to that user",
          .enabled(if: geteuid() == 0, "needs root"))
    func rootKeepsOwner() throws {
        let c = try PairedConfigs(label: "peersowner")
        defer { c.remove() }
        let fp = try Identity.loadOrCreate(in: ConfigDirectory(path: c.sender)).publicKey.fingerprint
        let nobody: uid_t = 65534
        for f in try FileManager.default.contentsOfDirectory(atPath: c.receiver) {
            #expect(chown(c.receiver + "/" + f, nobody, gid_t(nobody)) == 0)
        }
        #expect(chown(c.receiver, nobody, gid_t(nobody)) == 0)
        for verb in ["allow-keyboard", "forget"] {
            let (st, out) = try Self.run(["peers", verb, fp], dir: c.receiver, log: c.log(verb))
            #expect(st == 0, "\(out)")
        }
        for f in try FileManager.default.contentsOfDirectory(atPath: c.receiver) {
            var info = stat()
            #expect(stat(c.receiver + "/" + f, &info) == 0)
            #expect(info.st_uid == nobody && info.st_gid == gid_t(nobody), "\(f) belongs to \(info.st_uid):\(info.st_gid)")
        }
        #expect(FileManager.default.fileExists(atPath: c.receiver + "/" + SenderRights.fileName + ".lock"))
    }

    @Test("5: remolo --help lists peers from the command table")
    func helpListsPeers() throws {
        let c = try PairedConfigs(label: "peershelp", paired: false)
        defer { c.remove() }
        let (st, out) = try Self.run(["--help"], dir: c.receiver, log: c.log("help"))
        #expect(st == 0)
        #expect(out.split(separator: "\n").contains { $0.hasPrefix("  peers ") && $0.contains("receiver:") }, "\(out)")
        let (st2, out2) = try Self.run(["peers", "--help"], dir: c.receiver, log: c.log("peershelp"))
        #expect(st2 == 0 && out2.hasPrefix("usage: remolo peers"), "\(out2)")
        for w in ["forget", "allow-keyboard", "deny-keyboard", "--json", "--service"] { #expect(out2.contains(w), "\(w)") }
    }
}
