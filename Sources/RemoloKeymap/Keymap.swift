// Text to key strokes in the receiver's keyboard layout (docs/keymap.md).
//
// A keymap is compiled once with libxkbcommon from its RMLVO names; from it
// a table gives, for every character the layout types without dead keys,
// the key and the modifier keys that type it. Typing a text is then table
// look-ups, each checked against an xkb_state fed the same strokes.

internal import CXkbcommon
import Foundation
import Synchronization
import RemoloTypes

/// A compiled XKB keymap (rules evdev, model pc105, one layout) and what it
/// types. Immutable after init; `strokes(for:)` may be called from any thread.
public final class Keymap: @unchecked Sendable {
    /// Modifier keys a character may need at most: one per modifier bit a
    /// character may use (Shift, Mod3 and Mod5, i.e. Shift, Level5 and
    /// Level3/AltGr in the evdev rules; docs/keymap.md). Characters needing
    /// more are untypable.
    public static let maxModifierKeys = 3

    /// Key strokes a character can cost at most: its key's press and
    /// release, and a press and a release of each modifier key it needs.
    /// A text of n Unicode scalars gives at most n times this many.
    public static let maxStrokesPerCharacter = 2 + 2 * maxModifierKeys

    public let name: KeymapName

    /// The most modifier keys any character of this keymap needs.
    public let modifierKeysNeeded: Int

    /// Every evdev code `strokes(for:)` can give with this keymap: the keys
    /// of its typable characters and the modifier keys they need.
    public let keyCodes: Set<UInt16>

    /// How each typable character (by Unicode scalar value) is typed.
    let table: [UInt32: Typing]

    /// The modifier keys found in this keymap: evdev code and the modifier
    /// mask it sets while held.
    let modifierKeys: [(code: UInt16, mask: UInt32)]

    // The xkb objects are not thread-safe (their reference counts are
    // plain integers): every use after init holds `lock`.
    private let context: OpaquePointer
    private let keymap: OpaquePointer
    private let lock = Mutex(())

    /// Compiles the keymap for `name` from the system's XKB data
    /// (/usr/share/X11/xkb, Debian package xkb-data). The environment's
    /// XKB_DEFAULT_* variables are ignored: the name alone decides.
    public init(_ name: KeymapName) throws(KeymapError) {
        self.name = name
        guard let context = xkb_context_new(XKB_CONTEXT_NO_ENVIRONMENT_NAMES) else {
            throw KeymapError("libxkbcommon could not start (out of memory?)")
        }
        // Failures are reported by the message below, not on stderr.
        xkb_context_set_log_level(context, XKB_LOG_LEVEL_CRITICAL)
        let compiled: OpaquePointer? = "evdev".withCString { rules in
            "pc105".withCString { model in
                name.layout.withCString { layout in
                    name.variant.withCString { variant in
                        var names = xkb_rule_names(rules: rules, model: model, layout: layout,
                                                   variant: variant, options: nil)
                        return xkb_keymap_new_from_names(context, &names, XKB_KEYMAP_COMPILE_NO_FLAGS)
                    }
                }
            }
        }
        guard let keymap = compiled else {
            let error = Self.compileError(name, context: context)
            xkb_context_unref(context)
            throw error
        }
        self.context = context
        self.keymap = keymap
        let scan = KeymapScan(keymap)
        self.modifierKeys = scan.modifierKeys
        self.table = scan.table
        self.modifierKeysNeeded = scan.table.values.map(\.modifiers.count).max() ?? 0
        self.keyCodes = Set(scan.table.values.flatMap { $0.modifiers + [$0.key] })
    }

    deinit {
        xkb_keymap_unref(keymap)
        xkb_context_unref(context)
    }

    /// The strokes a character of this keymap can cost at most.
    public var maxStrokesPerCharacter: Int { 2 + 2 * modifierKeysNeeded }

    /// The key strokes that type `text` in this layout from a state with no
    /// modifier held, and how many characters (Unicode scalars) could not be
    /// typed: those are skipped, never typed as something else. "\n", "\r"
    /// and "\r\n" are one Enter, "\t" is Tab. A modifier stays held across
    /// consecutive characters that need it; the sequence ends with every
    /// key released.
    public func strokes(for text: String) -> (strokes: [KeyChange], untypable: Int) {
        lock.withLock { _ in typeLocked(text) }
    }

