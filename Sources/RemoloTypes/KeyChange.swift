/// One key or button going down or up: an evdev `EV_KEY` code, `KEY_*` for
/// a key (KEY_A = 30 ...; the XKB keycode minus 8) or `BTN_*` for a button
/// (BTN_LEFT = 0x110 ...), from <linux/input-event-codes.h>. What a keymap
/// types, what the keyboard device and a pointer frame carry, and what an
/// output backend is handed.
public struct KeyChange: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var code: UInt16
    public var down: Bool

    public init(code: UInt16, down: Bool) {
        self.code = code
        self.down = down
    }

    /// A pointer button (BTN_MOUSE ... BTN_TASK and the rest of 0x110-0x11f),
    /// as opposed to a keyboard key.
    public var isButton: Bool { code >= 0x110 && code <= 0x11f }

    /// "+42" for a press of code 42, "-42" for its release.
    public var description: String { "\(down ? "+" : "-")\(code)" }
}
