import Testing
import RemoloInput

/// What `remolo send --keyboard` sends of a keyboard's evdev events:
/// presses and releases of KEY_* codes, never autorepeat, never the press
/// that completes Ctrl+Alt+Esc, one press and one release per key however
/// many keyboards hold it, and releases of everything held when a keyboard
/// goes, stops forwarding, or the run lets go.
@Suite("Keyboard forwarding: what is sent, what never is")
struct KeyForwardingTests {
    static let key: UInt16 = 1, msc: UInt16 = 4, syn: UInt16 = 0
    // input-event-codes.h
    static let a: UInt16 = 30, b: UInt16 = 48, enter: UInt16 = 28, shift: UInt16 = 42, lctrl: UInt16 = 29,
               lalt: UInt16 = 56, rctrl: UInt16 = 97, ralt: UInt16 = 100, esc: UInt16 = 1, btnLeft: UInt16 = 0x110

    enum Step: Sendable {
        /// A keyboard: its id, keys down when it was opened, forwarding.
        case add(Int, down: Set<UInt16> = [], forwarding: Bool = true)
        /// An event of a keyboard: type, code, value.
        case ev(Int, UInt16, UInt16, Int32)
        case forward(Int, Bool)
        case remove(Int)
        case releaseAll

        static func press(_ id: Int, _ c: UInt16) -> Step { .ev(id, KeyForwardingTests.key, c, 1) }
        static func release(_ id: Int, _ c: UInt16) -> Step { .ev(id, KeyForwardingTests.key, c, 0) }
        static func repeated(_ id: Int, _ c: UInt16) -> Step { .ev(id, KeyForwardingTests.key, c, 2) }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var id: Int
        var name: String
        var chord = true
        var steps: [Step]
        /// One entry per event step: "+C" press of code C sent, "-C" release
        /// sent, "letGo", "repeat", "." nothing; and per forward/remove/
        /// releaseAll step the releases it returned, "rel[C,...]".
        var want: [String]
        /// Keys the receiver holds after the steps.
        var held: [UInt16] = []
        var testDescription: String { "\(id). \(name)" }
    }

    static let cases: [Case] = [
        Case(id: 1, name: "a press and a release go, in order",
             steps: [.add(0), .press(0, a), .release(0, a), .press(0, b), .release(0, b)],
             want: ["+30", "-30", "+48", "-48"]),
        Case(id: 2, name: "autorepeat (value 2) is never sent",
             steps: [.add(0), .press(0, a), .repeated(0, a), .repeated(0, a), .release(0, a)],
             want: ["+30", "repeat", "repeat", "-30"]),
        Case(id: 3, name: "buttons, other event types and KEY_RESERVED are not keys",
             steps: [.add(0), .press(0, btnLeft), .release(0, btnLeft), .ev(0, msc, 4, 30), .ev(0, syn, 0, 0), .press(0, 0)],
             want: [".", ".", ".", ".", "."]),
        Case(id: 4, name: "Ctrl+Alt+Esc lets go; the Esc is not sent; Ctrl and Alt are released at let-go",
             steps: [.add(0), .press(0, lctrl), .press(0, lalt), .press(0, esc), .releaseAll],
             want: ["+29", "+56", "letGo", "rel[29,56]"]),
        Case(id: 5, name: "the chord in another order: the key that completes it is not sent",
             steps: [.add(0), .press(0, esc), .press(0, rctrl), .press(0, lalt), .releaseAll],
             want: ["+1", "+97", "letGo", "rel[1,97]"]),
        Case(id: 6, name: "right-hand Ctrl and Alt make the chord too",
             steps: [.add(0), .press(0, rctrl), .press(0, ralt), .press(0, esc)],
             want: ["+97", "+100", "letGo"], held: [97, 100]),
        Case(id: 7, name: "with the chord off, Ctrl+Alt+Esc is sent like any keys",
             chord: false,
             steps: [.add(0), .press(0, lctrl), .press(0, lalt), .press(0, esc), .release(0, esc)],
             want: ["+29", "+56", "+1", "-1"], held: [29, 56]),
        Case(id: 8, name: "a keyboard not forwarding sends nothing, repeats included, but its chord lets go",
             steps: [.add(0, forwarding: false), .press(0, a), .repeated(0, a), .release(0, a),
                     .press(0, lctrl), .press(0, lalt), .press(0, esc)],
             want: [".", ".", ".", ".", ".", "letGo"]),
        Case(id: 9, name: "a key down before forwarding began: its release is not sent, its next press is",
             steps: [.add(0, down: [enter]), .release(0, enter), .press(0, enter), .release(0, enter)],
             want: [".", "+28", "-28"]),
        Case(id: 10, name: "a key down before forwarding counts for the chord",
             steps: [.add(0, down: [lctrl, lalt]), .press(0, esc)],
             want: ["letGo"]),
        Case(id: 11, name: "two keyboards hold one key: one press when the first presses, one release when the last lets go",
             steps: [.add(0), .add(1), .press(0, shift), .press(1, shift), .release(0, shift), .release(1, shift)],
             want: ["+42", ".", ".", "-42"]),
        Case(id: 12, name: "a keyboard unplugged: what it held is released, but not what another still holds",
             steps: [.add(0), .add(1), .press(0, a), .press(0, shift), .press(1, shift), .remove(0), .release(1, shift)],
             want: ["+30", "+42", ".", "rel[30]", "-42"]),
        Case(id: 13, name: "forwarding stops (the receiver takes no keys): held keys released, later events stay local",
             steps: [.add(0), .press(0, a), .press(0, b), .forward(0, false), .repeated(0, a), .release(0, a), .press(0, a)],
             want: ["+30", "+48", "rel[30,48]", ".", ".", "."]),
        Case(id: 14, name: "forwarding starts again: only new presses are sent",
             steps: [.add(0, forwarding: false), .press(0, a), .forward(0, true), .release(0, a), .press(0, b), .release(0, b)],
             want: [".", "rel[]", ".", "+48", "-48"]),
        Case(id: 15, name: "a second press without a release, and a release of a key never pressed, send nothing",
             steps: [.add(0), .press(0, a), .press(0, a), .release(0, b), .release(0, a), .release(0, a)],
             want: ["+30", ".", ".", "-30", "."]),
        Case(id: 16, name: "KEY_* codes above the button block go; BTN_DPAD and BTN_TRIGGER_HAPPY do not; value 3 is nothing",
             steps: [.add(0), .press(0, 0x160), .press(0, 0x290), .press(0, 0x220), .press(0, 0x2c0), .ev(0, key, a, 3)],
             want: ["+352", "+656", ".", ".", "."], held: [0x160, 0x290]),
        Case(id: 17, name: "the chord on one keyboard while another holds keys: let-go releases everything held there",
             steps: [.add(0), .add(1), .press(0, a), .press(1, lctrl), .press(1, lalt), .press(1, esc), .releaseAll],
             want: ["+30", "+29", "+56", "letGo", "rel[29,30,56]"]),
        Case(id: 18, name: "events of a keyboard never added are nothing",
             steps: [.add(0), .press(5, a), .remove(5)],
             want: [".", "rel[]"]),
    ]

