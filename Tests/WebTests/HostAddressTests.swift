import Foundation
import Testing
@testable import RemoloWeb

/// The data channel's host candidates (DataChannelEndpoint.hostAddresses),
/// read without netlink, against what `ip -o addr` (iproute2, netlink)
/// says this host has.
struct HostAddressTests {
    static func ipAddr() -> [String]? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["ip", "-o", "addr", "show"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return nil }
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { return nil }
        // "2: eth0    inet 192.0.2.2/24 brd ... scope global eth0"
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let i = f.firstIndex(where: { $0 == "inet" || $0 == "inet6" }), i + 1 < f.count,
                  line.contains("scope global") else { return nil }
            return String(f[i + 1].split(separator: "/")[0])
        }
    }

    static func text(_ b: [UInt8]) -> String {
        var buf = [CChar](repeating: 0, count: 64)
        _ = b.withUnsafeBytes { inet_ntop(b.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, &buf, 64) }
        return String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test("1: every global address ip(8) lists, none loopback or link-local; IPv4 first")
    func matchesIP() throws {
        guard let want = Self.ipAddr() else {
            print("skipped: no `ip` command (Debian iproute2) to compare with")
            return
        }
        let got = DataChannelEndpoint.hostAddresses(listen: "::", max: 64).map(Self.text)
        let globals = want.filter { !$0.hasPrefix("127.") && !$0.lowercased().hasPrefix("fe80") }
        if globals.isEmpty {
            #expect(got == ["127.0.0.1"], "a host with only loopback answers with loopback")
        } else {
            #expect(Set(got) == Set(globals), "got \(got), ip says \(want)")
            let firstV6 = got.firstIndex { $0.contains(":") } ?? got.count
            #expect(got[..<firstV6].allSatisfy { !$0.contains(":") } && got[firstV6...].allSatisfy { $0.contains(":") })
        }
    }

    @Test("2: a specific listen address is the only candidate; an IPv4 wildcard takes no IPv6", arguments: [
        (1, "192.0.2.7", ["192.0.2.7"]), (2, "fd00::9", ["fd00::9"]),
    ] as [(Int, String, [String])])
    func specific(_ n: Int, _ listen: String, _ want: [String]) {
        #expect(DataChannelEndpoint.hostAddresses(listen: listen).map(Self.text) == want, "\(n)")
    }

    @Test("3: an IPv4 wildcard takes no IPv6 address")
    func v4Only() {
        #expect(DataChannelEndpoint.hostAddresses(listen: "0.0.0.0").allSatisfy { $0.count == 4 })
    }
}
