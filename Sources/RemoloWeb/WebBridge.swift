// The phone page's server, seen from Swift: finds the page's files (a
// resource bundle installed beside the binary, so any working directory
// will do), makes or loads the certificate, and starts the C bridge
// (CSources/RemoloWebServer) that relays each WebSocket to the receiver's
// own control and datagram port on loopback.
import Foundation
import Glibc
import RemoloSystem
import RemoloWebServer

func cString(_ a: [CChar]) -> String {
    String(decoding: a.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

public struct WebError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ message: String) { description = message }
}

/// The web port's counters (bad requests, refused connections, relayed messages).
public struct WebStats: Sendable {
    public var connections, refusedFull, tlsFailed, requests, notFound, badRequests: UInt64
    public var websockets, streamMessages, datagrams, closedProtocol: UInt64

    public var json: String {
        "{\"connections\": \(connections), \"refused_full\": \(refusedFull), \"tls_failed\": \(tlsFailed), "
            + "\"requests\": \(requests), \"not_found\": \(notFound), \"bad_requests\": \(badRequests), "
            + "\"websockets\": \(websockets), \"stream_messages\": \(streamMessages), \"datagrams\": \(datagrams), "
            + "\"closed_protocol\": \(closedProtocol)}"
    }
}

/// The receiver's own certificate authority (`remolo receive --web --ca`,
/// docs/certificates.md): installed once on a phone, it makes the page's
/// certificate trusted there.
public struct WebAuthority: Sendable {
    /// Its common name, "Remolo local CA (HOST)".
    public let name: String
    /// SHA-256 of its certificate, "AB:CD:..." as phones show it.
    public let fingerprint: String
    /// True when this start made it.
    public let created: Bool
    /// Its certificate, DER (served as /ca.crt).
    public let certificate: Data
    /// This host's names and addresses it may not vouch for (left out of the page's certificate).
    public let leftOut: [String]

    /// The download paths, served only when the authority is on.
    public static let certificatePath = "/ca.crt"
    public static let profilePath = "/remolo.mobileconfig"

    /// An unsigned iOS configuration profile with one root certificate
    /// payload (com.apple.security.root) holding the DER. Its UUIDs and
    /// identifier come from the certificate's hash, so the same authority
    /// is always the same profile (installing it again replaces it).
    public var profile: Data {
        let hash = fingerprint.split(separator: ":").compactMap { UInt8($0, radix: 16) }
        let fp8 = fingerprint.replacingOccurrences(of: ":", with: "").prefix(8).lowercased()
        let identifier = "local.remolo.ca.\(fp8)"
        let cert: [String: Any] = [
            "PayloadType": "com.apple.security.root", "PayloadVersion": 1,
            "PayloadIdentifier": identifier + ".root", "PayloadUUID": Self.uuid(hash.dropFirst(16)),
            "PayloadDisplayName": name, "PayloadCertificateFileName": "remolo-ca.cer",
            "PayloadDescription": "The Remolo receiver's own certificate authority", "PayloadContent": certificate,
        ]
        let top: [String: Any] = [
            "PayloadType": "Configuration", "PayloadVersion": 1, "PayloadIdentifier": identifier,
            "PayloadUUID": Self.uuid(hash.prefix(16)), "PayloadDisplayName": name,
            "PayloadDescription": "Trust the Remolo receiver's phone page (SHA-256 \(fingerprint)). "
                + "Enable full trust in Settings > General > About > Certificate Trust Settings.",
            "PayloadOrganization": "Remolo", "PayloadRemovalDisallowed": false, "PayloadContent": [cert],
        ]
        return (try? PropertyListSerialization.data(fromPropertyList: top, format: .xml, options: 0)) ?? Data()
    }

    /// 16 bytes of the hash as a UUID string, marked as a version 8
    /// (custom) UUID with the RFC 9562 variant.
    static func uuid<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var b = Array(bytes.prefix(16))
        while b.count < 16 { b.append(0) }
        b[6] = (b[6] & 0x0F) | 0x80
        b[8] = (b[8] & 0x3F) | 0x80
        let hex = b.map { String(format: "%02X", $0) }.joined()
        let i = hex.startIndex
        func part(_ a: Int, _ n: Int) -> Substring { hex[hex.index(i, offsetBy: a)..<hex.index(i, offsetBy: a + n)] }
        return "\(part(0, 8))-\(part(8, 4))-\(part(12, 4))-\(part(16, 4))-\(part(20, 12))"
    }
}

public final class WebBridge: @unchecked Sendable {
    private let handle: OpaquePointer
    public let port: UInt16
    /// SHA-256 of the certificate, "AB:CD:..." as browsers show it.
    public let certificateFingerprint: String
    /// True when this start made (or, with the authority, issued) the certificate.
    public let certificateCreated: Bool
    /// The local certificate authority, when it is on.
    public let authority: WebAuthority?

