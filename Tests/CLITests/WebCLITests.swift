import Foundation
import RemoloTestSupport
import Testing

/// `remolo receive --web`: the certificate made on first start and kept
/// (key 0600), a key others can read refused with the fix, and the page
/// URL with the code in the fragment.
@Suite(.serialized) struct WebCLITests {
    @Test("the certificate is made once (key 0600) and kept; a readable key is refused, saying how to fix it")
    func certificate() throws {
        let c = try PairedConfigs(label: "web", paired: false)
        defer { c.remove() }
        let first = try CLIProcess(["receive", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0", "--pair",
                                    "--sink", c.root + "/frames", "--seconds", "1"], configDir: c.receiver, log: c.log("web1"))
        let page = try #require(first.line("phone page: "), "no page URL: \(first.output)")
        #expect(page.contains("made now"), "\(page)")
        let pairLine = try #require(first.line("pair a phone: "), "\(first.output)")
        let code = try #require(first.line("pairing code: ")).dropFirst("pairing code: ".count)
        #expect(pairLine.hasSuffix("/#pair=\(code)"), "the code rides in the fragment: \(pairLine)")
        // The QR code follows the URL line: wait for it rather than race it.
        #expect(eventually(10) { first.output.contains("\u{2588}") }, "a QR code is drawn")
        #expect(first.wait(upTo: 10) == 0, "\(first.output)")
        let key = c.receiver + "/web-key.pem"
        let mode = try #require(FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let fingerprint = page.components(separatedBy: "SHA-256 ").last?.prefix(95)

        let second = try CLIProcess(["receive", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0",
                                     "--sink", c.root + "/frames", "--seconds", "1"], configDir: c.receiver, log: c.log("web2"))
        let again = try #require(second.line("phone page: "), "\(second.output)")
        #expect(!again.contains("made now") && again.contains(String(fingerprint ?? "?")), "the same certificate: \(again)")
        #expect(second.wait(upTo: 10) == 0, "\(second.output)")

        chmod(key, 0o644)
        let third = try CLIProcess(["receive", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0",
                                    "--sink", c.root + "/frames", "--seconds", "1"], configDir: c.receiver, log: c.log("web3"))
        #expect(third.wait(upTo: 10) == 1, "\(third.output)")
        #expect(third.output.contains("chmod 600"), "\(third.output)")
    }

    @Test("--ca: the authority's download URLs and SHA-256 are printed, the pairing URL is the same; --ca needs --web")
    func authority() throws {
        let c = try PairedConfigs(label: "webca", paired: false)
        defer { c.remove() }
        let first = try CLIProcess(["receive", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0", "--ca", "--pair",
                                    "--sink", c.root + "/frames", "--seconds", "1"], configDir: c.receiver, log: c.log("webca1"))
        let page = try #require(first.line("phone page: "), "no page URL: \(first.output)")
        #expect(page.contains("issued now by Remolo local CA ("), "\(page)")
        let ca = try #require(first.line("certificate authority: "), "\(first.output)")
        let url = try #require(page.split(separator: " ").dropFirst(2).first.map(String.init))
        #expect(ca.contains("\(url)remolo.mobileconfig (iPhone)") && ca.contains("\(url)ca.crt (Android)"), "\(ca)")
        #expect(ca.contains(", made now"), "\(ca)")
        let install = try #require(first.line("install the authority on a phone: "), "\(first.output)")
        #expect(install == "install the authority on a phone: \(url)ca.html", "\(install)")
        let code = try #require(first.line("pairing code: ")).dropFirst("pairing code: ".count)
        let pairLine = try #require(first.line("pair a phone: "), "\(first.output)")
        #expect(pairLine == "pair a phone: \(url)#pair=\(code)", "the pairing URL as without --ca: \(pairLine)")
        #expect(first.wait(upTo: 10) == 0, "\(first.output)")
        let mode = try #require(FileManager.default.attributesOfItem(atPath: c.receiver + "/web-ca-key.pem")[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        // The printed fingerprint is the certificate's, as openssl(1) computes it.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = ["x509", "-noout", "-fingerprint", "-sha256", "-in", c.receiver + "/web-ca.pem"]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let fingerprint = try #require(out.split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(fingerprint.count == 95 && ca.contains("SHA-256 \(fingerprint)"), "\(ca) vs \(out)")

        let second = try CLIProcess(["receive", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0", "--ca",
                                     "--sink", c.root + "/frames", "--seconds", "1"], configDir: c.receiver, log: c.log("webca2"))
        let again = try #require(second.line("certificate authority: "), "\(second.output)")
        #expect(again.contains("SHA-256 \(fingerprint)") && !again.contains("made now"), "the same authority: \(again)")
        #expect(second.wait(upTo: 10) == 0, "\(second.output)")
        // Without --pair the authority's page is the one QR code shown (a QR
        // is drawn in block characters). Read once the receiver has ended:
        // the QR follows its line, and a slow run may not have written it yet.
        #expect(second.line("install the authority on a phone: ") != nil && second.output.contains("\u{2588}"),
                "\(second.output)")

        let alone = try CLIProcess(["receive", "--listen", "127.0.0.1:0", "--ca", "--sink", c.root + "/frames", "--seconds", "1"],
                                   configDir: c.receiver, log: c.log("webca3"))
        #expect(alone.wait(upTo: 10) == 2, "\(alone.output)")
        #expect(alone.output.contains("--web"), "\(alone.output)")
    }
}
