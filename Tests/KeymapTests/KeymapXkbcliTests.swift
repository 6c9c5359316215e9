import Foundation
import RemoloPlayout
import Testing

/// The receiver's choice of key against libxkbcommon's own answer:
/// `xkbcli how-to-type` (Debian libxkbcommon-tools) lists every key and
/// modifier set that types a character in a layout; docs/keymap.md's rule
/// (main-block keys first, then the fewest modifier keys, then the lowest
/// code, only Shift, Level3 and Level5) picks one of them, and the receiver
/// must type exactly that one.
@Suite struct KeymapXkbcliTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let n: Int
        let layout: String
        let character: Character
        var testDescription: String { "\(n): \(character) in \(layout)" }
    }

    /// One line of xkbcli's table: the evdev code (XKB keycode - 8), the
    /// key's XKB name, the layout index and the modifiers' names.
    struct Way: Equatable {
        let code: UInt16
        let name: String
        let layout: Int
        let modifiers: [String]
    }

    static func xkbcli(layout: String, _ u: UInt32) throws -> [Way] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["xkbcli", "how-to-type", "--rules", "evdev", "--model", "pc105", "--layout", layout, String(u)]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        _ = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0,
                     "xkbcli how-to-type failed (status \(p.terminationStatus)): apt-get install libxkbcommon-tools (Tests/deps installs it)")
        // "94       LSGT      1        English (US)         1       [ ]"
        return text.split(separator: "\n").compactMap { line -> Way? in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 5, let kc = UInt16(f[0]), kc >= 8, let layout = Int(f[2]),
                  let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            let mods = line[line.index(after: open)..<close].split(separator: " ").map(String.init)
            return Way(code: kc - 8, name: String(f[1]), layout: layout, modifiers: mods)
        }
    }

    /// The modifier keys the receiver finds in these layouts (docs/keymap.md:
    /// the lowest code carrying the modifier).
    static let modifierKey: [String: UInt16] = ["Shift": KEY_LEFTSHIFT, "Mod5": KEY_RIGHTALT]

    @Test(arguments: [
        Case(n: 1, layout: "us", character: "<"),
        Case(n: 2, layout: "de", character: "<"),
        Case(n: 3, layout: "us", character: ">"),
        Case(n: 4, layout: "de", character: ">"),
        Case(n: 5, layout: "us", character: "|"),
        Case(n: 6, layout: "de", character: "|"),
        Case(n: 7, layout: "de", character: "@"),
    ])
    func sameKeyAsXkbcli(_ c: Case) throws {
        let u = c.character.unicodeScalars.first!.value
        let ways = try Self.xkbcli(layout: c.layout, u)
        try #require(!ways.isEmpty, "case \(c.n): xkbcli lists no way to type \(c.character)")
        // The documented rule over xkbcli's list: layout 1, typing
        // modifiers only, no keypad key, fewest modifiers, lowest code.
        let usable = ways.filter { w in
            w.layout == 1 && !w.name.hasPrefix("KP") && w.modifiers.allSatisfy { Self.modifierKey[$0] != nil }
        }
        let best = try #require(usable.min { ($0.modifiers.count, $0.code) < ($1.modifiers.count, $1.code) },
                                "case \(c.n): \(ways)")
        let mods = best.modifiers.map { Self.modifierKey[$0]! }
        let want = mods.map(down) + tap(best.code) + mods.reversed().map(up)
        let (got, untypable) = Maps.named(c.layout).strokes(for: String(c.character))
        #expect(untypable == 0, "case \(c.n)")
        #expect(got == want, "case \(c.n): the receiver types \(got), xkbcli's \(best) is \(want)")
    }
}
