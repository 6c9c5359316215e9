// A command's usage text (what `remolo COMMAND --help` prints) read back
// into its parts, so that the manual page and the shell completion are made
// from the very text --help shows and never from a second copy of it.
//
// The text's conventions (Sources/remolo/*Command.swift):
//
//     usage: remolo NAME [--flag VALUE] [--a|--b] WORD ...     synopsis, up to
//            remolo NAME ...                                   the first blank line
//
//     A paragraph at column 0 (filled in a manual page).
//
//       --flag      description at the description column,
//                   continued at the same column
//       --flag VALUE  description (or VALUE alone, the description below)
//       word        a word of the synopsis (a subcommand) described
//
//       Indented text that is not an item, kept as it is laid out.
//
// Nothing here fails: text that fits no rule is kept as text, so whatever a
// usage text holds reaches the manual page.

/// One option or word of a usage text, with its description.
public struct UsageItem: Sendable, Equatable {
    /// `--flag`, or a literal word of the synopsis (`forget`).
    public var term: String
    /// The value as the item's own line shows it (`--sink FILE`), else nil;
    /// `UsageText.options` has the synopsis's too.
    public var value: String?
    /// The description's lines, without the description column's indentation.
    public var lines: [String]
    /// True when every line starts at the description column: running text
    /// that a manual page may fill. False when some lines are indented
    /// further (a table inside the description): kept line for line.
    public var filled: Bool

    public init(term: String, value: String? = nil, lines: [String], filled: Bool = true) {
        self.term = term
        self.value = value
        self.lines = lines
        self.filled = filled
    }
}

/// A part of a usage text, in the order the text has them.
public enum UsageBlock: Sendable, Equatable {
    /// The synopsis lines without `usage: ` (continuations keep their
    /// alignment relative to it).
    case synopsis([String])
    /// Lines at column 0: running text.
    case paragraph([String])
    /// Indented lines that are not an item, as laid out.
    case verbatim([String])
    case item(UsageItem)
}

/// An option as the synopsis and the items name it.
public struct UsageOption: Sendable, Equatable {
    public var flag: String
    /// nil: a switch.
    public var value: String?

    public init(flag: String, value: String? = nil) {
        self.flag = flag
        self.value = value
    }
}

public struct UsageText: Sendable, Equatable {
    public var blocks: [UsageBlock]
    /// Every option, in the order of first mention (synopsis first, then
    /// the items that the synopsis leaves out).
    public var options: [UsageOption]
    /// The synopsis's literal words after `remolo NAME` (subcommands such as
    /// `peers forget`), in order, without repeats.
    public var words: [String]

    /// Reads `text`. `program` is the first word of the synopsis's forms.
    public init(parsing text: String, program: String = "remolo") {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var i = 0
        var blocks: [UsageBlock] = []

        // The synopsis: "usage: " and its continuation lines, up to a blank line.
        var synopsis: [(flags: [UsageOption], words: [String])] = []
        if let first = lines.first, first.hasPrefix("usage: ") {
            var syn: [String] = [String(first.dropFirst(7))]
            i = 1
            while i < lines.count, !lines[i].allSatisfy(\.isWhitespace), lines[i].hasPrefix(" ") {
                syn.append(String(lines[i].dropFirst(min(7, indentation(lines[i])))))
                i += 1
            }
            blocks.append(.synopsis(syn))
            for l in syn { synopsis.append(Self.scanSynopsis(l, program: program)) }
        }

        var options: [UsageOption] = []
        var words: [String] = []
        for s in synopsis {
            for o in s.flags {
                if let k = options.firstIndex(where: { $0.flag == o.flag }) {
                    if options[k].value == nil { options[k].value = o.value }
                } else {
                    options.append(o)
                }
            }
            for w in s.words where !words.contains(w) { words.append(w) }
        }

        while i < lines.count {
            let line = lines[i]
            if line.allSatisfy(\.isWhitespace) { i += 1; continue }
            let indent = indentation(line)
            if indent == 2, let head = Self.itemHead(line, options: options, words: words) {
                i += 1
                var body: [String] = []
                if let first = head.description { body.append(first) }
                // The item's further lines: deeper than the item itself. They
                // are running text when they share one column (the first
                // line's description may start further right, after a long
                // flag), a table when some go deeper.
                var raw: [String] = []
                while i < lines.count, !lines[i].allSatisfy(\.isWhitespace), indentation(lines[i]) > 2 {
                    raw.append(lines[i])
                    i += 1
                }
                let column = raw.map(indentation).min() ?? 0
                let filled = raw.allSatisfy { indentation($0) == column }
                body += raw.map { String($0.dropFirst(column)) }
                if head.flag.hasPrefix("--") {
                    if let k = options.firstIndex(where: { $0.flag == head.flag }) {
                        if options[k].value == nil { options[k].value = head.value }
                    } else {
                        options.append(UsageOption(flag: head.flag, value: head.value))
                    }
                }
                blocks.append(.item(UsageItem(term: head.flag, value: head.value, lines: body, filled: filled)))
                continue
            }
            // Text: a run of lines at this block's kind of indentation.
            var run: [String] = []
            let atZero = indent == 0
            while i < lines.count, !lines[i].allSatisfy(\.isWhitespace), (indentation(lines[i]) == 0) == atZero {
                if !atZero, indentation(lines[i]) == 2, Self.itemHead(lines[i], options: options, words: words) != nil { break }
                run.append(lines[i])
                i += 1
            }
            if atZero {
                blocks.append(.paragraph(run))
            } else {
                let common = run.map(indentation).min() ?? 0
                blocks.append(.verbatim(run.map { String($0.dropFirst(common)) }))
            }
        }
        self.blocks = blocks
        self.options = options
        self.words = words
    }

