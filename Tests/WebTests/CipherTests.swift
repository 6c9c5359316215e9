import COpenSSL
import Foundation
import RemoloWeb
import Testing

/// The page server's TLS, asked by OpenSSL as a client: TLS 1.2 only with
/// AEAD suites (a client offering nothing but CBC is refused), TLS 1.3 as
/// OpenSSL offers it.
@Suite(.serialized) struct CipherTests {
    /// A handshake with the bridge, the client limited to `version` and, for
    /// TLS 1.2, to `ciphers`: the suite agreed, or nil when refused.
    static func handshake(_ port: UInt16, version: Int32, ciphers: String? = nil) throws -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AuthorityTests.Failure("socket") }
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard ok else { throw AuthorityTests.Failure("connect: \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let ctx = SSL_CTX_new(TLS_client_method())!
        defer { SSL_CTX_free(ctx) }
        // SSL_CTX_set_{min,max}_proto_version are macros over SSL_CTX_ctrl.
        SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(version), nil)
        SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(version), nil)
        if let ciphers { #expect(SSL_CTX_set_cipher_list(ctx, ciphers) == 1, "this OpenSSL lacks \(ciphers)") }
        let ssl = SSL_new(ctx)!
        defer { SSL_free(ssl) }
        SSL_set_fd(ssl, fd)
        guard SSL_connect(ssl) == 1 else { return nil }
        defer { SSL_shutdown(ssl) }
        return String(cString: SSL_CIPHER_get_name(SSL_get_current_cipher(ssl)))
    }

    @Test("TLS 1.2: every CBC suite a client may offer is refused; the AEAD suites are agreed; TLS 1.3 works")
    func aeadOnly() throws {
        let dir = try AuthorityTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let b = try AuthorityTests.bridge(dir, authority: false)
        defer { b.stop() }
        for cbc in ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA256",
                    "ECDHE-ECDSA-AES256-SHA384", "AES128-SHA", "AES128-SHA256", "AES256-SHA"] {
            #expect(try Self.handshake(b.port, version: TLS1_2_VERSION, ciphers: cbc) == nil, "\(cbc) was agreed")
        }
        // What a client offering OpenSSL's whole default list gets.
        #expect(try Self.handshake(b.port, version: TLS1_2_VERSION, ciphers: "ALL:@SECLEVEL=0")?.contains("GCM") == true)
        for aead in ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"] {
            #expect(try Self.handshake(b.port, version: TLS1_2_VERSION, ciphers: aead) == aead)
        }
        #expect(try Self.handshake(b.port, version: TLS1_3_VERSION)?.hasPrefix("TLS_") == true)
        // CBC offered first, one AEAD suite after it: the server takes the
        // AEAD one, so the refusals above are the server's, not the client's.
        #expect(try Self.handshake(b.port, version: TLS1_2_VERSION, ciphers: "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES128-GCM-SHA256")
                == "ECDHE-ECDSA-AES128-GCM-SHA256")
    }
}
