// A real headless GNOME desktop for the portal tests: mutter --headless,
// xdg-desktop-portal with xdg-desktop-portal-gnome, a fullscreen GTK client
// and a bus monitor, all on a private bus (Tests/Portal/desktop inside its
// own `dbus-run-session`, in a process group of its own).
import Foundation
import RemoloPlayout
import RemoloDesktop
import RemoloTestSupport
import Testing
import RemoloTypes

enum PortalEnv {
    /// Set by Tests/Portal/run, which installs what the desktop needs.
    static let enabled = ProcessInfo.processInfo.environment["REMOLO_PORTAL_TESTS"] == "1"
    static let reason: Comment = "runs a headless GNOME desktop (mutter, xdg-desktop-portal-gnome): Tests/Portal/run"
    /// The package's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static let python = "/usr/bin/python3"

    /// mutter's major version: before 48 the axis `finish` flag stops at
    /// mutter (its virtual pointer drops it; mutter commit f76b59322a).
    static let mutterMajor: Int = {
        guard let r = try? run("/usr/bin/mutter", ["--version"]),
              let v = r.split(separator: " ").dropFirst().first?.split(separator: ".").first else { return 0 }
        return Int(v) ?? 0
    }()
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Runs a program to completion; its output (stdout and stderr).
@discardableResult
func run(_ path: String, _ args: [String], environment: [String: String] = [:]) throws -> String {
    try runCommand(path, args, environment: environment).output
}

/// Desktops to end when the test process exits (Swift Testing has no
/// suite teardown); Tests/Portal/desktop also ends when we are gone.
nonisolated(unsafe) private var scripts: [Int32] = []
private let registerCleanup: Void = {
    atexit {
        for p in scripts { kill(p, SIGTERM) }
    }
}()

/// Children of this process inherit its blocked signals (SIGTERM among
/// them, from the test runner), and a desktop that cannot be told to stop
/// outlives the test: this runs a command with none blocked.
let unblocked = [PortalEnv.python, "-c",
                 "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])"]

final class Desktop: @unchecked Sendable {
    let dir: String
    private(set) var bus = ""
    private let process = Process()

    init() throws {
        _ = registerCleanup
        var template = Array("/tmp/remolo-portal.XXXXXX".utf8CString)
        guard let d = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
        dir = String(cString: d)
        process.executableURL = URL(fileURLWithPath: unblocked[0])
        process.arguments = Array(unblocked.dropFirst())
            + ["dbus-run-session", "--", PortalEnv.root + "/Tests/Portal/desktop", dir, "\(getpid())"]
        let log = FileHandle(forWritingAtPath: "/dev/null")
        process.standardOutput = log
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(40)
        var address: String?
        while Date() < deadline {
            if let failed = try? String(contentsOfFile: dir + "/failed", encoding: .utf8) {
                throw TestFailure(failed)
            }
            if let b = try? String(contentsOfFile: dir + "/bus", encoding: .utf8), !b.isEmpty {
                address = b.trimmingCharacters(in: .whitespacesAndNewlines)
                break
            }
            if !process.isRunning { break }
            usleep(50_000)
        }
        if let p = scriptPid { scripts.append(p) }
        guard let address else {
            stopProcesses()
            throw TestFailure("the desktop did not start within 40 s (see \(dir))")
        }
        bus = address
    }