    @Test(arguments: cases)
    func forwarding(_ c: Case) {
        var f = KeyForwarding(chord: c.chord)
        var got: [String] = []
        func rel(_ codes: [UInt16]) -> String { "rel[" + codes.map(String.init).joined(separator: ",") + "]" }
        for s in c.steps {
            switch s {
            case .add(let id, let down, let on): f.add(id, down: down, isForwarding: on)
            case .ev(let id, let type, let code, let value):
                switch f.event(id, type: type, code: code, value: value) {
                case .send(let code, let down): got.append((down ? "+" : "-") + String(code))
                case .letGo: got.append("letGo")
                case .repeatIgnored: got.append("repeat")
                case .ignored: got.append(".")
                }
            case .forward(let id, let on): got.append(rel(f.setForwarding(id, on)))
            case .remove(let id): got.append(rel(f.remove(id)))
            case .releaseAll: got.append(rel(f.releaseAll()))
            }
        }
        #expect(got == c.want, "\(c.id). \(c.name)")
        #expect(f.held == c.held, "\(c.id). held")
    }

    struct CodeCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var code: UInt16
        var isKey: Bool
        var name: String
        var testDescription: String { "\(id). \(name) \(code)" }
    }

    static let codes: [CodeCase] = [
        CodeCase(id: 1, code: 0, isKey: false, name: "KEY_RESERVED"),
        CodeCase(id: 2, code: 1, isKey: true, name: "KEY_ESC"),
        CodeCase(id: 3, code: 30, isKey: true, name: "KEY_A"),
        CodeCase(id: 4, code: 0xf8, isKey: true, name: "KEY_MICMUTE"),
        CodeCase(id: 5, code: 0xff, isKey: true, name: "last of the first block"),
        CodeCase(id: 6, code: 0x100, isKey: false, name: "BTN_0 (BTN_MISC)"),
        CodeCase(id: 7, code: 0x110, isKey: false, name: "BTN_LEFT"),
        CodeCase(id: 8, code: 0x14a, isKey: false, name: "BTN_TOUCH"),
        CodeCase(id: 9, code: 0x151, isKey: false, name: "BTN_GEAR_UP"),
        CodeCase(id: 10, code: 0x15f, isKey: false, name: "unassigned before KEY_OK"),
        CodeCase(id: 11, code: 0x160, isKey: true, name: "KEY_OK"),
        CodeCase(id: 12, code: 0x21f, isKey: true, name: "before BTN_DPAD_UP"),
        CodeCase(id: 13, code: 0x220, isKey: false, name: "BTN_DPAD_UP"),
        CodeCase(id: 14, code: 0x223, isKey: false, name: "BTN_DPAD_RIGHT"),
        CodeCase(id: 15, code: 0x224, isKey: true, name: "after BTN_DPAD_RIGHT"),
        CodeCase(id: 16, code: 0x2bf, isKey: true, name: "before BTN_TRIGGER_HAPPY1"),
        CodeCase(id: 17, code: 0x2c0, isKey: false, name: "BTN_TRIGGER_HAPPY1"),
        CodeCase(id: 18, code: 0x2e7, isKey: false, name: "BTN_TRIGGER_HAPPY40"),
        CodeCase(id: 19, code: 0x2e8, isKey: true, name: "after the trigger buttons"),
        CodeCase(id: 20, code: 0x2ff, isKey: true, name: "KEY_MAX"),
        CodeCase(id: 21, code: 0x300, isKey: false, name: "beyond KEY_MAX"),
    ]

    @Test(arguments: codes)
    func keyCodes(_ c: CodeCase) {
        #expect(KeyCode.isKey(c.code) == c.isKey)
    }

    @Test("the letters are the 26 codes KEY_A..KEY_Z")
    func letters() {
        #expect(KeyCode.letters.count == 26 && Set(KeyCode.letters).count == 26)
        #expect(KeyCode.letters.contains(30) && KeyCode.letters.contains(44) && KeyCode.letters.contains(16) && KeyCode.letters.contains(50))
    }
}
