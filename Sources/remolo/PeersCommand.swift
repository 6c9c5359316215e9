import Foundation
import Glibc
import RemoloSession
import RemoloReceiver

// remolo peers: the receiver's paired senders and what each may do; forget
// one, allow or deny it typing.

let peersUsage = """
usage: remolo peers [--json] [--service]
       remolo peers forget FINGERPRINT [--service]
       remolo peers allow-keyboard FINGERPRINT [--service]
       remolo peers deny-keyboard FINGERPRINT [--service]

Lists the senders paired with this receiver: fingerprint, name, when it
paired, when a session of it was last confirmed, and its rights: "point"
(move the pointer, click, scroll) or "point, type" (also keys and text).
A sender paired by a version before typing existed may point only, until
allowed.

  forget          remove the sender: it must pair again to point or type
  allow-keyboard  let the sender type
  deny-keyboard   let the sender point only
  --json          list as one JSON object
  --service       use the service's directory, \(ConfigDirectory.serviceDefault)
                  (as root: sudo remolo peers --service)

FINGERPRINT as `remolo identity` prints it on the sender, or as the
receiver's "paired with sender" line shows it: case, hyphens and blanks are
ignored, and a prefix of at least \(PublicKey.minimumFingerprintPrefix) symbols is enough when only one
sender's fingerprint starts with it. A running receiver follows a change
from the sender's next connection; a session already open goes on until it
ends (restart the receiver to end it now).

Files: authorized-senders and sender-rights in the config directory
($REMOLO_CONFIG_DIR, else $XDG_CONFIG_HOME/remolo or ~/.config/remolo).
"""

@Sendable func peersCommand(_ args: [String]) {
    var o = Options(args, usage: peersUsage)
    var json = false
    var service = false
    var action: (verb: String, fingerprint: String)?
    while let word = o.next() {
        switch word {
        case "--json": json = true
        case "--service": service = true
        case "forget", "allow-keyboard", "deny-keyboard":
            if let a = action { fail("one change at a time: '\(a.verb)' and '\(word)'\n\(peersUsage)") }
            action = (word, o.operand("the sender's fingerprint (see `remolo peers`)"))
        default: o.unknown()
        }
    }
    if json && action != nil { fail("--json goes with the list, not with \(action!.verb)") }
    let dir = service ? ConfigDirectory.forService() : ConfigDirectory.forUser()
    checkPeersDirectory(dir, writing: action != nil)
    let sendersPath = dir.file(PeerList.authorizedSendersFile)
    let rightsPath = dir.file(SenderRights.fileName)
    let senders: PeerList, rights: SenderRights
    do {
        senders = try PeerList.load(from: sendersPath)
        rights = try SenderRights.load(from: rightsPath)
    } catch {
        fail("\(error)", code: 1)
    }
    guard let (verb, typed) = action else {
        say(json ? peersJSON(senders, rights, dir: dir) : peersTable(senders, rights))
        return
    }
    let key: PublicKey
    switch PublicKey.matching(typed, in: senders.entries.map(\.key)) {
    case .success(let k): key = k
    case .failure(let e): fail("\(e) (in \(sendersPath))", code: 1)
    }
    let name = senders.entries.first { $0.key == key }?.label ?? ""
    let who = "sender \(key.fingerprint)" + (name.isEmpty ? "" : " (\(name))")
    do throws(ConfigError) {
        switch verb {
        case "forget":
            // authorized-senders first: from then on it can no longer connect.
            let left = try PeerList.update(at: sendersPath) { $0.remove(key) }
            if access(rightsPath, F_OK) == 0 { // none: nothing to remove
                try SenderRights.update(at: rightsPath) { r in
                    r.remove(key)
                    r.keepOnly { left.contains($0) }
                }
            }
            // What its sessions measured of its networks goes with it.
            DelayMemory(in: dir).forget(sender: key)
            say("forgot \(who): it must pair again to point or type")
        case "allow-keyboard":
            try SenderRights.update(at: rightsPath) { $0.modify(key) { $0.keyboard = .allow } }
            say("\(who) may type, from its next session")
        default:
            try SenderRights.update(at: rightsPath) { $0.modify(key) { $0.keyboard = .deny } }
            say("\(who) may point but not type, from its next session")
        }
    } catch {
        fail("\(error)", code: 1)
    }
}

