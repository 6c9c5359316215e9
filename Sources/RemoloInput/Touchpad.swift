/// A touch surface's size, and how its device units map to millimetres.
import RemoloTypes
internal import Glibc
public struct TouchpadRecognizer: Sendable {
    public let config: TouchpadConfig

    struct Contact: Sendable {
        var slot: Int32
        var x: Double
        var y: Double
        var startX: Double
        var startY: Double
        var lastUs: UInt64
        /// In the button area since it landed: not a finger yet.
        var resting: Bool
        /// Down when the recognizer was reset: ignored until it lifts.
        var ignored = false
    }

    enum DecidingKind: Sendable, Equatable {
        /// Fingers touched from idle: a tap, or the start of a movement.
        case fresh
        /// A touch after a one-finger tap (left held): a double tap or a drag.
        case afterTap
        /// A touch during drag lock (left held): a tap ends the drag,
        /// movement carries on with it.
        case dragLock
    }

    struct Deciding: Sendable, Equatable {
        var kind: DecidingKind
        var startUs: UInt64
        var lastTouchUs: UInt64
        var maxFingers: Int
        var anyLifted = false
    }

    enum Phase: Sendable, Equatable {
        case idle
        /// A tap is still possible: motion is held back.
        case deciding(Deciding)
        /// Not a tap: fingers move and scroll.
        case moving
        /// Left is down after a one-finger tap until the deadline.
        case tapped(deadlineUs: UInt64)
        /// Left is down, the finger moves it.
        case dragging
        /// Left is down, the finger lifted; a touch before the deadline goes on.
        case dragLockWait(deadlineUs: UInt64)
        /// Nothing taps until every finger has lifted.
        case dead
    }

    private var contacts: [Contact] = []
    private(set) var phase: Phase = .idle
    private var held: [TouchpadEvent] = []
    private var physical: Button?
    /// This touch sequence has scrolled: a finger left alone does not move
    /// the pointer until all lift.
    private var scrolled = false
    private var scrollHistory: [(timeUs: UInt64, dx: Double, dy: Double)] = []
    private var nowUs: UInt64 = 0
    private var out: [TouchpadEvent] = []

    /// Where two fingers were when the second landed: their distance, the
    /// line's angle (counter-clockwise on screen) and their centroid.
    struct TwoFingerShape: Sendable {
        var vx: Double   // the line from the first finger to the second
        var vy: Double
        var distance: Double
        var angle: Double
        var cx: Double
        var cy: Double

        init(_ ax: Double, _ ay: Double, _ bx: Double, _ by: Double) {
            vx = bx - ax
            vy = by - ay
            distance = (vx * vx + vy * vy).squareRoot()
            angle = atan2(-(by - ay), bx - ax)   // y grows downwards
            cx = (ax + bx) / 2
            cy = (ay + by) / 2
        }
    }

    /// Two fingers with gestures on: not told apart yet (their scroll held
    /// back), a scroll, or a pinch (its last centroid).
    enum TwoFingers: Sendable {
        case undecided(base: TwoFingerShape, pending: [(timeUs: UInt64, dx: Double, dy: Double)])
        case scroll
        case pinch(base: TwoFingerShape, cx: Double, cy: Double)
    }

    /// The gesture begun and not yet ended.
    private var gesture: TouchpadGestureKind?
    private var two: TwoFingers?

    public init(config: TouchpadConfig) throws(InputConfigError) {
        self.config = try config.validated()
    }

    /// Fingers that count (not resting, not ignored).
    private var activeCount: Int { contacts.reduce(0) { $0 + ($1.resting || $1.ignored ? 0 : 1) } }

    /// Whether the recognizer holds a button it will release by itself.
    public var holdsTapButton: Bool {
        switch phase {
        case .tapped, .dragging, .dragLockWait: return true
        case .deciding(let d): return d.kind != .fresh
        default: return false
        }
    }

    /// Fires the timeouts due by `timeUs`.
    public mutating func advance(toUs timeUs: UInt64) -> [TouchpadEvent] {
        nowUs = max(nowUs, timeUs)
        fireTimers()
        return drain()
    }

