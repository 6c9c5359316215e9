import Foundation
import RemoloPlayout
import RemoloTestSupport

/// A fresh temporary directory's path (not created).
func tempPath(_ label: String) -> String {
    NSTemporaryDirectory() + "remolo-service-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
}

/// The absolute path of a tool on $PATH, or nil.
func which(_ tool: String) -> String? {
    let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
    return dirs.map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// Says why a test does nothing here; CI installs what it needs (Tests/run).
func skip(_ test: String, _ why: String) {
    report("skip: \(test): \(why)")
}

/// A line on the test log now (stdout is a pipe under `swift test`).
func report(_ line: String) {
    print(line)
    fflush(nil)
}

/// Runs a tool to the end; its exit status and its stdout and stderr together.
func run(_ tool: String, _ args: [String], environment: [String: String] = [:], cwd: String? = nil) throws -> (status: Int32, output: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: tool)
    p.arguments = args
    var env = ProcessInfo.processInfo.environment
    for (k, v) in environment { env[k] = v }
    p.environment = env
    if let cwd { p.currentDirectoryURL = URL(fileURLWithPath: cwd) }
    let log = tempPath("out")
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: log) }
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    p.standardOutput = out
    p.standardError = out
    p.standardInput = FileHandle.nullDevice
    try p.run()
    try out.close()
    p.waitUntilExit()
    return (p.terminationStatus, read(log) ?? "")
}

/// `remolo ARGS` run to the end (through CLIProcess), with a config directory.
func remolo(_ args: [String], configDir: String? = nil, timeout: Double = 30) throws -> (status: Int32, output: String) {
    let dir = configDir ?? tempPath("cfg")
    let log = tempPath("log")
    defer { try? FileManager.default.removeItem(atPath: log) }
    let p = try CLIProcess(args, configDir: dir, log: log)
    let status = p.wait(upTo: timeout) ?? -1
    return (status, p.output)
}

/// A file's text, through FileHandle: String(contentsOfFile:) leaks its
/// buffer for an empty file (LeakSanitizer reports it under Tests/run).
func read(_ path: String) -> String? {
    guard let h = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? h.close() }
    return String(decoding: h.readDataToEndOfFile(), as: UTF8.self)
}

func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

/// The system-call names in an `strace -f` log.
func syscalls(inTrace trace: String) -> Set<String> {
    var names = Set<String>()
    for line in trace.split(separator: "\n") {
        // "1234  name(args) = 0", or "1234  <... name resumed>"; the first
        // part of each call is enough.
        let fields = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard fields.count == 2, Int(fields[0]) != nil else { continue }
        // strace pads short PIDs: "123   name(".
        let rest = fields[1].drop(while: { $0 == " " })
        guard let paren = rest.firstIndex(of: "("), !rest.hasPrefix("<"), !rest.hasPrefix("+++"),
              !rest.hasPrefix("---") else { continue }
        let name = rest[..<paren]
        if !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) { names.insert(String(name)) }
    }
    return names
}

/// The system calls a unit's SystemCallFilter= lines allow, with the sets
/// expanded by `systemd-analyze syscall-filter`, following systemd.exec(5):
/// the first line sets the kind of list, later lines add (allow) or remove (~).
func allowedSyscalls(unit: String, systemdAnalyze: String) throws -> Set<String> {
    let listing = try run(systemdAnalyze, ["syscall-filter"]).output
    var groups: [String: [String]] = [:]
    var current: String?
    for raw in listing.split(separator: "\n") {
        let line = raw.trimmingCharacters(in: .whitespaces)
        if line.isEmpty || line.hasPrefix("#") { continue }
        if raw.hasPrefix("@") { current = line; groups[line] = []; continue }
        if let c = current { groups[c, default: []].append(line) }
    }
    func expand(_ name: String, _ depth: Int = 0) -> Set<String> {
        guard name.hasPrefix("@") else { return [name] }
        guard depth < 10 else { return [] }
        return (groups[name] ?? []).reduce(into: Set<String>()) { $0.formUnion(expand($1, depth + 1)) }
    }
    var allowed = Set<String>()
    for line in unit.split(separator: "\n") where line.hasPrefix("SystemCallFilter=") {
        var spec = line.dropFirst("SystemCallFilter=".count)
        let deny = spec.hasPrefix("~")
        if deny { spec = spec.dropFirst() }
        let names = spec.split(separator: " ").reduce(into: Set<String>()) { $0.formUnion(expand(String($1))) }
        if deny { allowed.subtract(names) } else { allowed.formUnion(names) }
    }
    return allowed
}
