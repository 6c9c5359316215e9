// Bash completion for remolo, made from the command table and each
// command's --help text (UsageText): the commands, each command's options
// and words, and for an option's value what its synopsis names (the choices
// of `circle|swipe|idle`, the scenarios of `S1..S7`, file names for FILE and
// PATH, directories for DIR).

/// What completing an option's value offers.
public struct ValueCompletion: Sendable, Equatable {
    public var words: [String]
    public var files = false
    public var directories = false

    public init(words: [String], files: Bool = false, directories: Bool = false) {
        self.words = words
        self.files = files
        self.directories = directories
    }
}

public enum BashCompletion {
    /// The value as a synopsis writes it (`FILE|none`, `[ADDR:]PORT`,
    /// `S1..S7`) read as what to offer: alternatives split at `|`; a word in
    /// lower case or digits is offered as it is; `X1..X7` is every name
    /// between; a metavariable naming FILE or PATH offers file names, DIR
    /// directories; anything else (a number to type, HOST:PORT) nothing.
    public static func completion(forValue value: String) -> ValueCompletion {
        var c = ValueCompletion(words: [])
        let plain = value.filter { $0 != "[" && $0 != "]" }
        for alt in plain.split(separator: "|").map(String.init) {
            if let range = expandRange(alt) {
                c.words += range
            } else if !alt.contains(where: \.isUppercase) {
                let literal = alt.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }
                let numericRange = alt.contains("-") && alt.allSatisfy { $0.isNumber || $0 == "-" || $0 == "." }
                if literal && !numericRange && !alt.isEmpty && !alt.hasPrefix("-") { c.words.append(alt) }
            } else {
                if alt.contains("FILE") || alt.contains("PATH") { c.files = true }
                if alt.contains("DIR") { c.directories = true }
            }
        }
        return c
    }

    /// `S1..S7` as S1 S2 ... S7 (same prefix, ascending, at most 100 names).
    static func expandRange(_ s: String) -> [String]? {
        let c = Array(s)
        guard let dots = c.indices.first(where: { c[$0] == "." && $0 + 1 < c.count && c[$0 + 1] == "." }) else { return nil }
        let parts = [String(c[..<dots]), String(c[(dots + 2)...])]
        func split(_ p: String) -> (String, Int)? {
            let digits = p.reversed().prefix(while: \.isNumber).count
            guard digits > 0, digits < p.count, let n = Int(p.suffix(digits)) else { return nil }
            return (String(p.dropLast(digits)), n)
        }
        guard let (a, lo) = split(parts[0]), let (b, hi) = split(parts[1]), a == b, lo <= hi, hi - lo < 100 else { return nil }
        return (lo...hi).map { "\(a)\($0)" }
    }

    /// The script: one function, `_remolo`, registered with `complete`.
    /// Needs nothing but bash 4 (compgen, compopt); bash-completion loads it
    /// by the command's name.
    public static func render(program: String = "remolo", commands: [CommandHelp],
                              topLevel: [String] = ["--help", "--version"]) -> String {
        let fn = "_" + program.map { $0.isLetter || $0.isNumber ? $0 : "_" }.map(String.init).joined()
        var s: [String] = [
            "# bash completion for \(program)(1), made from `\(program) --help` and each command's --help.",
            "\(fn)_reply() {",
            "    # $1: words to offer; $2: f (file names), d (directories) or nothing.",
            "    local IFS=$' \\t\\n'",
            "    COMPREPLY=($(compgen -W \"$1\" -- \"$cur\"))",
            "    if [ -n \"$2\" ]; then",
            "        local IFS=$'\\n'",
            "        COMPREPLY+=($(compgen -\"$2\" -- \"$cur\"))",
            "        compopt -o filenames 2>/dev/null",
            "    fi",
            "    return 0",
            "}",
            "",
            "\(fn)() {",
            "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}",
            "    if [ \"$COMP_CWORD\" -le 1 ]; then",
            "        \(fn)_reply \(quote((commands.map(\.name) + topLevel).joined(separator: " "))) ''",
            "        return 0",
            "    fi",
            "    case ${COMP_WORDS[1]} in",
        ]
        for c in commands {
            let u = UsageText(parsing: c.usage, program: program)
            s.append("    \(c.name))")
            let valued = u.options.filter { $0.value != nil }
            if !valued.isEmpty {
                s.append("        case $prev in")
                // Options whose values complete the same way share a branch.
                var groups: [(ValueCompletion, [String])] = []
                for o in valued {
                    let v = completion(forValue: o.value!)
                    if let k = groups.firstIndex(where: { $0.0 == v }) { groups[k].1.append(o.flag) } else { groups.append((v, [o.flag])) }
                }
                for (v, flags) in groups {
                    let kind = v.files ? "f" : v.directories ? "d" : ""
                    s.append("        \(flags.joined(separator: "|"))) \(fn)_reply \(quote(v.words.joined(separator: " "))) \(quote(kind)); return 0 ;;")
                }
                s.append("        esac")
            }
            let offered = u.words + u.options.map(\.flag) + (u.options.contains { $0.flag == "--help" } ? [] : ["--help"])
            s.append("        \(fn)_reply \(quote(offered.joined(separator: " "))) '' ;;")
        }
        s += [
            "    esac",
            "    return 0",
            "}",
            "complete -F \(fn) \(program)",
            "",
        ]
        return s.joined(separator: "\n")
    }

    /// A single-quoted shell word.
    static func quote(_ s: String) -> String {
        var out = "'"
        for ch in s { if ch == "'" { out += "'\\''" } else { out.append(ch) } }
        return out + "'"
    }
}