    /// One contact sample.
    public mutating func contact(_ s: ContactSample) -> [TouchpadEvent] {
        nowUs = max(nowUs, s.timeUs)
        fireTimers()
        let t = nowUs
        if let i = contacts.firstIndex(where: { $0.slot == s.slot }) {
            if s.isTouching { move(i, s.xMm, s.yMm, t) } else { lift(i, t) }
        } else if s.isTouching {
            touchDown(s, t)
        }
        return drain()
    }

    /// The clickpad's physical button.
    public mutating func physicalButton(isDown: Bool, atUs timeUs: UInt64) -> [TouchpadEvent] {
        nowUs = max(nowUs, timeUs)
        fireTimers()
        let t = nowUs
        if isDown {
            guard physical == nil else { return drain() }
            // A click ends any tap or drag (libinput: TAP_EVENT_BUTTON), and
            // motion held for a tap is real motion after all.
            if holdsTapButton { emit(.button(ButtonChange(.left, isDown: false, timeUs: t))) }
            flushHeld()
            phase = activeCount > 0 ? .dead : .idle
            let b = clickButton()
            physical = b
            emit(.button(ButtonChange(b, isDown: true, timeUs: t)))
        } else if let b = physical {
            physical = nil
            emit(.button(ButtonChange(b, isDown: false, timeUs: t)))
        }
        return drain()
    }

    /// Forgets every state (device gone, grab ended): fingers still down
    /// are ignored until they lift, nothing held is sent and no timeout
    /// fires. The caller releases the buttons (`Framer.releaseAll`).
    public mutating func reset() {
        for i in contacts.indices { contacts[i].ignored = true }
        phase = .idle
        held.removeAll()
        physical = nil
        scrolled = false
        scrollHistory.removeAll()
        out.removeAll()
        gesture = nil
        two = nil
    }

    // MARK: - Contacts

    private mutating func touchDown(_ s: ContactSample, _ t: UInt64) {
        emit(.touchDown(atUs: t))
        let resting = s.yMm >= config.buttonAreaTopMm
        contacts.append(Contact(slot: s.slot, x: s.xMm, y: s.yMm, startX: s.xMm, startY: s.yMm,
                                lastUs: t, resting: resting))
        if !resting { fingerLanded(t) }
    }

    private mutating func fingerLanded(_ t: UInt64) {
        fingersChanged(t)
        let n = activeCount
        if physical != nil {
            if phase == .idle { phase = .dead }
            return
        }
        switch phase {
        case .idle:
            phase = config.tapToClick
                ? .deciding(Deciding(kind: .fresh, startUs: t, lastTouchUs: t, maxFingers: n))
                : .moving
        case .deciding(var d):
            if d.kind == .fresh {
                if d.anyLifted {
                    decidingFails()
                } else {
                    d.maxFingers = max(d.maxFingers, n)
                    d.lastTouchUs = t
                    phase = .deciding(d)
                }
            } else {
                // Only one finger starts a drag or a double tap.
                emit(.button(ButtonChange(.left, isDown: false, timeUs: t)))
                flushHeld()
                phase = .dead
            }
        case .tapped:
            phase = .deciding(Deciding(kind: .afterTap, startUs: t, lastTouchUs: t, maxFingers: n))
        case .dragLockWait:
            phase = .deciding(Deciding(kind: .dragLock, startUs: t, lastTouchUs: t, maxFingers: n))
        case .moving, .dragging, .dead:
            break
        }
    }

