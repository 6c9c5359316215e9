import Foundation
import RemoloPlayout
import RemoloKeymap
import Testing

@Suite struct KeymapNameTests {
    struct ParseCase: Sendable, CustomTestStringConvertible {
        let n: Int
        let spec: String
        let layout: String?    // nil: refused
        let variant: String
        let says: String       // part of the refusal
        var testDescription: String { "\(n): \(spec.debugDescription)" }
    }

    static let parseCases: [ParseCase] = [
        ParseCase(n: 1, spec: "us", layout: "us", variant: "", says: ""),
        ParseCase(n: 2, spec: "de", layout: "de", variant: "", says: ""),
        ParseCase(n: 3, spec: "de:nodeadkeys", layout: "de", variant: "nodeadkeys", says: ""),
        ParseCase(n: 4, spec: "fr:bepo", layout: "fr", variant: "bepo", says: ""),
        ParseCase(n: 5, spec: "us:dvorak-intl", layout: "us", variant: "dvorak-intl", says: ""),
        ParseCase(n: 6, spec: "gb:mac_intl", layout: "gb", variant: "mac_intl", says: ""),
        ParseCase(n: 7, spec: "", layout: nil, variant: "", says: "no keyboard layout given"),
        ParseCase(n: 8, spec: "us,de", layout: nil, variant: "", says: "more than one layout"),
        ParseCase(n: 9, spec: "de:nodeadkeys,us", layout: nil, variant: "", says: "more than one layout"),
        ParseCase(n: 10, spec: "de nodeadkeys", layout: nil, variant: "", says: "has a space"),
        ParseCase(n: 11, spec: " us", layout: nil, variant: "", says: "has a space"),
        ParseCase(n: 12, spec: "us ", layout: nil, variant: "", says: "has a space"),
        ParseCase(n: 13, spec: "de:", layout: nil, variant: "", says: "no variant after ':'"),
        ParseCase(n: 14, spec: ":bepo", layout: nil, variant: "", says: "no layout before ':'"),
        ParseCase(n: 15, spec: "de:a:b", layout: nil, variant: "", says: "more than one ':'"),
        ParseCase(n: 16, spec: "de(nodeadkeys)", layout: nil, variant: "", says: "not the XKB form"),
        ParseCase(n: 17, spec: "../us", layout: nil, variant: "", says: "'/'"),
        ParseCase(n: 18, spec: "us+de", layout: nil, variant: "", says: "'+'"),
        ParseCase(n: 19, spec: "us\t", layout: nil, variant: "", says: "a control character"),
        ParseCase(n: 20, spec: ".hidden", layout: nil, variant: "", says: "starts with '.'"),
    ]

    @Test(arguments: parseCases) func parsing(_ c: ParseCase) {
        do {
            let name = try KeymapName(parsing: c.spec)
            #expect(c.layout != nil, "\(c.n): accepted as \(name)")
            #expect(name.layout == c.layout && name.variant == c.variant, "\(c.n): \(name)")
            #expect(name.description == c.spec, "\(c.n)")
        } catch {
            #expect(c.layout == nil, "\(c.n): refused: \(error)")
            #expect(error.message.contains(c.says), "\(c.n): \(error.message)")
            #expect(error.message.contains("LAYOUT") || error.message.contains("e.g."), "\(c.n): says how: \(error.message)")
        }
    }

    struct FileCase: Sendable, CustomTestStringConvertible {
        let n: Int
        let file: String?      // nil: no such file
        let name: String       // what systemDefault gives
        let fromFile: Bool     // source is the file itself, not the default
        let says: String       // part of `source` when not from the file
        var testDescription: String { "\(n)" }
    }

    // What Debian's keyboard-configuration writes, for case 3.
    static let debian = """
        # KEYBOARD CONFIGURATION FILE

        # Consult the keyboard(5) manual page.

        XKBMODEL="pc105"
        XKBLAYOUT="de"
        XKBVARIANT="nodeadkeys"
        XKBOPTIONS="compose:ralt"

        BACKSPACE="guess"

        """

    static let fileCases: [FileCase] = [
        FileCase(n: 1, file: "XKBLAYOUT=\"de\"\nXKBVARIANT=\"nodeadkeys\"\n", name: "de:nodeadkeys", fromFile: true, says: ""),
        FileCase(n: 2, file: "XKBLAYOUT=fr\nXKBVARIANT=bepo\n", name: "fr:bepo", fromFile: true, says: ""),
        FileCase(n: 3, file: debian, name: "de:nodeadkeys", fromFile: true, says: ""),
        FileCase(n: 4, file: "XKBLAYOUT=\"us,de\"\nXKBVARIANT=\",nodeadkeys\"\n", name: "us", fromFile: true, says: ""),
        FileCase(n: 5, file: "XKBLAYOUT=\"de,us\"\nXKBVARIANT=\"nodeadkeys,\"\n", name: "de:nodeadkeys", fromFile: true, says: ""),
        FileCase(n: 6, file: "# XKBLAYOUT=\"de\"\nXKBMODEL=pc105\n", name: "us", fromFile: false, says: "sets no XKBLAYOUT"),
        FileCase(n: 7, file: nil, name: "us", fromFile: false, says: "no such file"),
        FileCase(n: 8, file: "XKBLAYOUT='ch'\nXKBVARIANT='fr'\n", name: "ch:fr", fromFile: true, says: ""),
        FileCase(n: 9, file: "XKBLAYOUT=\"\"\n", name: "us", fromFile: false, says: "sets no XKBLAYOUT"),
        FileCase(n: 10, file: "XKBLAYOUT=\"a b\"\n", name: "us", fromFile: false, says: "has a space"),
        FileCase(n: 11, file: "export XKBLAYOUT=gb\n", name: "gb", fromFile: true, says: ""),
        FileCase(n: 12, file: "XKBLAYOUT=de # German\n", name: "de", fromFile: true, says: ""),
        FileCase(n: 13, file: "XKBLAYOUT=de\nXKBLAYOUT=fr\n", name: "fr", fromFile: true, says: ""),
        FileCase(n: 14, file: "XKBLAYOUT=\"de\"\r\nXKBVARIANT=\"\"\r\n", name: "de", fromFile: true, says: ""),
        FileCase(n: 15, file: "  XKBLAYOUT=\"se\"\n\tXKBVARIANT=\"dvorak\"\n", name: "se:dvorak", fromFile: true, says: ""),
        FileCase(n: 16, file: "", name: "us", fromFile: false, says: "sets no XKBLAYOUT"),
        FileCase(n: 17, file: "XKBLAYOUT=\"de\n", name: "de", fromFile: true, says: ""),   // unclosed quote: to the line end
    ]

    @Test(arguments: fileCases) func systemDefault(_ c: FileCase) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-keymap-\(getpid())-\(c.n)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("keyboard").path
        if let text = c.file { try text.write(toFile: path, atomically: true, encoding: .utf8) }
        let (name, source) = KeymapName.systemDefault(file: path)
        #expect(name == (try KeymapName(parsing: c.name)), "\(c.n): \(name) (\(source))")
        if c.fromFile {
            #expect(source == path, "\(c.n): \(source)")
        } else {
            #expect(source.contains(path) && source.contains("us") && source.contains(c.says), "\(c.n): \(source)")
        }
    }

    /// A directory where the file should be: the default, saying so.
    @Test func directoryInstead() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-keymap-dir-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let (name, source) = KeymapName.systemDefault(file: dir.path)
        #expect(name == KeymapName(layout: "us"))
        #expect(source.contains("a directory"), "\(source)")
    }
}
