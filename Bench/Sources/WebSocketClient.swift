import COpenSSL
import Foundation

/// The phone page's side of the web bridge, for web.frame_to_open_us: TLS
/// (the bridge's self-signed certificate, not verified: only timing is at
/// stake here), the WebSocket upgrade on /ws, then masked binary messages
/// (RFC 6455 section 5.3: every client frame is masked), as a browser
/// sends them.
final class WebSocketClient {
    private let fd: Int32
    private let ctx: OpaquePointer
    private let ssl: OpaquePointer
    private var frame = [UInt8]()

    struct Failure: Error, CustomStringConvertible { let description: String }

    init(port: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.fd = fd
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard ok else { close(fd); throw Failure(description: "connect: \(String(cString: strerror(errno)))") }
        // A message per sealed datagram: Nagle must not hold one back.
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        guard let c = SSL_CTX_new(TLS_client_method()) else { close(fd); throw Failure(description: "SSL_CTX_new") }
        ctx = c
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        guard let s = SSL_new(ctx) else { SSL_CTX_free(ctx); close(fd); throw Failure(description: "SSL_new") }
        ssl = s
        SSL_set_fd(ssl, fd)
        // From here on a throw runs deinit, which releases all three.
        guard SSL_connect(ssl) == 1 else { throw Failure(description: "TLS handshake with the bridge failed") }
        let request = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: cmVtb2xvIGJlbmNoIGtleQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        guard write(Array(request.utf8)) else { throw Failure(description: "sending the upgrade request failed") }
        // The 101 response, read to its blank line (the bridge sends nothing
        // after it until the receiver does).
        var head = [UInt8]()
        var byte: UInt8 = 0
        while !head.ends(with: Array("\r\n\r\n".utf8)) {
            guard head.count < 4096, SSL_read(ssl, &byte, 1) == 1 else {
                throw Failure(description: "no upgrade response")
            }
            head.append(byte)
        }
        let status = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self)
        guard status.hasPrefix("HTTP/1.1 101") else { throw Failure(description: "upgrade refused: \(status)") }
    }

    /// One binary message of at most 125 bytes (the bridge's messages are 50).
    func send(_ payload: UnsafeRawBufferPointer, mask: UInt32) -> Bool {
        precondition(payload.count <= 125)
        frame.removeAll(keepingCapacity: true)
        frame.append(0x82)                          // FIN, binary
        frame.append(0x80 | UInt8(payload.count))   // masked, 7-bit length
        let m = withUnsafeBytes(of: mask.bigEndian) { Array($0) }
        frame += m
        for (i, b) in payload.enumerated() { frame.append(b ^ m[i & 3]) }
        return write(frame)
    }

    private func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) == Int32($0.count) }
    }

    deinit {
        _ = SSL_shutdown(ssl)
        SSL_free(ssl)
        SSL_CTX_free(ctx)
        close(fd)
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
