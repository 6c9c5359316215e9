import Foundation
import RemoloPlayout
import RemoloService
import RemoloTestSupport
import Testing

/// `remolo install` and `uninstall` as a packager runs them: the real binary,
/// every path under `--root`.
@Suite(.serialized) struct InstallCLITests {
    static let paths = [ServiceFiles.systemUnitPath, ServiceFiles.udevRulePath, ServiceFiles.modulesLoadPath,
                        ServiceFiles.manPagePath, ServiceFiles.completionPath]

    @Test("1: install writes the five files, again changes nothing, uninstall removes exactly them, again removes nothing")
    func roundTrip() throws {
        let root = tempPath("root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        // The web tests set REMOLO_WEB_ROOT in this process (the page's
        // source tree) when they run, which may fall between the two
        // installs: set it to that same value first, so both copy the
        // same page and the second finds it unchanged.
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
        setenv("REMOLO_WEB_ROOT", package + "/Sources/RemoloWeb/page", 1)
        let first = try remolo(["install", "--system", "--root", root])
        #expect(first.status == 0, "\(first.output)")
        for p in Self.paths {
            let text = try #require(read(root + p), "\(p) not written: \(first.output)")
            #expect(ServiceFiles.isOurs(text))
            #expect(first.output.contains("wrote \(root + p)"))
        }
        // ExecStart names the binary that ran.
        #expect(read(root + ServiceFiles.systemUnitPath)?.contains("ExecStart=\(CLIProcess.binary) receive --output uinput\n") == true)

        let again = try remolo(["install", "--system", "--root", root])
        // Every file unchanged, nothing written, the page included.
        #expect(again.status == 0 && Self.paths.allSatisfy { again.output.contains("unchanged \(root + $0)") }
                && !again.output.contains("wrote ") && !again.output.contains("updated "), "\(again.output)")

        let rt = try remolo(["install", "--rt", "30", "--root", root])
        #expect(rt.status == 0 && rt.output.contains("updated \(root + ServiceFiles.systemUnitPath)"), "\(rt.output)")
        #expect(read(root + ServiceFiles.systemUnitPath)?.contains("AmbientCapabilities=CAP_SYS_NICE") == true)

        // What `systemctl enable` makes, and an unrelated file beside the unit.
        let wants = root + "/etc/systemd/system/multi-user.target.wants"
        try FileManager.default.createDirectory(atPath: wants, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: wants + "/remolo.service", withDestinationPath: ServiceFiles.systemUnitPath)
        try "[Unit]\n".write(toFile: root + "/etc/systemd/system/other.service", atomically: false, encoding: .utf8)

        let un = try remolo(["uninstall", "--root", root])
        #expect(un.status == 0, "\(un.output)")
        for p in Self.paths {
            #expect(!exists(root + p), "\(p) left behind")
            #expect(un.output.contains("removed \(root + p)"), "\(un.output)")
        }
        #expect(!exists(wants + "/remolo.service") && un.output.contains("the link systemctl enable made"))
        #expect(exists(root + "/etc/systemd/system/other.service"), "uninstall removed a file it did not write")

        let unAgain = try remolo(["uninstall", "--root", root])
        #expect(unAgain.status == 0 && unAgain.output.contains("nothing to remove"), "\(unAgain.output)")
    }

