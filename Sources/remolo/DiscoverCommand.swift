import Foundation
import RemoloSession
import RemoloSystem
import RemoloPlayout
import RemoloDiscovery

// remolo discover: the receivers announced on the LAN (DNS-SD through the
// Avahi daemon), and which of them this sender is paired with.

let discoverUsage = """
usage: remolo discover [--seconds N]

Lists the receivers that announce themselves on the LAN (\(RemoloService.type)
through avahi-daemon): name, address (an IPv6 link-local one with its zone,
as --to takes it), fingerprint, protocol version and interface, and marks the
ones in this sender's known-receivers.

  --seconds   how long to look (default \(Int(discoverSeconds)))

Without avahi-daemon there is nothing to ask: it says so and lists nothing.
"""

/// How long `discover`, and `send` without --to, look for receivers.
let discoverSeconds = 3.0

@Sendable func discoverCommand(_ args: [String]) {
    var seconds = discoverSeconds
    var o = Options(args, usage: discoverUsage)
    while let flag = o.next() {
        switch flag {
        case "--seconds": seconds = o.double(in: 0.1...600)
        default: o.unknown()
        }
    }
    let found: [DiscoveredReceiver]
    do {
        found = try Browser.browse(seconds: seconds)
    } catch {
        // No daemon is no failure: discovery is simply off on this machine.
        FileHandle.standardError.write(Data("remolo: note: \(error); nothing to list\n".utf8))
        if !error.daemonMissing { exit(1) }
        return
    }
    // Which ones are ours: an unreadable known-receivers file only costs
    // the marks, so it is a note here, not an error.
    var known = PeerList()
    do {
        known = try PeerList.load(from: ConfigDirectory.forUser().file(PeerList.knownReceiversFile))
    } catch {
        FileHandle.standardError.write(Data("remolo: note: \(error)\n".utf8))
    }
    for r in found {
        let mine = known.entries.first { r.matches(fingerprint: $0.key.fingerprint) }
        say("\(r)" + (mine.map { "  (known: \($0.label))" } ?? ""))
    }
    say(found.isEmpty ? "no receiver seen within \(formatSeconds(seconds)) s"
                      : "\(found.count) announcement\(found.count == 1 ? "" : "s") seen")
}

func formatSeconds(_ s: Double) -> String { s == s.rounded() ? String(Int(s)) : String(s) }
