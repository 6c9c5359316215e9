import Foundation
import Testing
import RemoloInput

/// The touchpad's gesture table (Tests/Shared/gesture-cases.json), shared
/// with every other implementation of the same rules: contact sequences in,
/// button changes, motion, scroll and momentum out.
struct GestureTable: Decodable {
    struct Surface: Decodable { var widthMm: Double; var heightMm: Double }
    struct Config: Decodable {
        var tapTimeoutUs: UInt64
        var tapMoveThresholdMm: Double
        var dragTimeoutBaseUs: UInt64
        var dragTimeoutPerFingerUs: UInt64
        var dragLockTimeoutUs: UInt64
        var buttonAreaFraction: Double
        var rightButtonLeftFraction: Double
        var glideWindowUs: UInt64
        var glideMinimumMmPerSecond: Double
        var tapToClick: Bool
        var tapAndDrag: Bool
        var dragLock: Bool
        var gestures: Bool
        var pinchDecisionMm: Double
    }
    struct Step: Decodable {
        var t: UInt64
        var slot: Int32?
        var x: Double?
        var y: Double?
        var up: Bool?
        var click: Bool?
    }
    struct ExpectedButton: Decodable, Equatable {
        var button: String
        var down: Bool
        var t: UInt64
    }
    /// A swipe or pinch: its begin and end times, the sum of its updates'
    /// centroid motion, its last scale and angle.
    struct ExpectedGesture: Decodable, Equatable {
        var kind: String
        var fingers: Int
        var t: UInt64
        var endT: UInt64?
        var dxMm: Double
        var dyMm: Double
        var scale: Double
        var angle: Double

        func matches(_ o: ExpectedGesture) -> Bool {
            kind == o.kind && fingers == o.fingers && t == o.t && endT == o.endT
                && abs(dxMm - o.dxMm) < 1e-6 && abs(dyMm - o.dyMm) < 1e-6
                && abs(scale - o.scale) < 1e-6 && abs(angle - o.angle) < 1e-6
        }
    }
    struct Expect: Decodable {
        var buttons: [ExpectedButton]
        var motionMm: [Double]
        var scrollMm: [Double]
        var glide: Bool
        /// Absent: none (gestures are off unless a case turns them on).
        var gestures: [ExpectedGesture]?
    }
    /// A case's own settings over the table's.
    struct CaseConfig: Decodable {
        var gestures: Bool?
        var pinchDecisionMm: Double?
    }
    struct Case: Decodable, CustomTestStringConvertible {
        var id: Int
        var name: String
        var steps: [Step]
        var untilUs: UInt64
        var config: CaseConfig?
        var expect: Expect
        var testDescription: String { "\(id). \(name)" }
    }
    var surface: Surface
    var config: Config
    var cases: [Case]

    static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Shared/gesture-cases.json")

    static func load() throws -> GestureTable {
        try JSONDecoder().decode(GestureTable.self, from: Data(contentsOf: url))
    }

    /// The cases, or one that says why the file could not be read (so a
    /// broken file fails the test instead of running nothing).
    static var cases: [Case] {
        do { return try load().cases } catch {
            return [Case(id: 0, name: "unreadable \(url.path): \(error)", steps: [], untilUs: 0, config: nil,
                         expect: Expect(buttons: [ExpectedButton(button: "unreadable", down: true, t: 0)],
                                        motionMm: [0, 0], scrollMm: [0, 0], glide: false))]
        }
    }

    func touchpadConfig() throws -> TouchpadConfig {
        var c = TouchpadConfig(geometry: try TouchpadGeometry(widthMm: surface.widthMm, heightMm: surface.heightMm))
        c.tapTimeoutUs = config.tapTimeoutUs
        c.tapMoveThresholdMm = config.tapMoveThresholdMm
        c.dragTimeoutBaseUs = config.dragTimeoutBaseUs
        c.dragTimeoutPerFingerUs = config.dragTimeoutPerFingerUs
        c.dragLockTimeoutUs = config.dragLockTimeoutUs
        c.buttonAreaFraction = config.buttonAreaFraction
        c.rightButtonLeftFraction = config.rightButtonLeftFraction
        c.glideWindowUs = config.glideWindowUs
        c.glideMinimumMmPerSecond = config.glideMinimumMmPerSecond
        c.tapToClick = config.tapToClick
        c.tapAndDrag = config.tapAndDrag
        c.dragLock = config.dragLock
        c.gestures = config.gestures
        c.pinchDecisionMm = config.pinchDecisionMm
        return c
    }
}

