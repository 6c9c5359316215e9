import Foundation
import RemoloPlayout
import RemoloService
import RemoloSession
import RemoloSystem
import RemoloTestSupport
import Testing

/// What a newcomer's first mistakes print: each message says how to fix
/// it, and each command ends with the status the manual gives it.
@Suite(.serialized) struct AdviceCLITests {
    @Test("1: without /dev/uinput, receive names the files `remolo install` writes, and --sink")
    func noUinput() throws {
        guard !FileManager.default.fileExists(atPath: "/dev/uinput") else {
            print("skip: noUinput: this machine has /dev/uinput, so the receiver does not fail")
            return
        }
        let c = try PairedConfigs(label: "advice-uinput")
        defer { c.remove() }
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--output", "uinput", "--no-announce",
                                 "--seconds", "5"], configDir: c.receiver, log: c.log("rx"))
        #expect(rx.wait(upTo: 20) == 1, "\(rx.output)")
        let out = rx.output
        #expect(out.contains("`sudo remolo install`"), "\(out)")
        #expect(out.contains(ServiceFiles.modulesLoadPath), "\(out)")
        #expect(out.contains(ServiceFiles.udevRulePath), "\(out)")
        // The very rule install writes, quoted whole.
        let rule = try #require(ServiceFiles.udevRule.split(separator: "\n").first { $0.hasPrefix("KERNEL==") })
        #expect(out.contains(String(rule)), "\(out)")
        #expect(out.contains("--sink FILE"), "\(out)")
        #expect(!out.contains("/etc/modules-load.d/uinput.conf"), "\(out)")
    }

    @Test("2: a sender that fails after connecting says bye as going away, not as a protocol error")
    func senderFailureIsNotProtocolError() throws {
        let c = try PairedConfigs(label: "advice-device")
        defer { c.remove() }
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--sink", c.root + "/frames",
                                 "--no-announce", "--seconds", "60"], configDir: c.receiver, log: c.log("rx"))
        defer { rx.signal(SIGTERM); _ = rx.wait(upTo: 10) }
        #expect(rx.line("receiver ") != nil, "\(rx.output)")
        // No such device: the session is up, then the device cannot be opened.
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--device", c.root + "/no-such-event0"],
                                configDir: c.sender, log: c.log("tx"))
        #expect(tx.wait(upTo: 20) == 1, "\(tx.output)")
        #expect(eventually(5) { rx.output.contains("shuttingDown") }, "rx: \(rx.output)\ntx: \(tx.output)")
        #expect(!rx.output.contains("protocolError") && !rx.output.contains("protocol error"), "\(rx.output)")
    }

    @Test("3: send --type says what it typed and counts it")
    func typeConfirms() throws {
        let c = try PairedConfigs(label: "advice-type", typing: true)
        defer { c.remove() }
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--sink", c.root + "/frames", "--keymap", "us",
                                 "--no-announce", "--seconds", "60"], configDir: c.receiver, log: c.log("rx"))
        defer { rx.signal(SIGTERM); _ = rx.wait(upTo: 10) }
        #expect(rx.line("receiver ") != nil, "\(rx.output)")
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--seconds", "0", "--type", "hello"],
                                configDir: c.sender, log: c.log("tx"))
        #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")
        #expect(tx.output.contains("typed 5 characters on the receiver"), "\(tx.output)")
        let sent = try #require(tx.output.split(separator: "\n").first { $0.hasPrefix("sent: ") }.map(String.init))
        #expect(CLIProcess.field("text_chars", in: sent) == 5, "\(sent)")
    }

    @Test("4: pair on a port in use ends with status 1 (not 2, a usage mistake) and says how to pair through the receiver")
    func pairBusyPort() throws {
        let c = try PairedConfigs(label: "advice-pair")
        defer { c.remove() }
        let taken = try TCPListener(host: "127.0.0.1", port: 0)
        defer { taken.close() }
        let p = try CLIProcess(["pair", "--listen", "127.0.0.1:\(taken.port)"], configDir: c.receiver, log: c.log("pair"))
        #expect(p.wait(upTo: 20) == 1, "\(p.output)")
        #expect(p.output.contains("pair = true") && p.output.contains("remolo receive --pair")
                && p.output.contains("--listen"), "\(p.output)")
    }

    @Test("5: receive --pair prints the sender's command, ready to copy, and it pairs")
    func receivePairPrintsCommand() throws {
        let c = try PairedConfigs(label: "advice-rxpair", paired: false)
        defer { c.remove() }
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--sink", c.root + "/frames", "--pair",
                                 "--no-announce", "--seconds", "60"], configDir: c.receiver, log: c.log("rx"))
        defer { rx.signal(SIGTERM); _ = rx.wait(upTo: 10) }
        let line = try #require(rx.line("on the sender: "), "\(rx.output)")
        let command = line.dropFirst("on the sender: ".count).split(separator: " ").map(String.init)
        #expect(command.first == "remolo" && command.contains("--to") && command.contains("127.0.0.1:\(port)"), "\(line)")
        // Run as printed (without the program's name).
        let tx = try CLIProcess(Array(command.dropFirst()), configDir: c.sender, log: c.log("tx"))
        #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")
        #expect(try PeerList.load(from: c.receiver + "/" + PeerList.authorizedSendersFile).entries.count == 1)
    }

    @Test("6: each status the manual's EXIT STATUS lists is one a command returns")
    func exitStatuses() throws {
        let c = try PairedConfigs(label: "advice-status")
        defer { c.remove() }
        func status(_ args: [String]) throws -> Int32? {
            try CLIProcess(args, configDir: c.receiver, log: c.log("status")).wait(upTo: 20)
        }
        var seen: Set<Int32> = []
        if let s = try status(["version"]) { seen.insert(s) }
        #expect(seen == [0])
        let port = try freePort()
        #expect(try status(["send", "--to", "127.0.0.1:\(port)", "--seconds", "0"]) == 1)   // nobody listens
        #expect(try status(["receive", "--no-such-option"]) == 2)
        seen.formUnion([1, 2])

        // The manual's list, as man renders it.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("remolo-status-man-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let install = try CLIProcess(["install", "--system", "--root", dir], configDir: c.receiver, log: c.log("install"))
        #expect(install.wait(upTo: 30) == 0, "\(install.output)")
        let groff = ["/usr/bin/groff", "/bin/groff"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let groff else { print("skip: exitStatuses' manual half: no groff"); return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: groff)
        p.arguments = ["-man", "-Tutf8", "-P-cbou", dir + ServiceFiles.manPagePath]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let section = try #require(text.components(separatedBy: "\nEXIT STATUS\n").dropFirst().first?
            .components(separatedBy: "\nENVIRONMENT\n").first, "no EXIT STATUS section")
        // Each status is an item's tag: at the section's indentation, the
        // description beside it or below.
        let listed = Set(section.split(separator: "\n").compactMap { line -> Int32? in
            guard line.hasPrefix("       "), !line.hasPrefix("        ") else { return nil }
            return line.split(separator: " ").first.flatMap { Int32($0) }
        })
        #expect(listed == seen, "the manual lists \(listed.sorted()), the commands returned \(seen.sorted())")
    }
}
