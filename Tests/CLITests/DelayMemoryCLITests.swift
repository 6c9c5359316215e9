import Foundation
import RemoloPlayout
import RemoloSession
import RemoloSystem
import RemoloTestSupport
import Testing

/// `remolo receive` as a user runs it, one process per session: what the first session learns of its network is in the config
/// directory for the next, which starts at the delay it reads
/// (docs/playout.md, "A returning sender").
@Suite(.serialized) struct DelayMemoryCLITests {
    /// One receiver process with one sender session of `seconds`; the
    /// receiver's output once both ended.
    static func session(_ c: PairedConfigs, _ n: Int, delay: [String] = [], seconds: String = "1") throws -> String {
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--sink", "/dev/null", "--no-announce",
                                 "--stats-json", "--seconds", "30"] + delay,
                                configDir: c.receiver, log: c.log("rx\(n)"))
        defer { rx.signal(SIGKILL) }
        _ = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "circle", "--seconds", seconds],
                                configDir: c.sender, log: c.log("tx\(n)"))
        #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")
        #expect(eventually(5) { rx.output.contains(" ended: ") }, "\(rx.output)")
        rx.signal(SIGINT)
        #expect(rx.wait(upTo: 10) == 0, "\(rx.output)")
        return rx.output
    }

    /// The last `"delay_us":N` the receiver printed.
    static func lastDelayUs(_ output: String) -> Int? {
        guard let r = output.range(of: "\"delay_us\":", options: .backwards) else { return nil }
        return Int(output[r.upperBound...].prefix { $0.isNumber })
    }

    @Test("1: the first session leaves its memory in delay-memory/, keyed by sender and network; the second starts at the delay it reads")
    func secondSessionStartsAtHeldDelay() throws {
        let c = try PairedConfigs(label: "delay-memory")
        defer { c.remove() }
        let sender = try Identity.loadOrCreate(in: ConfigDirectory(path: c.sender)).publicKey
        let file = c.receiver + "/delay-memory/" + sender.fingerprint + "@127.0.0.0_24"
        let first = try Self.session(c, 1)
        #expect(!first.contains("starts at"), "a first session starts cold: \(first)")
        let left = try DelayRecall(data: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        #expect(left.moved > 0, "moved \(left.moved)")
        // As if many sessions had run on a network where every tenth packet
        // came 30 ms late: the file as the receiver writes it (a 120 Hz
        // packet weighs 260).
        var seeded = DelayRecall()
        seeded.moved = 260 * 9_000 + left.moved
        seeded.bins[0] = 260 * 8_100
        seeded.bins[30] = 260 * 900
        try Data(seeded.data).write(to: URL(fileURLWithPath: file))
        let held = seeded.delayUs(permille: PlayoutConfig.chooser.recallPermille)
        #expect(held == 30_000)
        let second = try Self.session(c, 2)
        #expect(second.contains("on 127.0.0.0/24: starts at 30 ms"), "\(second)")
        #expect(Self.lastDelayUs(second) == 30_000, "the loop held it: \(second)")
        let after = try DelayRecall(data: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        #expect(after.moved > seeded.moved, "\(after.moved) after \(seeded.moved)")
        // --delay chooser reads and keeps the same memory.
        let third = try Self.session(c, 3, delay: ["--delay", "chooser"], seconds: "0.5")
        #expect(third.contains("on 127.0.0.0/24: starts at 30 ms"), "\(third)")
        #expect(Self.lastDelayUs(third) == 30_000, "\(third)")
        let last = try DelayRecall(data: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        #expect(last.moved > after.moved)
    }

    @Test("2: --delay takes default, window or chooser")
    func badValue() throws {
        let c = try PairedConfigs(label: "delay-bad")
        defer { c.remove() }
        let rx = try CLIProcess(["receive", "--delay", "fast", "--sink", "/dev/null"], configDir: c.receiver, log: c.log("rx"))
        #expect(rx.wait(upTo: 10) == 2, "\(rx.output)")
        #expect(rx.output.contains("--delay takes default, window or chooser, not 'fast'"), "\(rx.output)")
    }
}