/// Stops with a clear message when the directory is missing or not ours to
/// read (or change): nothing is created here, a mistyped directory must not
/// look like a receiver without senders.
private func checkPeersDirectory(_ dir: ConfigDirectory, writing: Bool) {
    var st = stat()
    guard stat(dir.path, &st) == 0 else {
        let e = errno
        if e == ENOENT {
            fail("no config directory at \(dir.path): nothing was paired here. A receiver run as a service keeps "
                 + "its senders in \(ConfigDirectory.serviceDefault) (sudo remolo peers --service); otherwise set "
                 + "\(ConfigDirectory.environmentOverride) to the receiver's directory", code: 1)
        }
        fail("\(dir.path): \(String(cString: strerror(e))); \(permissionHint(dir, st: nil, code: e))", code: 1)
    }
    guard (st.st_mode & S_IFMT) == S_IFDIR else {
        fail("\(dir.path) is not a directory; set \(ConfigDirectory.environmentOverride) to the receiver's config directory", code: 1)
    }
    if access(dir.path, writing ? (R_OK | W_OK | X_OK) : (R_OK | X_OK)) != 0 {
        let e = errno
        fail("\(dir.path): \(String(cString: strerror(e))); \(permissionHint(dir, st: st, code: e))", code: 1)
    }
}

/// Who may read the directory, and how to run as them. Changing its owner
/// would lock the receiver that uses it out, so that is never suggested.
private func permissionHint(_ dir: ConfigDirectory, st: stat?, code: Int32) -> String {
    guard code == EACCES || code == EPERM else { return "check the path, or set \(ConfigDirectory.environmentOverride)" }
    var owner = "its owner"
    if let st, let pw = getpwuid(st.st_uid) { owner = "user \(String(cString: pw.pointee.pw_name))" }
    else if let st { owner = "uid \(st.st_uid)" }
    return "it belongs to \(owner): run this as that user, or with sudo (keeping \(ConfigDirectory.environmentOverride): "
        + "sudo \(ConfigDirectory.environmentOverride)='\(dir.path)' remolo peers ...)"
}

/// One row per paired sender, in the order of authorized-senders.
func peersTable(_ senders: PeerList, _ rights: SenderRights) -> String {
    guard !senders.entries.isEmpty else {
        return "no sender is paired: pair one with `remolo pair` (or `remolo receive --pair`)"
    }
    let local = DateFormatter()
    local.dateFormat = "yyyy-MM-dd HH:mm"
    let rows = senders.entries.map { e -> [String] in
        let r = rights[e.key]
        return [e.key.fingerprint, e.label.isEmpty ? "-" : e.label,
                r?.paired.map { local.string(from: $0) } ?? "-",
                r?.seen.map { local.string(from: $0) } ?? "never",
                rights.mayType(e.key) ? "point, type" : "point"]
    }
    let header = ["fingerprint", "name", "paired", "last seen", "rights"]
    var widths = header.map(\.count)
    for row in rows { for (i, c) in row.enumerated() { widths[i] = max(widths[i], c.count) } }
    let line = { (cells: [String]) -> String in
        cells.enumerated().map { i, c in i == cells.count - 1 ? c : c.padding(toLength: widths[i] + 2, withPad: " ", startingAt: 0) }
            .joined()
    }
    return ([line(header)] + rows.map(line)).joined(separator: "\n")
}

/// `{"directory": ..., "senders": [{"fingerprint", "key", "name", "paired",
/// "seen", "rights"}]}`: times in ISO 8601 UTC or null, rights ["point"] or
/// ["point", "type"].
func peersJSON(_ senders: PeerList, _ rights: SenderRights, dir: ConfigDirectory) -> String {
    func str(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
    let items = senders.entries.map { e -> String in
        let r = rights[e.key]
        let time = { (d: Date?) in d.map { str(SenderRights.formatTime($0)) } ?? "null" }
        return "{\"fingerprint\": \(str(e.key.fingerprint)), \"key\": \(str(e.key.hex)), \"name\": \(str(e.label)), "
            + "\"paired\": \(time(r?.paired)), \"seen\": \(time(r?.seen)), "
            + "\"rights\": \(rights.mayType(e.key) ? "[\"point\", \"type\"]" : "[\"point\"]")}"
    }
    return "{\"directory\": \(str(dir.path)), \"senders\": [" + items.joined(separator: ", ") + "]}"
}