    @Test("2: a file remolo did not write is neither overwritten nor removed, and nothing else is written", arguments: [
        (1, ServiceFiles.systemUnitPath), (2, ServiceFiles.udevRulePath), (3, ServiceFiles.modulesLoadPath),
        (4, ServiceFiles.manPagePath), (5, ServiceFiles.completionPath),
    ] as [(Int, String)])
    func foreignFile(_ id: Int, _ foreign: String) throws {
        let root = tempPath("foreign")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let mine = "# the admin's own\nuinput\n"
        try FileManager.default.createDirectory(atPath: root + (foreign as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try mine.write(toFile: root + foreign, atomically: false, encoding: .utf8)

        let install = try remolo(["install", "--root", root])
        #expect(install.status == 1, "\(install.output)")
        #expect(install.output.contains("\(root + foreign) was not written by remolo install; move it away"), "\(install.output)")
        #expect(read(root + foreign) == mine)
        for p in Self.paths where p != foreign { #expect(!exists(root + p), "\(p) written despite the refusal") }

        let un = try remolo(["uninstall", "--root", root])
        #expect(un.status == 0 && un.output.contains("left \(root + foreign)"), "\(un.output)")
        #expect(read(root + foreign) == mine)
    }

    @Test("3: --print shows the five files and writes nothing")
    func printOnly() throws {
        let root = tempPath("print")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let r = try remolo(["install", "--print", "--rt", "20", "--bin", "/usr/bin/remolo", "--root", root])
        #expect(r.status == 0, "\(r.output)")
        for p in Self.paths {
            let first = p == ServiceFiles.manPagePath ? ServiceFiles.manMarker : ServiceFiles.marker
            #expect(r.output.contains("### \(root + p)\n\(first)"), "\(p): \(r.output)")
        }
        #expect(r.output.contains("ExecStart=/usr/bin/remolo receive --output uinput --rt 20"))
        #expect(r.output.contains(#"KERNEL=="uinput""#) && r.output.contains("\nuinput\n"))
        #expect(!exists(root), "--print created \(root)")
    }

    @Test("4: --user writes the user unit under XDG (and, with --root, the root files too)")
    func userInstall() throws {
        let root = tempPath("user")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let env = ProcessInfo.processInfo.environment
        let unit = try ServiceFiles.userUnitPath(environment: env)
        let docs = [try ServiceFiles.userManPagePath(environment: env), try ServiceFiles.userCompletionPath(environment: env)]
        let r = try remolo(["install", "--user", "--root", root])
        #expect(r.status == 0, "\(r.output)")
        let text = try #require(read(root + unit), "no user unit at \(root + unit): \(r.output)")
        #expect(text.contains("Environment=REMOLO_CONFIG_DIR=%E/remolo") && text.contains("WantedBy=graphical-session.target") && text.contains("receive --output auto"))
        for d in docs { #expect(read(root + d).map { ServiceFiles.isOurs($0) } == true, "\(d): \(r.output)") }
        #expect(r.output.contains("systemctl --user daemon-reload"))
        let un = try remolo(["uninstall", "--user", "--root", root])
        #expect(un.status == 0 && !exists(root + unit), "\(un.output)")
        for d in docs { #expect(!exists(root + d), "\(d) left behind") }
    }

    @Test("8: --package writes a package's files in its directories with its marker; uninstall leaves them to the package manager")
    func package() throws {
        let root = tempPath("package")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let r = try remolo(["install", "--package", "--bin", "/usr/bin/remolo", "--root", root])
        #expect(r.status == 0, "\(r.output)")
        let paths = [ServiceFiles.packageUnitPath, ServiceFiles.packageUdevRulePath, ServiceFiles.packageModulesLoadPath,
                     ServiceFiles.packageManPagePath, ServiceFiles.packageCompletionPath]
        for p in paths {
            let text = try #require(read(root + p), "\(p) not written: \(r.output)")
            #expect(ServiceFiles.isOurs(text, layout: .package) && !ServiceFiles.isOurs(text), "\(p)")
        }
        #expect(read(root + ServiceFiles.packageUnitPath)?.contains("ExecStart=/usr/bin/remolo receive --output uinput\n") == true)
        #expect(!r.output.contains("next:"), "a package's scripts do the rest: \(r.output)")
        let again = try remolo(["install", "--package", "--bin", "/usr/bin/remolo", "--root", root])
        #expect(again.status == 0 && again.output.components(separatedBy: "unchanged ").count == paths.count + 1, "\(again.output)")
        let un = try remolo(["uninstall", "--root", root])
        #expect(un.status == 0 && un.output.contains("nothing to remove"), "\(un.output)")
        for p in paths { #expect(exists(root + p), "uninstall removed the package's \(p)") }
    }

    @Test("5: usage mistakes say what was expected", arguments: [
        (1, ["install", "--root", "relative"], "absolute"),
        (2, ["install", "--rt", "0"], "1 to 99"),
        (3, ["install", "--colour"], "unknown option '--colour'"),
        (4, ["uninstall", "--rt", "5"], "unknown option '--rt'"),
        (5, ["install", "--package"], "give --root DIR"),
        (6, ["uninstall", "--package", "--root", "/tmp"], "unknown option '--package'"),
        (7, ["install", "--package", "--user", "--root", "/tmp/remolo-never"], "a package ships the system unit only"),
    ] as [(Int, [String], String)])
    func usage(_ id: Int, _ args: [String], _ says: String) throws {
        let r = try remolo(args)
        #expect(r.status == 2 && r.output.contains(says), "\(r.output)")
    }

    @Test("6: every config key is a long option of `remolo receive`")
    func keysAreOptions() throws {
        let help = try remolo(["receive", "--help"])
        #expect(help.status == 0)
        for k in ReceiveConfig.keys { #expect(help.output.contains("--\(k.name)"), "no --\(k.name) in receive --help") }
    }

    @Test("7: receive reads the config file; a mistake in it stops the receiver naming the line")
    func receiveReadsConfig() throws {
        let dir = tempPath("cfg")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let file = dir + "/" + ReceiveConfig.fileName
        try "# the receiver\nlisten = 127.0.0.1:7420\nsink = \(dir)/frames\nseconds = 0.3\ncolour = blue\n"
            .write(toFile: file, atomically: false, encoding: .utf8)
        let bad = try remolo(["receive"], configDir: dir)
        #expect(bad.status == 2 && bad.output.contains("\(file):5: unknown key 'colour'"), "\(bad.output)")

        let port = try freePort()
        try "# the receiver\nlisten = 127.0.0.1:1\nsink = \(dir)/frames\nseconds = 30\n"
            .write(toFile: file, atomically: false, encoding: .utf8)
        // The command line wins: its port and its seconds replace the file's.
        let ok = try remolo(["receive", "--listen", "127.0.0.1:\(port)", "--seconds", "0.3"], configDir: dir, timeout: 20)
        #expect(ok.status == 0, "\(ok.output)")
        #expect(ok.output.contains("listening on 127.0.0.1:\(port) (tcp+udp), frames to \(dir)/frames"), "\(ok.output)")
    }

    @Test("9: the phone page goes where the unit's binary finds it (that binary serves it), is kept by a repeat, refused over foreign files, and removed by uninstall")
    func page() throws {
        let root = tempPath("page")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let bin = "/opt/remolo-test/bin/remolo"
        let page = root + "/opt/remolo-test/share/remolo/page"
        let first = try remolo(["install", "--system", "--root", root, "--bin", bin])
        #expect(first.status == 0 && first.output.contains("wrote \(page) (the phone page"), "\(first.output)")
        let source = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().path + "/Remolo_RemoloWeb.resources/page"
        #expect(read(page + "/index.html") == read(source + "/index.html") && read(page + "/index.html") != nil)
        #expect(read(page + "/.remolo-install").map(ServiceFiles.isOurs) == true)
        let again = try remolo(["install", "--system", "--root", root, "--bin", bin])
        #expect(again.status == 0 && again.output.contains("unchanged \(page) (the phone page)"), "\(again.output)")

        // The binary installed there serves the page from there, with no
        // resource bundle beside it and no REMOLO_WEB_ROOT.
        try FileManager.default.createDirectory(atPath: root + "/opt/remolo-test/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CLIProcess.binary, toPath: root + bin)
        let cfg = tempPath("page-cfg")
        defer { try? FileManager.default.removeItem(atPath: cfg) }
        let rx = try run("/usr/bin/env", ["-u", "REMOLO_WEB_ROOT", "REMOLO_CONFIG_DIR=" + cfg, root + bin, "receive",
                                          "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0", "--sink", root + "/frames",
                                          "--no-announce", "--seconds", "0.5"])
        #expect(rx.status == 0 && rx.output.contains("phone page: https://127.0.0.1:"), "\(rx.output)")

        let un = try remolo(["uninstall", "--root", root])
        #expect(un.status == 0 && un.output.contains("removed \(page) (the phone page)"), "\(un.output)")
        #expect(!exists(page) && !exists(root + "/opt/remolo-test/share/remolo"))

        // Page files remolo did not write: refused before anything is written.
        try FileManager.default.createDirectory(atPath: page, withIntermediateDirectories: true)
        try "<p>mine</p>".write(toFile: page + "/index.html", atomically: false, encoding: .utf8)
        let refused = try remolo(["install", "--system", "--root", root, "--bin", bin])
        #expect(refused.status == 1 && refused.output.contains("holds page files remolo install did not write"), "\(refused.output)")
        #expect(!exists(root + ServiceFiles.systemUnitPath) && read(page + "/index.html") == "<p>mine</p>")
        let un2 = try remolo(["uninstall", "--root", root])
        #expect(un2.status == 0 && read(page + "/index.html") == "<p>mine</p>", "\(un2.output)")
    }

    @Test("10: web, ca and no-redundancy in the config file: the receiver serves the page with the authority's certificate")
    func receiveWebFromConfig() throws {
        let dir = tempPath("cfg-web")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let port = try freePort(), web = try freePort()
        try "listen = 127.0.0.1:\(port)\nweb = 127.0.0.1:\(web)\nca = true\nno-redundancy = true\nsink = \(dir)/frames\nseconds = 0.5\n"
            .write(toFile: dir + "/" + ReceiveConfig.fileName, atomically: false, encoding: .utf8)
        let r = try remolo(["receive", "--no-announce"], configDir: dir, timeout: 30)
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("phone page: https://127.0.0.1:\(web)/"), "\(r.output)")
        #expect(r.output.contains("certificate authority: "), "\(r.output)")
        #expect(exists(dir + "/web-ca.pem"), "no authority made")
    }
}
