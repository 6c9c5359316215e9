import Foundation
import RemoloPlayout
import RemoloService

// remolo(1) and the bash completion, made from the command table
// (Commands.swift) and what each command's --help prints. The help texts are
// asked of this very binary (`remolo NAME --help`, one process each), so the
// manual says exactly what --help says: there is no second copy to drift.

/// The NAME line's text after `remolo -`.
let manualWhatis = "a phone or another computer as this Linux machine's trackpad, smooth over Wi-Fi"

let manualDescription: [[String]] = [
    ["remolo moves this machine's pointer for paired senders: a phone's browser",
     "(the phone page, remolo receive --web) or another computer (remolo send).",
     "Movement travels as sealed UDP datagrams and is played on the receiver's",
     "clock instead of on arrival, so the cursor stays smooth over Wi-Fi."],
    ["Each command below prints the same text with --help."],
]

/// The documents the package ships (packaging/deb/build installs each
/// docs/NAME there); runtime messages name only these (DocsTests).
let shippedDocs = "/usr/share/doc/remolo"

/// The CONFIGURATION FILE section: every key of the key table.
var manualConfiguration: ManSection {
    var blocks: [ManBlock] = [
        .paragraph(["$REMOLO_CONFIG_DIR/config (the service's: /var/lib/remolo/config) holds",
                    "options of remolo receive, one key = value per line; the keys are its",
                    "long options without the dashes. Blank lines and lines starting with #",
                    "are skipped; a value runs to the end of the line and may be put in",
                    "double quotes; a flag takes true or false (yes or no). The command line",
                    "wins over the file. A mistake stops the receiver with the file, the",
                    "line and the fix."]),
    ]
    for k in ReceiveConfig.keys {
        blocks.append(.item(term: k.name + " = " + (k.value ?? "true|false"),
                            lines: [k.summary.prefix(1).uppercased() + k.summary.dropFirst() + ".",
                                    "Default: \(k.defaultValue)."]))
    }
    blocks.append(.paragraph(["For example, a service that serves the phone page with a certificate",
                              "from its own authority:"]))
    blocks.append(.example(ReceiveConfig.exampleFile.split(separator: "\n").map(String.init)))
    return ManSection(title: "Configuration file", blocks: blocks)
}

