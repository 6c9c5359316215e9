import Foundation
import RemoloSession
import RemoloSystem
import RemoloTestSupport
import Testing

/// The data channel's signaling against a real `remolo receive --web`
/// (docs/protocol.md, "The data channel"): the feature granted only with
/// the web page on, an offer answered by the running endpoint, the path
/// reported in --stats-json, protocol errors, and what the endpoint held
/// for the session freed when it ends. The browsers' side (ICE, DTLS, SCTP)
/// is Tests/RTC's and Tests/Browser/datachannel's.
@Suite(.serialized) struct DataChannelCLITests {
    // Computed: a stored static would be kept until exit (a leak to LeakSanitizer).
    static var offer: ChannelOffer {
        ChannelOffer(ufrag: "Ab12", password: "abcdefghijklmnopqrstuv", fingerprint: [UInt8](repeating: 0x5A, count: 32))
    }

    /// The bye that ends the session (ControlChannel reports it as an error).
    static func bye(_ ch: ControlChannel) -> ByeReason? {
        for _ in 0..<20 {
            do throws(SessionError) {
                if case .bye(let why) = try ch.receive(timeout: 5) { return why }
            } catch {
                if case .peerSaidBye(let why) = error { return why }
                return nil
            }
        }
        return nil
    }

    /// The rows of docs/cli.md's "Statistics of the data channel".
    static func documentedFields() throws -> Set<String> {
        let page = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/cli.md").path,
            encoding: .utf8)
        let start = try #require(page.range(of: "## Statistics of the data channel"))
        let rest = page[start.upperBound...]
        let body = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        var out = Set<String>()
        for line in body.split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(3)
            if let end = cell.firstIndex(of: "`") { out.insert(String(cell[..<end])) }
        }
        return out
    }

    struct Running {
        let configs: PairedConfigs
        let rx: CLIProcess
        let port: UInt16
        let webPort: UInt16?
        let sender: Identity
        let receiver: PublicKey

        init(_ label: String, web: Bool) throws {
            configs = try PairedConfigs(label: label)
            var args = ["receive", "--listen", "127.0.0.1:0", "--sink", configs.root + "/frames", "--stats-json",
                        "--stats", "0.2", "--no-announce", "--seconds", "20"]
            if web { args += ["--web", "127.0.0.1:0"] }
            rx = try CLIProcess(args, configDir: configs.receiver, log: configs.log("rx"))
            let listening = try #require(rx.line("receiver "), "\(rx.output)")
            port = try #require(UInt16(listening.split(separator: " ")[4].split(separator: ":").last ?? ""))
            if web {
                let page = try #require(rx.line("phone page: "), "\(rx.output)")
                let hostPort = page.components(separatedBy: "https://").last!.split(separator: "/")[0]
                let p = hostPort.split(separator: ":").last!
                webPort = UInt16(p)
                #expect(rx.line("data channel: UDP port \(p) ") != nil, "the endpoint is on the web port's number: \(rx.output)")
            } else {
                webPort = nil
            }
            sender = try Identity.loadOrCreate(in: ConfigDirectory(path: configs.sender))
            receiver = try Identity.loadOrCreate(in: ConfigDirectory(path: configs.receiver)).publicKey
        }

        func connect() throws -> ControlChannel {
            try ControlChannel.connect(host: "127.0.0.1", port: port, identity: sender, receiver: receiver)
        }

        func stats(after n: Int) -> [String: Any]? { rx.stats(after: n) }
        var statsCount: Int { rx.statsLineCount }

        func stop() {
            rx.signal(SIGINT)
            _ = rx.wait()
            configs.remove()
        }
    }

    @Test("1: with --web the feature is granted and an offer is answered by the endpoint on the web port's number")
    func answered() throws {
        let r = try Running("dc1", web: true)
        defer { r.stop() }
        let ch = try r.connect()
        guard case .answered(let h) = try ch.hello([.redundancy, .dataChannel]) else { Issue.record("no hello"); return }
        #expect(h.features == [.redundancy, .dataChannel])
        try ch.send(.channelOffer(Self.offer))
        guard case .channelAnswer(let a) = try ch.receive(timeout: 5) else { Issue.record("no answer"); return }
        #expect(a.status == .ready && a.port == r.webPort)
        #expect(a.ufrag.count == 16 && a.password.count == 24 && a.fingerprint.count == 32)
        #expect(!a.addresses.isEmpty, "host candidates")
        // A second offer replaces the first: new credentials, one peer.
        try ch.send(.channelOffer(Self.offer))
        guard case .channelAnswer(let b) = try ch.receive(timeout: 5) else { Issue.record("no second answer"); return }
        #expect(b.status == .ready && b.ufrag != a.ufrag && b.fingerprint == a.fingerprint)
        try ch.send(.channelPath(ChannelPath(.webSocket, .timedOut)))
        let n = r.statsCount
        let s = try #require(r.stats(after: n + 1))
        let dc = try #require(s["datachannel"] as? [String: Any], "\(s)")
        let sessions = try #require(dc["sessions"] as? [[String: Any]])
        #expect(sessions.count == 1 && sessions[0]["path"] as? String == "websocket"
                && sessions[0]["reason"] as? String == "timed_out" && sessions[0]["channel_state"] as? String == "waiting",
                "\(sessions)")
        let endpoint = try #require(dc["endpoint"] as? [String: Any])
        #expect(endpoint["peers_live"] as? Int == 1, "\(endpoint)")
        // docs/cli.md's table of these fields, held both ways.
        var fields = Set(endpoint.keys.map { "datachannel.endpoint." + $0 })
        fields.formUnion(sessions[0].keys.map { "datachannel.sessions[]." + $0 })
        let documented = try Self.documentedFields()
        for f in fields.subtracting(documented).sorted() { Issue.record("docs/cli.md does not list \(f)") }
        for f in documented.subtracting(fields).sorted() { Issue.record("docs/cli.md lists \(f), which --stats-json lacks") }
        // The session ends: the endpoint forgets it.
        ch.close()
        #expect(eventually(5) {
            let e = (r.stats(after: r.statsCount)?["datachannel"] as? [String: Any])?["endpoint"] as? [String: Any]
            return e?["peers_live"] as? Int == 0 && e?["dtls_live"] as? Int == 0 && e?["sctp_live"] as? Int == 0
        }, "\(r.rx.output.suffix(600))")
    }

    @Test("2: without --web the feature is not granted, and an offer is a protocol error (bye 2)")
    func notGranted() throws {
        let r = try Running("dc2", web: false)
        defer { r.stop() }
        let ch = try r.connect()
        guard case .answered(let h) = try ch.hello([.redundancy, .dataChannel]) else { Issue.record("no hello"); return }
        #expect(h.features == [.redundancy])
        try ch.send(.channelOffer(Self.offer))
        let bye = Self.bye(ch)
        #expect(bye == .protocolError)
        #expect(r.rx.line("session ") != nil)
        #expect(eventually(3) { r.rx.output.contains("without the feature granted") }, "\(r.rx.output)")
    }

    @Test("3: a sender that did not ask for the feature may not signal (bye 2)", arguments: [1, 2])
    func notAsked(_ n: Int) throws {
        let r = try Running("dc3-\(n)", web: true)
        defer { r.stop() }
        let ch = try r.connect()
        if n == 1 {
            guard case .answered(let h) = try ch.hello([.keyboard]) else { Issue.record("no hello"); return }
            #expect(!h.features.contains(.dataChannel))
        }
        // n == 2: no hello at all (the base protocol).
        try ch.send(n == 1 ? .channelOffer(Self.offer) : .channelPath(ChannelPath(.dataChannel, .opened)))
        let bye = Self.bye(ch)
        #expect(bye == .protocolError)
    }
}