/// What a recognizer made of a case.
struct GestureOutcome {
    var buttons: [GestureTable.ExpectedButton] = []
    var motion = (x: 0.0, y: 0.0)
    var scroll = (x: 0.0, y: 0.0)
    var glide = false
    var gestures: [GestureTable.ExpectedGesture] = []

    static func run(_ c: GestureTable.Case, config base: TouchpadConfig) throws -> GestureOutcome {
        var config = base
        if let g = c.config?.gestures { config.gestures = g }
        if let m = c.config?.pinchDecisionMm { config.pinchDecisionMm = m }
        var r = try TouchpadRecognizer(config: config)
        var o = GestureOutcome()
        func take(_ events: [TouchpadEvent]) {
            for e in events {
                switch e {
                case let .motion(dx, dy, _, _): o.motion.x += dx; o.motion.y += dy
                case let .scroll(dx, dy, _): o.scroll.x += dx; o.scroll.y += dy
                case let .button(b): o.buttons.append(.init(button: b.button.description, down: b.isDown, t: b.timeUs))
                case .glide: o.glide = true
                case .touchDown: break
                case let .gestureBegin(kind, fingers, t):
                    o.gestures.append(.init(kind: kind.rawValue, fingers: fingers, t: t, endT: nil,
                                            dxMm: 0, dyMm: 0, scale: 1, angle: 0))
                case let .gestureUpdate(dx, dy, scale, angle, _):
                    guard var g = o.gestures.popLast(), g.endT == nil else {
                        o.gestures.append(.init(kind: "update outside a gesture", fingers: 0, t: 0, endT: nil, dxMm: 0, dyMm: 0, scale: 0, angle: 0))
                        continue
                    }
                    g.dxMm += dx; g.dyMm += dy; g.scale = scale; g.angle = angle
                    o.gestures.append(g)
                case let .gestureEnd(t):
                    guard var g = o.gestures.popLast(), g.endT == nil else {
                        o.gestures.append(.init(kind: "end outside a gesture", fingers: 0, t: t, endT: t, dxMm: 0, dyMm: 0, scale: 0, angle: 0))
                        continue
                    }
                    g.endT = t
                    o.gestures.append(g)
                }
            }
        }
        for s in c.steps {
            if let click = s.click {
                take(r.physicalButton(isDown: click, atUs: s.t))
            } else if let slot = s.slot {
                take(r.contact(ContactSample(slot: slot, xMm: s.x ?? 0, yMm: s.y ?? 0, isTouching: s.up != true, timeUs: s.t)))
            }
        }
        take(r.advance(toUs: c.untilUs))
        return o
    }
}

@Suite("Gesture table (Tests/Shared/gesture-cases.json)")
struct GestureCaseTests {
    @Test func tableIsReadableAndNumbered() throws {
        let t = try GestureTable.load()
        #expect(t.cases.count >= 30)
        #expect(t.cases.map(\.id) == Array(1...t.cases.count))
    }

    @Test(arguments: GestureTable.cases)
    func gesture(_ c: GestureTable.Case) throws {
        let table = try GestureTable.load()
        let o = try GestureOutcome.run(c, config: table.touchpadConfig())
        #expect(o.buttons == c.expect.buttons, "case \(c.id)")
        #expect(abs(o.motion.x - c.expect.motionMm[0]) < 1e-6 && abs(o.motion.y - c.expect.motionMm[1]) < 1e-6,
                "case \(c.id): motion \(o.motion)")
        #expect(abs(o.scroll.x - c.expect.scrollMm[0]) < 1e-6 && abs(o.scroll.y - c.expect.scrollMm[1]) < 1e-6,
                "case \(c.id): scroll \(o.scroll)")
        #expect(o.glide == c.expect.glide, "case \(c.id): glide")
        let want = c.expect.gestures ?? []
        #expect(o.gestures.count == want.count && zip(o.gestures, want).allSatisfy { $0.matches($1) },
                "case \(c.id): gestures \(o.gestures)")
    }
}
