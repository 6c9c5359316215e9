import Foundation
import RemoloPlayout
import RemoloKeymap
import Synchronization
import Testing
import RemoloTypes

// evdev codes (<linux/input-event-codes.h>), written out so that a wrong
// table in the code under test cannot agree with itself.
let KEY_1: UInt16 = 2, KEY_2: UInt16 = 3, KEY_3: UInt16 = 4, KEY_8: UInt16 = 9, KEY_9: UInt16 = 10
let KEY_MINUS: UInt16 = 12, KEY_TAB: UInt16 = 15
let KEY_Q: UInt16 = 16, KEY_W: UInt16 = 17, KEY_E: UInt16 = 18, KEY_R: UInt16 = 19, KEY_Y: UInt16 = 21
let KEY_O: UInt16 = 24, KEY_ENTER: UInt16 = 28, KEY_A: UInt16 = 30, KEY_D: UInt16 = 32
let KEY_H: UInt16 = 35, KEY_L: UInt16 = 38, KEY_GRAVE: UInt16 = 41, KEY_LEFTSHIFT: UInt16 = 42
let KEY_BACKSLASH: UInt16 = 43, KEY_Z: UInt16 = 44, KEY_B: UInt16 = 48, KEY_COMMA: UInt16 = 51
let KEY_SPACE: UInt16 = 57, KEY_102ND: UInt16 = 86, KEY_RIGHTALT: UInt16 = 100

func down(_ c: UInt16) -> KeyChange { KeyChange(code: c, down: true) }
func up(_ c: UInt16) -> KeyChange { KeyChange(code: c, down: false) }
func tap(_ c: UInt16) -> [KeyChange] { [down(c), up(c)] }

/// The keymaps, compiled once for all tests.
enum Maps {
    static let us = try! Keymap(KeymapName(layout: "us"))
    static let de = try! Keymap(KeymapName(layout: "de"))
    static let deNoDead = try! Keymap(KeymapName(layout: "de", variant: "nodeadkeys"))
    static let fr = try! Keymap(KeymapName(layout: "fr"))
    static let ru = try! Keymap(KeymapName(layout: "ru"))
    static func named(_ n: String) -> Keymap {
        switch n {
        case "us": us
        case "de": de
        case "de:nodeadkeys": deNoDead
        case "fr": fr
        case "ru": ru
        default: fatalError(n)
        }
    }
}

/// Whether `strokes` never releases a key that is up or presses one that
/// is down, and ends with every key up.
func balanced(_ strokes: [KeyChange]) -> Bool {
    var held: Set<UInt16> = []
    for s in strokes {
        if s.down { guard held.insert(s.code).inserted else { return false } }
        else { guard held.remove(s.code) != nil else { return false } }
    }
    return held.isEmpty
}

@Suite struct KeymapTests {
    // "Hello, World! 123 @#" in us: Shift around H, W, '!', and one Shift
    // held across "@#" (Shift+2, Shift+3).
    static let helloUS: [KeyChange] =
        [down(KEY_LEFTSHIFT)] + tap(KEY_H) + [up(KEY_LEFTSHIFT)] + tap(KEY_E) + tap(KEY_L) + tap(KEY_L) + tap(KEY_O)
        + tap(KEY_COMMA) + tap(KEY_SPACE)
        + [down(KEY_LEFTSHIFT)] + tap(KEY_W) + [up(KEY_LEFTSHIFT)] + tap(KEY_O) + tap(KEY_R) + tap(KEY_L) + tap(KEY_D)
        + [down(KEY_LEFTSHIFT)] + tap(KEY_1) + [up(KEY_LEFTSHIFT)] + tap(KEY_SPACE)
        + tap(KEY_1) + tap(KEY_2) + tap(KEY_3) + tap(KEY_SPACE)
        + [down(KEY_LEFTSHIFT)] + tap(KEY_2) + tap(KEY_3) + [up(KEY_LEFTSHIFT)]

