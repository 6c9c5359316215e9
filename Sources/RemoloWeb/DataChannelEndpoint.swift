// The phone page's data channel, seen from Swift: starts the C endpoint
// (CSources/RemoloWebServer/rtc.c: ICE-lite, DTLS, SCTP, DCEP) on the web
// port's number over UDP, registers a session's browser from its offer,
// and lists the host's addresses for the answer's candidates.
import Foundation
import Glibc
import RemoloWebServer

/// What the endpoint answers a registered browser with.
public struct DataChannelCredentials: Sendable, Equatable {
    public var ufrag: String
    public var password: String
    /// SHA-256 of the endpoint's DTLS certificate.
    public var fingerprint: [UInt8]
    public var port: UInt16
}

/// Why an offer was not registered.
public enum DataChannelRefusal: Error, Sendable, Equatable {
    /// `DataChannelEndpoint.maxPeers` browsers are set up at once.
    case busy
    /// The offer's credentials are not acceptable.
    case badOffer
}

/// One session's browser as the endpoint sees it.
public struct DataChannelPeer: Sendable, Equatable {
    public var state: String
    public var reason: String
    public var stunOK, messages, relayed, dropped: UInt64

    public var jsonFields: String {
        "\"channel_state\":\"\(state)\",\"channel_reason\":\"\(reason)\",\"stun_ok\":\(stunOK),"
            + "\"channel_messages\":\(messages),\"channel_relayed\":\(relayed),\"channel_dropped\":\(dropped)"
    }
}

public final class DataChannelEndpoint: @unchecked Sendable {
    private let handle: OpaquePointer
    public let port: UInt16
    /// Registered sessions at once.
    public static let maxPeers = REMOLO_RTC_MAX_PEERS

    /// - Parameters:
    ///   - host, port: where browsers reach it (UDP; the web port's number).
    ///   - receiverHost, receiverPort: the receiver's own UDP datagram port, on loopback.
    public init(host: String, port: UInt16, receiverHost: String, receiverPort: UInt16) throws {
        var err = [CChar](repeating: 0, count: 512)
        let started: OpaquePointer? = host.withCString { h in
            receiverHost.withCString { t in
                var cfg = remolo_rtc_config(listen_host: h, listen_port: port, target_host: t, target_port: receiverPort)
                return remolo_rtc_start(&cfg, &err, err.count)
            }
        }
        guard let started else { throw WebError(cString(err)) }
        handle = started
        self.port = remolo_rtc_port(started)
    }

    deinit { remolo_rtc_stop(handle) }

    /// Registers the browser of session `session` (8 bytes); a second
    /// offer for the same session replaces the first.
    public func add(session: [UInt8], ufrag: String, password: String, fingerprint: [UInt8])
        throws(DataChannelRefusal) -> DataChannelCredentials {
        precondition(session.count == 8 && fingerprint.count == 32)
        var offer = remolo_rtc_offer()
        guard ufrag.utf8.count <= REMOLO_RTC_OFFER_MAX, password.utf8.count <= REMOLO_RTC_OFFER_MAX else {
            throw .badOffer
        }
        withUnsafeMutableBytes(of: &offer.ufrag) { b in
            for (i, c) in ufrag.utf8.enumerated() { b[i] = c }
        }
        withUnsafeMutableBytes(of: &offer.pwd) { b in
            for (i, c) in password.utf8.enumerated() { b[i] = c }
        }
        withUnsafeMutableBytes(of: &offer.fingerprint) { b in
            for (i, c) in fingerprint.enumerated() { b[i] = c }
        }
        var answer = remolo_rtc_answer()
        let r = session.withUnsafeBufferPointer { remolo_rtc_add_peer(handle, $0.baseAddress, &offer, &answer) }
        // The browser's password is a secret of this session: not kept here.
        withUnsafeMutableBytes(of: &offer.pwd) { b in for i in b.indices { b[i] = 0 } }
        if r == -ENOSPC { throw .busy }
        guard r == 0 else { throw .badOffer }
        let ufragOut = withUnsafeBytes(of: answer.ufrag) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let pwdOut = withUnsafeBytes(of: answer.pwd) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let fp = withUnsafeBytes(of: answer.fingerprint) { Array($0) }
        return DataChannelCredentials(ufrag: ufragOut, password: pwdOut, fingerprint: fp, port: answer.port)
    }

    /// Frees everything the endpoint holds for the session.
    public func remove(session: [UInt8]) {
        guard session.count == 8 else { return }
        session.withUnsafeBufferPointer { remolo_rtc_remove_peer(handle, $0.baseAddress) }
    }

    static let stateNames = ["waiting", "checked", "dtls", "sctp", "open", "closed", "failed"]
    static let reasonNames = ["none", "setup_timeout", "consent_timeout", "dtls_failed", "fingerprint", "sctp_failed",
                              "sctp_closed", "channel_closed", "no_memory"]

