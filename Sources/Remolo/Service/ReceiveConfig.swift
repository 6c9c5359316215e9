// The receiver's config file: `$REMOLO_CONFIG_DIR/config`, one `key = value`
// per line, the keys being `remolo receive`'s long options without `--`. It
// becomes argument words put before the command line's, so one parser checks
// both and the command line wins (a later value replaces an earlier one).

/// A mistake in the config file: which line, what is wrong, how to fix it.
public struct ReceiveConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    public let path: String
    public let line: Int
    public let message: String

    public var description: String { "\(path):\(line): \(message)" }
}

public enum ReceiveConfig {
    /// The file's name inside the config directory.
    public static let fileName = "config"

    /// One key: an option of `remolo receive` that takes a value, or a flag
    /// (`true`/`false`, `yes`/`no`).
    public struct Key: Sendable, Equatable {
        public let name: String
        public let takesValue: Bool
        /// What docs/service.md's keys table says about it.
        public let example: String
    }

    /// Every key, in the order of `remolo receive --help`.
    public static let keys: [Key] = [
        Key(name: "listen", takesValue: true, example: "[::]:7420"),
        Key(name: "stats", takesValue: true, example: "10"),
        Key(name: "stats-json", takesValue: false, example: "true"),
        Key(name: "pair", takesValue: false, example: "false"),
        Key(name: "keyboard", takesValue: true, example: "allow"),
        Key(name: "rt", takesValue: true, example: "50"),
        Key(name: "output", takesValue: true, example: "auto"),
        Key(name: "name", takesValue: true, example: "Remolo pointer"),
        Key(name: "sink", takesValue: true, example: "/var/lib/remolo/frames"),
        Key(name: "seconds", takesValue: true, example: "3600"),
        Key(name: "record-arrivals", takesValue: true, example: "/var/lib/remolo/arrivals.trace"),
        Key(name: "keymap", takesValue: true, example: "de:nodeadkeys"),
        Key(name: "no-keyboard", takesValue: false, example: "false"),
        Key(name: "no-announce", takesValue: false, example: "false"),
        Key(name: "drain-hz", takesValue: true, example: "576"),
    ]

    private static var keyList: String { keys.map(\.name).joined(separator: ", ") }

    /// The file's text as argument words for `remolo receive`, e.g.
    /// `listen = :7420` and `stats-json = true` give
    /// `["--listen", ":7420", "--stats-json"]`.
    ///
    /// Blank lines and lines whose first non-blank character is `#` are
    /// skipped. A value may be put in double quotes to keep blanks at its
    /// ends. `#` after a value is part of the value. `path` only names the
    /// file in errors.
    public static func arguments(parsing text: String, path: String) throws(ReceiveConfigError) -> [String] {
        var words: [String] = []
        var seen: [String: Int] = [:]
        var number = 0
        // "\r\n" is one Character in Swift, so it is a separator of its own.
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            let line = trimmed(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            func error(_ m: String) -> ReceiveConfigError { ReceiveConfigError(path: path, line: number, message: m) }

            guard let eq = line.firstIndex(of: "=") else {
                let bare = line.hasPrefix("--") ? String(line.dropFirst(2)) : line
                if let k = keys.first(where: { $0.name == bare }) {
                    throw error("'\(line)' needs a value: write `\(k.name) = \(k.example)`")
                }
                throw error("expected `key = value`, not '\(line)'; e.g. `listen = [::]:7420`, "
                            + "or put `#` in front to make it a comment")
            }
            var name = trimmed(line[..<eq])
            var value = trimmed(line[line.index(after: eq)...])
            if name.isEmpty {
                throw error("no key before '='; write `key = value` with one of: \(keyList)")
            }
            if name.hasPrefix("-") {
                let plain = String(name.drop(while: { $0 == "-" }))
                throw error("write the key without dashes: `\(plain) = \(value)`")
            }
            guard let key = keys.first(where: { $0.name == name }) else {
                throw error("unknown key '\(name)'; the keys are the long options of `remolo receive` "
                            + "without --: \(keyList)")
            }
            name = key.name
            if let first = seen[name] {
                throw error("'\(name)' is already set on line \(first); keep one of the two lines")
            }
            seen[name] = number
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            } else if value.hasPrefix("\"") || value.hasSuffix("\"") {
                throw error("unbalanced quote in '\(value)'; quote the whole value or none of it")
            }
            if key.takesValue {
                guard !value.isEmpty else { throw error("'\(name)' needs a value, e.g. `\(name) = \(key.example)`") }
                words += ["--" + name, value]
            } else {
                switch value.lowercased() {
                case "true", "yes": words.append("--" + name)
                case "false", "no": break
                default: throw error("'\(name)' is a flag: write `\(name) = true` or `\(name) = false`, not '\(value)'")
                }
            }
        }
        return words
    }

    private static func trimmed(_ s: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(s.drop(while: blank).reversed().drop(while: blank).reversed())
    }

    private static func trimmed(_ s: String) -> String { trimmed(Substring(s)) }
}
