// Reading a compiled keymap once: which keys are modifier keys, and how
// each character is typed (docs/keymap.md, "How a character becomes keys").

internal import CXkbcommon

struct KeymapScan {
    private(set) var modifierKeys: [(code: UInt16, mask: UInt32)] = []
    private(set) var table: [UInt32: Typing] = [:]

    private struct Candidate {
        var keypad: Bool
        var modifiers: [UInt16]
        var key: UInt16
        var level: UInt32
    }

    init(_ keymap: OpaquePointer) {
        let codes = Self.codes(keymap)
        let allowed = Self.typingModifiers(keymap)

        // A modifier key is one whose press alone sets modifiers while it
        // is held, and nothing else: no latch, no lock (Caps Lock, Num
        // Lock), no layout switch. Found by pressing it, so whatever key
        // carries Shift_L or ISO_Level3_Shift in this layout is the one used.
        for code in codes {
            guard let st = xkb_state_new(keymap) else { continue }
            _ = xkb_state_update_key(st, xkbCode(code), XKB_KEY_DOWN)
            let held = xkb_state_serialize_mods(st, XKB_STATE_MODS_DEPRESSED)
            let other = xkb_state_serialize_mods(st, XKB_STATE_MODS_LATCHED)
                | xkb_state_serialize_mods(st, XKB_STATE_MODS_LOCKED)
            let layout = xkb_state_serialize_layout(st, XKB_STATE_LAYOUT_EFFECTIVE)
            xkb_state_unref(st)
            if held != 0 && other == 0 && layout == 0 && held & ~allowed == 0 {
                modifierKeys.append((code, held))
            }
        }

        var candidates: [UInt32: [Candidate]] = [:]
        var masks = [xkb_mod_mask_t](repeating: 0, count: 32)
        for code in codes where !modifierKeys.contains(where: { $0.code == code }) {
            let kc = xkbCode(code)
            guard xkb_keymap_num_layouts_for_key(keymap, kc) > 0 else { continue }
            let levels = xkb_keymap_num_levels_for_key(keymap, kc, 0)
            // KEY_102ND (<LSGT>, between left Shift and Z on ISO keyboards)
            // is a main-block key like any other: the evdev rules give it
            // its symbols in pc104 as in pc105 (`xkbcli how-to-type --model
            // pc104 --layout us 60` lists it), so a uinput keyboard's
            // KEY_102ND types them whatever model the desktop's keyboard is.
            let keypad = Self.keypadCodes.contains(code)
                || (0..<levels).contains { Self.isKeypad(Self.sym(keymap, kc, $0)) }
            for level in 0..<levels {
                guard let sym = Self.sym(keymap, kc, level) else { continue }
                let u = xkb_keysym_to_utf32(sym)
                guard Self.isText(u) else { continue }
                let n = masks.withUnsafeMutableBufferPointer {
                    xkb_keymap_key_get_mods_for_level(keymap, kc, 0, level, $0.baseAddress, $0.count)
                }
                for mask in masks.prefix(n) where mask & ~allowed == 0 {
                    guard let mods = modifiers(for: mask), mods.count <= Keymap.maxModifierKeys else { continue }
                    candidates[u, default: []].append(Candidate(keypad: keypad, modifiers: mods, key: code, level: level))
                }
            }
        }

        // Main-block keys before keypad keys, then the fewest modifiers,
        // then the lowest keycode; the first that verifies wins.
        for (u, list) in candidates {
            let sorted = list.sorted {
                ($0.keypad ? 1 : 0, $0.modifiers.count, $0.key, $0.level)
                    < ($1.keypad ? 1 : 0, $1.modifiers.count, $1.key, $1.level)
            }
            for c in sorted where Self.verify(keymap, c.modifiers, c.key, u) {
                table[u] = Typing(modifiers: c.modifiers, key: c.key)
                break
            }
        }
    }

    /// The modifier keys that together set exactly `mask`, lowest keycode
    /// first for each modifier (left Shift before right Shift), in press
    /// order; nil when this keymap has no key for one of its modifiers.
    private func modifiers(for mask: UInt32) -> [UInt16]? {
        var keys: [UInt16] = []
        var covered: UInt32 = 0
        for bit in 0..<32 where mask & (1 << bit) != 0 && covered & (1 << bit) == 0 {
            guard let k = modifierKeys.first(where: { $0.mask & (1 << bit) != 0 && $0.mask & ~mask == 0 }) else {
                return nil
            }
            keys.append(k.code)
            covered |= k.mask
        }
        return keys
    }