    /// The flags, values and literal words of one synopsis line.
    static func scanSynopsis(_ line: String, program: String) -> (flags: [UsageOption], words: [String]) {
        let c = Array(line)
        var flags: [UsageOption] = []
        var words: [String] = []
        var i = 0
        var leading = 0   // words at the start of a form: `remolo NAME`
        func isStart(_ k: Int) -> Bool { k == 0 || " [|".contains(c[k - 1]) }
        while i < c.count {
            if c[i] == "-", i + 1 < c.count, c[i + 1] == "-", isStart(i) {
                var j = i + 2
                while j < c.count, c[j].isLetter || c[j].isNumber || c[j] == "-" { j += 1 }
                let flag = String(c[i..<j])
                var value: String?
                // A value: one space, then something that is not another option.
                if j + 1 < c.count, c[j] == " ", c[j + 1] != "-", c[j + 1] != "|",
                   !(c[j + 1] == "[" && j + 2 < c.count && c[j + 2] == "-") {
                    var k = j + 1
                    var depth = 0
                    while k < c.count {
                        if c[k] == "[" { depth += 1 } else if c[k] == "]" {
                            if depth == 0 { break }
                            depth -= 1
                        } else if c[k] == " " && depth == 0 { break }
                        k += 1
                    }
                    value = String(c[(j + 1)..<k])
                    j = k
                }
                flags.append(UsageOption(flag: flag, value: value))
                i = j
                continue
            }
            if c[i].isLetter, isStart(i) {
                var j = i
                while j < c.count, !" []|".contains(c[j]) { j += 1 }
                let word = String(c[i..<j])
                if leading < 2 && (leading == 1 || word == program) {
                    leading += 1          // `remolo` and the command's name
                } else if word.first!.isLowercase, word.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "-" }) {
                    words.append(word)
                }
                i = j
                continue
            }
            i += 1
        }
        return (flags, words)
    }

    /// An item's first line: `  --flag[ VALUE][  description]` or
    /// `  word  description`.
    static func itemHead(_ line: String, options: [UsageOption], words: [String])
        -> (flag: String, value: String?, description: String?)? {
        let c = Array(line)
        guard c.count > 2 else { return nil }
        var j = 2
        while j < c.count, c[j] != " " { j += 1 }
        let term = String(c[2..<j])
        let isFlag = term.hasPrefix("--") && term.count > 2
            && term.dropFirst(2).allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" }
        guard isFlag || words.contains(term) else { return nil }
        var value: String?
        if isFlag, j + 1 < c.count, c[j] == " ", c[j + 1] != " " {
            // One space: a value if it reads as one (no lower-case letter, as
            // FILE or [ADDR:]PORT), else the description begins.
            var k = j + 1
            while k < c.count, c[k] != " " { k += 1 }
            let token = String(c[(j + 1)..<k])
            let known = options.first(where: { $0.flag == term })
            let takesValue = known.map { $0.value != nil } ?? true
            // The synopsis's own value (`allow|deny`) is one too, whatever its case.
            if takesValue, token == known?.value
                || (token.contains(where: \.isUppercase) && !token.contains(where: \.isLowercase)) {
                value = token
                j = k
            }
        } else if !isFlag, j + 1 < c.count, c[j] == " ", c[j + 1] != " " {
            return nil   // a word then one space: a sentence, not an item
        }
        var k = j
        while k < c.count, c[k] == " " { k += 1 }
        if k >= c.count { return (term, value, nil) }
        return (term, value, String(c[k...]))
    }
}

/// The number of leading spaces.
func indentation(_ line: String) -> Int {
    var n = 0
    for ch in line { if ch == " " { n += 1 } else { break } }
    return n
}
