import Testing
import RemoloInput

@Suite("Touchpad geometry, settings and scroll units")
struct ConfigTests {
    struct AbsCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var x: (min: Int32, max: Int32, res: Int32)
        var y: (min: Int32, max: Int32, res: Int32)
        /// Expected size in mm, or the words the error must contain.
        var size: (Double, Double)?
        var says: String
        var testDescription: String { "\(id). x \(x) y \(y)" }
    }

    @Test(arguments: [
        // A typical laptop clickpad: 1 mm = 40 units, 104 x 68 mm.
        AbsCase(id: 1, x: (0, 4160, 40), y: (0, 2720, 40), size: (104, 68), says: ""),
        // Negative minimum (some Synaptics pads).
        AbsCase(id: 2, x: (-3000, 3000, 30), y: (-1500, 1500, 25), size: (200, 120), says: ""),
        AbsCase(id: 3, x: (0, 4160, 0), y: (0, 2720, 40), size: nil, says: "no resolution"),
        AbsCase(id: 4, x: (0, 0, 40), y: (0, 2720, 40), size: nil, says: "ABS_MT_POSITION"),
        AbsCase(id: 5, x: (0, 200, 40), y: (0, 200, 40), size: nil, says: "in millimetres"),
    ])
    func geometryFromTheKernel(_ c: AbsCase) throws {
        let make = { () throws(InputConfigError) -> TouchpadGeometry in
            try TouchpadGeometry(xMinimum: c.x.min, xMaximum: c.x.max, xResolution: c.x.res,
                                 yMinimum: c.y.min, yMaximum: c.y.max, yResolution: c.y.res)
        }
        if let size = c.size {
            let g = try make()
            #expect(abs(g.widthMm - size.0) < 1e-9 && abs(g.heightMm - size.1) < 1e-9)
            let mid = g.millimetres(x: (c.x.min + c.x.max) / 2, y: c.y.max)
            #expect(abs(mid.x - size.0 / 2) < 0.05 && abs(mid.y - size.1) < 1e-9)
        } else {
            #expect { _ = try make() } throws: { ($0 as? InputConfigError)?.message.contains(c.says) == true }
        }
    }

    struct SizedCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var x: (min: Int32, max: Int32)
        var y: (min: Int32, max: Int32)
        var mm: (Double, Double)
        /// A device point and where it lies in mm; nil: must be refused.
        var point: (x: Int32, y: Int32, mm: (Double, Double))?
        var testDescription: String { "\(id). x \(x) y \(y) given \(mm) mm" }
    }

    /// `--touchpad-size`: the size given stands in for the resolution.
    @Test(arguments: [
        // The pad of case 3 above (no resolution), its size given.
        SizedCase(id: 1, x: (0, 4160), y: (0, 2720), mm: (104, 68), point: (2080, 2720, (52, 68))),
        // A small range: 150 units over 100 mm is 1.5 units per mm, kept exactly.
        SizedCase(id: 2, x: (0, 150), y: (0, 90), mm: (100, 60), point: (75, 45, (50, 30))),
        // Negative minimum.
        SizedCase(id: 3, x: (-3000, 3000), y: (-1500, 1500), mm: (200, 120), point: (0, -1500, (100, 0))),
        SizedCase(id: 4, x: (0, 0), y: (0, 2720), mm: (100, 60), point: nil),
        SizedCase(id: 5, x: (0, 4160), y: (0, 2720), mm: (5, 60), point: nil),
    ])
    func geometryFromAGivenSize(_ c: SizedCase) throws {
        let make = { () throws(InputConfigError) -> TouchpadGeometry in
            try TouchpadGeometry(xMinimum: c.x.min, xMaximum: c.x.max, yMinimum: c.y.min, yMaximum: c.y.max,
                                 widthMm: c.mm.0, heightMm: c.mm.1)
        }
        guard let p = c.point else {
            #expect(throws: InputConfigError.self) { _ = try make() }
            return
        }
        let g = try make()
        #expect(g.widthMm == c.mm.0 && g.heightMm == c.mm.1)
        let at = g.millimetres(x: p.x, y: p.y)
        #expect(abs(at.x - p.mm.0) < 1e-9 && abs(at.y - p.mm.1) < 1e-9, "\(at)")
    }

    struct BadPad: CustomTestStringConvertible, Sendable {
        var id: Int
        var edit: @Sendable (inout TouchpadConfig) -> Void
        var says: String
        var testDescription: String { "\(id). \(says)" }
    }

    @Test(arguments: [
        BadPad(id: 1, edit: { $0.tapTimeoutUs = 5_000 }, says: "tap timeout"),
        BadPad(id: 2, edit: { $0.tapMoveThresholdMm = 0 }, says: "tap move threshold"),
        BadPad(id: 3, edit: { $0.dragLockTimeoutUs = 60_000_000 }, says: "drag timeouts"),
        BadPad(id: 4, edit: { $0.buttonAreaFraction = 0.9 }, says: "button area"),
        BadPad(id: 5, edit: { $0.rightButtonLeftFraction = .nan }, says: "right-button edge"),
        BadPad(id: 6, edit: { $0.glideWindowUs = 0 }, says: "glide window"),
    ])
    func badTouchpadSettingsSayWhatToChange(_ c: BadPad) throws {
        var config = TouchpadConfig(geometry: try TouchpadGeometry(widthMm: 100, heightMm: 60))
        c.edit(&config)
        #expect { _ = try TouchpadRecognizer(config: config) } throws: {
            ($0 as? InputConfigError)?.message.contains(c.says) == true
        }
    }

    struct ScrollCase: CustomTestStringConvertible, Sendable {
        var id: Int
        var natural: Bool
        var speed: Double
        var fingerMm: (dx: Double, dy: Double)
        /// Expected (vertical, horizontal) in notches.
        var notches: (Double, Double)
        var testDescription: String { "\(id). natural \(natural), speed \(speed), fingers \(fingerMm)" }
    }

    /// Finger travel to wheel units: 30 pt (4.7625 mm) a notch at speed 1;
    /// natural scrolling moves the content with the fingers.
    @Test(arguments: [
        ScrollCase(id: 1, natural: true, speed: 1, fingerMm: (0, 4.7625), notches: (1, 0)),
        ScrollCase(id: 2, natural: false, speed: 1, fingerMm: (0, 4.7625), notches: (-1, 0)),
        ScrollCase(id: 3, natural: true, speed: 1, fingerMm: (4.7625, 0), notches: (0, -1)),
        ScrollCase(id: 4, natural: false, speed: 1, fingerMm: (4.7625, 0), notches: (0, 1)),
        ScrollCase(id: 5, natural: true, speed: 2, fingerMm: (-4.7625, -9.525), notches: (-4, 2)),
        ScrollCase(id: 6, natural: true, speed: 0.5, fingerMm: (0, 9.525), notches: (1, 0)),
    ])
    func scrollUnits(_ c: ScrollCase) throws {
        var config = InputConfig()
        config.naturalScrolling = c.natural
        config.scrollSpeed = c.speed
        let core = try InputCore(config: config, startUs: 0)
        let u = core.wheelUnits(dxMm: c.fingerMm.dx, dyMm: c.fingerMm.dy)
        #expect(abs(u.vertical / 120 - c.notches.0) < 1e-9 && abs(u.horizontal / 120 - c.notches.1) < 1e-9, "\(u)")
    }

    @Test func badScrollSpeedSaysWhatToChange() {
        var config = InputConfig()
        config.scrollSpeed = 0
        #expect { _ = try InputCore(config: config, startUs: 0) } throws: {
            ($0 as? InputConfigError)?.message.contains("scroll speed") == true
        }
    }

    /// A mouse wheel's hi-res units go through untouched, in Q8.
    @Test func mouseWheelPassesThrough() throws {
        var core = try InputCore(config: InputConfig(), startUs: 0)
        core.mouseWheel(verticalUnits: 120, horizontalUnits: -30, atUs: 1_000)
        core.mouseWheel(verticalUnits: 15, horizontalUnits: 0, atUs: 2_000)
        #expect(core.endFrame().scroll == Q8Delta(135 * 256, -30 * 256))
    }

    /// Without a touchpad, contact samples change nothing.
    @Test func contactsWithoutATouchpadAreIgnored() throws {
        var core = try InputCore(config: InputConfig(), startUs: 0)
        core.contact(ContactSample(slot: 0, xMm: 1, yMm: 1, isTouching: true, timeUs: 10))
        core.contact(ContactSample(slot: 0, xMm: 1, yMm: 1, isTouching: false, timeUs: 20))
        core.clickpadButton(isDown: true, atUs: 30)
        #expect(core.endFrame().isEmpty)
    }
}
