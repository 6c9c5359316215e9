import Foundation
import RemoloTestSupport
import Testing

/// `remolo send --keyboard` is refused, with what to add, unless it comes
/// with --device and --grab (checked before any connection is tried).
@Suite struct KeyboardOptionCLITests {
    struct Case: CustomTestStringConvertible, Sendable {
        var id: Int
        var args: [String]
        var says: String
        var testDescription: String { "\(id). send \(args.joined(separator: " "))" }
    }

    static let cases: [Case] = [
        Case(id: 1, args: ["--keyboard", "auto"], says: "--keyboard needs --device PATH|auto and --grab"),
        Case(id: 2, args: ["--device", "auto", "--keyboard", "auto"], says: "--keyboard needs --device PATH|auto and --grab"),
        Case(id: 3, args: ["--grab", "--keyboard", "/dev/input/event0"], says: "--grab needs --device PATH|auto"),
        Case(id: 4, args: ["--device", "auto", "--grab", "--keyboard"], says: "--keyboard needs a value"),
    ]

    @Test(arguments: cases)
    func refused(_ c: Case) throws {
        let cfg = try PairedConfigs(label: "kbopt")
        defer { cfg.remove() }
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:9"] + c.args, configDir: cfg.sender, log: cfg.log("tx"))
        #expect(tx.wait(upTo: 10) == 2, "\(tx.output)")
        #expect(tx.output.contains(c.says), "\(tx.output)")
    }

    @Test("5. --help lists --keyboard")
    func help() throws {
        let cfg = try PairedConfigs(label: "kbhelp")
        defer { cfg.remove() }
        let tx = try CLIProcess(["send", "--help"], configDir: cfg.sender, log: cfg.log("tx"))
        #expect(tx.wait(upTo: 10) == 0)
        #expect(tx.output.contains("--keyboard  forward a keyboard too"), "\(tx.output)")
    }
}