var manualSections: [ManSection] {[
    manualConfiguration,
    ManSection(title: "Files", blocks: [
        .paragraph(["In the config directory ($REMOLO_CONFIG_DIR, else",
                    "$XDG_CONFIG_HOME/remolo or ~/.config/remolo; the service's is",
                    "/var/lib/remolo, which is /var/lib/private/remolo):"]),
        .item(term: "config", lines: ["The receiver's options (CONFIGURATION FILE)."]),
        .item(term: "identity.key", lines: ["This host's key pair, made on first use (remolo identity)."]),
        .item(term: "authorized-senders", lines: ["The senders paired with this receiver (remolo peers)."]),
        .item(term: "sender-rights", lines: ["What each paired sender may do: point, or also type."]),
        .item(term: "known-receivers", lines: ["The receivers this sender paired with."]),
        .item(term: "pairing-lockout", lines: ["When pairing is allowed again after a wrong code."]),
        .item(term: "web-cert.pem, web-key.pem",
              lines: ["The phone page's self-signed certificate and its key (web)."]),
        .item(term: "web-ca.pem, web-ca-key.pem, web-leaf.pem, web-leaf-key.pem",
              lines: ["The receiver's certificate authority and the certificate it issued",
                      "the page (ca)."]),
        .item(term: "portal-restore-token", lines: ["The RemoteDesktop portal's permission, where the portal keeps one."]),
        .paragraph(["Written by remolo install (--system; --user puts the unit under",
                    "~/.config/systemd/user and the rest under ~/.local):"]),
        .item(term: ServiceFiles.systemUnitPath, lines: ["The service (the package's: \(ServiceFiles.packageUnitPath))."]),
        .item(term: ServiceFiles.udevRulePath, lines: ["Gives group \(ServiceFiles.uinputGroup) /dev/uinput."]),
        .item(term: ServiceFiles.modulesLoadPath, lines: ["Loads uinput at boot."]),
        .item(term: "/usr/local/share/remolo/page",
              lines: ["The phone page's files, found beside the binary's directory",
                      "(share/remolo/page; the package's: /usr/share/remolo/page)."]),
        .item(term: shippedDocs, lines: ["The documents SEE ALSO names (the package's)."]),
    ]),
    ManSection(title: "Exit status", blocks: [
        .paragraph(["Every command:"]),
        .item(term: "0", lines: ["It did what it was asked."]),
        .item(term: "1", lines: ["It could not: the message says why and how to fix it (a port in",
                                 "use, no receiver, no device, a code that expired)."]),
        .item(term: "2", lines: ["A mistake in the command line or the config file: the message",
                                 "names the option or the line and what it takes."]),
    ]),
    ManSection(title: "Environment", blocks: [
        .item(term: "REMOLO_CONFIG_DIR", lines: ["The config directory (FILES)."]),
        .item(term: "REMOLO_WEB_ROOT",
              lines: ["The phone page's files, instead of the ones installed with the",
                      "binary (share/remolo/page beside the binary's directory, or the",
                      "build's resource bundle)."]),
    ]),
    ManSection(title: "Examples", blocks: [
        .paragraph(["A phone as the trackpad: serve the page and pair it with the QR code",
                    "the receiver prints:"]),
        .example(["remolo receive --web 8443 --pair"]),
        .paragraph(["Another computer as the trackpad: pair once, then send (--to is",
                    "needed where avahi-daemon does not run on both machines):"]),
        .example(["remolo pair                       # on the receiver",
                  "remolo send --to HOST:7420 --pair CODE --seconds 0",
                  "remolo send --device auto --to HOST:7420"]),
        .paragraph(["The service, serving the phone page, paired from the journal:"]),
        .example(["sudo remolo install",
                  "sudo install -d -m 0700 /var/lib/private /var/lib/private/remolo",
                  "printf 'web = 8443\\npair = true\\n' |",
                  "  sudo tee /var/lib/private/remolo/config",
                  "sudo systemctl daemon-reload",
                  "sudo systemctl enable --now remolo",
                  "journalctl -u remolo     # the page's URL with the code"]),
        .paragraph(["Then take the pair line out of the file again. The whole flow is",
                    "in service.md (SEE ALSO)."]),
    ]),
    ManSection(title: "See also", blocks: [
        .paragraph(["systemctl(1), journalctl(1), systemd.exec(5), udev(7), avahi-daemon(8)."]),
        .paragraph(["In \(shippedDocs) (the package's) and the source's docs/:",
                    "service.md (the service and the phone under it), phone-page.md (the",
                    "page and what each browser allows), certificates.md (the page's",
                    "certificate), desktop.md (each desktop's output and what it asks),",
                    "drain-rate.md (--drain-hz), smoothness.md (what simulate scores),",
                    "cli.md (every option)."]),
    ]),
]}

struct ManualError: Error, CustomStringConvertible {
    let description: String
}

/// Every command's line in the table with its --help text.
func commandHelps() throws(ManualError) -> [CommandHelp] {
    guard let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
        throw ManualError(description: "cannot find this binary's path (/proc/self/exe) to ask each command for its --help")
    }
    var out: [CommandHelp] = []
    for c in commands {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: me)
        p.arguments = [c.name, "--help"]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch { throw ManualError(description: "cannot run \(me) \(c.name) --help: \(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        var text = String(decoding: data, as: UTF8.self)
        while text.hasSuffix("\n") { text.removeLast() }
        guard p.terminationStatus == 0, text.hasPrefix("usage: remolo \(c.name)") else {
            throw ManualError(description: "`remolo \(c.name) --help` printed no usage (exit status \(p.terminationStatus)); "
                              + "every command's --help must print its usage text and exit 0 (Options.next)")
        }
        out.append(CommandHelp(name: c.name, summary: c.summary, usage: text))
    }
    return out
}

/// The manual page (roff) and the bash completion for these commands.
func manualAndCompletion() throws(ManualError) -> (manPage: String, completion: String) {
    let helps = try commandHelps()
    let man = ManPage.render(version: Remolo.version, whatis: manualWhatis, description: manualDescription,
                             commands: helps, sections: manualSections)
    return (man, BashCompletion.render(commands: helps))
}
