// `remolo send --device ... --grab --keyboard PATH|auto`: the keyboards
// whose keys go to the receiver, read in the device run's poll loop
// (DeviceRun.swift). What is sent and what is not is KeyForwarding's rule
// (RemoloInput); this file opens, grabs, reads and lets go of the devices.
//
// A keyboard is grabbed (EVIOCGRAB, libevdev_grab) only while the receiver
// takes keys, and only once no key is held on it: a key pressed before the
// grab (the Enter that started this command) has its press on this machine
// and would have its release swallowed by the grab, and the local desktop
// would then repeat it until it saw a release that never comes.
internal import CEvdev
internal import Glibc
import RemoloInput
import RemoloSession

/// Which keyboards `remolo send --keyboard` forwards.
public enum KeyboardChoice: Sendable, Equatable {
    /// Every keyboard (EV_KEY with KEY_A..KEY_Z) but the pointer device
    /// and a Remolo receiver's own devices, those plugged in later too.
    case automatic
    /// This event node only (found again by name after an unplug).
    case node(String)
}

extension Sender {
    /// Key messages sent (presses and releases, keys pressed again on a new
    /// session included) and refused messages heard back.
    public var keyStats: (sent: UInt64, refused: UInt64) { (keys.sent, keys.refused) }
}

extension EvdevHandle {
    /// A Remolo receiver's own uinput device (its pointer or its keyboard):
    /// reading it would feed the receiver's output back into it.
    var isRemoloOwn: Bool { libevdev_get_id_bustype(dev) == BUS_VIRTUAL && name.hasPrefix("Remolo") }

    /// `--keyboard auto` takes it: every letter key.
    var isTypingKeyboard: Bool { !isRemoloOwn && KeyCode.letters.allSatisfy { has(EV_KEY, Int32($0)) } }

    /// Keys down now, as libevdev's state says.
    var keysDown: Set<UInt16> {
        Set((1...KeyCode.max).filter { KeyCode.isKey($0) && value(EV_KEY, Int32($0)) != 0 })
    }
}

/// The forwarded keyboards of one device run. One thread (the run's) uses it.
final class ForwardedKeyboards {
    private final class Board {
        let id: Int
        let handle: EvdevHandle
        /// A grab failed (another program holds it): not tried again.
        var grabFailed = false
        init(id: Int, handle: EvdevHandle) { self.id = id; self.handle = handle }
    }

    private let choice: KeyboardChoice
    private let pointer: InputDeviceInfo
    private let say: (String) -> Void
    private var boards: [Board] = []
    private var rule: KeyForwarding
    private var nextID = 0
    /// Names of forwarded keyboards that went away, to be found again.
    private(set) var lost: [String] = []
    /// Whether the receiver takes keys, as last heard on an open session
    /// (nil: not asked yet).
    private var granted: Bool?
    /// Counters for the run's report.
    private(set) var notSent: UInt64 = 0
    private(set) var repeatsIgnored: UInt64 = 0
    private(set) var unplugs: UInt64 = 0

    /// Opens the keyboards `choice` names. Throws when `.node` is not a
    /// keyboard this run can forward.
    init(_ choice: KeyboardChoice, pointer: InputDeviceInfo, chord: Bool, say: @escaping (String) -> Void) throws(InputDeviceError) {
        self.choice = choice
        self.pointer = pointer
        self.say = say
        rule = KeyForwarding(chord: chord)
        switch choice {
        case .node(let path):
            let h = try EvdevHandle(path: path)
            if path == pointer.path {
                throw InputDeviceError("--keyboard \(path) is the pointer device itself; give a keyboard (`remolo devices` lists them) or auto")
            }
            if h.isRemoloOwn {
                throw InputDeviceError("--keyboard \(path) (\(h.name)) is a Remolo receiver's own keyboard: sending it would feed back into itself")
            }
            guard (1...UInt16(0xff)).contains(where: { h.has(EV_KEY, Int32($0)) }) else {
                throw InputDeviceError("--keyboard \(path) (\(h.name)) has no keys (\(h.info.note)); `remolo devices` lists the keyboards")
            }
            add(h)
        case .automatic:
            for node in InputDevices.nodes() where node != pointer.path {
                if let h = try? EvdevHandle(path: node), h.isTypingKeyboard { add(h) }
            }
        }
    }

    private func add(_ h: EvdevHandle) {
        let b = Board(id: nextID, handle: h)
        nextID += 1
        rule.add(b.id, down: h.keysDown, isForwarding: false)
        boards.append(b)
    }

    var paths: Set<String> { Set(boards.map(\.handle.path)) }
    var fds: [Int32] { boards.map(\.handle.fd) }
    var count: Int { boards.count }
    var names: String { boards.map { "\($0.handle.path) (\($0.handle.name))" }.joined(separator: ", ") }

    /// Whether a node found by the run's scan is one of these keyboards:
    /// with auto every keyboard plugged in; else the one that went away,
    /// by its name. Never the pointer device coming back (a pointer with
    /// its name), nor a receiver's own devices.
    func claims(_ node: String) -> Bool {
        guard !paths.contains(node), let h = try? EvdevHandle(path: node), !h.isRemoloOwn,
              !(h.name == pointer.name && h.info.isPointer) else { return false }
        switch choice {
        case .automatic:
            guard h.isTypingKeyboard else { return false }
        case .node:
            guard lost.contains(h.name) else { return false }
        }
        let back = choice != .automatic || lost.contains(h.name)
        if let i = lost.firstIndex(of: h.name) { lost.remove(at: i) }
        add(h)
        say("remolo: keyboard \(h.name) \(back ? "is back" : "plugged in") at \(node)"
            + (granted == true ? "; grabbed once no key is held on it" : ""))
        return true
    }

