import Foundation
import RemoloPlayout
import RemoloService
import RemoloTestSupport
import Testing

/// remolo(1) and the bash completion as `remolo install` writes them, held
/// against what the binary's --help prints: groff renders the page (as
/// `man` does) and every command's --help must be in it word for word; bash
/// runs the completion and must offer every option each --help lists.
@Suite(.serialized) struct ManualTests {
    /// The commands as `remolo --help` lists them (the command table).
    static func commandNames() throws -> [String] {
        let r = try remolo(["--help"])
        guard r.status == 0, let start = r.output.range(of: "commands:\n") else { throw CLIError("remolo --help: \(r.output)") }
        return r.output[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { $0.hasPrefix("  ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// `remolo NAME --help`.
    static func help(_ name: String) throws -> String {
        let r = try remolo([name, "--help"])
        guard r.status == 0 else { throw CLIError("remolo \(name) --help: \(r.output)") }
        return r.output
    }

    /// The options a --help text lists, found without UsageText: every
    /// `--flag` in the synopsis, and every one that starts an item line.
    static func listedOptions(_ help: String) -> Set<String> {
        var flags = Set<String>()
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        let synopsis = lines.prefix { !$0.allSatisfy(\.isWhitespace) }
        let flag = /(?:^|[\s\[|])(--[a-z0-9][a-z0-9-]*)/
        for l in synopsis { for m in String(l).matches(of: flag) { flags.insert(String(m.output.1)) } }
        let item = /^  (--[a-z0-9][a-z0-9-]*)(?:\s|$)/
        for l in lines.dropFirst(synopsis.count) { if let m = String(l).firstMatch(of: item) { flags.insert(String(m.output.1)) } }
        return flags
    }

    /// The files `remolo install --system --root` writes for the manual.
    static func installed() throws -> (root: String, man: String, completion: String) {
        let root = tempPath("manual")
        let r = try remolo(["install", "--system", "--root", root])
        guard r.status == 0 else { throw CLIError("install: \(r.output)") }
        return (root, root + ServiceFiles.manPagePath, root + ServiceFiles.completionPath)
    }

    static func words(_ s: String) -> [String] {
        s.split(whereSeparator: { (c: Character) in c == " " || c == "\n" || c == "\t" }).map(String.init)
    }

    @Test("1: the page, as groff renders it, holds every command's --help word for word, in the table's order")
    func manMatchesHelp() throws {
        guard let groff = which("groff") else { return skip("man", "no groff (Debian package groff-base; Tests/run installs it)") }
        let (root, man, _) = try Self.installed()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let page = try #require(read(man))
        #expect(page.hasPrefix(ServiceFiles.manMarker + "\n.TH REMOLO 1 "), "\(page.prefix(200))")
        let check = try run(groff, ["-man", "-ww", "-z", man])
        #expect(check.status == 0 && check.output.isEmpty, "groff warns: \(check.output.prefix(2000))")
        let r = try run(groff, ["-man", "-Tutf8", "-rLL=120n", "-P-cbou", man])
        #expect(r.status == 0)
        let rendered = Self.words(r.output)
        var from = 0
        for name in try Self.commandNames() {
            let help = Self.words(try Self.help(name)).dropFirst()   // "usage:"
            #expect(!help.isEmpty)
            var found: Int?
            var i = from
            while i + help.count <= rendered.count {
                if rendered[i] == help.first!, Array(rendered[i..<(i + help.count)]) == Array(help) { found = i; break }
                i += 1
            }
            #expect(found != nil, "remolo \(name) --help is not in the manual page word for word")
            if let f = found { from = f + help.count }
        }
    }

    @Test("2: the page's NAME line is what whatis reads; man -l shows it without warnings")
    func manReads() throws {
        guard let manTool = which("man") else { return skip("man -l", "no man (Debian package man-db)") }
        let (root, man, _) = try Self.installed()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let r = try run(manTool, ["--warnings", "-l", man], environment: ["MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"])
        #expect(r.status == 0, "\(r.output.prefix(500))")
        #expect(r.output.contains("remolo - a phone or another computer"), "\(r.output.prefix(500))")
        #expect(!r.output.contains("warning:"), "\(r.output.prefix(2000))")
    }

    @Test("5: at MANWIDTH=80 no line of man's output is wider than 80 columns; no option's value is glued to its description")
    func fitsEighty() throws {
        guard let manTool = which("man") else { return skip("man -l", "no man (Debian package man-db)") }
        let (root, man, _) = try Self.installed()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let r = try run(manTool, ["-l", man], environment: ["MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"])
        #expect(r.status == 0)
        let wide = r.output.split(separator: "\n").filter { $0.count > 80 }
        #expect(wide.isEmpty, "\(wide.count) lines over 80 columns:\n\(wide.joined(separator: "\n"))")
        for section in ["CONFIGURATION FILE", "FILES", "EXIT STATUS", "ENVIRONMENT", "EXAMPLES", "SEE ALSO"] {
            #expect(r.output.contains("\n" + section + "\n"), "no \(section) section")
        }
        // A value the synopsis names (`allow|deny`) is the item's, never
        // the first word of its description.
        for name in try Self.commandNames() {
            let u = UsageText(parsing: try Self.help(name))
            for case .item(let item) in u.blocks {
                guard let v = u.options.first(where: { $0.flag == item.term })?.value, let first = item.lines.first else { continue }
                #expect(!first.hasPrefix(v + " ") && first != v, "remolo \(name) \(item.term): '\(first)' starts with its value")
            }
        }
    }

    @Test("3: roff escapes", arguments: [
        (1, "--flag", "\\-\\-flag"), (2, "it's `x`", "it\\(aqs \\(gax\\(ga"), (3, "a\\b", "a\\eb"),
        (4, "~/.config", "\\(ti/.config"), (5, "^C", "\\(haC"), (6, "plain", "plain"),
    ] as [(Int, String, String)])
    func escapes(_ id: Int, _ text: String, _ roff: String) {
        #expect(ManPage.escape(text) == roff, "case \(id)")
    }

    @Test("4: a line starting with a dot is text, not a request")
    func leadingDot() {
        let page = ManPage.render(version: "1", whatis: "w", description: [[".config is a directory"]], commands: [])
        #expect(page.contains("\n\\&.config is a directory\n"))
    }
}

/// The completion script run by bash.
@Suite(.serialized) struct CompletionTests {
    /// What `_remolo` offers for the words typed so far (the last one being
    /// completed), one per line.
    static func complete(_ script: String, _ typed: [String]) throws -> [String] {
        guard let bash = which("bash") else { throw CLIError("no bash") }
        let words = typed.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let program = "source '\(script)' && COMP_WORDS=(\(words)) && COMP_CWORD=\(typed.count - 1) && _remolo && printf '%s\\n' \"${COMPREPLY[@]}\""
        let r = try run(bash, ["--norc", "--noprofile", "-c", program])
        guard r.status == 0 else { throw CLIError("bash: \(r.output)") }
        return r.output.split(separator: "\n").map(String.init)
    }

    @Test("values: what an option's value offers", arguments: [
        (1, "S1..S7", ["S1", "S2", "S3", "S4", "S5", "S6", "S7"], false, false),
        (2, "FILE|none", ["none"], true, false),
        (3, "PATH|auto", ["auto"], true, false),
        (4, "circle|swipe|idle", ["circle", "swipe", "idle"], false, false),
        (5, "[ADDR:]PORT", [], false, false),
        (6, "HOST:PORT", [], false, false),
        (7, "NAME|all", ["all"], false, false),
        (8, "60|120|144", ["60", "120", "144"], false, false),
        (9, "60-240", [], false, false),
        (10, "DIR", [], false, true),
        (11, "auto|HZ,...", ["auto"], false, false),
        (12, "WxH", [], false, false),
        (13, "N", [], false, false),
        (14, "uinput|x11|portal|auto", ["uinput", "x11", "portal", "auto"], false, false),
    ] as [(Int, String, [String], Bool, Bool)])
    func values(_ id: Int, _ value: String, _ words: [String], _ files: Bool, _ dirs: Bool) {
        #expect(BashCompletion.completion(forValue: value) == ValueCompletion(words: words, files: files, directories: dirs), "case \(id)")
    }

    @Test("typed words: what bash is offered", arguments: [
        (1, ["remolo", "rec"], ["receive"]),
        (2, ["remolo", "--v"], ["--version"]),
        (3, ["remolo", "demo", "--sc"], ["--scenario"]),
        (4, ["remolo", "demo", "--scenario", ""], ["S1", "S2", "S3", "S4", "S5", "S6", "S7"]),
        (5, ["remolo", "send", "--gesture", "s"], ["swipe"]),
        (6, ["remolo", "simulate", "--transport", ""], ["udp", "redundant", "tcp", "both", "all"]),
        (7, ["remolo", "receive", "--listen", ""], []),
        (8, ["remolo", "install", "--sys"], ["--system"]),
        (9, ["remolo", "version", ""], ["--help"]),
        (10, ["remolo", "nosuchcommand", ""], []),
    ] as [(Int, [String], [String])])
    func typed(_ id: Int, _ typed: [String], _ offered: [String]) throws {
        let (root, _, script) = try ManualTests.installed()
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(try Self.complete(script, typed) == offered, "case \(id)")
    }

    @Test("a FILE value offers file names")
    func files() throws {
        let (root, _, script) = try ManualTests.installed()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try "x".write(toFile: root + "/frames-file", atomically: false, encoding: .utf8)
        #expect(try Self.complete(script, ["remolo", "receive", "--sink", root + "/frames-f"]) == [root + "/frames-file"])
        #expect(try Self.complete(script, ["remolo", "demo", "--svg", root + "/frames-f"]) == [root + "/frames-file"])
    }

    @Test("every command in the table, and every option its --help lists, is offered")
    func everyOption() throws {
        let (root, _, script) = try ManualTests.installed()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let names = try ManualTests.commandNames()
        #expect(names.count >= 10)
        #expect(Set(try Self.complete(script, ["remolo", ""])) == Set(names + ["--help", "--version"]))
        for name in names {
            let listed = ManualTests.listedOptions(try ManualTests.help(name))
            let offered = Set(try Self.complete(script, ["remolo", name, "--"]))
            #expect(listed.isSubset(of: offered), "remolo \(name): --help lists \(listed.subtracting(offered).sorted()) but completion does not offer them")
            #expect(offered.contains("--help"))
        }
    }
}