    public func peer(session: [UInt8]) -> DataChannelPeer? {
        guard session.count == 8 else { return nil }
        var s = remolo_rtc_peer_stats()
        let r = session.withUnsafeBufferPointer { remolo_rtc_peer_stats(handle, $0.baseAddress, &s) }
        guard r == 0 else { return nil }
        func name(_ names: [String], _ i: Int32) -> String { names.indices.contains(Int(i)) ? names[Int(i)] : "\(i)" }
        return DataChannelPeer(state: name(Self.stateNames, s.state), reason: name(Self.reasonNames, s.reason),
                               stunOK: s.stun_ok, messages: s.messages, relayed: s.relayed, dropped: s.dropped)
    }

    /// The endpoint's counters as one JSON object (docs/cli.md, `--stats-json`).
    public var json: String {
        var s = remolo_rtc_stats()
        remolo_rtc_get_stats(handle, &s)
        let fields: [(String, UInt64)] = [
            ("port", UInt64(port)), ("packets", s.packets), ("stun_requests", s.stun_requests),
            ("stun_bad_credentials", s.stun_bad_credentials), ("stun_malformed", s.stun_malformed),
            ("stun_unknown_user", s.stun_unknown_user), ("dtls_stranger", s.dtls_stranger), ("dtls_failed", s.dtls_failed),
            ("dtls_fingerprint_mismatch", s.dtls_fingerprint_mismatch), ("associations", s.associations),
            ("extra_associations", s.extra_associations), ("channels_opened", s.channels_opened),
            ("channels_refused", s.channels_refused), ("messages", s.messages), ("relayed", s.relayed),
            ("dropped_size", s.dropped_size), ("dropped_session", s.dropped_session), ("dropped_flood", s.dropped_flood),
            ("dropped_other", s.dropped_other), ("peers_live", s.peers_live), ("peers_expired", s.peers_expired),
            ("dtls_live", s.dtls_live), ("sctp_live", s.sctp_live), ("wakeups", s.wakeups),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// This host's addresses a browser on the LAN may reach, for the
    /// answer's host candidates: every non-loopback IPv4 address and every
    /// global or unique-local IPv6 one (link-local ones need a zone a
    /// candidate cannot carry), at most `max`; loopback only when the host
    /// has nothing else. With a specific listen address, only that one.
    /// Read without netlink (SIOCGIFCONF, /proc/net/if_inet6), which the
    /// service's RestrictAddressFamilies= does not allow.
    public static func hostAddresses(listen: String, max: Int = 8) -> [[UInt8]] {
        var one4 = in_addr(), one6 = in6_addr()
        let listen4 = inet_pton(AF_INET, listen, &one4) == 1
        if listen4, one4.s_addr != 0 { return [withUnsafeBytes(of: one4) { Array($0) }] }
        if inet_pton(AF_INET6, listen, &one6) == 1, withUnsafeBytes(of: one6, { $0.contains { $0 != 0 } }) {
            return [withUnsafeBytes(of: one6) { Array($0) }]
        }
        let all = ipv4Addresses() + (listen4 ? [] : ipv6Addresses())
        return all.isEmpty ? [[127, 0, 0, 1]] : Array(all.prefix(max))
    }

    /// The interfaces' IPv4 addresses but loopback ones (127/8), by SIOCGIFCONF.
    static func ipv4Addresses() -> [[UInt8]] {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var reqs = [ifreq](repeating: ifreq(), count: 64)
        var conf = ifconf()
        let used = reqs.withUnsafeMutableBytes { b -> Int in
            conf.ifc_len = Int32(b.count)
            conf.ifc_ifcu.ifcu_buf = b.baseAddress!.assumingMemoryBound(to: CChar.self)
            return ioctl(fd, UInt(SIOCGIFCONF), &conf) == 0 ? Int(conf.ifc_len) : 0
        }
        var out: [[UInt8]] = []
        for r in reqs.prefix(used / MemoryLayout<ifreq>.size) {
            // ifru_addr is a sockaddr_in here: family, port, then the address.
            let a = withUnsafeBytes(of: r.ifr_ifru.ifru_addr) { Array($0[4..<8]) }
            if a[0] != 127 && a != [0, 0, 0, 0] && !out.contains(a) { out.append(a) }
        }
        return out
    }

    /// Global and unique-local IPv6 addresses, from /proc/net/if_inet6 (one
    /// line an address: 32 hex digits, index, prefix, scope, flags, name;
    /// scope 0 is global, fc00::/7 unique local).
    static func ipv6Addresses() -> [[UInt8]] {
        guard let text = try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8) else { return [] }
        var out: [[UInt8]] = []
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 6, f[0].count == 32, f[3] == "00" else { continue }
            let hex = Array(f[0].utf8)
            let b = stride(from: 0, to: 32, by: 2).compactMap { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16) }
            if b.count == 16 && !out.contains(b) { out.append(b) }
        }
        return out
    }
}
