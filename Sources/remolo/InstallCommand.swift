import Foundation
import RemoloSession
import Remolo

// remolo install / uninstall: the receiver as a systemd service. The text of
// the files comes from ServiceFiles; this file decides where they go, checks
// that nothing foreign is overwritten or removed, and says what it did.

let installUsage = """
usage: remolo install [--system | --user] [--print] [--rt PRIORITY] [--bin PATH] [--root DIR]
       remolo install --package --root DIR [--bin PATH]

Writes the receiver's systemd unit, the udev rule for /dev/uinput
(\(ServiceFiles.udevRulePath)) and a modules-load.d entry for uinput
(\(ServiceFiles.modulesLoadPath)), and this manual page and the bash
completion (\(ServiceFiles.manPagePath),
\(ServiceFiles.completionPath); --user: under
~/.local/share). Safe to repeat; a file that remolo did not write is never
overwritten.

  --system    (default) \(ServiceFiles.systemUnitPath), run as a dynamic user
              with its identity in /var/lib/remolo; needs root
  --user      $XDG_CONFIG_HOME/systemd/user/\(ServiceFiles.unitName) (~/.config/...), run as
              you with ~/.config/remolo; prints what to run as root for the
              udev rule and the module, or writes them when run as root
  --print     print the files and change nothing
  --rt        run the drain loop SCHED_FIFO at PRIORITY (1-99): the system
              unit then keeps CAP_SYS_NICE, and nothing else
  --bin       the remolo binary the unit starts (default: this one)
  --root      a prefix for every path written (packaging, tests)
  --package   the files a Debian package ships, in its directories
              (\(ServiceFiles.packageUnitPath), \(ServiceFiles.packageUdevRulePath),
              \(ServiceFiles.packageModulesLoadPath), /usr/share/man,
              /usr/share/bash-completion), under --root: packaging/deb/build

Options of the receiver go in $REMOLO_CONFIG_DIR/config (docs/service.md).
"""

let uninstallUsage = """
usage: remolo uninstall [--system | --user] [--root DIR]

Removes what `remolo install` wrote (and the link `systemctl enable` made to
it), and says what it removed. Files remolo did not write are left alone,
and so are a package's (the package manager removes those).
The identity and paired senders in the config directory are kept.
"""

private struct InstallRequest {
    var scope = ServiceScope.system
    var print = false
    var rt: Int32?
    var binary: String?
    var root = ""
    var layout = ServiceLayout.local
}

private func parseInstall(_ args: [String], usage: String, installing: Bool) -> InstallRequest {
    var r = InstallRequest()
    var o = Options(args, usage: usage)
    while let flag = o.next() {
        switch flag {
        case "--system": r.scope = .system
        case "--user": r.scope = .user
        case "--root":
            let dir = o.value()
            guard dir.hasPrefix("/") else { fail("--root takes an absolute directory, not '\(dir)'") }
            r.root = dir.hasSuffix("/") ? String(dir.dropLast()) : dir
        case "--print" where installing: r.print = true
        case "--rt" where installing: r.rt = o.int(in: 1...99)
        case "--bin" where installing: r.binary = o.value()
        case "--package" where installing: r.layout = .package
        default: o.unknown()
        }
    }
    if r.layout == .package && r.root.isEmpty && !r.print {
        fail("--package writes the files a package ships (into /lib and /usr/share, which the package manager owns): "
             + "give --root DIR, the package's staging directory, or --print")
    }
    return r
}

/// The absolute path of the running binary.
private func runningBinary() -> String? {
    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
}

private func shellQuote(_ s: String) -> String {
    s.allSatisfy({ $0.isLetter || $0.isNumber || "/._-+:=@".contains($0) }) ? s
        : "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// What is at a path now: nothing, one of ours (with its text), or a file remolo did not write.
private enum Existing {
    case none
    case ours(String)
    case foreign(String)
}

private func existing(_ path: String, layout: ServiceLayout = .local) -> Existing {
    var st = stat()
    guard lstat(path, &st) == 0 else {
        if errno == ENOENT { return .none }
        return .foreign("cannot be examined: \(String(cString: strerror(errno)))")
    }
    guard (st.st_mode & S_IFMT) == S_IFREG else { return .foreign("is not a regular file") }
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
        return .foreign("cannot be read")
    }
    return ServiceFiles.isOurs(text, layout: layout) ? .ours(text) : .foreign("was not written by remolo install")
}

