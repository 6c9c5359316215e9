// The portal output against a real compositor: headless mutter 43 with
// xdg-desktop-portal 1.16 and xdg-desktop-portal-gnome 43 (Debian 12),
// consent given through AT-SPI the way a person clicks it, and the cursor
// read by a fullscreen GTK client. docs/portal.md says what each shows.
import Foundation
import RemoloPlayout
import RemoloDesktop
import Testing
import RemoloTypes

let btnLeft: UInt16 = 0x110, btnRight: UInt16 = 0x111, btnMiddle: UInt16 = 0x112
let keyA: UInt16 = 30, keyLeftShift: UInt16 = 42

/// One desktop and one backend for the motion, button, key and scroll
/// tests: headless mutter's pointer appears with a session's first input
/// and a client can miss events while it does, so one session serves them all.
final class Shared: @unchecked Sendable {
    let desktop: Desktop
    let backend: PortalBackend
    let firstMonitorLines: [String]

    static let instance = Result { try Shared() }

    private init() throws {
        desktop = try Desktop()
        backend = try desktop.backend()
        firstMonitorLines = desktop.monitor()
        try desktop.warmUp(backend)
    }

    static func get() throws -> Shared { try instance.get() }

    /// Puts the pointer at (x, y), from the corner the screen clamps it to.
    func home(_ x: Int32, _ y: Int32) throws {
        try backend.apply(OutputBatch(dx: -4000, dy: -4000))
        try backend.apply(OutputBatch(dx: x, dy: y))
        guard desktop.waitPosition(Double(x), Double(y)) else {
            throw TestFailure("the pointer did not reach (\(x), \(y)); last \(String(describing: desktop.position))")
        }
    }
}

@Suite(.serialized, .enabled(if: PortalEnv.enabled, PortalEnv.reason))
struct PortalSessionTests {
    @Test("CreateSession, SelectDevices (pointer + keyboard), Start: consent given once, both devices granted")
    func callSequence() throws {
        let s = try Shared.get()
        #expect(s.backend.info.version >= 1)
        #expect(s.backend.devices == PortalDevices.pointer | PortalDevices.keyboard)
        #expect(s.backend.sessionHandle.hasPrefix("/org/freedesktop/portal/desktop/session/"))
        let calls = s.firstMonitorLines.filter { $0.hasPrefix("portal ") }.map { $0.split(separator: " ")[1] }
        #expect(Array(calls.prefix(3)) == ["CreateSession", "SelectDevices", "Start"])
        let select = s.firstMonitorLines.first { $0.hasPrefix("portal SelectDevices") } ?? ""
        #expect(select.contains("'types': 3"), "SelectDevices asked for: \(select)")
        if s.backend.info.canRemember {
            #expect(select.contains("'persist_mode': 2"))
        } else {
            #expect(!select.contains("persist_mode"), "version 1 has no persist_mode")
        }
    }

    /// Totals sent in equal steps, one batch per step (as the adapter
    /// delivers them); the cursor must end exactly there.
    static let motions: [(n: Int, total: Int32, step: Int32, axis: String)] = [
        (1, 100, 1, "x"), (2, 400, 10, "x"), (3, 1200, 50, "x"), (4, -400, -10, "y"),
    ]

    @Test("motion totals are exact (not accelerated)", arguments: motions)
    func motionTotals(_ c: (n: Int, total: Int32, step: Int32, axis: String)) throws {
        let s = try Shared.get()
        let start: (x: Int32, y: Int32) = (200, 600)
        try s.home(start.x, start.y)
        for _ in 0..<(c.total / c.step) {
            try s.backend.apply(c.axis == "x" ? OutputBatch(dx: c.step) : OutputBatch(dy: c.step))
        }
        let want = c.axis == "x" ? (Double(start.x + c.total), Double(start.y)) : (Double(start.x), Double(start.y + c.total))
        let reached = s.desktop.waitPosition(want.0, want.1)
        #expect(reached, "case \(c.n): \(c.total) px in \(c.step) px steps ended at \(String(describing: s.desktop.position)), not \(want)")
    }

    @Test("buttons (left, right, middle) and a drag reach the client where the pointer is")
    func buttons() throws {
        let s = try Shared.get()
        try s.home(300, 300)
        let from = s.desktop.clientCount
        for b in [btnLeft, btnRight, btnMiddle] {
            try s.backend.apply(OutputBatch(transitions: [KeyChange(code: b, down: true)]))
            try s.backend.apply(OutputBatch(transitions: [KeyChange(code: b, down: false)]))
        }
        // A drag: press, move, release (three batches, as the adapter cuts them).
        try s.backend.apply(OutputBatch(transitions: [KeyChange(code: btnLeft, down: true)]))
        try s.backend.apply(OutputBatch(dx: 50, dy: 20))
        try s.backend.apply(OutputBatch(transitions: [KeyChange(code: btnLeft, down: false)]))
        let want = ["button 1 press 300.000 300.000", "button 1 release 300.000 300.000",
                    "button 3 press 300.000 300.000", "button 3 release 300.000 300.000",
                    "button 2 press 300.000 300.000", "button 2 release 300.000 300.000",
                    "button 1 press 300.000 300.000", "button 1 release 350.000 320.000"]
        let seen = s.desktop.waitFor { s.desktop.client(from: from).filter { $0.hasPrefix("button") }.count >= want.count }
        let got = s.desktop.client(from: from).filter { $0.hasPrefix("button") }
        #expect(seen && got == want, "client saw \(got)")
    }

