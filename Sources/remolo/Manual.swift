import Foundation
import Remolo

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

let manualSections: [ManSection] = [
    ManSection(title: "Exit status", paragraphs: [
        ["0 when the command did what it was asked; 1 when it could not (the",
         "message says why and how to fix it); 2 for a mistake in the command",
         "line (the message names the option and what it takes)."],
    ]),
    ManSection(title: "Environment", paragraphs: [
        ["REMOLO_CONFIG_DIR: the config directory (see remolo identity)."],
        ["REMOLO_WEB_ROOT: the phone page's files, instead of the ones installed",
         "with the binary (share/remolo/page beside the binary's directory, or",
         "the build's resource bundle)."],
    ]),
]

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