    // The same in de, from /usr/share/X11/xkb/symbols/de "basic" (with
    // latin(type4) and level3(ralt_switch)): '!' is Shift+1 (<AE01>), '@'
    // is AltGr+q (<AD01> level 3, AltGr = <RALT> = KEY_RIGHTALT), '#' is
    // its own key <BKSL> (KEY_BACKSLASH) with no modifier.
    static let helloDE: [KeyChange] =
        [down(KEY_LEFTSHIFT)] + tap(KEY_H) + [up(KEY_LEFTSHIFT)] + tap(KEY_E) + tap(KEY_L) + tap(KEY_L) + tap(KEY_O)
        + tap(KEY_COMMA) + tap(KEY_SPACE)
        + [down(KEY_LEFTSHIFT)] + tap(KEY_W) + [up(KEY_LEFTSHIFT)] + tap(KEY_O) + tap(KEY_R) + tap(KEY_L) + tap(KEY_D)
        + [down(KEY_LEFTSHIFT)] + tap(KEY_1) + [up(KEY_LEFTSHIFT)] + tap(KEY_SPACE)
        + tap(KEY_1) + tap(KEY_2) + tap(KEY_3) + tap(KEY_SPACE)
        + [down(KEY_RIGHTALT)] + tap(KEY_Q) + [up(KEY_RIGHTALT)] + tap(KEY_BACKSLASH)

    struct Case: CustomTestStringConvertible, Sendable {
        let n: Int
        let keymap: String
        let text: String
        let strokes: [KeyChange]
        let untypable: Int
        var testDescription: String { "\(n): \(keymap) \(text.debugDescription)" }
    }

