import Foundation
import RemoloTestSupport
import Testing

/// `remolo receive --output`: what it refuses and how it says so. The
/// outputs themselves run in the VM (Tests/VMTests/DesktopOutputTests.swift:
/// a real Xorg, a real uinput pointer).
@Suite(.serialized) struct OutputCLITests {
    struct Case: Sendable, CustomTestStringConvertible {
        let id: Int
        let args: [String]
        let env: [String: String]
        let status: Int32
        let says: [String]
        var testDescription: String { "\(id): \(args.joined(separator: " "))" }
    }

    static let cases: [Case] = [
        Case(id: 1, args: ["--output", "wayland"], env: [:], status: 2, says: ["--output takes uinput, x11, portal, auto"]),
        Case(id: 2, args: ["--output", "portal"], env: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"], status: 1,
             says: ["--output portal: ", "--output uinput"]),
        Case(id: 3, args: ["--output", "x11"], env: ["DISPLAY": ""], status: 1, says: ["DISPLAY is not set", "--output uinput"]),
        Case(id: 4, args: ["--output", "x11"], env: ["DISPLAY": ":97"], status: 1,
             says: ["cannot open the X display ':97'", "XAUTHORITY"]),
        Case(id: 5, args: ["--output", "x11", "--sink", "/dev/null"], env: [:], status: 2, says: ["leave out --output x11"]),
    ]

    @Test(arguments: cases)
    func refused(_ c: Case) throws {
        let cfg = try PairedConfigs(label: "output")
        defer { cfg.remove() }
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:0", "--no-announce", "--seconds", "5"] + c.args,
                                configDir: cfg.receiver, log: cfg.log("rx"), environment: c.env)
        #expect(rx.wait(upTo: 20) == c.status, "\(rx.output)")
        for s in c.says { #expect(rx.output.contains(s), "\(rx.output)") }
    }

    @Test func helpNamesEveryOutput() throws {
        let cfg = try PairedConfigs(label: "output-help")
        defer { cfg.remove() }
        let rx = try CLIProcess(["receive", "--help"], configDir: cfg.receiver, log: cfg.log("rx"))
        #expect(rx.wait(upTo: 20) == 0)
        for k in ["--output", "uinput", "x11", "portal", "auto", "desktop.md"] {
            #expect(rx.output.contains(k), "\(k)")
        }
    }
}
