import Foundation
import Testing
@testable import RemoloPlayout
@testable import RemoloService

/// `$REMOLO_CONFIG_DIR/config` as argument words, and its mistakes named by
/// line with how to fix them.
struct ReceiveConfigTests {
    @Test("1: lines become the words of `remolo receive`", arguments: [
        (1, "", []),
        (2, "# only a comment\n\n   \n", []),
        (3, "listen = 0.0.0.0:7420", ["--listen", "0.0.0.0:7420"]),
        (4, "  stats=10  \n", ["--stats", "10"]),
        (5, "stats-json = true\npair = no", ["--stats-json"]),
        (6, "pair = YES\nstats-json = false", ["--pair"]),
        (7, "name = Living room TV", ["--name", "Living room TV"]),
        (8, "name = \"  padded  \"", ["--name", "  padded  "]),
        (9, "rt = 50\r\nseconds = 3600\r\n", ["--rt", "50", "--seconds", "3600"]),
        (10, "sink = /var/lib/remolo/frames\nrecord-arrivals = /var/lib/remolo/a.trace",
         ["--sink", "/var/lib/remolo/frames", "--record-arrivals", "/var/lib/remolo/a.trace"]),
        (11, "\t# indented comment\nname = a=b # not a comment", ["--name", "a=b # not a comment"]),
        (12, "listen = [::]:7420", ["--listen", "[::]:7420"]),
        (13, "web = 8443\nca = true\nno-redundancy = yes", ["--web", "8443", "--ca", "--no-redundancy"]),
        (14, "web = 127.0.0.1:8443\nca = false", ["--web", "127.0.0.1:8443"]),
    ] as [(Int, String, [String])])
    func parses(_ id: Int, _ text: String, _ words: [String]) throws {
        #expect(try ReceiveConfig.arguments(parsing: text, path: "config") == words)
    }

    @Test("2: mistakes name the line and say how to fix them", arguments: [
        (1, "colour = blue", 1, "unknown key 'colour'"),
        (2, "# fine\nlisten 0.0.0.0:7420", 2, "expected `key = value`"),
        (3, "\n\n--listen = :7420", 3, "without dashes: `listen = :7420`"),
        (4, "listen = :1\nlisten = :2", 2, "already set on line 1"),
        (5, "stats =", 1, "'stats' needs a value, e.g. `stats = 10`"),
        (6, "stats-json = maybe", 1, "write `stats-json = true` or `stats-json = false`"),
        (7, "stats-json", 1, "needs a value: write `stats-json = true`"),
        (8, "= 7420", 1, "no key before '='"),
        (9, "name = \"open", 1, "unbalanced quote"),
        (10, "pair = true\nrt = 5\nLISTEN = :1", 3, "unknown key 'LISTEN'"),
    ] as [(Int, String, Int, String)])
    func errors(_ id: Int, _ text: String, _ line: Int, _ says: String) {
        do {
            let words = try ReceiveConfig.arguments(parsing: text, path: "/etc/x/config")
            Issue.record("case \(id) parsed as \(words)")
        } catch {
            #expect(error.line == line)
            #expect(error.message.contains(says), "\(error)")
            #expect(error.description.hasPrefix("/etc/x/config:\(line): "))
        }
    }

    @Test("3: an unknown key's error lists every key")
    func unknownListsKeys() {
        do {
            _ = try ReceiveConfig.arguments(parsing: "port = 1", path: "config")
        } catch {
            for k in ReceiveConfig.keys { #expect(error.message.contains(k.name)) }
        }
    }
}
