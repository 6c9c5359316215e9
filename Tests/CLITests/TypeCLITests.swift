import Foundation
import RemoloPlayout
import RemoloSession
import RemoloSystem
import RemoloTestSupport
import Testing

/// `remolo send --type` against `remolo receive --keymap`, each its own
/// process: the right to type is asked for, refused, granted with `remolo
/// peers`, and the text arrives as the receiver's layout types it.
@Suite(.serialized) struct TypeCLITests {
    @Test("1: send --type is refused until the sender may type, then typed in the receiver's layout")
    func typeInLayout() throws {
        let c = try PairedConfigs(label: "type")
        defer { c.remove() }
        let port = try freePort()
        let sink = c.root + "/frames"
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--sink", sink, "--keymap", "de",
                                 "--no-announce", "--stats-json", "--seconds", "60"], configDir: c.receiver, log: c.log("rx"))
        defer { rx.signal(SIGTERM); _ = rx.wait(upTo: 10) }
        #expect(rx.line("keyboard layout for typed text: de (--keymap)") != nil, "\(rx.output)")
        #expect(rx.line("receiver ") != nil, "\(rx.output)")

        // Paired before typing existed (no rights entry): may point, not type.
        let refused = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--seconds", "0", "--type", "zy@"],
                                     configDir: c.sender, log: c.log("refused"))
        #expect(refused.wait(upTo: 15) == 1, "\(refused.output)")
        #expect(refused.output.contains("may not type"), "\(refused.output)")

        let id = try CLIProcess(["identity"], configDir: c.sender, log: c.log("id"))
        #expect(id.wait(upTo: 10) == 0)
        let fp = try #require(id.output.split(whereSeparator: \.isWhitespace).first { $0.count == 39 && $0.contains("-") })
        let allow = try CLIProcess(["peers", "allow-keyboard", String(fp)], configDir: c.receiver, log: c.log("allow"))
        #expect(allow.wait(upTo: 10) == 0, "\(allow.output)")

        let typed = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--seconds", "0", "--type", "zy@\\n"],
                                   configDir: c.sender, log: c.log("typed"))
        #expect(typed.wait(upTo: 15) == 0, "\(typed.output)")
        rx.signal(SIGTERM)
        #expect(rx.wait(upTo: 10) == 0, "\(rx.output)")
        // In de, z and y trade places (z is KEY_Y) and @ is AltGr+q; \\n is Enter.
        let keys = try Self.keys(sink)
        #expect(keys == [(21, 1), (21, 0), (44, 1), (44, 0), (100, 1), (16, 1), (16, 0), (100, 0), (28, 1), (28, 0)].map(Key.init),
                "\(keys)")
        #expect(rx.output.contains("\"text_messages\":1"), "\(rx.output)")
    }

    struct Key: Equatable, CustomStringConvertible {
        var code: UInt16, value: Int32
        init(_ t: (UInt16, Int32)) { (code, value) = t }
        var description: String { "\(code)\(value == 1 ? "+" : "-")" }
    }

    /// The keyboard keys in a sink of struct input_event records (24 bytes).
    static func keys(_ path: String) throws -> [Key] {
        let d = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        return stride(from: 0, through: d.count - 24, by: 24).compactMap { off in
            d.withUnsafeBytes { r in
                let type = r.loadUnaligned(fromByteOffset: off + 16, as: UInt16.self)
                let code = r.loadUnaligned(fromByteOffset: off + 18, as: UInt16.self)
                let value = r.loadUnaligned(fromByteOffset: off + 20, as: Int32.self)
                return type == 1 && code < 0x100 ? Key((code, value)) : nil
            }
        }
    }
}
