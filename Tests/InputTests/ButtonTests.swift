import Testing
import RemoloTestSupport
import RemoloInput
import RemoloTypes

/// Replays button changes as the receiver would and reports what is wrong.
struct ButtonLedger {
    var held: Set<Button> = []
    var lastTimeUs: UInt64 = 0
    var problems: [String] = []

    mutating func apply(_ changes: [ButtonChange]) {
        for c in changes {
            if c.timeUs < lastTimeUs { problems.append("\(c) before \(lastTimeUs)") }
            lastTimeUs = max(lastTimeUs, c.timeUs)
            if c.isDown {
                if !held.insert(c.button).inserted { problems.append("\(c): already down") }
            } else if held.remove(c.button) == nil {
                problems.append("\(c): was not down")
            }
        }
    }
}

@Suite("Buttons: on the motion clock, never lost, never stuck")
struct ButtonTests {
    static func padCore() throws -> InputCore {
        try InputCore(config: InputConfig(touchpad: TouchpadConfig(geometry: try TouchpadGeometry(widthMm: 100, heightMm: 60))),
                      startUs: 0)
    }

    struct ReleaseCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var name: String
        /// Touch, click and mouse steps, as in the gesture table, plus mouse
        /// buttons (`mouse`).
        var steps: [Step]
        var releaseAtUs: UInt64
        var released: [Button]
        var testDescription: String { "\(id). \(name)" }
    }

    enum Step: Sendable {
        case touch(UInt64, Int32, Double, Double)
        case lift(UInt64, Int32)
        case click(UInt64, Bool)
        case mouse(UInt64, Button, Bool)
    }

    static func run(_ steps: [Step], on core: inout InputCore, ledger: inout ButtonLedger) {
        for s in steps {
            let t: UInt64
            switch s {
            case let .touch(at, slot, x, y): t = at; core.contact(ContactSample(slot: slot, xMm: x, yMm: y, isTouching: true, timeUs: at))
            case let .lift(at, slot): t = at; core.contact(ContactSample(slot: slot, xMm: 0, yMm: 0, isTouching: false, timeUs: at))
            case let .click(at, down): t = at; core.clickpadButton(isDown: down, atUs: at)
            case let .mouse(at, b, down): t = at; core.mouseButton(b, isDown: down, atUs: at)
            }
            while core.nextFrameUs <= t { ledger.apply(core.endFrame().buttons) }
        }
    }

    /// Whatever is held when the device goes away (a tap waiting for a
    /// drag, a drag, drag lock, a clickpad click, mouse buttons), releaseAll
    /// lets go of exactly that, and nothing presses again afterwards.
    @Test(arguments: [
        ReleaseCase(id: 1, name: "nothing held", steps: [.touch(0, 0, 50, 30), .touch(20_000, 0, 56, 30), .lift(50_000, 0)],
                    releaseAtUs: 400_000, released: []),
        ReleaseCase(id: 2, name: "tap waiting for a drag", steps: [.touch(0, 0, 50, 30), .lift(80_000, 0)],
                    releaseAtUs: 100_000, released: [.left]),
        ReleaseCase(id: 3, name: "tap pressed but not yet sent", steps: [.touch(0, 0, 50, 30), .lift(80_001, 0)],
                    releaseAtUs: 80_001, released: [.left]),
        ReleaseCase(id: 4, name: "tap-and-drag, finger down",
                    steps: [.touch(0, 0, 50, 30), .lift(80_000, 0), .touch(150_000, 0, 50, 30), .touch(170_000, 0, 55, 30)],
                    releaseAtUs: 200_000, released: [.left]),
        ReleaseCase(id: 5, name: "drag lock",
                    steps: [.touch(0, 0, 50, 30), .lift(80_000, 0), .touch(150_000, 0, 50, 30), .touch(170_000, 0, 55, 30),
                            .lift(200_000, 0)],
                    releaseAtUs: 300_000, released: [.left]),
        ReleaseCase(id: 6, name: "clickpad right click held",
                    steps: [.touch(0, 0, 80, 56), .click(50_000, true)], releaseAtUs: 100_000, released: [.right]),
        ReleaseCase(id: 7, name: "mouse buttons held",
                    steps: [.mouse(0, .left, true), .mouse(5_000, .side, true), .mouse(9_000, .right, true)],
                    releaseAtUs: 20_000, released: [.left, .side, .right]),
        ReleaseCase(id: 8, name: "mouse and tap together",
                    steps: [.mouse(0, .middle, true), .touch(10_000, 0, 50, 30), .lift(60_000, 0)],
                    releaseAtUs: 70_000, released: [.middle, .left]),
    ])
    func releaseAllLeavesNothingHeld(_ c: ReleaseCase) throws {
        var core = try Self.padCore()
        var ledger = ButtonLedger()
        Self.run(c.steps, on: &core, ledger: &ledger)
        let before = ledger.held
        let out = core.releaseAll(atUs: c.releaseAtUs)
        ledger.apply(out)
        #expect(Set(before).union(out.filter(\.isDown).map(\.button)) == Set(c.released))
        #expect(ledger.held.isEmpty, "still held: \(ledger.held)")
        #expect(core.heldButtons.isEmpty)
        #expect(out.filter { !$0.isDown }.allSatisfy { $0.timeUs >= c.releaseAtUs })
        // Timeouts that were pending (drag, drag lock) fire into nothing, and
        // the fingers still down, ignored until they lift, do not tap.
        core.contact(ContactSample(slot: 0, xMm: 50, yMm: 30, isTouching: false, timeUs: c.releaseAtUs + 10_000))
        while core.nextFrameUs <= c.releaseAtUs + 2_000_000 {
            let f = core.endFrame()
            #expect(f.buttons.isEmpty, "after releaseAll: \(f.buttons)")
        }
        #expect(ledger.problems.isEmpty, "\(ledger.problems)")
    }

    struct RandomCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var seed: UInt64
        var testDescription: String { "\(id). seed \(seed)" }
    }

    /// Random taps, drags, clicks and mouse buttons, cut off at a random
    /// moment: the stream the receiver sees alternates per button, is in
    /// time order, and releaseAll always ends with nothing held.
    @Test(arguments: (1...8).map { RandomCase(id: Int($0), seed: $0) })
    func randomSessionsNeverLeaveAButtonHeld(_ c: RandomCase) throws {
        var rng = SplitMix64(seed: c.seed)
        for _ in 0..<50 {
            var core = try Self.padCore()
            var ledger = ButtonLedger()
            var t: UInt64 = 0
            var down: [Int32: (Double, Double)] = [:]
            var clicked = false
            let steps = Int.random(in: 1...60, using: &rng)
            for _ in 0..<steps {
                t += UInt64.random(in: 1_000...150_000, using: &rng)
                switch Int.random(in: 0...9, using: &rng) {
                case 0...2:
                    let slot = Int32.random(in: 0...2, using: &rng)
                    let p = (Double.random(in: 5...95, using: &rng), Double.random(in: 5...59, using: &rng))
                    down[slot] = p
                    core.contact(ContactSample(slot: slot, xMm: p.0, yMm: p.1, isTouching: true, timeUs: t))
                case 3...4:
                    if let (slot, p) = down.randomElement(using: &rng) {
                        let q = (p.0 + Double.random(in: -4...4, using: &rng), p.1 + Double.random(in: -4...4, using: &rng))
                        down[slot] = q
                        core.contact(ContactSample(slot: slot, xMm: q.0, yMm: q.1, isTouching: true, timeUs: t))
                    }
                case 5...6:
                    if let slot = down.keys.randomElement(using: &rng) {
                        down[slot] = nil
                        core.contact(ContactSample(slot: slot, xMm: 0, yMm: 0, isTouching: false, timeUs: t))
                    }
                case 7:
                    clicked.toggle()
                    core.clickpadButton(isDown: clicked, atUs: t)
                default:
                    let b = [Button.left, .right, .middle, .side][Int.random(in: 0...3, using: &rng)]
                    core.mouseButton(b, isDown: Bool.random(using: &rng), atUs: t)
                }
                while core.nextFrameUs <= t { ledger.apply(core.endFrame().buttons) }
            }
            ledger.apply(core.releaseAll(atUs: t))
            #expect(ledger.held.isEmpty, "seed \(c.seed): still held \(ledger.held)")
            for slot in down.keys { core.contact(ContactSample(slot: slot, xMm: 0, yMm: 0, isTouching: false, timeUs: t + 1)) }
            while core.nextFrameUs <= t + 1_000_000 { ledger.apply(core.endFrame().buttons) }
            #expect(ledger.held.isEmpty)
            #expect(ledger.problems.isEmpty, "seed \(c.seed): \(ledger.problems)")
        }
    }

    /// A tap through the whole core: the press rides in the frame of the
    /// lift, the release in the first frame at or after the drag timeout,
    /// each with its own time.
    @Test func tapButtonsLandInTheirFrames() throws {
        var core = try Self.padCore()
        core.isSessionOpen = true
        core.contact(ContactSample(slot: 0, xMm: 50, yMm: 30, isTouching: true, timeUs: 20_000))
        core.contact(ContactSample(slot: 0, xMm: 50.5, yMm: 30, isTouching: true, timeUs: 60_000))
        core.contact(ContactSample(slot: 0, xMm: 50.5, yMm: 30, isTouching: false, timeUs: 100_000))
        var frames: [Frame] = []
        while core.nextFrameUs <= 400_000 { frames.append(core.endFrame()) }
        let withButtons = frames.filter { !$0.buttons.isEmpty }
        #expect(withButtons.map(\.timeUs) == [100_000, 283_333])
        #expect(withButtons.flatMap(\.buttons) == [ButtonChange(.left, isDown: true, timeUs: 100_000),
                                                   ButtonChange(.left, isDown: false, timeUs: 280_000)])
        // The tap's half-millimetre wobble never moved the pointer.
        #expect(frames.allSatisfy { $0.motion == .zero })
        #expect(core.heldButtons.isEmpty)
    }

    /// Button changes keep the time of the sample that caused them (not the
    /// frame's), so the receiver plays them in step with the motion.
    @Test func buttonsCarryTheirSampleTime() throws {
        var core = try Self.padCore()
        core.mouseMotion(dx: 5, dy: 0, atUs: 1_000)
        core.mouseButton(.left, isDown: true, atUs: 3_000)
        core.mouseMotion(dx: 5, dy: 0, atUs: 6_000)
        core.mouseButton(.left, isDown: false, atUs: 7_500)
        core.mouseButton(.left, isDown: false, atUs: 7_600)      // a repeat: dropped
        let f = core.endFrame()
        #expect(f.timeUs == 8_333)
        #expect(f.motion == Q8Delta(10 * 256, 0))
        #expect(f.buttons == [ButtonChange(.left, isDown: true, timeUs: 3_000), ButtonChange(.left, isDown: false, timeUs: 7_500)])
    }
}
