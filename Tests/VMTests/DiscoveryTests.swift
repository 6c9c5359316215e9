import Foundation
import Testing
import RemoloTestSupport

/// Two namespaces joined by a veth, each optionally with its own D-Bus
/// system bus and avahi-daemon (as two machines on one LAN would have): a
/// daemon per namespace, its bus socket in a directory of its own, and its
/// runtime directory (/run/avahi-daemon: pid file, socket) on a tmpfs
/// private to it, since `ip netns exec` gives each command its own mount
/// namespace.
final class AvahiLAN {
    let a: String, b: String
    let devA: String, devB: String
    let dir: String
    private var daemons: [Int32] = []

    init(prefix: String, ipv4: Bool, avahi: Bool) throws {
        a = prefix + "a"; b = prefix + "b"
        devA = prefix + "va"; devB = prefix + "vb"
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-\(prefix)-\(getpid())").path
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for ns in [a, b] { _ = try? run(Netns.ip, "netns", "del", ns) }
        try must(Netns.ip, "netns", "add", a)
        try must(Netns.ip, "netns", "add", b)
        try must(Netns.ip, "-n", a, "link", "add", devA, "type", "veth", "peer", "name", devB, "netns", b)
        if ipv4 {
            try must(Netns.ip, "-n", a, "addr", "add", "10.78.0.1/24", "dev", devA)
            try must(Netns.ip, "-n", b, "addr", "add", "10.78.0.2/24", "dev", devB)
        }
        for (ns, d) in [(a, devA), (b, devB), (a, "lo"), (b, "lo")] {
            try must(Netns.ip, "-n", ns, "link", "set", d, "up")
        }
        // Link-local addresses are tentative until duplicate address
        // detection ends (~1 s): nothing can bind or connect with them before.
        for (ns, d) in [(a, devA), (b, devB)] {
            let ready = eventually(15) {
                let out = (try? run(Netns.ip, "-n", ns, "-6", "addr", "show", "dev", d).output) ?? ""
                return out.contains("fe80::") && !out.contains("tentative")
            }
            try #require(ready, "no usable link-local address on \(d) in \(ns)")
        }
        if avahi {
            try startAvahi(a, devA)
            try startAvahi(b, devB)
        }
    }

    func bus(_ ns: String) -> String { "unix:path=\(dir)/\(ns).bus" }

