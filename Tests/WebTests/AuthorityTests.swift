import COpenSSL
import Foundation
import RemoloWeb
import Testing

/// The web bridge's certificates, judged by OpenSSL as a client would:
/// the receiver's own certificate authority (`--web --ca`) made once and
/// kept (key 0600), the page's certificate it issues verifying against it
/// alone (purpose TLS server, the host's names) and issued again when it
/// must, the authority served as /ca.crt and /remolo.mobileconfig, a real
/// TLS client trusting it and nothing else; and without --ca, the
/// self-signed certificate as before.
@Suite(.serialized) struct AuthorityTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// A fresh config directory (0700), and the page's files from the source tree.
    static func directory() throws -> String {
        setenv("REMOLO_WEB_ROOT", root + "/Sources/RemoloWeb/page", 1)
        var template = Array((NSTemporaryDirectory() + "/remolo-web-XXXXXX").utf8CString)
        guard let p = mkdtemp(&template) else { throw Failure("mkdtemp: \(String(cString: strerror(errno)))") }
        return String(cString: p)
    }

    static func bridge(_ dir: String, authority: Bool) throws -> WebBridge {
        try WebBridge(host: "127.0.0.1", port: 0, receiverHost: "127.0.0.1", receiverPort: 9, configDirectory: dir,
                      authority: authority)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    // ------------------------------------------------------------ OpenSSL

    static func read(_ path: String) -> OpaquePointer? {
        guard let bio = BIO_new_file(path, "r") else { return nil }
        defer { BIO_free(bio) }
        return PEM_read_bio_X509(bio, nil, nil, nil)
    }

    static func der(_ x: OpaquePointer) -> Data {
        let n = i2d_X509(x, nil)
        var out = Data(count: Int(max(n, 0)))
        out.withUnsafeMutableBytes { b in
            var p: UnsafeMutablePointer<UInt8>? = b.baseAddress?.assumingMemoryBound(to: UInt8.self)
            _ = i2d_X509(x, &p)
        }
        return out
    }

    /// X509_verify_cert of leaf with anchor as the only trust anchor, for a
    /// TLS server, with the name checked: X509_V_OK (0) or the error.
    static func verify(_ leaf: OpaquePointer, anchor: OpaquePointer, host: String? = nil, ip: String? = nil) -> Int32 {
        let store = X509_STORE_new()!
        defer { X509_STORE_free(store) }
        X509_STORE_add_cert(store, anchor)
        let ctx = X509_STORE_CTX_new()!
        defer { X509_STORE_CTX_free(ctx) }
        X509_STORE_CTX_init(ctx, store, leaf, nil)
        X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER)
        let param = X509_STORE_CTX_get0_param(ctx)
        if let host { X509_VERIFY_PARAM_set1_host(param, host, 0) }
        if let ip { X509_VERIFY_PARAM_set1_ip_asc(param, ip) }
        return X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx)
    }

    /// Days from notBefore to notAfter.
    static func validityDays(_ x: OpaquePointer) -> Int32 {
        var days: Int32 = 0, secs: Int32 = 0
        ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(x), X509_get0_notAfter(x))
        return days
    }

    struct Response {
        var verify: Int
        var status = 0
        var type = ""
        var body = Data()
    }

    /// GET path from the bridge over TLS with OpenSSL as the client:
    /// caFile its only trust anchor (none: no anchor at all), 127.0.0.1
    /// checked against the certificate. A failed handshake gives its
    /// verification result and status 0.
    static func get(_ port: UInt16, _ path: String, caFile: String?) throws -> Response {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket") }
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard ok else { throw Failure("connect: \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let ctx = SSL_CTX_new(TLS_client_method())!
        defer { SSL_CTX_free(ctx) }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        if let caFile { #expect(SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1) }
        let ssl = SSL_new(ctx)!
        defer { SSL_free(ssl) }
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1")
        SSL_set_fd(ssl, fd)
        guard SSL_connect(ssl) == 1 else {
            ERR_clear_error()
            return Response(verify: Int(SSL_get_verify_result(ssl)))
        }
        var r = Response(verify: Int(SSL_get_verify_result(ssl)))
        let req = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"
        _ = req.withCString { SSL_write(ssl, $0, Int32(strlen($0))) }
        var data = Data()
        var buf = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = SSL_read(ssl, &buf, Int32(buf.count))
            if n <= 0 { break }
            data.append(contentsOf: buf[0..<Int(n)])
        }
        SSL_shutdown(ssl)
        guard let split = data.range(of: Data("\r\n\r\n".utf8)) else { throw Failure("no response head") }
        let head = String(decoding: data[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        r.status = Int(head[0].split(separator: " ")[1]) ?? 0
        for line in head.dropFirst() where line.lowercased().hasPrefix("content-type:") {
            r.type = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
        }
        r.body = Data(data[split.upperBound...])
        return r
    }

    static func openssl(_ args: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw Failure("openssl \(args.joined(separator: " ")) failed") }
    }

    /// A certificate for names signed by the authority's key with openssl(1),
    /// valid days, for key (else a new one).
    static func sign(_ dir: String, names: String, days: Int, out: String, key: String? = nil) throws {
        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", dir + "/other-key.pem"]
        try openssl(["req", "-new"] + (key.map { ["-key", $0] } ?? newKey) + ["-subj", "/CN=other", "-out", dir + "/other.csr"])
        let ext = dir + "/ext.cnf"
        try "subjectAltName = \(names)\nextendedKeyUsage = serverAuth\n".write(toFile: ext, atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", dir + "/other.csr", "-CA", dir + "/web-ca.pem", "-CAkey", dir + "/web-ca-key.pem",
                     "-days", String(days), "-extfile", ext, "-out", out, "-set_serial", "7"])
    }

    /// The certificate's subjectAltName in openssl's config syntax.
    static func names(_ path: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        p.arguments = ["x509", "-noout", "-ext", "subjectAltName", "-in", path]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let line = try #require(text.split(separator: "\n").last)
        return line.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "IP Address:", with: "IP:")
            .replacingOccurrences(of: ", ", with: ",")
    }

    static func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    // ------------------------------------------------------------ tests

    @Test("the authority is made once (key 0600) and kept; the page's certificate is issued once and kept")
    func madeOnce() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try Self.bridge(dir, authority: true)
        first.stop()
        let a = try #require(first.authority)
        #expect(a.created && first.certificateCreated)
        #expect(try Self.mode(dir + "/web-ca-key.pem") == 0o600)
        #expect(try Self.mode(dir + "/web-leaf-key.pem") == 0o600)
        #expect(a.name.hasPrefix("Remolo local CA ("), "\(a.name)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/web-cert.pem"), "the self-signed certificate is not made with --ca")

        let second = try Self.bridge(dir, authority: true)
        second.stop()
        let b = try #require(second.authority)
        #expect(!b.created && !second.certificateCreated)
        #expect(b.fingerprint == a.fingerprint && b.certificate == a.certificate)
        #expect(second.certificateFingerprint == first.certificateFingerprint)
        #expect(b.profile == a.profile, "the same authority is the same profile (UUIDs from its hash)")

        chmod(dir + "/web-ca-key.pem", 0o640)
        #expect(throws: WebError.self) { try Self.bridge(dir, authority: true) }
        do { _ = try Self.bridge(dir, authority: true) } catch {
            #expect("\(error)".contains("chmod 600"), "\(error)")
        }
    }

    @Test("the authority: CA:TRUE, pathlen 0, keyCertSign, name constraints, ~10 years; the page's: serverAuth, at most 825 days, verifying against the authority alone")
    func verifies() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bridge = try Self.bridge(dir, authority: true)
        bridge.stop()
        let ca = try #require(Self.read(dir + "/web-ca.pem"))
        let leaf = try #require(Self.read(dir + "/web-leaf.pem"))
        defer { X509_free(ca); X509_free(leaf) }
        #expect(Self.der(ca) == bridge.authority?.certificate)

        #expect(X509_check_ca(ca) == 1)
        #expect(X509_get_pathlen(ca) == 0)
        #expect(X509_get_key_usage(ca) & UInt32(KU_KEY_CERT_SIGN) != 0)
        #expect(X509_get_extension_flags(ca) & UInt32(EXFLAG_CRITICAL) == 0, "no critical extension OpenSSL does not know")
        #expect(X509_get_ext_by_NID(ca, NID_name_constraints, -1) >= 0, "name constraints")
        #expect((3640...3660).contains(Self.validityDays(ca)), "\(Self.validityDays(ca)) days")

        #expect(X509_check_ca(leaf) == 0)
        #expect(X509_get_extended_key_usage(leaf) & UInt32(XKU_SSL_SERVER) != 0)
        // Apple: at most 825 days for a TLS server certificate (support.apple.com/en-us/103769).
        #expect(Self.validityDays(leaf) <= 825, "\(Self.validityDays(leaf)) days")

        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, 255)
        let name = String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(Self.verify(leaf, anchor: ca, host: "localhost") == X509_V_OK)
        #expect(Self.verify(leaf, anchor: ca, ip: "127.0.0.1") == X509_V_OK)
        #expect(Self.verify(leaf, anchor: ca, host: name + ".local") == X509_V_OK)
        #expect(Self.verify(leaf, anchor: ca, host: "example.com") == X509_V_ERR_HOSTNAME_MISMATCH)
        // Against another anchor (the self-signed certificate): no issuer.
        _ = try Self.bridge(dir, authority: false).stop()
        let other = try #require(Self.read(dir + "/web-cert.pem"))
        defer { X509_free(other) }
        #expect(Self.verify(leaf, anchor: other, host: "localhost") == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY)

        // The constraints hold: what the authority's key signs for another
        // name is refused by a verifier (RFC 5280 section 4.2.1.10).
        try Self.sign(dir, names: "DNS:example.com", days: 30, out: dir + "/other.pem")
        let outside = try #require(Self.read(dir + "/other.pem"))
        defer { X509_free(outside) }
        #expect(Self.verify(outside, anchor: ca, host: "example.com") == X509_V_ERR_PERMITTED_VIOLATION)
    }

    @Test("the page's certificate is issued again when it is not the authority's, names other names or nears its end")
    func reissued() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try Self.bridge(dir, authority: true)
        first.stop()
        let leaf = dir + "/web-leaf.pem"
        func again() throws -> WebBridge {
            let b = try Self.bridge(dir, authority: true)
            b.stop()
            return b
        }
        // Another authority's (the self-signed certificate).
        _ = try Self.bridge(dir, authority: false).stop()
        try FileManager.default.removeItem(atPath: leaf)
        try FileManager.default.copyItem(atPath: dir + "/web-cert.pem", toPath: leaf)
        var b = try again()
        #expect(b.certificateCreated && !(b.authority?.created ?? true))
        let key = dir + "/web-leaf-key.pem"
        // Fewer names than the host has.
        try Self.sign(dir, names: "DNS:localhost", days: 700, out: leaf, key: key)
        b = try again()
        #expect(b.certificateCreated)
        // The host's very names, but ten days left.
        let names = try Self.names(leaf)
        try Self.sign(dir, names: names, days: 10, out: leaf, key: key)
        #expect(try Self.names(leaf) == names)
        b = try again()
        #expect(b.certificateCreated)
        // The host's names and 700 days left, but for another key.
        try Self.sign(dir, names: names, days: 700, out: leaf)
        b = try again()
        #expect(b.certificateCreated)
        // The host's names, 700 days left, its key: kept.
        try Self.sign(dir, names: names, days: 700, out: leaf, key: key)
        let kept = try String(contentsOfFile: leaf, encoding: .utf8)
        b = try again()
        #expect(!b.certificateCreated, "a current certificate with the host's names is kept")
        #expect(try String(contentsOfFile: leaf, encoding: .utf8) == kept)
        b = try again()
        #expect(!b.certificateCreated, "kept once current")
        let ca = try #require(Self.read(dir + "/web-ca.pem"))
        let x = try #require(Self.read(leaf))
        defer { X509_free(ca); X509_free(x) }
        #expect(Self.verify(x, anchor: ca, ip: "127.0.0.1") == X509_V_OK)
    }

    @Test("with --ca: /ca.crt (DER) and /remolo.mobileconfig (a plist holding it) with their types; a TLS client trusting the authority alone connects, one trusting nothing does not")
    func served() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bridge = try Self.bridge(dir, authority: true)
        defer { bridge.stop() }
        let a = try #require(bridge.authority)

        let crt = try Self.get(bridge.port, "/ca.crt", caFile: dir + "/web-ca.pem")
        #expect(crt.verify == Int(X509_V_OK))
        #expect(crt.status == 200 && crt.type == "application/x-x509-ca-cert", "\(crt.status) \(crt.type)")
        #expect(crt.body == a.certificate)

        let profile = try Self.get(bridge.port, "/remolo.mobileconfig", caFile: dir + "/web-ca.pem")
        #expect(profile.status == 200 && profile.type == "application/x-apple-aspen-config", "\(profile.status) \(profile.type)")
        var format = PropertyListSerialization.PropertyListFormat.binary
        let plist = try #require(try PropertyListSerialization.propertyList(from: profile.body, options: [], format: &format)
            as? [String: Any])
        #expect(format == .xml)
        #expect(plist["PayloadType"] as? String == "Configuration")
        let fp8 = a.fingerprint.replacingOccurrences(of: ":", with: "").prefix(8).lowercased()
        #expect(plist["PayloadIdentifier"] as? String == "local.remolo.ca.\(fp8)")
        let payloads = try #require(plist["PayloadContent"] as? [[String: Any]])
        #expect(payloads.count == 1)
        #expect(payloads.first?["PayloadType"] as? String == "com.apple.security.root")
        #expect(payloads.first?["PayloadContent"] as? Data == a.certificate)
        let uuids = [plist["PayloadUUID"] as? String, payloads.first?["PayloadUUID"] as? String].compactMap { $0 }
        #expect(uuids.count == 2 && Set(uuids).count == 2 && uuids.allSatisfy { UUID(uuidString: $0) != nil }, "\(uuids)")

        let page = try Self.get(bridge.port, "/index.html", caFile: dir + "/web-ca.pem")
        #expect(page.verify == Int(X509_V_OK) && page.status == 200)
        let untrusted = try Self.get(bridge.port, "/index.html", caFile: nil)
        #expect(untrusted.status == 0, "no anchor: the handshake fails")
        #expect(untrusted.verify == Int(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY), "\(untrusted.verify)")
    }

    @Test("without --ca: the self-signed certificate as before, no authority made, nothing more served")
    func withoutAuthority() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bridge = try Self.bridge(dir, authority: false)
        defer { bridge.stop() }
        #expect(bridge.authority == nil && bridge.certificateCreated)
        for f in ["web-ca.pem", "web-ca-key.pem", "web-leaf.pem", "web-leaf-key.pem"] {
            #expect(!FileManager.default.fileExists(atPath: dir + "/" + f), "\(f)")
        }
        #expect(try Self.mode(dir + "/web-key.pem") == 0o600)
        let x = try #require(Self.read(dir + "/web-cert.pem"))
        defer { X509_free(x) }
        // Self-signed: its own issuer, its signature made by its own key.
        #expect(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)) == 0)
        #expect(X509_verify(x, X509_get0_pubkey(x)) == 1, "self-signed")
        #expect(Self.verify(x, anchor: x, ip: "127.0.0.1") == X509_V_OK)
        #expect(X509_check_ca(x) == 0)
        let trusted = try Self.get(bridge.port, "/index.html", caFile: dir + "/web-cert.pem")
        #expect(trusted.status == 200)
        for path in ["/ca.crt", "/remolo.mobileconfig"] {
            #expect(try Self.get(bridge.port, path, caFile: dir + "/web-cert.pem").status == 404, "\(path)")
        }
    }
}
