// What `remolo send --keyboard` does with each event of the keyboards it
// reads: presses and releases of KEY_* codes go to the receiver; autorepeat
// never does (repeating a held key is the receiver desktop's job); the press
// that completes the let-go chord Ctrl+Alt+Esc ends the run and is never
// sent. Pure: the device loop feeds it evdev events and sends what it says.
//
// References: the kernel's Documentation/input/event-codes.rst (EV_KEY
// values: 0 release, 1 press, 2 autorepeat) and
// include/uapi/linux/input-event-codes.h (which codes are KEY_* and which
// BTN_*).

/// Linux key codes the sender needs by name (input-event-codes.h).
public enum KeyCode {
    public static let esc: UInt16 = 1
    public static let leftCtrl: UInt16 = 29
    public static let leftAlt: UInt16 = 56
    public static let rightCtrl: UInt16 = 97
    public static let rightAlt: UInt16 = 100
    /// KEY_A..KEY_Z (in code order: the codes follow the QWERTY rows).
    public static let letters: [UInt16] = [16, 17, 18, 19, 20, 21, 22, 23, 24, 25,   // Q W E R T Y U I O P
                                           30, 31, 32, 33, 34, 35, 36, 37, 38,       // A S D F G H J K L
                                           44, 45, 46, 47, 48, 49, 50]               // Z X C V B N M
    /// KEY_MAX: the last EV_KEY code.
    public static let max: UInt16 = 0x2ff

    /// A keyboard key (`KEY_*`), not a button (`BTN_*`) and not
    /// KEY_RESERVED: 1...0xff, then 0x160...KEY_MAX without the button
    /// blocks BTN_DPAD_* (0x220...0x223) and BTN_TRIGGER_HAPPY* (0x2c0...0x2e7).
    /// 0x100...0x15f is BTN_MISC through BTN_GEAR_UP and unassigned codes.
    public static func isKey(_ code: UInt16) -> Bool {
        switch code {
        case 1...0xff: return true
        case 0x220...0x223, 0x2c0...0x2e7: return false
        case 0x160...max: return true
        default: return false
        }
    }

    /// Ctrl, Alt and Esc held together, left or right modifiers alike.
    public static func chordHeld(_ down: Set<UInt16>) -> Bool {
        (down.contains(leftCtrl) || down.contains(rightCtrl)) && (down.contains(leftAlt) || down.contains(rightAlt))
            && down.contains(esc)
    }
}

/// The keyboards a sender reads, each by an id the caller picks, and what
/// becomes of each of their events.
///
/// A keyboard is forwarding (grabbed: its keys go to the receiver only) or
/// not (its keys stay on this machine; it is only watched for the chord).
/// Several keyboards may hold the same key: the receiver gets one press,
/// when the first of them presses it, and one release, when the last lets
/// it go. A release is sent only for a press that was: a key already down
/// when forwarding began was pressed on this machine and is not the
/// receiver's to release.
public struct KeyForwarding: Sendable {
    /// What to do with one event.
    public enum Decision: Equatable, Sendable {
        /// Send this press or release to the receiver.
        case send(code: UInt16, isDown: Bool)
        /// The let-go chord is complete: stop; this press is not sent.
        case letGo
        /// Autorepeat of a key that went to the receiver: not sent.
        case repeatIgnored
        /// Nothing to send (not a key event, a button, a keyboard that is
        /// not forwarding, a key another keyboard already holds there, a
        /// release of a key pressed before forwarding began).
        case ignored
    }

    /// evdev's EV_KEY.
    public static let evKey: UInt16 = 1

    private struct Board: Sendable {
        /// Keys down on the device, forwarded or not (for the chord).
        var down: Set<UInt16>
        /// Keys whose press went to the receiver and are not released yet.
        var forwarded: Set<UInt16> = []
        var isForwarding: Bool
    }

    private var boards: [Int: Board] = [:]
    /// False: Ctrl+Alt+Esc is an ordinary chord (forwarded like any keys).
    public var chord: Bool

    public init(chord: Bool = true) { self.chord = chord }

    /// Starts reading keyboard `id`, with the keys already down on it.
    public mutating func add(_ id: Int, down: Set<UInt16> = [], isForwarding: Bool = false) {
        boards[id] = Board(down: down, isForwarding: isForwarding)
    }

    public func isForwarding(_ id: Int) -> Bool { boards[id]?.isForwarding == true }

    /// Keys down on keyboard `id` now, as its events told.
    public func keysDown(_ id: Int) -> Set<UInt16> { boards[id]?.down ?? [] }

    /// Every key the receiver holds from these keyboards, in code order.
    public var held: [UInt16] { union(except: nil).sorted() }

    /// Starts or stops forwarding keyboard `id`. Stopping returns the
    /// releases to send for the keys it held there (none that another
    /// keyboard still holds).
    public mutating func setForwarding(_ id: Int, _ on: Bool) -> [UInt16] {
        guard var b = boards[id] else { return [] }
        b.isForwarding = on
        let released = on ? [] : b.forwarded.subtracting(union(except: id)).sorted()
        if !on { b.forwarded = [] }
        boards[id] = b
        return released
    }

    /// Keyboard `id` is gone (unplugged): the releases to send for what
    /// it held there.
    public mutating func remove(_ id: Int) -> [UInt16] {
        guard let b = boards.removeValue(forKey: id) else { return [] }
        return b.forwarded.subtracting(union(except: nil)).sorted()
    }

    /// Letting go: the releases of everything the receiver holds; the
    /// keyboards then hold nothing there.
    public mutating func releaseAll() -> [UInt16] {
        let all = held
        for id in boards.keys { boards[id]?.forwarded = [] }
        return all
    }

    /// One evdev event of keyboard `id` (type, code, value as read).
    public mutating func event(_ id: Int, type: UInt16, code: UInt16, value: Int32) -> Decision {
        guard type == Self.evKey, var b = boards[id] else { return .ignored }
        defer { boards[id] = b }
        switch value {
        case 1:
            let before = KeyCode.chordHeld(b.down)
            b.down.insert(code)
            if chord && !before && KeyCode.chordHeld(b.down) { return .letGo }
            guard b.isForwarding, KeyCode.isKey(code), b.forwarded.insert(code).inserted else { return .ignored }
            return union(except: id).contains(code) ? .ignored : .send(code: code, isDown: true)
        case 0:
            b.down.remove(code)
            guard b.forwarded.remove(code) != nil else { return .ignored }
            return union(except: id).contains(code) ? .ignored : .send(code: code, isDown: false)
        case 2:
            return b.forwarded.contains(code) ? .repeatIgnored : .ignored
        default:
            return .ignored
        }
    }

    /// Keys forwarded by every keyboard but `id`.
    private func union(except id: Int?) -> Set<UInt16> {
        var s = Set<UInt16>()
        for (k, b) in boards where k != id { s.formUnion(b.forwarded) }
        return s
    }
}