    private mutating func move(_ i: Int, _ x: Double, _ y: Double, _ t: UInt64) {
        var c = contacts[i]
        let dx = x - c.x, dy = y - c.y
        let interval = t - min(t, c.lastUs)
        c.x = x
        c.y = y
        c.lastUs = t
        if c.ignored { contacts[i] = c; return }
        if c.resting {
            if y < config.buttonAreaTopMm {
                // Up out of the button area: a finger from here on, with
                // no jump for the way it came.
                c.resting = false
                c.startX = x
                c.startY = y
                contacts[i] = c
                fingerEscaped(t)
            } else {
                contacts[i] = c
            }
            return
        }
        contacts[i] = c
        route(i, dx, dy, interval, t)
        if case .deciding = phase {
            let ex = x - c.startX, ey = y - c.startY
            if (ex * ex + ey * ey).squareRoot() > config.tapMoveThresholdMm { decidingFails() }
        }
    }

    /// A resting contact became a finger by moving: it is already moving,
    /// so it cannot tap.
    private mutating func fingerEscaped(_ t: UInt64) {
        fingersChanged(t)
        if physical != nil { if phase == .idle { phase = .dead }; return }
        switch phase {
        case .idle: phase = .moving
        case .deciding: decidingFails()
        case .tapped, .dragLockWait: phase = .dragging
        case .moving, .dragging, .dead: break
        }
    }

    private mutating func route(_ i: Int, _ dx: Double, _ dy: Double, _ interval: UInt64, _ t: UInt64) {
        var ev: TouchpadEvent?
        let n = activeCount
        let first = contacts.firstIndex { !$0.resting && !$0.ignored }
        if physical != nil {
            // Click-and-hold drag: the clicking finger stays still, any
            // finger that moves carries the pointer.
            ev = .motion(dxMm: dx, dyMm: dy, intervalUs: interval, atUs: t)
        } else {
            let dragLike: Bool
            switch phase {
            case .dragging: dragLike = true
            case .deciding(let d): dragLike = d.kind != .fresh
            default: dragLike = false
            }
            if dragLike {
                if i == first { ev = .motion(dxMm: dx, dyMm: dy, intervalUs: interval, atUs: t) }
            } else if n == 1 && !scrolled {
                ev = .motion(dxMm: dx, dyMm: dy, intervalUs: interval, atUs: t)
            } else if config.gestures && n >= 2 {
                scrolled = true
                if n == 2 { twoFingers(i, dx, dy, t) } else { swipe(n, dx, dy, t) }
                return
            } else if n == 2 {
                scrolled = true
                let sx = dx / 2, sy = dy / 2
                scrollHistory.append((t, sx, sy))
                let horizon = t - min(t, config.glideWindowUs)
                scrollHistory.removeAll { $0.timeUs <= horizon }
                ev = .scroll(dxMm: sx, dyMm: sy, atUs: t)
            }
        }
        guard let ev else { return }
        if case .deciding = phase { held.append(ev) } else { emit(ev) }
    }

    private mutating func lift(_ i: Int, _ t: UInt64) {
        let c = contacts.remove(at: i)
        if c.resting || c.ignored { return }
        fingersChanged(t)
        let n = activeCount
        if scrolled && n == 1 { glide(t) }
        switch phase {
        case .deciding(var d):
            if n > 0 {
                d.anyLifted = true
                phase = .deciding(d)
            } else {
                held.removeAll()   // a tap's wobble is not motion
                switch d.kind {
                case .fresh:
                    tap(fingers: d.maxFingers, t)
                case .afterTap:
                    // Double tap: the first click ends when the second touch
                    // landed, the second is held for a possible drag.
                    emit(.button(ButtonChange(.left, isDown: false, timeUs: d.startUs)))
                    emit(.button(ButtonChange(.left, isDown: true, timeUs: t)))
                    phase = .tapped(deadlineUs: t + dragTimeoutUs(fingers: 1))
                case .dragLock:
                    emit(.button(ButtonChange(.left, isDown: false, timeUs: t)))
                    phase = .idle
                }
            }
        case .dragging:
            if n == 0 {
                if config.dragLock {
                    phase = .dragLockWait(deadlineUs: t + config.dragLockTimeoutUs)
                } else {
                    emit(.button(ButtonChange(.left, isDown: false, timeUs: t)))
                    phase = .idle
                }
            }
        case .moving, .dead:
            if n == 0 { phase = .idle }
        case .idle, .tapped, .dragLockWait:
            break
        }
        if n == 0 {
            scrolled = false
            scrollHistory.removeAll()
        }
    }

