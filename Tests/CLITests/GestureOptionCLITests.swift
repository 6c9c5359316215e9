import Foundation
import RemoloSession
import RemoloSystem
import RemoloTestSupport
import Testing

/// `remolo receive`'s gesture options against the running binary: feature
/// bit 3 is granted only where the receiver has somewhere to put fingers
/// (`--touchpad-sink` beside `--sink`; here there is no /dev/uinput) and
/// gestures are not turned off (`--no-gestures` or its config key), and
/// `--stats-json` carries the "gestures" object. The frames themselves are
/// ReceiverTests' (GestureEndToEndTests).
@Suite struct GestureOptionCLITests {
    struct Case: CustomTestStringConvertible, Sendable {
        var id: Int
        var args: [String]
        /// Lines of the receiver's config file.
        var config: [String] = []
        var granted: Bool
        /// What the receiver says at start when it offers none.
        var says: String?
        var testDescription: String { "\(id). receive \((args + config).joined(separator: " "))" }
    }

    static let cases: [Case] = [
        Case(id: 1, args: ["--touchpad-sink"], granted: true),
        Case(id: 2, args: ["--touchpad-sink", "--no-gestures"], granted: false),
        Case(id: 3, args: ["--touchpad-sink"], config: ["no-gestures = true"], granted: false),
        Case(id: 4, args: [], granted: false, says: "gestures: not offered to senders: no touchpad beside this output"),
    ]

    @Test(arguments: cases)
    func granted(_ c: Case) throws {
        let cfg = try PairedConfigs(label: "gest\(c.id)")
        defer { cfg.remove() }
        if !c.config.isEmpty {
            try (c.config.joined(separator: "\n") + "\n").write(toFile: cfg.receiver + "/config", atomically: true, encoding: .utf8)
        }
        let pad = cfg.root + "/touches"
        var args = ["receive", "--listen", "127.0.0.1:0", "--sink", cfg.root + "/frames", "--stats-json",
                    "--stats", "0.2", "--no-announce", "--seconds", "20"]
        args += c.args.flatMap { $0 == "--touchpad-sink" ? [$0, pad] : [$0] }
        let rx = try CLIProcess(args, configDir: cfg.receiver, log: cfg.log("rx"))
        defer { rx.signal(SIGINT); _ = rx.wait() }
        let listening = try #require(rx.line("receiver "), "\(rx.output)")
        let port = try #require(UInt16(listening.split(separator: " ")[4].split(separator: ":").last ?? ""))
        if let says = c.says { #expect(eventually(5) { rx.output.contains(says) }, "\(rx.output)") }

        let sender = try Identity.loadOrCreate(in: ConfigDirectory(path: cfg.sender))
        let receiver = try Identity.loadOrCreate(in: ConfigDirectory(path: cfg.receiver)).publicKey
        let ch = try ControlChannel.connect(host: "127.0.0.1", port: port, identity: sender, receiver: receiver)
        defer { ch.close() }
        guard case .answered(let h) = try ch.hello([.gestures]) else { Issue.record("no hello"); return }
        #expect(h.features.contains(.gestures) == c.granted, "\(h.features)")

        // The touchpad is made at the first grant, not before.
        let want = try #require(rx.stats(after: rx.statsLineCount), "\(rx.output)")
        let g = try #require(want["gestures"] as? [String: Any], "\(want)")
        #expect(Set(g.keys) == ["touchpad", "begun", "states", "refused", "timeouts", "blocked", "frames", "write_errors"],
                "\(g.keys)")
        #expect(g["touchpad"] as? Bool == c.granted, "\(g)")
    }

}