    static let cases: [Case] = [
        Case(n: 1, keymap: "us", text: "Hello, World! 123 @#", strokes: helloUS, untypable: 0),
        Case(n: 2, keymap: "de", text: "Hello, World! 123 @#", strokes: helloDE, untypable: 0),
        // y and z swap places in de.
        Case(n: 3, keymap: "de", text: "zy", strokes: tap(KEY_Y) + tap(KEY_Z), untypable: 0),
        Case(n: 4, keymap: "us", text: "zy", strokes: tap(KEY_Z) + tap(KEY_Y), untypable: 0),
        // A character the layout lacks is skipped, never typed as another.
        Case(n: 5, keymap: "us", text: "aжb", strokes: tap(KEY_A) + tap(KEY_B), untypable: 1),
        Case(n: 6, keymap: "us", text: "ж", strokes: [], untypable: 1),
        Case(n: 7, keymap: "us", text: "€😀", strokes: [], untypable: 2),
        // The Cyrillic letter on the key that is f in us.
        Case(n: 8, keymap: "ru", text: "ж", strokes: tap(39), untypable: 0),
        // € is AltGr+e in de (<AD03> level 3).
        Case(n: 9, keymap: "de", text: "€", strokes: [down(KEY_RIGHTALT)] + tap(KEY_E) + [up(KEY_RIGHTALT)], untypable: 0),
        Case(n: 10, keymap: "us", text: "\n", strokes: tap(KEY_ENTER), untypable: 0),
        Case(n: 11, keymap: "us", text: "\t", strokes: tap(KEY_TAB), untypable: 0),
        Case(n: 12, keymap: "us", text: "a\r\nb", strokes: tap(KEY_A) + tap(KEY_ENTER) + tap(KEY_B), untypable: 0),
        Case(n: 13, keymap: "us", text: "\r", strokes: tap(KEY_ENTER), untypable: 0),
        Case(n: 14, keymap: "us", text: "\n\n", strokes: tap(KEY_ENTER) + tap(KEY_ENTER), untypable: 0),
        Case(n: 15, keymap: "us", text: "", strokes: [], untypable: 0),
        Case(n: 16, keymap: "de", text: "", strokes: [], untypable: 0),
        // Control characters other than Tab and line ends are keys, not text.
        Case(n: 17, keymap: "us", text: "\u{8}\u{1b}\u{7f}\u{0}\u{85}", strokes: [], untypable: 5),
        // Shift held across consecutive capitals, released for a small letter.
        Case(n: 18, keymap: "us", text: "ABa",
             strokes: [down(KEY_LEFTSHIFT)] + tap(KEY_A) + tap(KEY_B) + [up(KEY_LEFTSHIFT)] + tap(KEY_A), untypable: 0),
        // A skipped character between two shifted ones keeps Shift held.
        Case(n: 19, keymap: "us", text: "AжB",
             strokes: [down(KEY_LEFTSHIFT)] + tap(KEY_A) + tap(KEY_B) + [up(KEY_LEFTSHIFT)], untypable: 1),
        // Shift+AltGr (level 4): pressed Shift first, released in reverse.
        Case(n: 20, keymap: "de", text: "¡",
             strokes: [down(KEY_LEFTSHIFT), down(KEY_RIGHTALT)] + tap(KEY_1) + [up(KEY_RIGHTALT), up(KEY_LEFTSHIFT)],
             untypable: 0),
        // From Shift+AltGr to AltGr only: Shift alone is released.
        Case(n: 21, keymap: "de", text: "¡@",
             strokes: [down(KEY_LEFTSHIFT), down(KEY_RIGHTALT)] + tap(KEY_1) + [up(KEY_LEFTSHIFT)] + tap(KEY_Q)
                + [up(KEY_RIGHTALT)], untypable: 0),
        // From AltGr to Shift: release one, press the other.
        Case(n: 22, keymap: "de", text: "@A",
             strokes: [down(KEY_RIGHTALT)] + tap(KEY_Q) + [up(KEY_RIGHTALT), down(KEY_LEFTSHIFT)] + tap(KEY_A)
                + [up(KEY_LEFTSHIFT)], untypable: 0),
        // Dead keys are not used: '^' is only dead_circumflex in de, and é
        // only through dead_acute; de:nodeadkeys has a real '^' on <TLDE>.
        Case(n: 23, keymap: "de", text: "^é", strokes: [], untypable: 2),
        Case(n: 24, keymap: "de:nodeadkeys", text: "^", strokes: tap(KEY_GRAVE), untypable: 0),
        // fr has é on its own key (<AE02>, KEY_2).
        Case(n: 25, keymap: "fr", text: "é", strokes: tap(KEY_2), untypable: 0),
        // Keypad keys only when no main-block key types it: '(' and ')' are
        // Shift+9 and Shift+0... in us, never KEY_KPLEFTPAREN (179) with
        // no modifier; '*' is Shift+8, not KEY_KPASTERISK; '-' is KEY_MINUS.
        Case(n: 26, keymap: "us", text: "(*-",
             strokes: [down(KEY_LEFTSHIFT)] + tap(KEY_9) + tap(KEY_8) + [up(KEY_LEFTSHIFT)] + tap(KEY_MINUS), untypable: 0),
        // '<' has its own key (<LSGT>, KEY_102ND) with no modifier in us as
        // in de: fewer modifiers than Shift+comma, so us types it there too
        // (docs/keymap.md; xkbcli agrees, KeymapXkbcliTests).
        Case(n: 27, keymap: "us", text: "<", strokes: tap(KEY_102ND), untypable: 0),
        Case(n: 32, keymap: "de", text: "<", strokes: tap(KEY_102ND), untypable: 0),
        // Decomposed é (e + U+0301): the e, and the combining accent skipped.
        Case(n: 28, keymap: "fr", text: "e\u{301}", strokes: tap(KEY_E), untypable: 1),
        // docs/keymap.md's examples.
        Case(n: 29, keymap: "us", text: "Hi!",
             strokes: [down(KEY_LEFTSHIFT)] + tap(KEY_H) + [up(KEY_LEFTSHIFT)] + tap(23) + [down(KEY_LEFTSHIFT)] + tap(KEY_1)
                + [up(KEY_LEFTSHIFT)], untypable: 0),
        Case(n: 30, keymap: "de", text: "@#",
             strokes: [down(KEY_RIGHTALT)] + tap(KEY_Q) + [up(KEY_RIGHTALT)] + tap(KEY_BACKSLASH), untypable: 0),
    ]

