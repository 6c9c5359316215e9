// What a receiver announces in DNS-SD (RFC 6763) and what a sender makes of
// it: the service type and the TXT record's keys. Plain Swift, no Avahi, so
// the format is tested on its own.
import Foundation

/// The DNS-SD service type: a service on UDP (RFC 6763 section 7: the
/// pointer datagrams are the protocol's reason to be; the TCP control
/// connection shares the port).
public enum RemoloService {
    public static let type = "_remolo._udp"
}

/// The TXT record of `_remolo._udp` (RFC 6763 section 6): `key=value`
/// strings of at most 255 bytes, keys compared case-insensitively (6.4),
/// `txtvers` first (6.7), unknown keys ignored so later versions may add
/// some.
///
/// - `txtvers=1`: this format.
/// - `fp=7Q2M-9XKD-...`: the receiver's fingerprint (as `remolo identity`
///   prints it). A hint only: a sender connects with the key it paired
///   with, so an announcement carrying someone else's fingerprint leads to
///   a handshake that fails, never to a session with an impostor.
/// - `proto=1`: the protocol (handshake) version the receiver speaks.
public struct ServiceTXT: Sendable, Equatable {
    public static let txtVersion = 1

    public var fingerprint: String?
    public var protocolVersion: Int?
    public var txtVersion: Int?

    public init(fingerprint: String, protocolVersion: Int) {
        self.fingerprint = fingerprint
        self.protocolVersion = protocolVersion
        self.txtVersion = Self.txtVersion
    }

    /// The strings of the record, in order.
    public var strings: [String] {
        var out = ["txtvers=\(txtVersion ?? Self.txtVersion)"]
        if let fingerprint { out.append("fp=\(fingerprint)") }
        if let protocolVersion { out.append("proto=\(protocolVersion)") }
        return out
    }

    /// Reads a record's strings (raw bytes each). A key without `=` is a
    /// boolean attribute (6.4) and means nothing here; a repeated key keeps
    /// its first value (6.4: "silently ignore all but the first").
    public init(strings: [[UInt8]]) {
        var seen = Set<String>()
        for raw in strings {
            guard let eq = raw.firstIndex(of: UInt8(ascii: "=")), eq > 0 else { continue }
            let key = String(decoding: raw[..<eq], as: UTF8.self).lowercased()
            guard seen.insert(key).inserted else { continue }
            let value = String(decoding: raw[(eq + 1)...], as: UTF8.self)
            switch key {
            case "txtvers": txtVersion = Int(value)
            case "fp": fingerprint = value.isEmpty ? nil : value
            case "proto": protocolVersion = Int(value)
            default: break
            }
        }
    }

    /// Whether `fingerprint` names the same key as this record's, ignoring
    /// case and hyphens (a fingerprint typed or copied by a person).
    public func matches(fingerprint other: String) -> Bool {
        guard let fingerprint else { return false }
        return Self.normalized(fingerprint) == Self.normalized(other)
    }

    static func normalized(_ s: String) -> String { s.uppercased().filter { $0 != "-" && $0 != " " } }
}

/// One announcement seen on the LAN: a receiver on one interface, over one
/// IP family.
public struct DiscoveredReceiver: Sendable, Equatable, CustomStringConvertible {
    /// The DNS-SD instance name ("Remolo on box").
    public let name: String
    /// The address to connect to: numeric, an IPv6 link-local address with
    /// its zone (`fe80::1%wlan0`, RFC 4007 section 11).
    public let host: String
    /// The mDNS host name the service points at (`box.local`).
    public let hostName: String
    public let port: UInt16
    public let fingerprint: String?
    public let protocolVersion: Int?
    /// The interface it was seen on (`wlan0`).
    public let interface: String
    public let isIPv6: Bool

    public init(name: String, host: String, hostName: String, port: UInt16, txt: ServiceTXT,
                interface: String, isIPv6: Bool) {
        self.name = name
        self.host = host
        self.hostName = hostName
        self.port = port
        self.fingerprint = txt.fingerprint
        self.protocolVersion = txt.protocolVersion
        self.interface = interface
        self.isIPv6 = isIPv6
    }

    /// host:port, IPv6 in brackets, as `--to` takes it.
    public var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public var description: String {
        "\(name)  \(address)  fp \(fingerprint ?? "?")  proto \(protocolVersion.map(String.init) ?? "?")  on \(interface)"
    }

    /// Whether this announcement carries `fingerprint` (case and hyphens ignored).
    public func matches(fingerprint other: String) -> Bool {
        guard let fingerprint else { return false }
        return ServiceTXT.normalized(fingerprint) == ServiceTXT.normalized(other)
    }
}

/// Why discovery cannot run here, with what to do about it.
public struct DiscoveryError: Error, Equatable, Sendable, CustomStringConvertible {
    /// True when no Avahi daemon (or no D-Bus system bus) is there to ask:
    /// discovery is then simply off, which is no failure of the receiver.
    public let daemonMissing: Bool
    public let message: String
    public var description: String { message }

    init(_ message: String, daemonMissing: Bool = false) {
        self.message = message
        self.daemonMissing = daemonMissing
    }
}
