import Foundation
import RemoloSession
import RemoloPlayout
import RemoloService
import RemoloWeb

// remolo install / uninstall: the receiver as a systemd service. The text of
// the files comes from ServiceFiles; this file decides where they go, checks
// that nothing foreign is overwritten or removed, and says what it did.

let installUsage = """
usage: remolo install [--system | --user] [--print] [--rt PRIORITY] [--bin PATH]
                      [--root DIR]
       remolo install --package --root DIR [--bin PATH]

Writes the receiver's systemd unit, the udev rule for /dev/uinput
(\(ServiceFiles.udevRulePath)) and a modules-load.d entry for uinput
(\(ServiceFiles.modulesLoadPath)), this manual page and the bash
completion (\(ServiceFiles.manPagePath),
\(ServiceFiles.completionPath); --user: under
~/.local/share), and the phone page's files where the unit's binary finds
them (share/remolo/page beside its directory: /usr/local/share/remolo/page
for /usr/local/bin/remolo). Safe to repeat; a file that remolo did not
write is never overwritten.

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

Options of the receiver go in $REMOLO_CONFIG_DIR/config (CONFIGURATION FILE in
man remolo); with `web = 8443` there the service serves the phone page.
"""

let uninstallUsage = """
usage: remolo uninstall [--system | --user] [--root DIR]

Removes what `remolo install` wrote (the link `systemctl enable` made to the
unit too, and the phone page's files), and says what it removed. Files
remolo did not write are left alone, and so are a package's (the package
manager removes those).
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

/// The phone page's files as `remolo install` copies them: from where this
/// binary finds them (WebBridge.pageDirectory) to share/remolo/page beside
/// the unit's binary's directory, where that binary looks first. The page
/// has images, which cannot carry the marker line, so a manifest beside
/// them does: its first line is the marker, then one file name a line.
struct PageInstall {
    static let manifestName = ".remolo-install"

    /// Where the binary at `binary` looks for its page.
    static func destination(binary: String) -> String {
        let bin = (binary as NSString).deletingLastPathComponent
        return ((bin as NSString).deletingLastPathComponent as NSString).appendingPathComponent(WebBridge.installedPage)
    }

    /// The page's file names in `dir` (the types the bridge serves).
    static func names(in dir: String) -> [String] {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return all.filter { WebBridge.contentTypes[($0 as NSString).pathExtension] != nil }.sorted()
    }

    /// The manifest's file names when `dir` holds one remolo wrote, else nil.
    static func manifest(in dir: String) -> [String]? {
        guard let text = read(dir + "/" + manifestName), ServiceFiles.isOurs(text) else { return nil }
        return text.split(separator: "\n").dropFirst().map(String.init).filter { !$0.isEmpty && !$0.contains("/") }
    }

    static func read(_ path: String) -> String? {
        guard let h = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? h.close() }
        return String(decoding: h.readDataToEndOfFile(), as: UTF8.self)
    }
}

/// Copies the page for `binary` under `root`; says what it did. A missing
/// source is not fatal: the rest of the install stands, and the line says
/// how to get the page.
private func installPage(binary: String, root: String, printOnly: Bool) {
    let dest = PageInstall.destination(binary: binary)
    let target = root + dest
    let source: String
    do { source = try WebBridge.pageDirectory().path } catch {
        if exists(target + "/index.html") {
            say("unchanged \(target) (the phone page; this binary has no page of its own to copy)")
        } else {
            say("note: not installed: the phone page (\(target)): this binary finds no page to copy (\(error)); "
                + "run install with the built binary, `sudo .build/release/remolo install --bin \(binary)`, "
                + "or copy Sources/RemoloWeb/page there")
        }
        return
    }
    // Run from the build for itself: its resource bundle beside it is
    // where it looks already.
    let bundle = (binary as NSString).deletingLastPathComponent + "/Remolo_RemoloWeb.resources/page"
    if (source as NSString).standardizingPath == (bundle as NSString).standardizingPath {
        say("the phone page: \(source), the binary's own resource bundle (nothing to copy)")
        return
    }
    let names = PageInstall.names(in: source)
    if printOnly {
        print("### \(target)/ (the phone page: \(names.count) files from \(source))\n")
        return
    }
    if (source as NSString).standardizingPath == (target as NSString).standardizingPath {
        say("unchanged \(target) (the phone page, where the binary finds it)")
        return
    }
    let known = PageInstall.manifest(in: target)
    do {
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        // Files of an older page that this one no longer has.
        for old in (known ?? []) where !names.contains(old) { unlink(target + "/" + old) }
        var changed = 0
        for n in names {
            let data = try Data(contentsOf: URL(fileURLWithPath: source + "/" + n))
            if let now = FileManager.default.contents(atPath: target + "/" + n), now == data { continue }
            let tmp = target + "/.remolo-install-\(getpid())"
            guard FileManager.default.createFile(atPath: tmp, contents: data, attributes: [.posixPermissions: 0o644]),
                  rename(tmp, target + "/" + n) == 0 else {
                throw CLIFailure("cannot write \(target)/\(n): \(String(cString: strerror(errno)))")
            }
            changed += 1
        }
        let manifest = ServiceFiles.marker + "\n" + names.joined(separator: "\n") + "\n"
        if PageInstall.read(target + "/" + PageInstall.manifestName) != manifest {
            try writeFile(target + "/" + PageInstall.manifestName, manifest)
        }
        say(changed == 0 && known != nil ? "unchanged \(target) (the phone page)"
            : "\(known == nil ? "wrote" : "updated") \(target) (the phone page, \(names.count) files)")
    } catch {
        if root.isEmpty && geteuid() != 0 {
            // --user with a binary in a system directory: the rest stands.
            say("not written (it needs root): \(target), the phone page: \(error); run `sudo \(binary) install --user` "
                + "or put the binary under ~/.local/bin")
            return
        }
        fail("\(error)", code: 1)
    }
}

/// Why the page cannot be copied for `binary`: its directory holds page
/// files that remolo did not write (checked before anything is written).
private func pageRefusal(binary: String, root: String) -> String? {
    let target = root + PageInstall.destination(binary: binary)
    guard let source = try? WebBridge.pageDirectory().path,
          (source as NSString).standardizingPath != (target as NSString).standardizingPath,
          PageInstall.manifest(in: target) == nil, !PageInstall.names(in: target).isEmpty else { return nil }
    return "\(target) holds page files remolo install did not write (no \(PageInstall.manifestName) there); "
        + "move them away (or remove them) and run this again"
}

/// Removes the page `remolo install` copied for `binary`: the files its
/// manifest names, the manifest, and the directories it leaves empty.
private func uninstallPage(binary: String, root: String) -> Bool {
    let target = root + PageInstall.destination(binary: binary)
    guard let names = PageInstall.manifest(in: target) else { return false }
    for n in names { unlink(target + "/" + n) }
    unlink(target + "/" + PageInstall.manifestName)
    rmdir(target)
    rmdir((target as NSString).deletingLastPathComponent)   // share/remolo, when empty
    say("removed \(target) (the phone page)")
    return true
}

private func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

/// The binary an installed unit starts (its ExecStart='s first word).
private func unitBinary(_ unitPath: String) -> String? {
    guard let text = PageInstall.read(unitPath) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix("ExecStart=") {
        var rest = line.dropFirst("ExecStart=".count)
        if rest.hasPrefix("\"") {
            rest = rest.dropFirst()
            guard let end = rest.firstIndex(of: "\"") else { return nil }
            return String(rest[..<end]).replacingOccurrences(of: "\\\\", with: "\\").replacingOccurrences(of: "%%", with: "%")
        }
        return rest.split(separator: " ").first.map { String($0).replacingOccurrences(of: "%%", with: "%").replacingOccurrences(of: "$$", with: "$") }
    }
    return nil
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
        // A package ships the page itself (packaging/deb/build).
        if r.layout == .local { installPage(binary: binary, root: r.root, printOnly: true) }
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
    if r.layout == .local, let why = pageRefusal(binary: binary, root: r.root) { refused.append(why) }
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
    if r.layout == .local && (privileged || r.scope == .user) {
        installPage(binary: binary, root: r.root, printOnly: false)
    }
    if !forRoot.isEmpty {
        say("not written (they need root): " + forRoot.map(\.path).joined(separator: ", "))
        say(rootInstructions(forRoot))
    }
    // A package's maintainer scripts take it from here (packaging/deb).
    if r.layout == .package { return }
    // The unit and the udev rule name the group; udev makes it, so a box
    // without udev lacks it and the unit would not start (216/GROUP).
    if r.scope == .system && r.root.isEmpty && getgrnam(ServiceFiles.uinputGroup) == nil {
        say("note: group \(ServiceFiles.uinputGroup) does not exist here (udev makes it); the unit joins it: "
            + "`sudo groupadd --system \(ServiceFiles.uinputGroup)`")
    }
    let ctl = r.scope == .system ? "systemctl" : "systemctl --user"
    let sudo = r.scope == .system ? "sudo " : ""
    var next = "next: \(sudo)\(ctl) daemon-reload && \(sudo)\(ctl) enable --now remolo"
    if privileged && r.root.isEmpty {
        next = "next: udevadm control --reload-rules && udevadm trigger --sysname-match=uinput && modprobe uinput\n      "
            + next.dropFirst("next: ".count)
    }
    say(next)
    let config = r.scope == .system ? ConfigDirectory.serviceDefault : ConfigDirectory.forUser().path
    say("options: \(config)/\(ReceiveConfig.fileName) (the keys of `remolo receive`: CONFIGURATION FILE in man remolo; `web = 8443` serves the phone page)")
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
    // The page went beside the binary the unit starts: read it before the
    // unit goes.
    if let binary = unitBinary(r.root + unitPath) ?? runningBinary(), privileged || r.scope == .user,
       uninstallPage(binary: binary, root: r.root) {
        removed += 1
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
