import Foundation
import RemoloPlayout
import RemoloSession
import RemoloSystem
import RemoloTestSupport
import Testing

/// Two `remolo pair` processes on one config directory (two ports), each
/// paired by its own sender at the same moment: both senders must be in
/// `authorized-senders` afterwards. Each process read the file when it
/// started, so without the file lock the second save would drop the first
/// sender every time.
@Suite(.serialized) struct ConcurrentPairingCLITests {
    @Test("1: two processes pairing at once both end up in authorized-senders")
    func twoPairProcessesOneDirectory() throws {
        let c = try PairedConfigs(label: "twopair", paired: false)
        defer { c.remove() }
        let senderDirs = [c.sender, c.root + "/tx2"]
        let senderKeys = try senderDirs.map { try Identity.loadOrCreate(in: ConfigDirectory(path: $0)).publicKey }
        let ports = [try freePort(), try freePort()]
        let pairs = try (0..<2).map { i in
            try CLIProcess(["pair", "--listen", "127.0.0.1:\(ports[i])", "--timeout", "30"],
                           configDir: c.receiver, log: c.log("pair\(i)"))
        }
        let codes = try pairs.map { p -> String in
            let line = try #require(p.line("pairing code: "), "pair did not issue a code: \(p.output)")
            return String(line.dropFirst("pairing code: ".count))
        }
        // Both senders at once, each to its own `remolo pair`.
        let sends = try (0..<2).map { i in
            try CLIProcess(["send", "--to", "127.0.0.1:\(ports[i])", "--pair", codes[i], "--seconds", "0"],
                           configDir: senderDirs[i], log: c.log("send\(i)"))
        }
        for (i, s) in sends.enumerated() {
            #expect(s.wait(upTo: 15) == 0, "sender \(i): \(s.output)")
        }
        for (i, p) in pairs.enumerated() {
            #expect(p.wait(upTo: 10) == 0, "pair \(i): \(p.output)")
        }
        let list = try PeerList.load(from: c.receiver + "/" + PeerList.authorizedSendersFile)
        for (i, k) in senderKeys.enumerated() {
            #expect(list.contains(k), "sender \(i) is missing from authorized-senders: \(list.entries.map(\.key.hex))")
        }
        #expect(list.entries.count == 2, "\(list.entries.count) entries")
        // And each sender knows its receiver.
        for d in senderDirs {
            #expect(try PeerList.load(from: d + "/" + PeerList.knownReceiversFile).entries.count == 1)
        }
    }
}