    @Test(arguments: cases) func strokes(_ c: Case) {
        let (strokes, untypable) = Maps.named(c.keymap).strokes(for: c.text)
        #expect(strokes == c.strokes, "\(c.n): got \(strokes)")
        #expect(untypable == c.untypable, "\(c.n)")
        #expect(balanced(strokes), "\(c.n): \(strokes)")
        // Read back through the same layout, the strokes type the text
        // less what was untypable ("\r\n" and "\r" read back as "\n").
        if c.untypable == 0 {
            let want = c.text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            #expect(Maps.named(c.keymap).text(typedBy: strokes) == want, "\(c.n)")
        }
    }

    /// Every printable ASCII character types in us and, typed alone, ends
    /// with nothing held; their sequence together also ends with nothing held.
    @Test func everyASCIIInUS() {
        let ascii = String((0x20...0x7e).map { Character(UnicodeScalar($0)!) })
        for ch in ascii {
            let (s, u) = Maps.us.strokes(for: String(ch))
            #expect(u == 0 && !s.isEmpty && balanced(s), "\(ch.debugDescription): \(s)")
        }
        let (s, u) = Maps.us.strokes(for: ascii)
        #expect(u == 0 && balanced(s))
        #expect(Maps.us.text(typedBy: s) == ascii)
    }

    /// The keys used are the kernel's (no <LVL3> 84, no 195-199) and
    /// include the ones the device must have for de.
    @Test func keyCodes() {
        for k in [Maps.us, Maps.de, Maps.fr, Maps.ru] {
            #expect(!k.keyCodes.contains(84) && k.keyCodes.allSatisfy { $0 >= 1 && $0 <= 248 && !(195...199).contains($0) })
            #expect(k.keyCodes.contains(KEY_LEFTSHIFT))
        }
        #expect(Maps.de.keyCodes.contains(KEY_RIGHTALT))
        #expect(!Maps.us.keyCodes.contains(KEY_RIGHTALT), "us types nothing with AltGr")
        #expect(Maps.de.name == KeymapName(layout: "de"))
    }

    /// One keymap typing from several threads at once gives each the same
    /// strokes as typing alone (the xkb objects are used under one lock).
    @Test func concurrentUse() {
        let text = "Grüße, 1 @ 2 € ¡"
        let alone = Maps.de.strokes(for: text)
        let results = Mutex([Bool]())
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<20 {
                let r = Maps.de.strokes(for: text)
                results.withLock { $0.append(r.strokes == alone.strokes && r.untypable == alone.untypable) }
            }
        }
        #expect(results.withLock { $0.count == 160 && $0.allSatisfy { $0 } })
        #expect(alone.untypable == 0)
    }

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        let n: Int
        let name: KeymapName
        let says: [String]
        var testDescription: String { "\(n): \(name)" }
    }

    static let errorCases: [ErrorCase] = [
        ErrorCase(n: 1, name: KeymapName(layout: "xx"),
                  says: ["unknown keyboard layout 'xx'", "localectl list-x11-keymap-layouts", "/usr/share/X11/xkb"]),
        ErrorCase(n: 2, name: KeymapName(layout: "de", variant: "nosuch"),
                  says: ["'de' has no variant 'nosuch'", "localectl list-x11-keymap-variants de"]),
    ]

    @Test(arguments: errorCases) func unknownNames(_ c: ErrorCase) {
        #expect(throws: KeymapError.self) { try Keymap(c.name) }
        do {
            _ = try Keymap(c.name)
        } catch {
            for s in c.says { #expect(error.message.contains(s), "\(c.n): \(error.message)") }
        }
    }
}
