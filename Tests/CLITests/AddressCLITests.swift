import Foundation
import RemoloSystem
import RemoloTestSupport
import Testing

/// Addresses as typed (`[IPV6]:PORT`, zones, a host alone), the dual-stack
/// default listener, and discovery without an Avahi daemon: a note, never a
/// failure of the receiver. The VM's LAN tests (two namespaces, avahi-daemon,
/// link-local only) cover the rest.
@Suite(.serialized) struct AddressCLITests {
    /// A system bus that is not there: discovery then has no daemon to ask,
    /// whatever this machine runs.
    static let noBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/remolo-test-bus"]

    @Test("1: a malformed address says what was expected, with an example", arguments: [
        ("[fe80::1", "lacks the closing ']'"),
        ("[::1]7420", "takes [IPV6]:PORT"),
        ("fe80::1%", "empty zone"),
        ("[fe80::1%]:7420", "empty zone"),
        (":7420x", "takes HOST:PORT"),
    ])
    func malformed(_ typed: String, _ says: String) throws {
        let c = try PairedConfigs(label: "addr")
        defer { c.remove() }
        let tx = try CLIProcess(["send", "--to", typed, "--seconds", "0"], configDir: c.sender, log: c.log("tx"))
        #expect(tx.wait(upTo: 10) == 2, "\(tx.output)")
        #expect(tx.output.contains(says) && tx.output.contains("fe80::1%wlan0"), "\(tx.output)")
    }

    /// The default listener is one dual-stack socket per protocol: an IPv4
    /// sender reaches `[::]` through a v4-mapped address, an IPv6 one
    /// directly; with no bus the receiver notes once that it is not
    /// announced and serves as before.
    @Test("2: receive on [::] serves IPv4 and IPv6 senders; without avahi-daemon one note")
    func dualStack() throws {
        let c = try PairedConfigs(label: "dual")
        defer { c.remove() }
        let port = try freePort()
        let rx = try CLIProcess(["receive", "--listen", "[::]:\(port)", "--sink", c.root + "/frames", "--seconds", "30"],
                                configDir: c.receiver, log: c.log("rx"), environment: Self.noBus)
        defer { if rx.process.isRunning { rx.process.terminate() }; _ = rx.wait() }
        let listening = try #require(rx.line("receiver "), "\(rx.output)")
        #expect(listening.contains("listening on [::]:\(port)"), "\(listening)")
        #expect(eventually(10) { rx.output.contains("not announced") }, "\(rx.output)")
        let notes = rx.output.split(separator: "\n").filter { $0.contains("not announced") }
        #expect(notes.count == 1 && notes[0].contains("avahi-daemon") && notes[0].contains("--to HOST:PORT"), "\(rx.output)")

        var targets = ["127.0.0.1:\(port)"]
        if Socket.ipv6Available { targets.append("[::1]:\(port)") }
        for (i, to) in targets.enumerated() {
            let tx = try CLIProcess(["send", "--to", to, "--gesture", "swipe", "--seconds", "0.5"],
                                    configDir: c.sender, log: c.log("tx\(i)"))
            #expect(tx.wait(upTo: 20) == 0, "send --to \(to): \(tx.output)")
        }
    }

    @Test("3: discover without avahi-daemon says so and lists nothing (exit 0)")
    func discoverWithoutDaemon() throws {
        let c = try PairedConfigs(label: "disc")
        defer { c.remove() }
        let d = try CLIProcess(["discover", "--seconds", "1"], configDir: c.sender, log: c.log("discover"),
                               environment: Self.noBus)
        #expect(d.wait(upTo: 20) == 0, "\(d.output)")
        #expect(d.output.contains("note:") && d.output.contains("avahi-daemon") && d.output.contains("nothing to list"),
                "\(d.output)")
    }

    @Test("4: send without --to and no daemon says to give --to")
    func sendWithoutTo() throws {
        let c = try PairedConfigs(label: "noto")
        defer { c.remove() }
        let tx = try CLIProcess(["send", "--seconds", "0"], configDir: c.sender, log: c.log("tx"), environment: Self.noBus)
        #expect(tx.wait(upTo: 20) == 1, "\(tx.output)")
        #expect(tx.output.contains("avahi-daemon") && tx.output.contains("--to HOST:PORT"), "\(tx.output)")
    }
}
