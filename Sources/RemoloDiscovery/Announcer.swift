// The receiver announces itself with DNS-SD (RFC 6763) through the Avahi
// daemon: `_remolo._udp` on its port, with its fingerprint and protocol
// version in the TXT record (ServiceRecord.swift). No daemon is no failure:
// the receiver says so once and waits for one to appear.
internal import CAvahi
internal import Glibc
import Foundation
import Synchronization

/// An announcement that lasts until `stop()` (or deinit). Survives the
/// daemon going away and coming back, and renames itself on a name
/// collision (RFC 6762 section 9), as every DNS-SD publisher must.
public final class Announcer: @unchecked Sendable {
    // @unchecked Sendable: every mutable field is touched only on Avahi's
    // loop thread or with its lock held (AvahiLoop.locked).
    private let loop: AvahiLoop
    fileprivate var client: OpaquePointer?
    fileprivate var group: OpaquePointer?
    fileprivate var name: String
    fileprivate let port: UInt16
    fileprivate let txt: [String]
    fileprivate let interface: Int32
    fileprivate let proto: Int32
    fileprivate let onEvent: @Sendable (String) -> Void
    fileprivate var saidWaiting = false
    private var stopped = false

    /// Announces `name` on `port`.
    /// - Parameters:
    ///   - family: AF_INET, AF_INET6 or AF_UNSPEC (both): which addresses
    ///     a sender may resolve, as the receiver listens.
    ///   - interfaceIndex: only on this interface (0: all).
    ///   - onEvent: one line per change (announced, renamed, no daemon),
    ///     from Avahi's thread.
    /// - Throws: only when Avahi cannot be used at all (no D-Bus system
    ///   bus, `daemonMissing` then true); a missing daemon is an event.
    public init(name: String, port: UInt16, txt: ServiceTXT, family: Int32 = AF_UNSPEC,
                interfaceIndex: Int32 = 0, onEvent: @escaping @Sendable (String) -> Void) throws(DiscoveryError) {
        loop = try AvahiLoop()
        self.name = name
        self.port = port
        self.txt = txt.strings
        self.interface = interfaceIndex > 0 ? interfaceIndex : Int32(AVAHI_IF_UNSPEC)
        self.proto = avahi_af_to_proto(family)
        self.onEvent = onEvent
        var err: Int32 = 0
        // NO_FAIL: without a daemon the client waits for one (state
        // CONNECTING) instead of failing; it still needs the system bus.
        client = avahi_client_new(loop.api, AVAHI_CLIENT_NO_FAIL, announcerClientCallback,
                                  Unmanaged.passUnretained(self).toOpaque(), &err)
        guard client != nil else { throw Avahi.clientError(err) }
        try loop.start()
    }

    /// The name the service has now (after any collision renames).
    public var currentName: String { loop.locked { name } }

    /// Withdraws the announcement (the daemon sends goodbye packets). Idempotent.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        loop.stop()
        if let c = client { avahi_client_free(c) } // frees the group too
        client = nil
        group = nil
    }

    deinit { stop() }

    /// Adds the service to the (new or reset) group and commits it. On Avahi's thread.
    fileprivate func publish(_ c: OpaquePointer) {
        if group == nil {
            group = avahi_entry_group_new(c, announcerGroupCallback, Unmanaged.passUnretained(self).toOpaque())
            guard group != nil else {
                onEvent("note: not announced on the LAN: \(Avahi.errorText(avahi_client_errno(c)))")
                return
            }
        }
        guard let g = group, avahi_entry_group_is_empty(g) != 0 else { return }
        let list = Avahi.list(txt)
        defer { avahi_string_list_free(list) }
        var r = avahi_entry_group_add_service_strlst(g, interface, proto, AvahiPublishFlags(0), name,
                                                     RemoloService.type, nil, nil, port, list)
        if r == AVAHI_ERR_COLLISION {
            rename()
            r = avahi_entry_group_add_service_strlst(g, interface, proto, AvahiPublishFlags(0), name,
                                                     RemoloService.type, nil, nil, port, list)
        }
        if r == 0 { r = avahi_entry_group_commit(g) }
        if r < 0 { onEvent("note: not announced on the LAN: \(Avahi.errorText(r))") }
    }

    /// The next name after a collision ("Remolo on box #2").
    fileprivate func rename() {
        guard let alt = avahi_alternative_service_name(name) else { return }
        let old = name
        name = String(cString: alt)
        avahi_free(alt)
        onEvent("the name '\(old)' is taken on the LAN; announcing as '\(name)'")
    }

    fileprivate func clientChanged(_ c: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            saidWaiting = false
            publish(c)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is changing: records go again once it is settled.
            if let g = group { avahi_entry_group_reset(g) }
        case AVAHI_CLIENT_CONNECTING:
            if !saidWaiting {
                saidWaiting = true
                onEvent("note: avahi-daemon is not running, so this receiver is not announced on the LAN "
                        + "(senders need --to HOST:PORT); it will be once avahi-daemon starts")
            }
        case AVAHI_CLIENT_FAILURE:
            let e = avahi_client_errno(c)
            group = nil
            if e == AVAHI_ERR_DISCONNECTED {
                // The daemon went away (restart, upgrade): a new client
                // waits for it and announces again.
                avahi_client_free(c)
                client = avahi_client_new(loop.api, AVAHI_CLIENT_NO_FAIL, announcerClientCallback,
                                          Unmanaged.passUnretained(self).toOpaque(), nil)
                if client == nil { onEvent("note: lost the Avahi daemon; no longer announced on the LAN") }
            } else {
                onEvent("note: not announced on the LAN: \(Avahi.errorText(e))")
            }
        default:
            break
        }
    }

    fileprivate func groupChanged(_ g: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            onEvent("announced as '\(name)' (\(RemoloService.type), port \(port))")
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename()
            avahi_entry_group_reset(g)
            if let c = client { publish(c) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            onEvent("note: announcing failed: \(Avahi.errorText(avahi_client_errno(avahi_entry_group_get_client(g))))")
        default:
            break
        }
    }
}

private func announcerClientCallback(_ c: OpaquePointer?, _ state: AvahiClientState, _ userdata: UnsafeMutableRawPointer?) {
    guard let c, let userdata else { return }
    Unmanaged<Announcer>.fromOpaque(userdata).takeUnretainedValue().clientChanged(c, state)
}

private func announcerGroupCallback(_ g: OpaquePointer?, _ state: AvahiEntryGroupState, _ userdata: UnsafeMutableRawPointer?) {
    guard let g, let userdata else { return }
    Unmanaged<Announcer>.fromOpaque(userdata).takeUnretainedValue().groupChanged(g, state)
}