    /// The evdev codes scanned: keys the kernel defines (KEY_ESC 1 to
    /// KEY_MICMUTE 248, <linux/input-event-codes.h>) and this keymap has.
    /// Left out are the codes the kernel gives no key: evdev's keycodes
    /// file puts <LVL3> (84) and <MDSW>, <ALT>, <META>, <SUPR>, <HYPR>
    /// (195-199) there only to carry modifier mappings; no keyboard sends them.
    private static func codes(_ keymap: OpaquePointer) -> [UInt16] {
        let lo = max(xkb_keymap_min_keycode(keymap), 8 + 1)
        let hi = min(xkb_keymap_max_keycode(keymap), 8 + 248)
        guard lo <= hi else { return [] }
        return (lo...hi).map { UInt16($0 - 8) }.filter { $0 != 84 && !(195...199).contains($0) }
    }

    /// The modifiers text may be typed with: all but Caps Lock, Num Lock
    /// and those that make shortcuts (Control, Alt, Super, Meta, Hyper),
    /// which leaves Shift, Mod3 (Level5) and Mod5 (Level3, AltGr).
    private static func typingModifiers(_ keymap: OpaquePointer) -> UInt32 {
        var forbidden: UInt32 = 0
        for name in [XKB_MOD_NAME_CAPS, XKB_MOD_NAME_CTRL, XKB_MOD_NAME_ALT, XKB_MOD_NAME_NUM, XKB_MOD_NAME_LOGO,
                     "Alt", "Meta", "Super", "Hyper", "NumLock", "ScrollLock"] {
            let i = xkb_keymap_mod_get_index(keymap, name)
            if i < 32 { forbidden |= 1 << i }
        }
        return ~forbidden
    }

    /// The key's one keysym at `level` of layout 1, nil if none or several.
    private static func sym(_ keymap: OpaquePointer, _ kc: xkb_keycode_t, _ level: UInt32) -> xkb_keysym_t? {
        var syms: UnsafePointer<xkb_keysym_t>? = nil
        let n = xkb_keymap_key_get_syms_by_level(keymap, kc, 0, level, &syms)
        guard n == 1, let syms else { return nil }
        return syms[0]
    }

    /// The kernel's KEY_KP* codes: KPASTERISK, KP7 to KPDOT, KPJPCOMMA,
    /// KPENTER, KPSLASH, KPEQUAL, KPPLUSMINUS, KPCOMMA, KPLEFTPAREN and
    /// KPRIGHTPAREN (<linux/input-event-codes.h>). In the evdev rules the
    /// last two type '(' and ')' with no modifier, which no main-block key
    /// of `us` does, so they must rank as keypad keys, not by modifiers.
    private static let keypadCodes: Set<UInt16> = [55, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83,
                                                   95, 96, 98, 117, 118, 121, 179, 180]

    /// A keypad keysym: KP_Space (0xff80) to KP_Equal (0xffbd), <xkbcommon/xkbcommon-keysyms.h>.
    private static func isKeypad(_ sym: xkb_keysym_t?) -> Bool {
        guard let sym else { return false }
        return sym >= 0xff80 && sym <= 0xffbd
    }

    /// Text characters: printable ones, Tab and Return (Enter). Other
    /// control characters (BackSpace 0x08, Escape 0x1b, Delete 0x7f, C1)
    /// are keys, not text: never typed from a text message.
    private static func isText(_ u: UInt32) -> Bool {
        if u == 0x09 || u == 0x0D { return true }
        return u >= 0x20 && u != 0x7F && !(0x80...0x9F).contains(u)
    }

    /// What the key produces on a fresh state with exactly these modifier
    /// keys held: the character, or the candidate is not used.
    private static func verify(_ keymap: OpaquePointer, _ mods: [UInt16], _ key: UInt16, _ u: UInt32) -> Bool {
        guard let st = xkb_state_new(keymap) else { return false }
        defer { xkb_state_unref(st) }
        for m in mods { _ = xkb_state_update_key(st, xkbCode(m), XKB_KEY_DOWN) }
        return xkb_state_key_get_utf32(st, xkbCode(key)) == u
    }
}