    private func typeLocked(_ text: String) -> (strokes: [KeyChange], untypable: Int) {
        guard let state = xkb_state_new(keymap) else {
            return ([], text.unicodeScalars.count)
        }
        defer { xkb_state_unref(state) }
        var out: [KeyChange] = []
        out.reserveCapacity(text.utf8.count * 2)
        var untypable = 0
        var held: [UInt16] = []   // modifier keys down, in the order pressed
        var scalars = text.unicodeScalars.makeIterator()
        var next = scalars.next()
        while let s = next {
            next = scalars.next()
            var value = s.value
            if value == 0x0D, next?.value == 0x0A { next = scalars.next() }   // "\r\n": one Enter
            if value == 0x0A { value = 0x0D }   // Enter's keysym, Return, is U+000D
            guard let typing = table[value] else {
                untypable += 1
                continue
            }
            let release = held.reversed().filter { !typing.modifiers.contains($0) }
            let press = typing.modifiers.filter { !held.contains($0) }
            for code in release { update(state, code, down: false) }
            for code in press { update(state, code, down: true) }
            // The check the table was built with, on the live state: what
            // the key produces with exactly these modifiers held.
            guard xkb_state_key_get_utf32(state, xkbCode(typing.key)) == value else {
                for code in press.reversed() { update(state, code, down: false) }
                for code in release.reversed() { update(state, code, down: true) }
                untypable += 1
                continue
            }
            for code in release { out.append(KeyChange(code: code, down: false)) }
            for code in press { out.append(KeyChange(code: code, down: true)) }
            update(state, typing.key, down: true)
            update(state, typing.key, down: false)
            out.append(KeyChange(code: typing.key, down: true))
            out.append(KeyChange(code: typing.key, down: false))
            held.removeAll { release.contains($0) }
            held.append(contentsOf: press)
        }
        for code in held.reversed() {
            update(state, code, down: false)
            out.append(KeyChange(code: code, down: false))
        }
        return (out, untypable)
    }

    /// What a desktop with this layout types for `strokes` (key presses and
    /// releases as a keyboard device gave them), from a state with no
    /// modifier held: each press's character, "\n" for Enter. The inverse of
    /// `strokes(for:)`, for showing what a keyboard device actually typed.
    public func text(typedBy strokes: [KeyChange]) -> String {
        lock.withLock { _ in
            guard let state = xkb_state_new(keymap) else { return "" }
            defer { xkb_state_unref(state) }
            var out = ""
            for s in strokes {
                if s.down, let u = Unicode.Scalar(xkb_state_key_get_utf32(state, xkbCode(s.code))), u.value != 0 {
                    out.unicodeScalars.append(u.value == 0x0D ? "\n" : u)
                }
                update(state, s.code, down: s.down)
            }
            return out
        }
    }

    private func update(_ state: OpaquePointer, _ code: UInt16, down: Bool) {
        _ = xkb_state_update_key(state, xkbCode(code), down ? XKB_KEY_DOWN : XKB_KEY_UP)
    }

    /// Why `name` did not compile, said so that it can be fixed.
    private static func compileError(_ name: KeymapName, context: OpaquePointer) -> KeymapError {
        var roots: [String] = []
        for i in 0..<xkb_context_num_include_paths(context) {
            if let p = xkb_context_include_path_get(context, i) { roots.append(String(cString: p)) }
        }
        let dirs = roots.map { $0 + "/symbols" }.filter { isDirectory($0) }
        if dirs.isEmpty {
            return KeymapError("no XKB keyboard layouts found (libxkbcommon looks in /usr/share/X11/xkb, or $XKB_CONFIG_ROOT): "
                + "install them with `apt-get install xkb-data`")
        }
        let files = dirs.map { $0 + "/" + name.layout }.filter { isFile($0) }
        if files.isEmpty {
            let list = roots.first { isFile($0 + "/rules/base.lst") }.map { ", or \($0)/rules/base.lst" } ?? ""
            return KeymapError("unknown keyboard layout '\(name.layout)' (no file \(name.layout) in \(dirs.joined(separator: ", "))): "
                + "give one that `localectl list-x11-keymap-layouts` lists\(list), e.g. us or de")
        }
        if !name.variant.isEmpty {
            return KeymapError("keyboard layout '\(name.layout)' has no variant '\(name.variant)': "
                + "give one that `localectl list-x11-keymap-variants \(name.layout)` lists, or only the layout (\(name.layout))")
        }
        return KeymapError("libxkbcommon could not compile the keyboard layout '\(name)' from \(files[0]): "
            + "check that file (`xkbcli compile-keymap --layout \(name.layout)` shows the error), or reinstall xkb-data")
    }
}

/// How one character is typed: the modifier keys to hold (press order) and
/// the key to press and release.
struct Typing: Equatable {
    var modifiers: [UInt16]
    var key: UInt16
}

func xkbCode(_ evdev: UInt16) -> xkb_keycode_t { xkb_keycode_t(evdev) + 8 }

private func isDirectory(_ path: String) -> Bool {
    var dir: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &dir) && dir.boolValue
}

private func isFile(_ path: String) -> Bool {
    var dir: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &dir) && !dir.boolValue
}
