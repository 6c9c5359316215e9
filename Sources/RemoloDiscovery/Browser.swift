// Looks for receivers on the LAN: browses `_remolo._udp` through the Avahi
// daemon for a few seconds and resolves every instance it sees (each
// interface and IP family on its own: a receiver reachable over IPv4 and
// over an IPv6 link-local address shows up twice).
internal import CAvahi
internal import Glibc
import Foundation
import Synchronization

public enum Browser {
    /// The receivers announced on the LAN within `seconds`.
    /// - Parameter settle: return early once the daemon has said "all for
    ///   now" and every instance seen so far is resolved (still at least
    ///   `minimum` seconds, so slow answers on a busy LAN get a chance).
    /// - Throws: `DiscoveryError` with `daemonMissing` when there is no
    ///   Avahi daemon to ask.
    public static func browse(seconds: Double, settle: Bool = false, minimum: Double = 1.0) throws(DiscoveryError) -> [DiscoveredReceiver] {
        let loop = try AvahiLoop()
        let ctx = BrowseContext()
        var err: Int32 = 0
        guard let client = avahi_client_new(loop.api, AvahiClientFlags(0), browserClientCallback,
                                            Unmanaged.passUnretained(ctx).toOpaque(), &err) else {
            throw Avahi.clientError(err)
        }
        // Freed after the loop's thread is joined: the browser and its
        // resolvers go with the client.
        defer {
            loop.stop()
            avahi_client_free(client)
            withExtendedLifetime(ctx) {} // the callbacks hold it unretained
        }
        guard avahi_service_browser_new(client, Int32(AVAHI_IF_UNSPEC), Int32(AVAHI_PROTO_UNSPEC), RemoloService.type,
                                        nil, AvahiLookupFlags(0), browserCallback,
                                        Unmanaged.passUnretained(ctx).toOpaque()) != nil else {
            throw DiscoveryError("Avahi: cannot browse \(RemoloService.type): \(Avahi.errorText(avahi_client_errno(client)))")
        }
        try loop.start()
        let start = Date()
        while true {
            let elapsed = Date().timeIntervalSince(start)
            if elapsed >= seconds { break }
            let state = ctx.state.withLock { $0 }
            if let failure = state.failure { throw DiscoveryError("Avahi: \(failure)") }
            if settle && elapsed >= minimum && state.allForNow && state.pending == 0 { break }
            usleep(20_000)
        }
        return ctx.state.withLock { $0.found }
    }
}

/// What the callbacks (on Avahi's thread) collect for the caller.
private final class BrowseContext: Sendable {
    struct State {
        var found: [DiscoveredReceiver] = []
        var pending = 0
        var allForNow = false
        var failure: String?
    }
    let state = Mutex(State())
}

private func browserClientCallback(_ c: OpaquePointer?, _ state: AvahiClientState, _ userdata: UnsafeMutableRawPointer?) {
    guard let c, let userdata, state == AVAHI_CLIENT_FAILURE else { return }
    let ctx = Unmanaged<BrowseContext>.fromOpaque(userdata).takeUnretainedValue()
    let why = Avahi.errorText(avahi_client_errno(c))
    ctx.state.withLock { $0.failure = why }
}

private func browserCallback(_ b: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol,
                             _ event: AvahiBrowserEvent, _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?,
                             _ domain: UnsafePointer<CChar>?, _ flags: AvahiLookupResultFlags,
                             _ userdata: UnsafeMutableRawPointer?) {
    guard let b, let userdata else { return }
    let ctx = Unmanaged<BrowseContext>.fromOpaque(userdata).takeUnretainedValue()
    switch event {
    case AVAHI_BROWSER_NEW:
        // Resolve on the protocol it was seen on: an instance seen over
        // IPv6 resolves to its IPv6 address, and so on.
        let client = avahi_service_browser_get_client(b)
        if avahi_service_resolver_new(client, interface, proto, name, type, domain, proto, AvahiLookupFlags(0),
                                      resolverCallback, userdata) != nil {
            ctx.state.withLock { $0.pending += 1 }
        }
    case AVAHI_BROWSER_ALL_FOR_NOW:
        ctx.state.withLock { $0.allForNow = true }
    case AVAHI_BROWSER_FAILURE:
        let why = Avahi.errorText(avahi_client_errno(avahi_service_browser_get_client(b)))
        ctx.state.withLock { $0.failure = why }
    default:
        break // REMOVE, CACHE_EXHAUSTED: a snapshot needs neither
    }
}

private func resolverCallback(_ r: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol,
                              _ event: AvahiResolverEvent, _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?,
                              _ domain: UnsafePointer<CChar>?, _ hostName: UnsafePointer<CChar>?,
                              _ address: UnsafePointer<AvahiAddress>?, _ port: UInt16,
                              _ txt: UnsafeMutablePointer<AvahiStringList>?, _ flags: AvahiLookupResultFlags,
                              _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    let ctx = Unmanaged<BrowseContext>.fromOpaque(userdata).takeUnretainedValue()
    var seen: DiscoveredReceiver?
    if event == AVAHI_RESOLVER_FOUND, let address, let name {
        let (host, ipv6) = Avahi.numericHost(address, interface: interface)
        seen = DiscoveredReceiver(name: String(cString: name), host: host,
                                  hostName: hostName.map { String(cString: $0) } ?? host, port: port,
                                  txt: ServiceTXT(strings: Avahi.strings(txt)),
                                  interface: Avahi.interfaceName(interface) ?? "if\(interface)", isIPv6: ipv6)
    }
    ctx.state.withLock { s in
        s.pending -= 1
        if let seen, !s.found.contains(seen) { s.found.append(seen) }
    }
    if let r { avahi_service_resolver_free(r) }
}