    /// Follows the receiver's answer and grabs what may be grabbed: called
    /// once a loop turn, before reading. `strict`: a failed grab throws
    /// (the run's start) instead of being said.
    func maintain(_ sender: Sender, strict: Bool = false) throws(InputDeviceError) {
        if sender.isConnected {
            let g = sender.keyboardGranted
            if g != granted {
                let before = granted
                granted = g
                if !g {
                    stopForwarding(sender, why: Self.why(sender))
                } else if before == false {
                    say("remolo: the receiver takes keys again")
                }
            }
        }
        guard granted == true else { return }
        for b in boards where !rule.isForwarding(b.id) && !b.grabFailed && rule.keysDown(b.id).isEmpty {
            do {
                try b.handle.grab(option: "--keyboard")
            } catch {
                if strict { throw error }
                b.grabFailed = true
                say("remolo: \(error.message); its keys stay on this machine")
                continue
            }
            _ = rule.setForwarding(b.id, true)
            say("remolo: keyboard \(b.handle.path) (\(b.handle.name)) grabbed: its keys go to the receiver")
        }
        guard strict else { return }
        for b in boards where !rule.isForwarding(b.id) && !rule.keysDown(b.id).isEmpty {
            say("remolo: keyboard \(b.handle.path) (\(b.handle.name)): keys held; grabbed once they are all up")
        }
    }

    /// Why the receiver does not take keys: the status in its hello.
    private static func why(_ sender: Sender) -> String {
        guard let h = sender.receiverHello else {
            return sender.keys.negotiator?.wanted.contains(.keyboard) == true
                ? "the receiver does not take keys (an older version)"
                : "this sender did not ask the receiver for the keyboard (Sender.connect(keyboard: true))"
        }
        return "the receiver does not take keys from this sender: \(h.keyboard)"
    }

    /// The receiver does not take keys: every keyboard is let go, so the
    /// person can type on this machine while the pointer goes on.
    private func stopForwarding(_ sender: Sender, why: String) {
        var any = false
        for b in boards where rule.isForwarding(b.id) {
            _ = rule.setForwarding(b.id, false)
            b.handle.ungrab()
            any = true
        }
        // Not sent (the keyboard is not granted): forgets the keys held, so
        // a later session that takes keys is not pressed them again.
        try? sender.releaseKeys(at: senderClockUs())
        say("remolo: \(why); keyboards \(any ? "released from the grab" : "not grabbed"): they type on this machine, the pointer goes on")
    }

    /// Reads keyboard `index` (of `fds`): sends what it says, and true when
    /// the let-go chord completed on it. A keyboard that is gone has its
    /// keys released on the receiver and is looked for again.
    func read(_ index: Int, _ sender: Sender) throws -> Bool {
        let b = boards[index]
        var out: [(code: UInt16, down: Bool, t: UInt64)] = []
        var letGo = false
        let e = b.handle.readAvailable(onOverflow: {}) { ev in
            guard !letGo else { return }
            switch rule.event(b.id, type: ev.type, code: ev.code, value: ev.value) {
            case .send(let code, let down): out.append((code, down, PointerSource.timeUs(ev)))
            case .letGo: letGo = true
            case .repeatIgnored: repeatsIgnored += 1
            case .ignored: break
            }
        }
        for k in out { try send(k.code, down: k.down, at: k.t, sender) }
        if letGo {
            say("remolo: Ctrl+Alt+Esc on \(b.handle.name): letting go" + (rule.isForwarding(b.id) ? " (its last key was not sent)" : ""))
            return true
        }
        if e != 0 {
            unplugs += 1
            let wasForwarding = rule.isForwarding(b.id)
            let now = senderClockUs()
            for code in rule.remove(b.id) { try send(code, down: false, at: now, sender) }
            b.handle.ungrab()
            boards.remove(at: index)
            lost.append(b.handle.name)
            say("remolo: keyboard \(b.handle.path) (\(b.handle.name)) is gone (\(e == ENODEV ? "unplugged or suspended" : String(cString: strerror(e))))"
                + (wasForwarding ? "; its keys released on the receiver" : "") + "; waiting for it to come back")
        }
        return false
    }

    /// One key to the receiver, unless the session is out: a key of an
    /// outage is not sent late (a key still held when the session comes
    /// back is pressed again on it, as the Sender does with buttons).
    private func send(_ code: UInt16, down: Bool, at t: UInt64, _ sender: Sender) throws {
        do {
            if try !sender.key(code, down: down, at: t) { notSent += 1 }
        } catch is SessionError {
            // The session is ending; the next frame finds it out and
            // reconnects, pressing again what is still held.
            notSent += 1
        }
    }

    /// Letting go (chord, signal, end of time): every key held on the
    /// receiver is released, then the grabs end.
    func letGo(_ sender: Sender) throws {
        _ = rule.releaseAll()
        do { try sender.releaseKeys(at: senderClockUs()) } catch is SessionError {
            // The receiver releases every key of a session that ends.
        }
        for b in boards {
            _ = rule.setForwarding(b.id, false)
            b.handle.ungrab()
        }
    }
}
