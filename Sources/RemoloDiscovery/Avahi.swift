// What the announcer and the browser share: Avahi's threaded poll, the
// client's error text, addresses and TXT lists into Swift values.
//
// Why avahi_threaded_poll and not avahi_simple_poll on a thread of our own:
// the announcer lives as long as the receiver and must react to the daemon
// (a restart, a name collision) from Avahi's callbacks, while the receiver's
// main thread starts and stops it. The threaded poll owns its thread, gives
// the lock that makes calls from other threads safe (every callback already
// runs with it held), and avahi_threaded_poll_stop() joins the thread; with
// the simple poll we would rebuild exactly that, wakeups included.
internal import CAvahi
internal import Glibc
import Foundation

/// A threaded poll whose thread runs from `start()` to `stop()`.
final class AvahiLoop {
    let poll: OpaquePointer
    private var running = false

    init() throws(DiscoveryError) {
        guard let p = avahi_threaded_poll_new() else { throw DiscoveryError("Avahi: cannot create its event loop (out of memory?)") }
        poll = p
    }

    var api: UnsafePointer<AvahiPoll> { avahi_threaded_poll_get(poll) }

    func start() throws(DiscoveryError) {
        guard avahi_threaded_poll_start(poll) == 0 else { throw DiscoveryError("Avahi: cannot start its event loop thread") }
        running = true
    }

    /// Runs `body` with the loop's lock held (needed for any Avahi call from
    /// outside its callbacks once the thread runs).
    func locked<T>(_ body: () -> T) -> T {
        if running { avahi_threaded_poll_lock(poll) }
        defer { if running { avahi_threaded_poll_unlock(poll) } }
        return body()
    }

    /// Stops and joins the thread (never from a callback).
    func stop() {
        if running { avahi_threaded_poll_stop(poll); running = false }
    }

    deinit {
        stop()
        avahi_threaded_poll_free(poll)
    }
}

enum Avahi {
    static func errorText(_ code: Int32) -> String { String(cString: avahi_strerror(code)) }

    /// The note for a client that could not be made: no daemon, or no
    /// system bus to reach it through, is the common case and says what to
    /// start. Both leave discovery off without failing anything.
    static func clientError(_ code: Int32) -> DiscoveryError {
        if code == AVAHI_ERR_NO_DAEMON {
            return DiscoveryError("no Avahi daemon is running (start it: `systemctl start avahi-daemon`, "
                                  + "Debian package avahi-daemon)", daemonMissing: true)
        }
        if code == AVAHI_ERR_DBUS_ERROR {
            // avahi-daemon is asked over the D-Bus system bus; a sandbox
            // without AF_UNIX, or no dbus-daemon, ends here.
            return DiscoveryError("cannot reach avahi-daemon: no D-Bus system bus here (start dbus and avahi-daemon: "
                                  + "`systemctl start avahi-daemon`, Debian packages dbus and avahi-daemon)",
                                  daemonMissing: true)
        }
        return DiscoveryError("Avahi: \(errorText(code))")
    }

    /// Every string of a TXT list, as bytes.
    static func strings(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var l = list
        while let n = l {
            let size = Int(avahi_string_list_get_size(n))
            if let text = avahi_string_list_get_text(n) {
                out.append(Array(UnsafeBufferPointer(start: text, count: size)))
            }
            l = avahi_string_list_get_next(n)
        }
        return out
    }

    /// A TXT list from strings, in order (the caller frees it).
    static func list(_ strings: [String]) -> UnsafeMutablePointer<AvahiStringList>? {
        var l: UnsafeMutablePointer<AvahiStringList>?
        for s in strings { l = avahi_string_list_add(l, s) }
        return l
    }

    /// The numeric address; an IPv6 link-local one gets its zone, the
    /// interface's name (RFC 4007 section 11): without it a sender could
    /// not say which link the address is on.
    static func numericHost(_ a: UnsafePointer<AvahiAddress>, interface: Int32) -> (host: String, ipv6: Bool) {
        var buf = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX) + 1)
        avahi_address_snprint(&buf, buf.count, a)
        let text = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        guard a.pointee.proto == AVAHI_PROTO_INET6 else { return (text, false) }
        let linkLocal = withUnsafeBytes(of: a.pointee.data) { b in b[0] == 0xfe && (b[1] & 0xc0) == 0x80 }
        guard linkLocal, let name = interfaceName(interface) else { return (text, true) }
        return (text + "%" + name, true)
    }

    static func interfaceName(_ index: Int32) -> String? {
        guard index > 0 else { return nil }
        var buf = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &buf) != nil else { return nil }
        return buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