    private func dragTimeoutUs(fingers: Int) -> UInt64 {
        config.dragTimeoutBaseUs + UInt64(fingers) * config.dragTimeoutPerFingerUs
    }

    private mutating func tap(fingers: Int, _ t: UInt64) {
        switch fingers {
        case 1:
            emit(.button(ButtonChange(.left, isDown: true, timeUs: t)))
            if config.tapAndDrag {
                phase = .tapped(deadlineUs: t + dragTimeoutUs(fingers: 1))
            } else {
                emit(.button(ButtonChange(.left, isDown: false, timeUs: t)))
                phase = .idle
            }
        case 2, 3:
            let b: Button = fingers == 2 ? .right : .middle
            emit(.button(ButtonChange(b, isDown: true, timeUs: t)))
            emit(.button(ButtonChange(b, isDown: false, timeUs: t)))
            phase = .idle
        default:
            phase = .idle
        }
    }

    /// The velocity of the last `glideWindowUs` of scrolling, if the
    /// fingers were still moving when they lifted.
    private mutating func glide(_ t: UInt64) {
        let horizon = t - min(t, config.glideWindowUs)
        let recent = scrollHistory.filter { $0.timeUs > horizon }
        scrollHistory.removeAll()
        guard !recent.isEmpty else { return }
        let seconds = Double(config.glideWindowUs) / 1_000_000
        let vx = recent.reduce(0) { $0 + $1.dx } / seconds
        let vy = recent.reduce(0) { $0 + $1.dy } / seconds
        guard (vx * vx + vy * vy).squareRoot() >= config.glideMinimumMmPerSecond else { return }
        emit(.glide(vxMmPerSecond: vx, vyMmPerSecond: vy, atUs: t))
    }

    // MARK: - Gestures (TouchpadConfig.gestures)

    /// Sent now, or held with the rest while a tap is still possible.
    private mutating func put(_ e: TouchpadEvent) {
        if case .deciding = phase { held.append(e) } else { emit(e) }
    }

    /// The fingers' count changed: the gesture ends (a desktop binds a
    /// swipe to its finger count), and scrolling held back for a decision
    /// is sent, since it was not a pinch.
    private mutating func fingersChanged(_ t: UInt64) {
        guard config.gestures else { return }
        if gesture != nil {
            put(.gestureEnd(atUs: t))
            gesture = nil
        }
        if case let .undecided(_, pending)? = two {
            for p in pending { scrollStep(p.timeUs, p.dx, p.dy) }
        }
        two = nil
    }

    /// Three or four fingers: their centroid moves by each sample's share.
    /// Five or more are no gesture a desktop binds: nothing.
    private mutating func swipe(_ n: Int, _ dx: Double, _ dy: Double, _ t: UInt64) {
        guard n <= 4 else { return }
        if gesture == nil {
            gesture = .swipe
            put(.gestureBegin(kind: .swipe, fingers: n, atUs: t))
        }
        put(.gestureUpdate(dxMm: dx / Double(n), dyMm: dy / Double(n), scale: 1, angle: 0, atUs: t))
    }

    private mutating func scrollStep(_ t: UInt64, _ sx: Double, _ sy: Double) {
        scrollHistory.append((t, sx, sy))
        let horizon = t - min(t, config.glideWindowUs)
        scrollHistory.removeAll { $0.timeUs <= horizon }
        put(.scroll(dxMm: sx, dyMm: sy, atUs: t))
    }