    /// The files of the config directory: the self-signed certificate, and
    /// the authority with the certificate it issues.
    public static let certificateFile = "web-cert.pem", keyFile = "web-key.pem"
    public static let authorityFile = "web-ca.pem", authorityKeyFile = "web-ca-key.pem"
    public static let issuedFile = "web-leaf.pem", issuedKeyFile = "web-leaf-key.pem"

    /// - Parameters:
    ///   - host, port: where phones connect (HTTPS and the WebSocket).
    ///   - receiverHost, receiverPort: the receiver's own TCP+UDP port, reached on loopback.
    ///   - configDirectory: where web-cert.pem and web-key.pem live (and the authority's files).
    ///   - authority: serve a certificate issued by the receiver's own authority
    ///     (made on first use) instead of the self-signed one, and the authority
    ///     itself at /ca.crt and /remolo.mobileconfig.
    public init(host: String, port: UInt16, receiverHost: String, receiverPort: UInt16, configDirectory: String,
                authority useAuthority: Bool = false) throws {
        var certPath = configDirectory + "/" + Self.certificateFile, keyPath = configDirectory + "/" + Self.keyFile
        var err = [CChar](repeating: 0, count: 1024)
        var extra: [(path: String, type: String, data: Data)] = []
        if useAuthority {
            certPath = configDirectory + "/" + Self.issuedFile
            keyPath = configDirectory + "/" + Self.issuedKeyFile
            var r = remolo_web_ca_result()
            guard remolo_web_ca_certificate(configDirectory + "/" + Self.authorityFile,
                                            configDirectory + "/" + Self.authorityKeyFile,
                                            certPath, keyPath, &r, &err, err.count) == 0 else {
                throw WebError(cString(err))
            }
            let fp = withUnsafeBytes(of: r.fingerprint) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            let caFP = withUnsafeBytes(of: r.ca_fingerprint) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            let name = withUnsafeBytes(of: r.ca_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            let left = withUnsafeBytes(of: r.left_out) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            let der = withUnsafeBytes(of: r.ca_der) { Data($0.prefix(r.ca_der_length)) }
            certificateFingerprint = fp
            certificateCreated = r.issued != 0
            let a = WebAuthority(name: name, fingerprint: caFP, created: r.ca_created != 0, certificate: der,
                                 leftOut: left.isEmpty ? [] : left.components(separatedBy: ", "))
            authority = a
            extra = [(WebAuthority.certificatePath, "application/x-x509-ca-cert", der),
                     (WebAuthority.profilePath, "application/x-apple-aspen-config", a.profile)]
        } else {
            var created: Int32 = 0
            var fp = [CChar](repeating: 0, count: 96)
            guard remolo_web_certificate(certPath, keyPath, &created, &fp, &err, err.count) == 0 else {
                throw WebError(cString(err))
            }
            certificateFingerprint = cString(fp)
            certificateCreated = created != 0
            authority = nil
        }

        let files = try WebBridge.pageFiles() + extra
        var cFiles: [remolo_web_file] = []
        var keep: [UnsafeMutablePointer<CChar>] = []
        var buffers: [UnsafeMutableRawPointer] = []
        defer { keep.forEach { free($0) }; buffers.forEach { free($0) } }
        for f in files {
            let path = strdup(f.path)!, type = strdup(f.type)!
            let data = malloc(max(1, f.data.count))!
            f.data.withUnsafeBytes { data.copyMemory(from: $0.baseAddress!, byteCount: f.data.count) }
            keep += [path, type]
            buffers.append(data)
            cFiles.append(remolo_web_file(path: path, content_type: type,
                                          data: data.assumingMemoryBound(to: UInt8.self), length: f.data.count))
        }
        let started: OpaquePointer? = host.withCString { h in
            receiverHost.withCString { t in
                certPath.withCString { c in
                    keyPath.withCString { k in
                        cFiles.withUnsafeBufferPointer { fb in
                            var cfg = remolo_web_config(listen_host: h, listen_port: port, target_host: t,
                                                        target_port: receiverPort, cert_path: c, key_path: k,
                                                        files: fb.baseAddress, file_count: fb.count)
                            return remolo_web_start(&cfg, &err, err.count)
                        }
                    }
                }
            }
        }
        guard let started else { throw WebError(cString(err)) }
        handle = started
        self.port = remolo_web_port(started)
    }

    private let lock = NSLock()
    /// The counters at stop(): the C server is freed then.
    private var final: WebStats?

    public var stats: WebStats {
        lock.lock()
        defer { lock.unlock() }
        return final ?? live()
    }

    private func live() -> WebStats {
        var s = remolo_web_stats()
        remolo_web_get_stats(handle, &s)
        return WebStats(connections: s.connections, refusedFull: s.refused_full, tlsFailed: s.tls_failed,
                        requests: s.requests, notFound: s.not_found, badRequests: s.bad_requests,
                        websockets: s.websockets, streamMessages: s.ws_stream_messages, datagrams: s.ws_datagrams,
                        closedProtocol: s.ws_closed_protocol)
    }

    /// Closes every connection and frees the server; `stats` keeps its last counts. Safe to call twice.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard final == nil else { return }
        final = live()
        remolo_web_stop(handle)
    }

