import Foundation
import RemoloPlayout
import RemoloSession
import RemoloSystem
import RemoloTestSupport
import Testing

/// The commands as a user runs them, each its own process: what one process
/// learns (a wrong pairing code) must hold for the next, and a sender must
/// notice when its receiver goes away.
@Suite(.serialized) struct SessionLifetimeCLITests {
    /// A pairing code of the right form that is not the one issued.
    static func wrong(_ code: String) -> String {
        let first = code.first == "0" ? "1" : "0"
        return first + code.dropFirst()
    }

    @Test("1: a wrong code ends `remolo pair` at once and locks out new codes in other processes, doubling")
    func lockoutAcrossProcesses() throws {
        let c = try PairedConfigs(label: "lockout", paired: false)
        defer { c.remove() }
        let port = try freePort()
        var lockouts: [Int] = []
        for round in 1...2 {
            let pair = try CLIProcess(["pair", "--listen", "127.0.0.1:\(port)"], configDir: c.receiver,
                                      log: c.log("pair\(round)"))
            let codeLine = try #require(pair.line("pairing code: "), "pair did not issue a code: \(pair.output)")
            let code = String(codeLine.dropFirst("pairing code: ".count))
            let guess = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--pair", Self.wrong(code), "--seconds", "0"],
                                       configDir: c.sender, log: c.log("guess\(round)"))
            #expect(guess.wait(upTo: 10) == 1, "the wrong guess must fail: \(guess.output)")
            // `remolo pair` ends at once, saying why, instead of waiting out its timeout.
            #expect(pair.wait(upTo: 3) == 1, "pair must end when its code is burned: \(pair.output)")
            #expect(pair.output.contains("burned"), "\(pair.output)")
            let burnedAt = Date()
            // A new `remolo pair` within the lockout is refused with the time left.
            let early = try CLIProcess(["pair", "--listen", "127.0.0.1:\(port)"], configDir: c.receiver,
                                       log: c.log("early\(round)"))
            #expect(early.wait(upTo: 5) == 1, "a code was issued inside the lockout: \(early.output)")
            #expect(early.output.contains("locked out for another"), "\(early.output)")
            #expect(!early.output.contains("pairing code: "), "\(early.output)")
            let secs = early.output.split(separator: " ").compactMap { Int($0) }.first ?? -1
            lockouts.append(secs)
            // Wait the lockout out (2 s, then 4 s) before the next round.
            let lock = Double(2 << (round - 1))
            let left = lock - Date().timeIntervalSince(burnedAt) + 0.3
            if left > 0 { usleep(UInt32(left * 1e6)) }
        }
        // The lockout doubled: 2 s after the first wrong code, 4 s after the second.
        #expect(lockouts.count == 2 && lockouts[0] <= 2 && lockouts[0] >= 1 && lockouts[1] <= 4 && lockouts[1] >= 3,
                "lockouts \(lockouts)")
        // After it, a code is issued and the right one pairs; the count resets.
        let pair = try CLIProcess(["pair", "--listen", "127.0.0.1:\(port)"], configDir: c.receiver, log: c.log("pair3"))
        let codeLine = try #require(pair.line("pairing code: "), "no code after the lockout: \(pair.output)")
        let code = String(codeLine.dropFirst("pairing code: ".count))
        let good = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--pair", code, "--seconds", "0"],
                                  configDir: c.sender, log: c.log("good"))
        #expect(good.wait(upTo: 10) == 0, "\(good.output)")
        #expect(pair.wait(upTo: 5) == 0, "\(pair.output)")
        let file = try String(contentsOfFile: c.receiver + "/pairing-lockout", encoding: .utf8)
        #expect(file.hasPrefix("failures 0\n"), "after a success the failures reset: \(file)")
    }

    @Test("2: a frozen receiver (no pong) is reported within the ping interval plus the margin; exit 1")
    func frozenReceiverIsNoticed() throws {
        let c = try PairedConfigs(label: "frozen")
        defer { c.remove() }
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "127.0.0.1:\(port)", "--sink", "/dev/null", "--seconds", "60"],
                                configDir: c.receiver, log: c.log("rx"))
        defer { rx.signal(SIGCONT); rx.signal(SIGKILL) }
        _ = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
        // --no-redundancy: no hello, so the session is established once the
        // receiver says "session" (a receiver frozen before it answers a
        // hello fails the sender's connect instead: a different path).
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "idle", "--seconds", "40", "--no-redundancy"],
                                configDir: c.sender, log: c.log("tx"))
        #expect(eventually(10) { rx.output.contains("session ") }, "\(rx.output)")
        rx.signal(SIGSTOP)
        let frozen = Date()
        let limits = SessionLimits()
        let status = tx.wait(upTo: limits.keepaliveInterval + limits.answerMargin + 5)
        let took = Date().timeIntervalSince(frozen)
        #expect(status == 1, "send must fail: \(tx.output)")
        #expect(took >= limits.answerMargin && took <= limits.keepaliveInterval + limits.answerMargin + 2,
                "noticed after \(took) s")
        #expect(tx.output.contains("has not answered"), "\(tx.output)")
        let sent = try #require(tx.line("sent: "), "\(tx.output)")
        #expect(CLIProcess.field("sessions_lost", in: sent) == 1, "\(sent)")
    }

    @Test("3: receiver killed mid-run: without --reconnect the sender fails at once; with it, it resumes on a new receiver")
    func killedReceiver() throws {
        let c = try PairedConfigs(label: "killed")
        defer { c.remove() }
        let port = try freePort()
        let rxArgs = ["receive", "--listen", "127.0.0.1:\(port)", "--sink", "/dev/null", "--seconds", "60"]
        // Without --reconnect: exit 1, the session's loss reported.
        do {
            let rx = try CLIProcess(rxArgs, configDir: c.receiver, log: c.log("rx0"))
            _ = try #require(rx.line("receiver "), "\(rx.output)")
            let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "circle", "--seconds", "20"],
                                    configDir: c.sender, log: c.log("tx0"))
            #expect(eventually(10) { rx.output.contains("session ") }, "\(rx.output)")
            // Mid-run: past the hello that follows key confirmation (a
            // receiver killed before answering it fails the connect instead).
            usleep(1_000_000)
            rx.signal(SIGKILL)
            _ = rx.wait()
            #expect(tx.wait(upTo: SessionLimits().keepaliveInterval + SessionLimits().answerMargin) == 1, "\(tx.output)")
            #expect(tx.output.contains("session lost"), "\(tx.output)")
        }
        // With --reconnect: a new receiver on the same port takes over.
        let a = try CLIProcess(rxArgs, configDir: c.receiver, log: c.log("rxA"))
        _ = try #require(a.line("receiver "), "\(a.output)")
        let tx = try CLIProcess(["send", "--to", "127.0.0.1:\(port)", "--gesture", "circle", "--seconds", "6", "--reconnect"],
                                configDir: c.sender, log: c.log("tx"))
        #expect(eventually(10) { a.output.contains("session ") }, "\(a.output)")
        usleep(1_000_000)
        a.signal(SIGKILL)
        _ = a.wait()
        #expect(eventually(5) { tx.output.contains("session lost") }, "\(tx.output)")
        usleep(300_000)
        let b = try CLIProcess(rxArgs, configDir: c.receiver, log: c.log("rxB"))
        defer { b.signal(SIGKILL) }
        _ = try #require(b.line("receiver "), "\(b.output)")
        #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")
        #expect(tx.output.contains("reconnected"), "\(tx.output)")
        let sent = try #require(tx.line("sent: "), "\(tx.output)")
        #expect(CLIProcess.field("reconnects", in: sent) == 1, "\(sent)")
        #expect(CLIProcess.field("sessions_lost", in: sent) == 1, "\(sent)")
        #expect((CLIProcess.field("frames_dropped", in: sent) ?? 0) > 0, "\(sent)")
        b.signal(SIGTERM)
        #expect(b.wait(upTo: 10) == 0, "\(b.output)")
        let final = try #require(b.line("final: "), "\(b.output)")
        #expect((CLIProcess.field("opened", in: final) ?? 0) > 60, "motion resumed on the new receiver: \(final)")
    }
}