    /// Two fingers: a pinch when they move against each other (apart,
    /// together, or turning) more than they move together, a scroll
    /// otherwise, decided once either has reached `pinchDecisionMm`.
    private mutating func twoFingers(_ i: Int, _ dx: Double, _ dy: Double, _ t: UInt64) {
        let idx = contacts.indices.filter { !contacts[$0].resting && !contacts[$0].ignored }
        guard idx.count == 2 else { return }
        let a = contacts[idx[0]], b = contacts[idx[1]]
        let now = TwoFingerShape(a.x, a.y, b.x, b.y)
        if two == nil {
            // The shape before this sample moved contact i.
            let (ax, ay) = idx[0] == i ? (a.x - dx, a.y - dy) : (a.x, a.y)
            let (bx, by) = idx[1] == i ? (b.x - dx, b.y - dy) : (b.x, b.y)
            two = .undecided(base: TwoFingerShape(ax, ay, bx, by), pending: [])
        }
        switch two! {
        case .undecided(let base, var pending):
            pending.append((t, dx / 2, dy / 2))
            // How far each finger moved against the other (half the change
            // of the line between them: spreading, closing or turning),
            // against how far they moved together (the centroid).
            let rx = (now.vx - base.vx) / 2, ry = (now.vy - base.vy) / 2
            let rel = (rx * rx + ry * ry).squareRoot()
            let dc = ((now.cx - base.cx) * (now.cx - base.cx) + (now.cy - base.cy) * (now.cy - base.cy)).squareRoot()
            if max(rel, dc) < config.pinchDecisionMm {
                two = .undecided(base: base, pending: pending)
            } else if rel > dc {
                gesture = .pinch
                put(.gestureBegin(kind: .pinch, fingers: 2, atUs: t))
                two = .pinch(base: base, cx: base.cx, cy: base.cy)
                pinchStep(base, base.cx, base.cy, now, t)
            } else {
                two = .scroll
                for p in pending { scrollStep(p.timeUs, p.dx, p.dy) }
            }
        case .scroll:
            scrollStep(t, dx / 2, dy / 2)
        case .pinch(let base, let cx, let cy):
            pinchStep(base, cx, cy, now, t)
        }
    }

    private mutating func pinchStep(_ base: TwoFingerShape, _ cx: Double, _ cy: Double, _ now: TwoFingerShape, _ t: UInt64) {
        var turn = now.angle - base.angle
        if turn > .pi { turn -= 2 * .pi } else if turn < -.pi { turn += 2 * .pi }
        // Fingers landed on one spot: a pinch of them is measured from 1 mm.
        let scale = now.distance / max(base.distance, 1)
        put(.gestureUpdate(dxMm: now.cx - cx, dyMm: now.cy - cy, scale: scale, angle: turn, atUs: t))
        two = .pinch(base: base, cx: now.cx, cy: now.cy)
    }

    // MARK: - Buttons and timeouts

    /// Which button a clickpad press means.
    private func clickButton() -> Button {
        let n = activeCount
        if n >= 3 { return .middle }
        if n == 2 { return .right }
        let top = config.buttonAreaTopMm
        let right = config.geometry.widthMm * config.rightButtonLeftFraction
        if contacts.contains(where: { !$0.ignored && $0.y >= top && $0.x >= right }) { return .right }
        return .left
    }

    private mutating func decidingFails() {
        guard case .deciding(let d) = phase else { return }
        phase = d.kind == .fresh ? .moving : .dragging
        flushHeld()
    }

    private mutating func fireTimers() {
        while true {
            switch phase {
            case .deciding(let d) where d.lastTouchUs + config.tapTimeoutUs <= nowUs:
                // Held too long for a tap: a touch after a tap becomes a drag
                // even before it moves (libinput does the same).
                decidingFails()
            case .tapped(let deadline) where deadline <= nowUs,
                 .dragLockWait(let deadline) where deadline <= nowUs:
                emit(.button(ButtonChange(.left, isDown: false, timeUs: deadline)))
                phase = activeCount > 0 ? .dead : .idle
            default:
                return
            }
        }
    }

    private mutating func flushHeld() {
        out.append(contentsOf: held)
        held.removeAll()
    }

    private mutating func emit(_ e: TouchpadEvent) { out.append(e) }

    private mutating func drain() -> [TouchpadEvent] {
        defer { out.removeAll(keepingCapacity: true) }
        return out
    }
}
