import CEvdev
import Foundation
import Synchronization
import Testing
import RemoloTestSupport

// Keys play in sender time with the motion around them, over a delayed,
// jittered link: a `remolo send` forwarding a mouse and a keyboard in one
// network namespace, `remolo receive` in another, netem between them. The
// motion goes as UDP datagrams, the key over the TCP control channel: two
// paths, one playout clock.

extension VMSuite.EndToEnd {
    @Test func motionThenKeyThenMotionPlaysInSenderOrder() throws {
        let v = try VethPair(prefix: "rmko")
        defer { v.close() }
        // Both directions: the sender's datagrams and control frames, and
        // the receiver's answers.
        for (ns, dev) in [(v.a, v.dev), (v.b, "rmlvb")] {
            try must(Netns.tc, "-n", ns, "qdisc", "add", "dev", dev, "root", "netem", "delay", "30ms", "10ms")
        }
        let c = try PairedConfigs(label: "keyorder", typing: true)
        defer { c.remove() }
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "10.77.0.2:\(port)", "--no-announce", "--output", "uinput",
                                 "--seconds", "120", "--stats-json"], configDir: c.receiver, log: c.log("rx"),
                                prefix: [Netns.ip, "netns", "exec", v.b])
        defer { rx.signal(SIGTERM); _ = rx.wait(upTo: 20) }
        _ = try #require(rx.line("receiver "), "receive did not start: \(rx.output)")
        let pointer = try EvdevReader(try #require(inputNode(named: "Remolo pointer")))
        let keyboard = try EvdevReader(try #require(inputNode(named: "Remolo keyboard")))
        try pointer.useMonotonicClock()
        try keyboard.useMonotonicClock()

        let mouse = try VirtualDevice.mouse(name: "Test mouse order")
        let kb = try VirtualDevice.fullKeyboard(name: "Test keyboard order")
        let tx = try CLIProcess(["send", "--to", "10.77.0.2:\(port)", "--device", mouse.node, "--grab", "--keyboard", kb.node],
                                configDir: c.sender, log: c.log("tx"), prefix: [Netns.ip, "netns", "exec", v.a])
        defer { if tx.process.isRunning { tx.signal(SIGKILL) }; _ = tx.wait() }
        try #require(eventually(30) { tx.output.contains("(Test keyboard order) grabbed") }, "\(tx.output)")

        // Right for 160 ms, A pressed 100 ms later and held 40 ms, then
        // down for 160 ms another 100 ms later.
        let done = Mutex(false)
        // When the script wrote each step (CLOCK_MONOTONIC, the clock the
        // readers stamp with): last step right, press, release, first step
        // down. The failure messages give each path's latency from these.
        let wrote = Mutex<[String: UInt64]>([:])
        @Sendable func nowUs() -> UInt64 {
            var ts = timespec()
            clock_gettime(CLOCK_MONOTONIC, &ts)
            return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
        }
        Thread {
            for _ in 0..<20 { mouse.write(EV_REL, REL_X, 5); mouse.syn(); usleep(8_000) }
            wrote.withLock { $0["lastX"] = nowUs() - 8_000 }
            usleep(100_000)
            wrote.withLock { $0["press"] = nowUs() }
            kb.keys([(KEY_A, 1)], gapUs: 40_000)
            wrote.withLock { $0["release"] = nowUs() }
            kb.keys([(KEY_A, 0)], gapUs: 100_000)
            wrote.withLock { $0["firstY"] = nowUs() }
            for _ in 0..<20 { mouse.write(EV_REL, REL_Y, 5); mouse.syn(); usleep(8_000) }
            usleep(600_000)
            done.withLock { $0 = true }
        }.start()
        let keysRead = Mutex<[TimedEv]>([])
        let keysDone = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let kbReader = keyboard   // read by that thread alone until keysDone
        Thread {
            let k = kbReader.readTimed(stop: { done.withLock { $0 } })
            keysRead.withLock { $0 = k }
            keysDone.signal()
        }.start()
        let moves = pointer.readTimed(stop: { done.withLock { $0 } })
        keysDone.wait()
        tx.signal(SIGINT)
        #expect(tx.wait(upTo: 20) == 0, "\(tx.output)")

        let keys = keysRead.withLock { $0 }.filter { $0.ev.type == UInt16(EV_KEY) }
        #expect(keys.map(\.ev) == [.key(KEY_A, true), .key(KEY_A, false)], "\(keys)")
        let xs = moves.filter { $0.ev.type == UInt16(EV_REL) && $0.ev.code == UInt16(REL_X) }
        let ys = moves.filter { $0.ev.type == UInt16(EV_REL) && $0.ev.code == UInt16(REL_Y) }
        try #require(!xs.isEmpty && !ys.isEmpty && keys.count == 2, "x \(xs.count) y \(ys.count) keys \(keys.count); rx: \(rx.output)")
        let w = wrote.withLock { $0 }
        func lag(_ played: UInt64, _ step: String) -> String {
            guard let t = w[step] else { return "\(step) ?" }
            return "\(step) +\(Int64(played) - Int64(t)) us"
        }
        let lags = [lag(xs.last!.tUs, "lastX"), lag(keys[0].tUs, "press"), lag(keys[1].tUs, "release"),
                    lag(ys.first!.tUs, "firstY")].joined(separator: ", ")
        FileHandle.standardError.write(Data("key order: played after written: \(lags)\n".utf8))
        // Played in the order the sender saw it: every step right before
        // the press, the press before the release, the release before
        // every step down.
        #expect(xs.last!.tUs < keys[0].tUs, "last REL_X at \(xs.last!.tUs), A pressed at \(keys[0].tUs); played after written: \(lags)")
        #expect(keys[0].tUs < keys[1].tUs)
        // The key frames reach the receiver's loop well after their slots
        // (netem, the sender, and a session thread that takes 20-65 ms of
        // the emulated CPU per key message), often after the first steps
        // down are queued. A late key goes after the motion sent before it
        // only (event_at in playout.c), not after those steps: the release
        // comes first whenever it reaches the loop before the first step
        // down begins to play. Known: on a loaded host the guest is starved
        // (boot 12-16 s, most ticks missed, the delay at its 60 ms cap) and
        // the key path takes 170-290 ms against the motion's 60-100 ms: the
        // release then reaches the loop after that step has played (a late
        // key plays from its arrival) and no placement can put it first
        // (seen: release +168 ms and +285 ms after written, the first step
        // down, written 100 ms after it, +61 ms and +98 ms).
        withKnownIssue("the release can reach the receiver after the first later motion has played", isIntermittent: true) {
            #expect(keys[1].tUs < ys.first!.tUs,
                    "A released at \(keys[1].tUs), first REL_Y at \(ys.first!.tUs), A pressed at \(keys[0].tUs), last REL_X at \(xs.last!.tUs); played after written: \(lags); rx: \(rx.output.suffix(6000))")
        }
    }
}