/// `remolo demo`, the README's first command: the whole product on one
/// machine, without uinput.
@Suite struct DemoCLITests {
    @Test("1: the demo pairs, relays, plays into the recording sink, scores both playouts and exits 0")
    func demoRunsEndToEnd() throws {
        let c = try PairedConfigs(label: "demo", paired: false)
        defer { c.remove() }
        let svg = c.root + "/demo.svg"
        let demo = try CLIProcess(["demo", "--seconds", "2", "--svg", svg, "--no-uinput", "--scenario", "S3"],
                                  configDir: c.receiver, log: c.log("demo"))
        #expect(demo.wait(upTo: 60) == 0, "\(demo.output)")
        let out = demo.output
        #expect(out.contains("output: recording sink"), "\(out)")
        #expect(out.contains("demo S3   default") && out.contains("demo S3   arrival"), "\(out)")
        let svgText = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(svgText.hasPrefix("<svg") || svgText.contains("<svg"), "an SVG was written")
        let opened = out.split(separator: "\n").first { $0.hasPrefix("sent ") }.map(String.init) ?? ""
        #expect(opened.contains("relay lost"), "\(opened)")
    }
}

@Suite struct SimulateCLITests {
    @Test("1: --json: one object per row, snake_case names, every score")
    func jsonRows() throws {
        let c = try PairedConfigs(label: "simjson", paired: false)
        defer { c.remove() }
        let p = try CLIProcess(["simulate", "--scenario", "S1", "--policy", "default,arrival", "--seeds", "1",
                                "--duration", "2", "--json"], configDir: c.receiver, log: c.log("sim"))
        #expect(p.wait(upTo: 60) == 0, "\(p.output)")
        let lines = p.output.split(separator: "\n")
        #expect(lines.count == 2, "\(p.output)")
        for l in lines {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any])
            for k in ["scenario", "policy", "latency_ms_p50", "latency_ms_p95", "late_pct", "starved_pct", "lost_pct",
                      "jitter_ratio", "jitter_px_p99", "stutter_pct_mean", "stutter_pct_max", "max_error_px", "max_jump_ratio"] {
                #expect(o[k] != nil, "no \(k) in \(l)")
            }
        }
    }

    @Test("2: --events reads a trace: its holds, and with --policy where each policy's error falls")
    func events() throws {
        let c = try PairedConfigs(label: "simevents", paired: false)
        defer { c.remove() }
        let bare = try CLIProcess(["simulate", "--events"], configDir: c.receiver, log: c.log("bare"))
        #expect(bare.wait(upTo: 60) != 0)
        #expect(bare.output.contains("--events reads a recorded trace: add --trace FILE"), "\(bare.output)")

        let trace = c.receiver + "/S4.csv"
        let w = try CLIProcess(["simulate", "--scenario", "S4", "--seed", "1", "--policy", "default", "--write-trace", trace],
                               configDir: c.receiver, log: c.log("write"))
        #expect(w.wait(upTo: 120) == 0, "\(w.output)")
        let p = try CLIProcess(["simulate", "--trace", trace, "--events", "--policy", "default,fixed:5,fixed:60"],
                               configDir: c.receiver, log: c.log("events"))
        #expect(p.wait(upTo: 120) == 0, "\(p.output)")
        let out = p.output
        #expect(out.contains("events (datagrams later than 50 ms at no delay"), "\(out)")
        #expect(out.contains("default: p95 ") && out.contains("fixed:60: p95 "), "\(out)")
        #expect(out.contains("knowing when each hold comes, at no cost: "), "\(out)")
    }
}
