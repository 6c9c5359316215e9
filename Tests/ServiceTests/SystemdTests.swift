import Foundation
import RemoloPlayout
import RemoloService
import RemoloTestSupport
import Testing

/// The generated units as systemd itself judges them (`systemd-analyze verify`
/// and `security --offline`), and a real receiver run checked against what the
/// unit allows: its system calls, its socket families, and no writable and
/// executable memory. systemd is not PID 1 here, so the service is not started.
@Suite(.serialized) struct SystemdTests {
    /// The exposure docs/service.md states for each unit (`systemd-analyze security`,
    /// 0 = locked down, 10 = unprotected; up to 4.9 is "OK").
    static let statedExposure: [(String, [String], Double)] = [
        ("system", ["--system"], 1.5),
        ("system --rt", ["--system", "--rt", "40"], 1.8),
        ("user", ["--user"], 6.3),
    ]

    /// Installs with the real binary under a temporary root; the unit's path.
    static func installed(_ args: [String], root: String) throws -> String {
        let r = try remolo(["install", "--root", root] + args)
        guard r.status == 0 else { throw CLIError("install failed: \(r.output)") }
        let path = args.contains("--user")
            ? try ServiceFiles.userUnitPath(environment: ProcessInfo.processInfo.environment) : ServiceFiles.systemUnitPath
        return root + path
    }

