// remolo(1): the manual page, made from the command table and each
// command's --help text (UsageText), so that `man remolo` and --help say
// the same thing. The roff is plain man(7): NAME, SYNOPSIS, DESCRIPTION,
// one subsection per command, then the sections the caller adds.

/// A command as the manual shows it: its line in the command table and
/// what `remolo NAME --help` prints.
public struct CommandHelp: Sendable, Equatable {
    public var name: String
    public var summary: String
    public var usage: String

    public init(name: String, summary: String, usage: String) {
        self.name = name
        self.summary = summary
        self.usage = usage
    }
}

/// A part of a section the caller adds.
public enum ManBlock: Sendable, Equatable {
    /// Running text, filled.
    case paragraph([String])
    /// A term (bold, with any ` = VALUE` or ` VALUE` after it in italics)
    /// and its text, filled below it.
    case item(term: String, lines: [String])
    /// Lines kept as they are (a file, a command), indented.
    case example([String])
}

/// A section after COMMANDS: paragraphs, items and examples.
public struct ManSection: Sendable, Equatable {
    public var title: String
    public var blocks: [ManBlock]

    public init(title: String, blocks: [ManBlock]) {
        self.title = title
        self.blocks = blocks
    }

    /// Running text alone: paragraphs, each a list of lines.
    public init(title: String, paragraphs: [[String]]) {
        self.init(title: title, blocks: paragraphs.map { .paragraph($0) })
    }
}

public enum ManPage {
    /// The page's roff text.
    /// - Parameters:
    ///   - whatis: the NAME line's text after `remolo \-` (what `whatis` and
    ///     `apropos` show).
    ///   - description: DESCRIPTION's paragraphs.
    ///   - commands: in the table's order.
    ///   - sections: after COMMANDS (EXIT STATUS, FILES, ...).
    public static func render(program: String = "remolo", version: String, whatis: String,
                              description: [[String]], commands: [CommandHelp],
                              sections: [ManSection] = []) -> String {
        var r: [String] = [
            ".TH \(program.uppercased()) 1 \"\" \"\(program) \(version)\" \"User Commands\"",
            // No hyphenation and no justification: options, paths and
            // addresses must read exactly as they are typed.
            ".nh",
            ".ad l",
            ".SH NAME",
            "\(program) \\- \(escape(whatis))",
            ".SH SYNOPSIS",
            ".B \(program)",
            ".I COMMAND",
            ".RI [ options ]",
            ".br",
            ".B \(program)",
            ".I COMMAND",
            ".B \\-\\-help",
            ".SH DESCRIPTION",
        ]
        for (k, p) in description.enumerated() {
            if k > 0 { r.append(".PP") }
            r += p.map(text)
        }
        r.append(".SH COMMANDS")
        for c in commands {
            r.append(".SS \"\(program) \(c.name)\"")
            r.append(text(c.summary.prefix(1).uppercased() + c.summary.dropFirst() + "."))
            r += body(UsageText(parsing: c.usage, program: program), program: program)
        }
        for s in sections {
            r.append(".SH \(s.title.uppercased())")
            r += blocks(s.blocks)
        }
        return r.joined(separator: "\n") + "\n"
    }

    /// A section's blocks as roff.
    static func blocks(_ blocks: [ManBlock]) -> [String] {
        var r: [String] = []
        var afterItem = false
        for (k, b) in blocks.enumerated() {
            switch b {
            case .paragraph(let lines):
                if k > 0 { r.append(".PP") }
                r += lines.map(text)
                afterItem = false
            case .item(let term, let lines):
                if k > 0 && !afterItem { r.append(".PP") }
                r.append(".TP")
                r.append(tag(term))
                r += lines.isEmpty ? ["\\&"] : lines.map(text)
                afterItem = true
            case .example(let lines):
                if k > 0 { r.append(".PP") }
                r += [".RS 4", ".nf"] + lines.map(text) + [".fi", ".RE"]
                afterItem = false
            }
        }
        return r
    }

    /// An item's term: its first word in bold, the rest (` = VALUE`,
    /// ` VALUE`) in italics.
    static func tag(_ term: String) -> String {
        guard let space = term.firstIndex(of: " ") else { return bold(term) }
        return bold(String(term[..<space])) + "\\fI" + escape(String(term[space...])) + "\\fR"
    }

    /// One command's usage text as roff.
    static func body(_ u: UsageText, program: String) -> [String] {
        var r: [String] = []
        var afterItem = false
        for b in u.blocks {
            switch b {
            case .synopsis(let lines):
                r += [".PP", ".nf"] + lines.map { synopsisLine($0, program: program) } + [".fi"]
                afterItem = false
            case .paragraph(let lines):
                r.append(".PP")
                r += lines.map(text)
                afterItem = false
            case .verbatim(let lines):
                r += [".PP", ".RS 2", ".nf"] + lines.map(text) + [".fi", ".RE"]
                afterItem = false
            case .item(let item):
                if !afterItem { r.append(".PP") }
                r.append(".TP")
                var tag = bold(item.term)
                if let v = item.value { tag += " \\fI\(escape(v))\\fR" }
                r.append(tag)
                if item.lines.isEmpty {
                    r.append("\\&")
                } else if item.filled {
                    r += item.lines.map(text)
                } else {
                    r += [".nf"] + item.lines.map(text) + [".fi"]
                }
                afterItem = true
            }
        }
        return r
    }

    /// A synopsis line with the program, its command and every option in bold.
    static func synopsisLine(_ line: String, program: String) -> String {
        let c = Array(line)
        var out = ""
        var i = 0
        let lead = c.prefix(while: { $0 == " " }).count
        out += String(repeating: " ", count: lead)
        i = lead
        // `remolo NAME` at the start of a form.
        if line.dropFirst(lead).hasPrefix(program + " ") {
            var j = i + program.count + 1
            while j < c.count, c[j] != " " { j += 1 }
            out += bold(String(c[i..<j]))
            i = j
        }
        while i < c.count {
            if c[i] == "-", i + 1 < c.count, c[i + 1] == "-", i == 0 || " [|".contains(c[i - 1]) {
                var j = i + 2
                while j < c.count, c[j].isLetter || c[j].isNumber || c[j] == "-" { j += 1 }
                out += bold(String(c[i..<j]))
                i = j
                continue
            }
            out += escape(String(c[i]))
            i += 1
        }
        return out
    }

    static func bold(_ s: String) -> String { "\\fB" + escape(s) + "\\fR" }

    /// A line of text: escaped, and never read as a request.
    static func text(_ line: String) -> String {
        let e = escape(line)
        return e.hasPrefix(".") ? "\\&" + e : e
    }

    /// Characters roff would change or act on (groff_char(7)): the
    /// backslash, and the ASCII characters a UTF-8 terminal would otherwise
    /// see as typographic ones (so a flag or a path copied from `man` works).
    public static func escape(_ s: String) -> String {
        var out = ""
        for ch in s {
            switch ch {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            case "'": out += "\\(aq"
            case "`": out += "\\(ga"
            case "~": out += "\\(ti"
            case "^": out += "\\(ha"
            default: out.append(ch)
            }
        }
        return out
    }
}