/// Writes `text` to `path` through a temporary file in the same directory
/// and a rename, so a reader never sees half a unit.
private func writeFile(_ path: String, _ text: String) throws {
    let dir = (path as NSString).deletingLastPathComponent
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                            attributes: [.posixPermissions: 0o755])
    let tmp = dir + "/.remolo-install-\(getpid())"
    guard FileManager.default.createFile(atPath: tmp, contents: Data(text.utf8), attributes: [.posixPermissions: 0o644]) else {
        throw CLIFailure("cannot write \(path): \(String(cString: strerror(errno)))")
    }
    guard rename(tmp, path) == 0 else {
        let e = errno
        unlink(tmp)
        throw CLIFailure("cannot write \(path): \(String(cString: strerror(e)))")
    }
}

private struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

private var isRoot: Bool { geteuid() == 0 }

/// What to run as root to finish a `--user` install by hand.
private func rootInstructions(_ files: [ServiceFile]) -> String {
    var s = "as root, run:\n"
    for f in files {
        s += "  sudo tee \(f.path) >/dev/null <<'EOF'\n\(f.contents)EOF\n"
    }
    s += "  sudo udevadm control --reload-rules && sudo udevadm trigger --sysname-match=uinput && sudo modprobe uinput\n"
    s += "  sudo usermod -aG \(ServiceFiles.uinputGroup) \"$USER\"   # then log in again"
    return s
}

@Sendable func installCommand(_ args: [String]) {
    let r = parseInstall(args, usage: installUsage, installing: true)
    guard let binary = r.binary ?? runningBinary() else {
        fail("cannot find this binary's path (/proc/self/exe); pass --bin /path/to/remolo")
    }
    if r.binary != nil && r.root.isEmpty && !r.print && !FileManager.default.isExecutableFile(atPath: binary) {
        fail("--bin \(binary): no executable there; pass the path of the installed remolo binary", code: 1)
    }
    let spec = ServiceSpec(scope: r.scope, binary: binary, realtimePriority: r.rt, layout: r.layout)
    let env = ProcessInfo.processInfo.environment
    let files: [ServiceFile]
    do {
        let (man, completion) = try manualAndCompletion()
        files = try ServiceFiles.files(spec, environment: env)
            + ServiceFiles.documentation(spec, environment: env, manPage: man, completion: completion)
    } catch let e as ManualError {
        fail(e.description, code: 1)
    } catch {
        fail("\(error)")
    }

    if r.print {
        for f in files { print("### \(r.root + f.path)\n\(f.contents)") }
        return
    }
    // With --root nothing outside DIR is touched, so no privilege is needed.
    let privileged = isRoot || !r.root.isEmpty
    if r.scope == .system && !privileged {
        fail("--system writes to /etc and needs root: run `sudo \(shellQuote(binary)) install --system`, "
             + "or install for yourself with --user, or see the files with --print", code: 1)
    }
    let toWrite = files.filter { privileged || !$0.needsRoot }
    let forRoot = files.filter { !privileged && $0.needsRoot }

    // Check everything before writing anything: a refusal leaves no half install.
    var refused: [String] = []
    for f in toWrite {
        if case .foreign(let why) = existing(r.root + f.path, layout: r.layout) {
            refused.append("\(r.root + f.path) \(why); move it away (or remove it) and run this again")
        }
    }
    if !refused.isEmpty { fail("nothing was written:\n  " + refused.joined(separator: "\n  "), code: 1) }

    for f in toWrite {
        let path = r.root + f.path
        let before = existing(path, layout: r.layout)
        if case .ours(let text) = before, text == f.contents {
            say("unchanged \(path) (\(f.role))")
            continue
        }
        do { try writeFile(path, f.contents) } catch { fail("\(error)", code: 1) }
        if case .ours = before { say("updated \(path) (\(f.role))") } else { say("wrote \(path) (\(f.role))") }
    }
    if !forRoot.isEmpty {
        say("not written (they need root): " + forRoot.map(\.path).joined(separator: ", "))
        say(rootInstructions(forRoot))
    }
    // A package's maintainer scripts take it from here (packaging/deb).
    if r.layout == .package { return }
    let ctl = r.scope == .system ? "systemctl" : "systemctl --user"
    let sudo = r.scope == .system ? "sudo " : ""
    var next = "next: \(sudo)\(ctl) daemon-reload && \(sudo)\(ctl) enable --now remolo"
    if privileged && r.root.isEmpty {
        next = "next: udevadm control --reload-rules && udevadm trigger --sysname-match=uinput && modprobe uinput\n      "
            + next.dropFirst("next: ".count)
    }
    say(next)
    let config = r.scope == .system ? ConfigDirectory.serviceDefault : ConfigDirectory.forUser().path
    say("options: \(config)/\(ReceiveConfig.fileName) (the keys of `remolo receive`, docs/service.md)")
}