    /// A user manager's verify needs a runtime directory even offline.
    /// verify runs `man` for the unit's Documentation=: MANPATH points it at
    /// the manual page that install wrote under the root.
    static func analyze(_ tool: String, user: Bool, _ args: [String], root: String, cwd: String) throws -> (status: Int32, output: String) {
        let env0 = ProcessInfo.processInfo.environment
        let man = user ? try ServiceFiles.userManPagePath(environment: env0) : ServiceFiles.manPagePath
        var env: [String: String] = ["MANPATH": root + ((man as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent]
        if user {
            let rt = root + "/run-user"
            try FileManager.default.createDirectory(atPath: rt, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            env["XDG_RUNTIME_DIR"] = rt
        }
        return try run(tool, (user ? ["--user"] : []) + args, environment: env, cwd: cwd)
    }

    @Test("1: systemd-analyze verify accepts every unit", arguments: [
        (1, ["--system"]), (2, ["--system", "--rt", "40"]), (3, ["--user"]), (4, ["--user", "--rt", "5"]),
    ] as [(Int, [String])])
    func verify(_ id: Int, _ args: [String]) throws {
        guard let sa = which("systemd-analyze") else {
            return skip("verify", "no systemd-analyze (Debian package systemd; Tests/run installs it)")
        }
        let root = tempPath("verify")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let unit = try Self.installed(args, root: root)
        let dir = (unit as NSString).deletingLastPathComponent
        let r = try Self.analyze(sa, user: args.contains("--user"), ["verify", "./remolo.service"], root: root, cwd: dir)
        #expect(r.status == 0, "\(r.output)")
        #expect(!r.output.contains("remolo.service:"), "verify warned about the unit: \(r.output)")
    }

    @Test("2: systemd-analyze security --offline: the exposure stated in docs/service.md, or lower", arguments: [0, 1, 2])
    func security(_ index: Int) throws {
        guard let sa = which("systemd-analyze") else {
            return skip("security", "no systemd-analyze (Debian package systemd; Tests/run installs it)")
        }
        let (name, args, stated) = Self.statedExposure[index]
        let root = tempPath("security")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let unit = try Self.installed(args, root: root)
        let dir = (unit as NSString).deletingLastPathComponent
        let r = try Self.analyze(sa, user: args.contains("--user"), ["security", "--offline=yes", "./remolo.service"],
                                 root: root, cwd: dir)
        // "→ Overall exposure level for remolo.service: 1.4 OK 🙂"
        let line = try #require(r.output.split(separator: "\n").first { $0.contains("Overall exposure level") },
                                "no exposure in: \(r.output)")
        let value = line.split(separator: " ").compactMap { Double($0) }.first
        report("systemd-analyze security, \(name) unit: \(line.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "")")
        #expect(value != nil && value! <= stated, "\(name): \(line) (docs/service.md states \(stated))")
        if !args.contains("--user") { #expect(line.contains(" OK ") || line.contains(" SAFE "), "\(line)") }
    }

    /// LeakSanitizer stops the threads with ptrace, which strace already
    /// holds: in an AddressSanitizer build, the traced run goes without it.
    static var noLeakCheck: String {
        (ProcessInfo.processInfo.environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "detect_leaks=0"
    }

    /// Runs the receiver (recording sink, every address, so it tries to
    /// announce itself through avahi-daemon) under strace; the trace.
    static func tracedReceiver(strace: String, extra: [String]) throws -> String {
        let dir = tempPath("strace")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let trace = dir + "/trace"
        let r = try run(strace, ["-f", "-qq", "-o", trace, CLIProcess.binary, "receive", "--listen", "[::]:0",
                                 "--sink", dir + "/frames", "--seconds", "0.5"] + extra,
                        environment: ["REMOLO_CONFIG_DIR": dir, "ASAN_OPTIONS": Self.noLeakCheck])
        guard r.status == 0, r.output.contains("listening on") else { throw CLIError("receiver under strace failed: \(r.output)") }
        return read(trace) ?? ""
    }

    @Test("3: a real receiver makes only system calls the unit's filter allows, and opens only the socket families it allows", arguments: [
        (1, [] as [String], [] as [String]), (2, ["--rt", "40"], ["--rt", "10"]),
    ] as [(Int, [String], [String])])
    func syscallsAllowed(_ id: Int, _ installArgs: [String], _ receiveArgs: [String]) throws {
        guard let sa = which("systemd-analyze"), let strace = which("strace") else {
            return skip("syscalls", "needs systemd-analyze and strace (Debian packages systemd, strace; Tests/run installs them)")
        }
        let unit = try ServiceFiles.unit(ServiceSpec(scope: .system, binary: CLIProcess.binary,
                                                     realtimePriority: installArgs.isEmpty ? nil : 40))
        let allowed = try allowedSyscalls(unit: unit, systemdAnalyze: sa)
        #expect(allowed.isSuperset(of: ["io_uring_setup", "io_uring_enter", "io_uring_register", "timerfd_create"]))
        let trace = try Self.tracedReceiver(strace: strace, extra: receiveArgs)
        let used = syscalls(inTrace: trace)
        #expect(used.contains("io_uring_setup") && used.count > 20, "the trace looks empty: \(used.sorted())")
        // strace itself may start the binary with execve; that is allowed too.
        let denied = used.subtracting(allowed)
        #expect(denied.isEmpty, "the unit's SystemCallFilter= would kill the receiver at: \(denied.sorted())")
        if !receiveArgs.isEmpty {
            // SCHED_FIFO was asked for; the filter must let the call through.
            #expect(used.contains("sched_setscheduler") || used.contains("sched_setattr") || used.contains("sched_setparam"))
        }
        for line in trace.split(separator: "\n") where line.contains(" socket(") {
            #expect(line.contains("socket(AF_INET,") || line.contains("socket(AF_INET6,") || line.contains("socket(AF_UNIX,"),
                    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX would refuse: \(line)")
        }
        // MemoryDenyWriteExecute=: no mapping is made writable and executable.
        for line in trace.split(separator: "\n") where line.contains("mmap(") || line.contains("mprotect(") {
            #expect(!(line.contains("PROT_WRITE") && line.contains("PROT_EXEC")), "\(line)")
            #expect(!(line.contains("mprotect(") && line.contains("PROT_EXEC")), "exec gained by mprotect: \(line)")
        }
    }

    @Test("5: strace's lines are read whatever the PID's width, unfinished calls included")
    func traceParsing() {
        let trace = """
            123   execve("/x", ["x"], 0x7ffd /* 1 vars */) = 0
            98765 io_uring_setup(64, {flags=IORING_SETUP_SUBMIT_ALL}) = 4
            4321  futex(0x7f, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL <unfinished ...>
            4321  <... futex resumed>) = 0
            4321  +++ exited with 0 +++
            4321  --- SIGTERM {si_signo=SIGTERM} ---
            """
        #expect(syscalls(inTrace: trace) == ["execve", "io_uring_setup", "futex"])
    }

    @Test("4: the receiver runs under the kernel's MemoryDenyWriteExecute (PR_SET_MDWE)")
    func memoryDenyWriteExecute() throws {
        guard let python = which("python3") else { return skip("MDWE", "no python3 (Tests/run installs it)") }
        let dir = tempPath("mdwe")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // PR_SET_MDWE = 65, PR_MDWE_REFUSE_EXEC_GAIN = 1 (Linux 6.3+): kept across execve.
        let script = """
            import ctypes, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(65, 1, 0, 0, 0) != 0:
                print("no PR_SET_MDWE:", os.strerror(ctypes.get_errno())); sys.exit(77)
            os.execv(sys.argv[1], sys.argv[1:])
            """
        let r = try run(python, ["-c", script, CLIProcess.binary, "receive", "--listen", "[::]:0",
                                 "--sink", dir + "/frames", "--seconds", "0.5"], environment: ["REMOLO_CONFIG_DIR": dir])
        if r.status == 77 { return skip("MDWE", "this kernel has no PR_SET_MDWE (Linux 6.3+): \(r.output)") }
        #expect(r.status == 0 && r.output.contains("listening on") && r.output.contains("final:"), "\(r.output)")
    }
}

/// systemd itself runs the unit: Tests/Service/boot boots Debian's systemd in
/// a container, installs with the real binary into its /etc and checks the
/// running receiver (its user, group, filter, capabilities and files).
@Suite(.serialized) struct BootTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Service/boot").path

    @Test("1: the receiver runs under systemd as the unit says; 3: with `web` and `pair` in the config, a phone's page and a sender's pairing from a fresh install", arguments: [
        (1, [] as [String]), (2, ["--rt", "40"]), (3, ["--phone"]),
    ] as [(Int, [String])])
    func boot(_ id: Int, _ args: [String]) throws {
        guard geteuid() == 0 else { return skip("boot", "booting a container needs root") }
        guard which("systemd-nspawn") != nil else {
            return skip("boot", "no systemd-nspawn (Debian package systemd-container; Tests/run installs it)")
        }
        let r = try run("/bin/bash", [Self.script] + args + [CLIProcess.binary])
        if r.status == 77 { return skip("boot", r.output.split(separator: "\n").last.map(String.init) ?? "") }
        report(r.output.split(separator: "\n").last.map(String.init) ?? "")
        #expect(r.status == 0, "\(r.output)")
    }
}
