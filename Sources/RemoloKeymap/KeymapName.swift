// Which keyboard layout the receiver types text with (docs/keymap.md):
// `remolo receive --keymap LAYOUT[:VARIANT]`, else the system's, else `us`.

import Foundation

/// A keymap that cannot be named or compiled; the message says how to fix it.
public struct KeymapError: Error, CustomStringConvertible, Sendable, Equatable {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// One XKB layout and its variant, as `setxkbmap` and `/etc/default/keyboard`
/// name them ("de", variant "nodeadkeys"). An empty variant is the layout's
/// default one.
public struct KeymapName: Equatable, Sendable, CustomStringConvertible {
    public var layout: String
    public var variant: String

    public init(layout: String, variant: String = "") {
        self.layout = layout
        self.variant = variant
    }

    /// The US layout, the fallback when nothing names another.
    public static let us = KeymapName(layout: "us")

    /// `LAYOUT` or `LAYOUT:VARIANT`: "us", "de", "de:nodeadkeys", "fr:bepo".
    /// One layout only: text is typed in layout group 1, so a list would
    /// never use its other layouts.
    public init(parsing spec: String) throws(KeymapError) {
        let how = "write LAYOUT or LAYOUT:VARIANT, e.g. de or de:nodeadkeys"
        if spec.isEmpty {
            throw KeymapError("no keyboard layout given: \(how) (`localectl list-x11-keymap-layouts` lists the layouts)")
        }
        if spec.contains(",") {
            let first = spec.split(separator: ",").first.map(String.init) ?? "us"
            throw KeymapError("'\(spec)' names more than one layout: give only the one text is typed with, e.g. \(first)")
        }
        if spec.contains("(") {
            throw KeymapError("'\(spec)': \(how) (not the XKB form de(nodeadkeys))")
        }
        let parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if parts.count > 2 {
            throw KeymapError("'\(spec)' has more than one ':': \(how)")
        }
        let layout = parts[0]
        let variant = parts.count == 2 ? parts[1] : ""
        if layout.isEmpty {
            throw KeymapError("'\(spec)' has no layout before ':': \(how)")
        }
        if parts.count == 2 && variant.isEmpty {
            throw KeymapError("'\(spec)' has no variant after ':': \(how), or leave out the ':'")
        }
        try Self.check(layout, what: "layout", in: spec, how: how)
        try Self.check(variant, what: "variant", in: spec, how: how)
        self.init(layout: layout, variant: variant)
    }

    /// XKB names are letters, digits, '_', '-' and '.' (xkb-data's base.lst);
    /// anything else (a space, '/', '+', '|') is refused before it reaches
    /// the rules, where it would mean something else.
    private static func check(_ name: String, what: String, in spec: String, how: String) throws(KeymapError) {
        for c in name.unicodeScalars {
            let ok = (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9")
                || c == "_" || c == "-" || c == "."
            if !ok {
                let shown = c == " " ? "a space" : c.properties.generalCategory == .control ? "a control character" : "'\(c)'"
                throw KeymapError("'\(spec)': the \(what) has \(shown); XKB names are letters, digits, '_', '-' and '.': \(how)")
            }
        }
        if name.hasPrefix(".") {
            throw KeymapError("'\(spec)': the \(what) starts with '.': \(how)")
        }
    }

    public var description: String { variant.isEmpty ? layout : "\(layout):\(variant)" }

    /// The system's keyboard layout, from XKBLAYOUT and XKBVARIANT in
    /// `file` (Debian's keyboard-configuration, the file `localectl
    /// set-x11-keymap` writes): the first layout of a list, with the first
    /// variant. When the file is missing, unreadable or names no valid
    /// layout, `us`; `source` says which it was and why.
    public static func systemDefault(file: String = "/etc/default/keyboard") -> (name: KeymapName, source: String) {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            return (.us, "the default, us (\(file): \(reason(file)))")
        }
        let values = shellAssignments(text)
        guard let layouts = values["XKBLAYOUT"], !layouts.isEmpty else {
            return (.us, "the default, us (\(file) sets no XKBLAYOUT)")
        }
        let layout = String(layouts.split(separator: ",", omittingEmptySubsequences: false)[0])
        let variant = (values["XKBVARIANT"] ?? "").split(separator: ",", omittingEmptySubsequences: false)
            .first.map(String.init) ?? ""
        let spec = variant.isEmpty ? layout : "\(layout):\(variant)"
        do {
            let name = try KeymapName(parsing: spec)
            return (name, file)
        } catch {
            return (.us, "the default, us (\(file): XKBLAYOUT/XKBVARIANT give '\(spec)': \(error.message))")
        }
    }

    private static func reason(_ file: String) -> String {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        if !fm.fileExists(atPath: file, isDirectory: &isDir) { return "no such file" }
        if isDir.boolValue { return "a directory, not a file" }
        if !fm.isReadableFile(atPath: file) { return "cannot read it: permission denied" }
        return "cannot read it as UTF-8 text"
    }

    /// `NAME=value` lines as a POSIX shell sourcing the file would read the
    /// simple forms that file uses: `export` allowed, value unquoted or in
    /// single or double quotes, `#` comments. A later line wins.
    static func shellAssignments(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for raw in text.split(whereSeparator: \.isNewline) {
            var line = Substring(raw.drop(while: { $0 == " " || $0 == "\t" }))
            if line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") { line = line.dropFirst(7).drop(while: { $0 == " " }) }
            guard let eq = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<eq])
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { continue }
            var rest = line[line.index(after: eq)...]
            var value = ""
            // Quoted and unquoted pieces join, as in the shell ("de"'' is de);
            // an unquoted space or '#' ends the value.
            while let c = rest.first, c != " ", c != "\t" {
                if c == "\"" || c == "'" {
                    let body = rest.dropFirst()
                    guard let close = body.firstIndex(of: c) else { value += body; rest = ""; break }
                    value += body[..<close]
                    rest = body[body.index(after: close)...]
                } else {
                    value.append(c)
                    rest = rest.dropFirst()
                }
            }
            out[key] = value
        }
        return out
    }
}
