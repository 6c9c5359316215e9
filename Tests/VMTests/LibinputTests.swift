import Foundation
import RemoloPlayout
import RemoloDevices
import RemoloSession
import RemoloSystem
import Synchronization
import Testing
import RemoloTypes

/// Collects a child's output lines as they come.
final class LineCollector: Sendable {
    private let lines = Mutex<[String]>([])
    private let partial = Mutex<String>("")

    func feed(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        partial.withLock { p in
            p += text
            var parts = p.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            p = parts.removeLast()
            if !parts.isEmpty { lines.withLock { $0 += parts } }
        }
    }

    var snapshot: [String] { lines.withLock { $0 } }

    /// Waits until `done` holds for the lines so far, or the timeout passes.
    func wait(seconds: Double, until done: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if done(snapshot) { return true }
            usleep(20_000)
        }
        return done(snapshot)
    }
}

/// libinput's view of a line of `libinput debug-events`.
struct LibinputEvent {
    var kind: String
    var rest: String

    init?(_ line: String) {
        let f = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard f.count >= 2, f[0].trimmingCharacters(in: CharacterSet(charactersIn: "-")).hasPrefix("event")
        else { return nil }
        kind = String(f[1])
        rest = f.count > 2 ? String(f[2]) : ""
    }

    /// The numbers in the line, in order ("+5.00/ -3.00" -> 5, -3).
    var numbers: [Double] {
        let pattern = /[-+]?[0-9]+\.[0-9]+/
        return rest.matches(of: pattern).compactMap { Double($0.output) }
    }
}

/// Stops a child for good: SIGTERM (its output is line-buffered, so nothing
/// is lost), then SIGKILL if it lingers.
func stop(_ p: Process) {
    if p.isRunning { p.terminate() }
    for _ in 0..<250 where p.isRunning { usleep(20_000) }
    if p.isRunning { kill(p.processIdentifier, SIGKILL) }
    p.waitUntilExit()
}

extension VMSuite {
    @Suite(.enabled(if: VMEnv.kernel, VMEnv.kernelReason))
    struct Libinput {
        /// What a compositor would see: libinput takes the device as a
        /// pointer and turns our frames into motion, buttons and hi-res
        /// wheel events.
        @Test(.timeLimit(.minutes(1)))
        func seenByLibinput() throws {
            let d = try PointerDevice(name: "Remolo libinput test")

            let p = Process()
            // Line-buffered, or the pipe would hold everything until exit.
            p.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
            p.arguments = ["-oL", "libinput", "debug-events", "--device", d.devnode]
            let pipe = Pipe()
            p.standardOutput = pipe
            p.standardError = pipe
            let out = LineCollector()
            pipe.fileHandleForReading.readabilityHandler = { h in out.feed(h.availableData) }
            try p.run()
            defer {
                stop(p)
                pipe.fileHandleForReading.readabilityHandler = nil
            }

            let added = out.wait(seconds: 30) { $0.contains { $0.contains("DEVICE_ADDED") } }
            try #require(added, "libinput never added the device:\n\(out.snapshot.joined(separator: "\n"))")

            typealias B = KeyChange
            let frames = [
                PointerFrame(dx: 5, dy: -3),
                PointerFrame(buttons: [B(code: MouseButton.left.evdevCode, down: true)]),
                PointerFrame(buttons: [B(code: MouseButton.left.evdevCode, down: false)]),
                PointerFrame(buttons: [B(code: MouseButton.right.evdevCode, down: true)]),
                PointerFrame(buttons: [B(code: MouseButton.right.evdevCode, down: false)]),
                PointerFrame(wheel: 1, wheelHiRes: 120),
                PointerFrame(wheelHiRes: -30),
                PointerFrame(hwheelHiRes: 60),
            ]
            for f in frames {
                try d.write(f)
                // Apart in time, so libinput's debouncing and scroll
                // handling see separate gestures.
                usleep(60_000)
            }

            func events(_ lines: [String]) -> [LibinputEvent] { lines.compactMap(LibinputEvent.init) }
            let complete = out.wait(seconds: 20) { lines in
                events(lines).filter { $0.kind == "POINTER_SCROLL_WHEEL" }.count >= 3
                    && events(lines).filter { $0.kind == "POINTER_BUTTON" }.count >= 4
            }
            stop(p)
            let lines = out.snapshot
            let all = lines.joined(separator: "\n")
            #expect(complete, "libinput did not report every event:\n\(all)")
            let evs = events(lines)

            let add = try #require(evs.first { $0.kind == "DEVICE_ADDED" })
            #expect(add.rest.contains("Remolo libinput test"), "\(add.rest)")
            // cap:p = a pointer (no keyboard, touch or gesture capability).
            #expect(add.rest.contains("cap:p"), "not a pointer: \(add.rest)")

            // Motion: accelerated, then the raw delta in parentheses.
            let motion = evs.filter { $0.kind == "POINTER_MOTION" }
            #expect(motion.count == 1, "\(all)")
            if let m = motion.first {
                #expect(Array(m.numbers.suffix(2)) == [5, -3], "raw motion: \(m.rest)")
            }

            let buttons = evs.filter { $0.kind == "POINTER_BUTTON" }.map { b in
                (b.rest.contains("BTN_LEFT") ? "left" : b.rest.contains("BTN_RIGHT") ? "right" : "?")
                    + (b.rest.contains("released") ? " up" : b.rest.contains("pressed") ? " down" : " ?")
            }
            #expect(buttons == ["left down", "left up", "right down", "right up"], "\(all)")

            // "vert V/V120* horiz H/H120*": libinput's vertical axis points
            // down, so REL_WHEEL_HI_RES +120 (up) is -120 there.
            let wheel = evs.filter { $0.kind == "POINTER_SCROLL_WHEEL" }.map { w -> [Double] in
                let n = w.numbers // first is the time offset
                return n.count >= 5 ? [n[2], n[4]] : n
            }
            #expect(wheel == [[-120, 0], [30, 0], [0, 60]], "hi-res wheel values:\n\(all)")
        }
    }
}