    /// Tests/Portal/desktop's own pid (it writes it first).
    private var scriptPid: Int32? {
        (try? String(contentsOfFile: dir + "/pid", encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    deinit { stop() }

    func stop() { stopProcesses() }

    /// The script ends its children and then dbus-run-session its bus, and
    /// with it the services the bus started (the portals, AT-SPI).
    private func stopProcesses() {
        guard process.isRunning else { return }
        if let p = scriptPid { kill(p, SIGTERM) }
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            if let p = scriptPid { kill(p, SIGKILL) }
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": bus] }

    /// Answers the next `count` consent dialogs ("accept" or "refuse") in
    /// the background.
    func consent(_ answer: String, count: Int = 1) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: PortalEnv.python)
        p.arguments = [PortalEnv.root + "/Tests/Portal/consent.py", answer, "--count", "\(count)", "--timeout", "60"]
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { _, n in n }
        let out = FileHandle(forWritingAtPath: "/dev/null")
        p.standardOutput = out
        p.standardError = out
        try p.run()
        return p
    }

    /// A backend on this desktop, consent given through AT-SPI.
    func backend(_ configure: (inout PortalOptions) -> Void = { _ in }) throws -> PortalBackend {
        var o = PortalOptions(busAddress: bus)
        o.consentTimeout = 60
        configure(&o)
        let helper = try consent("accept")
        defer {
            if helper.isRunning { kill(helper.processIdentifier, SIGKILL) }
            helper.waitUntilExit()
        }
        do {
            return try PortalBackend(o)
        } catch {
            throw TestFailure(error.message)
        }
    }

    /// Headless mutter has no pointer and no keyboard of its own: they
    /// appear with a session's first motion and first key, and a client
    /// misses what comes while they do. So a test sends one of each first
    /// and waits; the pointer ends in the top-left corner.
    func warmUp(_ backend: any OutputBackend) throws {
        try backend.apply(OutputBatch(dx: -4000, dy: -4000))
        try backend.apply(OutputBatch(transitions: [KeyChange(code: keyLeftShift, down: true)]))
        try backend.apply(OutputBatch(transitions: [KeyChange(code: keyLeftShift, down: false)]))
        usleep(500_000)
        try backend.apply(OutputBatch(dx: -4000, dy: -4000))
        _ = waitPosition(0, 0, seconds: 2)
    }

    /// The pid of the process owning bus name `name`.
    func pid(of name: String) throws -> Int32 {
        let out = try run("/usr/bin/gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus",
                                             "--object-path", "/org/freedesktop/DBus",
                                             "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", name],
                          environment: environment)
        // "(uint32 1234,)"
        guard let n = out.split(whereSeparator: { !$0.isNumber }).last.flatMap({ Int32($0) }) else {
            throw TestFailure("no pid for \(name): \(out)")
        }
        return n
    }

    func lines(_ file: String) -> [String] {
        guard let s = try? String(contentsOfFile: dir + "/" + file, encoding: .utf8) else { return [] }
        return s.split(separator: "\n").map(String.init)
    }

    /// What the fullscreen client saw, from line `from` on.
    func client(from: Int = 0) -> [String] { Array(lines("client.out").dropFirst(from)) }
    var clientCount: Int { lines("client.out").count }
    /// The calls the monitor saw, from line `from` on.
    func monitor(from: Int = 0) -> [String] { Array(lines("monitor.out").dropFirst(from)) }
    var monitorCount: Int { lines("monitor.out").count }

    /// The pointer's last reported position.
    var position: (x: Double, y: Double)? {
        for l in lines("client.out").reversed() {
            let f = l.split(separator: " ")
            if f.first == "motion", f.count == 3, let x = Double(f[1]), let y = Double(f[2]) { return (x, y) }
            if f.first == "button", f.count == 5, let x = Double(f[3]), let y = Double(f[4]) { return (x, y) }
        }
        return nil
    }

    /// Waits until the client reports the pointer at (x, y).
    func waitPosition(_ x: Double, _ y: Double, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let p = position, p.x == x, p.y == y { return true }
            usleep(10_000)
        }
        return false
    }

    static func waitFile(_ path: String, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if access(path, F_OK) == 0 { return true }
            usleep(20_000)
        }
        return false
    }

    /// Waits until `ok` holds.
    func waitFor(_ seconds: Double = 5, _ ok: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if ok() { return true }
            usleep(10_000)
        }
        return ok()
    }
}