@Sendable func uninstallCommand(_ args: [String]) {
    let r = parseInstall(args, usage: uninstallUsage, installing: false)
    let spec = ServiceSpec(scope: r.scope, binary: "/remolo")
    let env = ProcessInfo.processInfo.environment
    let files: [ServiceFile]
    do {
        files = try ServiceFiles.files(spec, environment: env)
            + ServiceFiles.documentation(spec, environment: env, manPage: "", completion: "")
    } catch { fail("\(error)") }
    let privileged = isRoot || !r.root.isEmpty
    if r.scope == .system && !privileged {
        fail("--system removes files in /etc and needs root: run `sudo remolo uninstall --system`", code: 1)
    }
    var removed = 0
    var left: [String] = []
    var forRoot: [String] = []
    // The links `systemctl enable` made to the unit would dangle once it is gone.
    let unitPath = files[0].path
    let unitDir = r.root + (unitPath as NSString).deletingLastPathComponent
    let wants = (try? FileManager.default.contentsOfDirectory(atPath: unitDir))?.filter { $0.hasSuffix(".wants") } ?? []
    for w in wants.sorted() {
        let link = unitDir + "/" + w + "/" + ServiceFiles.unitName
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link),
              target == unitPath || target == r.root + unitPath else { continue }
        if unlink(link) == 0 { say("removed \(link) (the link systemctl enable made)"); removed += 1 }
    }
    for f in files {
        let path = r.root + f.path
        switch existing(path) {
        case .none: continue
        case .foreign(let why): left.append("\(path) \(why)")
        case .ours:
            if f.needsRoot && !privileged { forRoot.append(path); continue }
            if unlink(path) == 0 {
                say("removed \(path) (\(f.role))")
                removed += 1
            } else {
                fail("cannot remove \(path): \(String(cString: strerror(errno)))", code: 1)
            }
        }
    }
    for l in left { say("left \(l)") }
    if !forRoot.isEmpty { say("as root, run: sudo rm " + forRoot.map(shellQuote).joined(separator: " ")) }
    if removed == 0 && forRoot.isEmpty { say("nothing to remove: remolo is not installed (\(r.scope.rawValue))") }
    if removed > 0 {
        let ctl = r.scope == .system ? "systemctl" : "systemctl --user"
        say("next: \(r.scope == .system ? "sudo " : "")\(ctl) daemon-reload (the identity and paired senders are kept)")
    }
}

/// The config file's words for `remolo receive`, put before the command
/// line's so the command line wins. None when the file does not exist, or
/// when only the usage is asked for.
func receiveConfigWords(_ args: [String]) -> [String] {
    if args.contains("-h") || args.contains("--help") { return [] }
    let path = ConfigDirectory.forUser().file(ReceiveConfig.fileName)
    var st = stat()
    if stat(path, &st) != 0 && errno == ENOENT { return [] }
    let text: String
    do {
        text = try String(contentsOfFile: path, encoding: .utf8)
    } catch {
        fail("cannot read the config file \(path): \(error.localizedDescription); fix its permissions or remove it", code: 1)
    }
    do {
        return try ReceiveConfig.arguments(parsing: text, path: path)
    } catch {
        fail("\(error)")
    }
}