    /// The browser whose WebSocket this bridge relays through the control
    /// connection that the receiver sees coming from `relay` (the bridge's
    /// end of it); nil when no live WebSocket has that end, or
    /// once stopped. Asked while the WebSocket is open: the receiver asks
    /// when the handshake it carried is done.
    public func client(relayedFrom relay: PeerEndpoint) -> PeerEndpoint? {
        lock.lock()
        defer { lock.unlock() }
        guard final == nil else { return nil }
        var out = [UInt8](repeating: 0, count: 16)
        var port: UInt16 = 0
        let n = relay.address.withUnsafeBufferPointer { a in
            remolo_web_relay_client(handle, a.baseAddress, a.count, relay.port, &out, &port)
        }
        guard n > 0 else { return nil }
        return PeerEndpoint(address: Array(out[0..<Int(n)]), port: port)
    }

    /// The text as a terminal QR code (Unicode half blocks).
    public static func qrCode(_ text: String) -> String? {
        guard let p = remolo_web_qr(text) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    /// An address a phone on the same network can reach: the first
    /// non-loopback IPv4 address of an interface that is up.
    public static func lanAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var p = list
        while let i = p {
            defer { p = i.pointee.ifa_next }
            guard let a = i.pointee.ifa_addr, a.pointee.sa_family == sa_family_t(AF_INET),
                  i.pointee.ifa_flags & UInt32(IFF_UP) != 0, i.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
            var buf = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var sin = UnsafeRawPointer(a).load(as: sockaddr_in.self)
            inet_ntop(AF_INET, &sin.sin_addr, &buf, socklen_t(buf.count))
            return cString(buf)
        }
        return nil
    }

    public static let contentTypes = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "webmanifest": "application/manifest+json", "svg": "image/svg+xml", "png": "image/png",
    ]

    /// Where an installed binary's page is: share/remolo/page beside the
    /// binary's directory (/usr/bin/remolo: /usr/share/remolo/page, where a
    /// Debian package puts architecture-independent files, FHS 4.11).
    public static let installedPage = "share/remolo/page"

    /// The page's directory: $REMOLO_WEB_ROOT (for trying page edits without
    /// a rebuild), else `installedPage` beside the running binary's
    /// directory, else the build's resource bundle beside the binary
    /// (Remolo_RemoloWeb.resources/page). Looked up by hand rather than
    /// through Bundle.module, which ends the process when its bundle is
    /// missing instead of letting the error say where the files belong.
    public static func pageDirectory() throws -> URL {
        if let env = ProcessInfo.processInfo.environment["REMOLO_WEB_ROOT"] {
            return URL(fileURLWithPath: env)
        }
        guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw WebError("cannot find this binary's path (/proc/self/exe) to find the page's files; set REMOLO_WEB_ROOT")
        }
        let bin = URL(fileURLWithPath: exe).deletingLastPathComponent()
        let candidates = [
            bin.deletingLastPathComponent().appendingPathComponent(installedPage),
            bin.appendingPathComponent("Remolo_RemoloWeb.resources/page"),
        ]
        if let found = candidates.first(where: {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("index.html").path)
        }) {
            return found
        }
        throw WebError("the page's files are missing: neither \(candidates[0].path) nor \(candidates[1].path) holds index.html; "
            + "install the binary with them (packaging/deb/build does), or set REMOLO_WEB_ROOT to Sources/RemoloWeb/page")
    }

    /// The page's files.
    static func pageFiles() throws -> [(path: String, type: String, data: Data)] {
        let root = try pageDirectory()
        let names = try FileManager.default.contentsOfDirectory(atPath: root.path).sorted()
        var out: [(String, String, Data)] = []
        for name in names {
            let ext = (name as NSString).pathExtension
            guard let type = contentTypes[ext] else { continue }
            out.append(("/" + name, type, try Data(contentsOf: root.appendingPathComponent(name))))
        }
        guard out.contains(where: { $0.0 == "/index.html" }) else {
            throw WebError("no index.html among the page's files in \(root.path)")
        }
        return out
    }
}
