import Testing
import Foundation
@testable import RemoloDiscovery

/// The `_remolo._udp` TXT record (docs/protocol.md, "Discovery").
@Suite struct DiscoveryRecordTests {
    let fp = "7Q2M-9XKD-AAAA-BBBB-CCCC-DDDD-EEEE-FFFF"

    @Test func stringsInOrder() {
        let t = ServiceTXT(fingerprint: fp, protocolVersion: 1)
        #expect(t.strings == ["txtvers=1", "fp=\(fp)", "proto=1"])
        #expect(RemoloService.type == "_remolo._udp")
        #expect(t.strings.allSatisfy { $0.utf8.count <= 255 }, "RFC 6763 6.1: at most 255 bytes each")
    }

    @Test func roundTrip() {
        let t = ServiceTXT(fingerprint: fp, protocolVersion: 1)
        #expect(ServiceTXT(strings: t.strings.map { Array($0.utf8) }) == t)
    }

    /// RFC 6763 6.4: keys are case-insensitive, only the first of a repeated
    /// key counts, a key without '=' is a boolean; unknown keys are ignored.
    @Test func readsLikeRFC6763() {
        let t = ServiceTXT(strings: ["TXTVERS=1", "Fp=\(fp)", "fp=OTHER", "proto=2", "future=x", "flag", "=novalue"]
            .map { Array($0.utf8) })
        #expect(t.txtVersion == 1)
        #expect(t.fingerprint == fp)
        #expect(t.protocolVersion == 2)
        let empty = ServiceTXT(strings: [])
        #expect(empty.fingerprint == nil && empty.protocolVersion == nil)
    }

    @Test func fingerprintsMatchIgnoringCaseAndHyphens() {
        let t = ServiceTXT(fingerprint: fp, protocolVersion: 1)
        #expect(t.matches(fingerprint: fp.lowercased()))
        #expect(t.matches(fingerprint: fp.replacingOccurrences(of: "-", with: "")))
        #expect(!t.matches(fingerprint: "7Q2M-9XKD-AAAA-BBBB-CCCC-DDDD-EEEE-FFF0"))
        let r = DiscoveredReceiver(name: "Remolo on box", host: "fe80::1%wlan0", hostName: "box.local", port: 7420,
                                   txt: t, interface: "wlan0", isIPv6: true)
        #expect(r.address == "[fe80::1%wlan0]:7420")
        #expect(r.matches(fingerprint: fp))
    }

    /// Without a daemon (no system bus here, or one without avahi-daemon),
    /// browsing is a note to pass on, not a crash or a hang.
    @Test func browsingWithoutADaemonSaysSo() throws {
        let t0 = Date()
        do {
            let found = try Browser.browse(seconds: 1)
            // A machine with avahi-daemon running: whatever it lists is fine.
            _ = found
        } catch {
            #expect(error.daemonMissing, "\(error)")
            #expect(error.description.contains("avahi-daemon"))
        }
        #expect(Date().timeIntervalSince(t0) < 10)
    }
}