    /// The link-local address of `dev` in `ns`.
    func linkLocal(_ ns: String, _ dev: String) throws -> String {
        let out = try run(Netns.ip, "-n", ns, "-6", "addr", "show", "dev", dev, "scope", "link").output
        let word = try #require(out.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { $0.hasPrefix("fe80::") },
                                "no fe80:: address: \(out)")
        return String(word.split(separator: "/")[0])
    }

    private func startAvahi(_ ns: String, _ dev: String) throws {
        let conf = "\(dir)/\(ns).avahi.conf"
        try """
        [server]
        host-name=\(ns)
        use-ipv4=yes
        use-ipv6=yes
        allow-interfaces=\(dev)
        ratelimit-interval-usec=1000000
        ratelimit-burst=1000
        [publish]
        publish-hinfo=no
        publish-workstation=no
        """.write(toFile: conf, atomically: true, encoding: .utf8)
        let socket = "\(dir)/\(ns).bus"
        daemons.append(try spawn(ns, ["dbus-daemon", "--system", "--nofork", "--nopidfile",
                                      "--address=unix:path=\(socket)"], log: "\(dir)/\(ns).dbus.log"))
        try #require(eventually(15) { access(socket, F_OK) == 0 }, "dbus-daemon in \(ns) made no socket")
        let log = "\(dir)/\(ns).avahi.log"
        daemons.append(try spawn(ns, ["sh", "-c", "mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon "
                                      + "&& exec avahi-daemon --no-drop-root --no-chroot --no-rlimits -f \(conf)"],
                                 log: log, env: ["DBUS_SYSTEM_BUS_ADDRESS": bus(ns)]))
        let up = eventually(30) { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("Server startup complete") }
        try #require(up, "avahi-daemon in \(ns) did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// Starts a daemon in `ns` in the background and returns its pid.
    /// posix_spawn with every descriptor past stderr closed, not Foundation's
    /// `Process`: that one watches a socket the child inherits, so a daemon
    /// that closes its descriptors (avahi-daemon) looks dead at once, and
    /// one that keeps them (dbus-daemon under a shell) never ends.
    private func spawn(_ ns: String, _ cmd: [String], log: String, env: [String: String] = [:]) throws -> Int32 {
        var fa = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fa)
        defer { posix_spawn_file_actions_destroy(&fa) }
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&fa, 1, 2)
        // glibc 2.34+; Swift's Glibc module leaves it out.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        let closeFrom = try #require(dlsym(nil, "posix_spawn_file_actions_addclosefrom_np"), "glibc too old")
        _ = unsafeBitCast(closeFrom, to: CloseFrom.self)(&fa, 3)
        let argv = [Netns.ip, "netns", "exec", ns] + cmd
        let envp = ProcessInfo.processInfo.environment.merging(env) { _, n in n }.map { "\($0.key)=\($0.value)" }
        var cargv = argv.map { strdup($0) } + [nil]
        var cenv = envp.map { strdup($0) } + [nil]
        defer { (cargv + cenv).forEach { free($0) } }
        var pid: pid_t = 0
        let r = posix_spawn(&pid, Netns.ip, &fa, nil, &cargv, &cenv)
        try #require(r == 0, "posix_spawn \(argv): \(String(cString: strerror(r)))")
        return pid
    }

    func close() {
        for pid in daemons.reversed() {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            if !eventually(3, { waitpid(pid, &status, WNOHANG) == pid }) {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
            }
        }
        for ns in [a, b] { _ = try? run(Netns.ip, "netns", "del", ns) }
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// REL_X and REL_Y summed from a file of struct input_event records (24
/// bytes on 64-bit: type u16 at 16, code u16 at 18, value i32 at 20).
func relTotals(_ path: String) throws -> (dx: Int64, dy: Int64, frames: Int) {
    let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    var dx: Int64 = 0, dy: Int64 = 0, frames = 0
    var off = 0
    while off + 24 <= data.count {
        func u16(_ o: Int) -> UInt16 { UInt16(data[off + o]) | UInt16(data[off + o + 1]) << 8 }
        let value = Int32(bitPattern: UInt32(u16(20)) | UInt32(u16(22)) << 16)
        switch (u16(16), u16(18)) {
        case (2, 0): dx += Int64(value)     // EV_REL, REL_X
        case (2, 1): dy += Int64(value)     // EV_REL, REL_Y
        case (0, 0): frames += 1           // EV_SYN, SYN_REPORT
        default: break
        }
        off += 24
    }
    return (dx, dy, frames)
}

extension VMSuite {
    /// Discovery and link-local IPv6 between two network namespaces: the
    /// commands as processes, the pointer's totals read from the sink file.
    @Suite(.enabled(if: VMEnv.netem, VMEnv.netemReason))
    struct LAN {
        /// A receiver announces itself through its namespace's avahi-daemon;
        /// `remolo discover` in the other namespace lists it with its
        /// fingerprint, and `remolo send` without --to finds and reaches it.
        @Test func discoveredAcrossNamespaces() throws {
            let lan = try AvahiLAN(prefix: "rmdi", ipv4: true, avahi: true)
            defer { lan.close() }
            let c = try PairedConfigs(label: "discovery")
            defer { c.remove() }
            let sink = c.root + "/sink"
            let rx = try CLIProcess(["receive", "--listen", "[::]:7420", "--sink", sink, "--seconds", "120"],
                                    configDir: c.receiver, log: c.log("rx"), prefix: [Netns.ip, "netns", "exec", lan.a],
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": lan.bus(lan.a)])
            defer { if rx.process.isRunning { rx.process.terminate() }; _ = rx.wait() }
            let listening = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
            let fingerprint = String(listening.split(separator: " ")[1])
            try #require(rx.line("announced as ", timeout: 30) != nil, "not announced: \(rx.output)")

            let env = ["DBUS_SYSTEM_BUS_ADDRESS": lan.bus(lan.b)]
            let wrap = [Netns.ip, "netns", "exec", lan.b]
            let disc = try CLIProcess(["discover", "--seconds", "4"], configDir: c.sender, log: c.log("discover"),
                                      prefix: wrap, environment: env)
            #expect(disc.wait(upTo: 60) == 0, "discover: \(disc.output)")
            let lines = disc.output.split(separator: "\n").filter { $0.contains(fingerprint) }
            #expect(!lines.isEmpty, "discover did not list \(fingerprint): \(disc.output)")
            #expect(lines.allSatisfy { $0.contains("proto 1") && $0.contains("on \(lan.devB)") && $0.contains(":7420") },
                    "\(disc.output)")
            #expect(lines.contains { $0.contains("known: test receiver") }, "\(disc.output)")
            // Both families announced for [::]; the IPv6 one is link-local, with its zone.
            #expect(lines.contains { $0.contains("10.78.0.1:7420") }, "\(disc.output)")
            #expect(lines.contains { $0.contains("%\(lan.devB)]:7420") }, "\(disc.output)")

            let tx = try CLIProcess(["send", "--gesture", "swipe", "--size", "300", "--seconds", "1"],
                                    configDir: c.sender, log: c.log("tx"), prefix: wrap, environment: env)
            #expect(tx.wait(upTo: 90) == 0, "send: \(tx.output)")
            #expect(tx.output.contains("found receiver test receiver (\(fingerprint))"), "\(tx.output)")
            let sent = try #require(tx.line("sent: "), "\(tx.output)")
            try expectSwipePlayed(sent, by: rx, into: sink)
        }

        /// A network without a router: only link-local IPv6 on the veth. The
        /// receiver listens on [::], the sender pairs and sends to
        /// [fe80::...%dev]:PORT; no avahi-daemon runs, which the receiver
        /// notes in one line and carries on.
        @Test func linkLocalOnly() throws {
            let lan = try AvahiLAN(prefix: "rmll", ipv4: false, avahi: false)
            defer { lan.close() }
            for (ns, dev) in [(lan.a, lan.devA), (lan.b, lan.devB)] {
                let v4 = try run(Netns.ip, "-n", ns, "-4", "addr", "show", "dev", dev).output
                #expect(!v4.contains("inet "), "IPv4 on \(dev): \(v4)")
                let v6 = try run(Netns.ip, "-n", ns, "-6", "addr", "show", "dev", dev).output
                let addrs = v6.split(separator: "\n").filter { $0.contains("inet6 ") }
                #expect(!addrs.isEmpty && addrs.allSatisfy { $0.contains("inet6 fe80::") && $0.contains("scope link") }, "\(v6)")
            }
            let target = try lan.linkLocal(lan.a, lan.devA)
            let c = try PairedConfigs(label: "linklocal", paired: false)
            defer { c.remove() }
            let sink = c.root + "/sink"
            let noBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(lan.dir)/no-such-bus"]
            let rx = try CLIProcess(["receive", "--listen", "[::]:7421", "--pair", "--sink", sink, "--seconds", "120"],
                                    configDir: c.receiver, log: c.log("rx"), prefix: [Netns.ip, "netns", "exec", lan.a],
                                    environment: noBus)
            defer { if rx.process.isRunning { rx.process.terminate() }; _ = rx.wait() }
            let codeLine = try #require(rx.line("pairing code: "), "receive did not start: \(rx.output)")
            let code = String(codeLine.dropFirst("pairing code: ".count))
            // The note comes after the code: the announcer starts last.
            #expect(eventually(15) { rx.output.contains("not announced") }, "\(rx.output)")
            let notes = rx.output.split(separator: "\n").filter { $0.contains("not announced") }
            #expect(notes.count == 1 && notes[0].contains("avahi-daemon"), "\(rx.output)")

            let to = "[\(target)%\(lan.devB)]:7421"
            let tx = try CLIProcess(["send", "--to", to, "--pair", code, "--gesture", "swipe", "--size", "300",
                                     "--seconds", "1"], configDir: c.sender, log: c.log("tx"),
                                    prefix: [Netns.ip, "netns", "exec", lan.b], environment: noBus)
            #expect(tx.wait(upTo: 90) == 0, "send \(to): \(tx.output)")
            #expect(tx.output.contains("paired with receiver"), "\(tx.output)")
            let sent = try #require(tx.line("sent: "), "\(tx.output)")
            try expectSwipePlayed(sent, by: rx, into: sink)
            // The pairing label is the address as typed, zone included.
            let known = try String(contentsOfFile: c.sender + "/known-receivers", encoding: .utf8)
            #expect(known.contains(to), "\(known)")
        }
    }
}

/// After `remolo send --gesture swipe --size 300`: the receiver ends the
/// session, stops cleanly, and its sink holds what the sender's `sent:` line
/// says, to the pixel.
private func expectSwipePlayed(_ sent: String, by rx: CLIProcess, into sink: String) throws {
    #expect(eventually(20) { rx.output.contains("ended") }, "\(rx.output)")
    usleep(500_000) // the playout's last ticks
    rx.process.terminate()
    #expect(rx.wait() == 0, "\(rx.output)")
    let t = try relTotals(sink)
    let q8x = try #require(CLIProcess.field("dx_q8", in: sent))
    let q8y = try #require(CLIProcess.field("dy_q8", in: sent))
    #expect(abs(t.dx * 256 - q8x) <= 128 && abs(t.dy * 256 - q8y) <= 128, "moved \(t.dx),\(t.dy) px; \(sent)")
    #expect(t.dx >= 299, "the swipe is 300 px long: \(t)")
}