    @Test("keys (KEY_A down, up) reach the focused client")
    func keys() throws {
        let s = try Shared.get()
        // A click focuses the client's window.
        try s.home(400, 400)
        try s.backend.apply(OutputBatch(transitions: [KeyChange(code: btnLeft, down: true)]))
        try s.backend.apply(OutputBatch(transitions: [KeyChange(code: btnLeft, down: false)]))
        let from = s.desktop.clientCount
        try s.backend.apply(OutputBatch(transitions: [KeyChange(code: keyA, down: true)]))
        try s.backend.apply(OutputBatch(transitions: [KeyChange(code: keyA, down: false)]))
        let want = ["key 30 press", "key 30 release"]
        let seen = s.desktop.waitFor { s.desktop.client(from: from).filter { $0.hasPrefix("key") } == want }
        #expect(seen, "client saw \(s.desktop.client(from: from).filter { $0.hasPrefix("key") })")
    }

    @Test("a scroll reaches the client as smooth finger scrolling, and each gesture ends with one finish")
    func scrollFinish() throws {
        let s = try Shared.get()
        try s.home(500, 500)
        let client0 = s.desktop.clientCount, monitor0 = s.desktop.monitorCount
        let finishes0 = s.backend.stats.finishes
        // Gesture 1: five notches down in five batches, then quiet: the
        // watcher finishes it after the idle time.
        for _ in 0..<5 { try s.backend.apply(OutputBatch(wheelHiRes: -120)) }
        usleep(UInt32(PortalBackend.scrollIdleDefault * 3e6))
        // Gesture 2: two notches up, ended by pointer motion at once.
        for _ in 0..<2 { try s.backend.apply(OutputBatch(wheelHiRes: 120)) }
        try s.backend.apply(OutputBatch(dx: 5))
        usleep(UInt32(PortalBackend.scrollIdleDefault * 3e6))
        #expect(s.backend.stats.finishes - finishes0 == 2)

        // What went to the portal, and what the portal passed on to mutter.
        let ok = s.desktop.waitFor {
            s.desktop.monitor(from: monitor0).filter { $0.hasPrefix("mutter NotifyPointerMotion") }.count >= 1
        }
        let calls = s.desktop.monitor(from: monitor0)
        let portalAxis = calls.filter { $0.hasPrefix("portal NotifyPointerAxis") }
        let want = Array(repeating: "portal NotifyPointerAxis {} 0.0 30.0", count: 5)
            + ["portal NotifyPointerAxis {'finish': True} 0.0 0.0"]
            + Array(repeating: "portal NotifyPointerAxis {} 0.0 -30.0", count: 2)
            + ["portal NotifyPointerAxis {'finish': True} 0.0 0.0"]
        #expect(ok && portalAxis == want, "portal axis calls: \(portalAxis)")
        // The second finish comes before the motion that ended the gesture.
        let order = calls.filter { $0.hasPrefix("portal NotifyPointer") }.suffix(2)
        #expect(Array(order) == ["portal NotifyPointerAxis {'finish': True} 0.0 0.0", "portal NotifyPointerMotion {} 5.0 0.0"])
        // xdg-desktop-portal-gnome passes finish on as mutter's flag bit 0.
        let mutterAxis = calls.filter { $0.hasPrefix("mutter NotifyPointerAxis") }
        #expect(mutterAxis.filter { $0.hasSuffix(" 1") }.count == 2, "mutter axis calls: \(mutterAxis)")

        // The client: smooth deltas (GTK 3: pixels / 10), down then up.
        let scrolls = s.desktop.client(from: client0).filter { $0.hasPrefix("scroll ") }
        let dy = scrolls.compactMap { Double($0.split(separator: " ")[2]) }
        #expect(dy.filter { $0 > 0 }.reduce(0, +) == 15, "client scrolls: \(scrolls)")
        #expect(dy.filter { $0 < 0 }.reduce(0, +) == -6, "client scrolls: \(scrolls)")
        let stops = scrolls.filter { $0.hasSuffix("stop=1") }.count
        if PortalEnv.mutterMajor >= 48 {
            #expect(stops == 2, "client scroll stops: \(scrolls)")
        } else {
            // mutter < 48 drops the flag in its virtual pointer: no client
            // can see it there (docs/portal.md).
            #expect(stops == 0)
        }
    }
}
