// A small D-Bus client over sd-bus (libsystemd): method calls built from
// basic values and `a{sv}` dictionaries, replies and signals read back as
// `DBusValue`s. Just what the RemoteDesktop portal needs, not a binding.
//
// sd-bus objects are "thread-agnostic: only a single thread may operate on
// a given object at any given time" (sd-bus(3)); the owner of a
// `DBusConnection` serialises every use of it (PortalBackend's lock).

internal import CSystemd
internal import Glibc

/// A value this layer writes into a message or reads out of one.
enum DBusValue: Equatable, Sendable, CustomStringConvertible {
    case string(String)
    case objectPath(String)
    case uint32(UInt32)
    case int32(Int32)
    case double(Double)
    case bool(Bool)
    /// Something read and skipped (a container, a type not listed here).
    case other(String)

    var description: String {
        switch self {
        case let .string(s), let .objectPath(s): "\"\(s)\""
        case let .uint32(v): "\(v)"
        case let .int32(v): "\(v)"
        case let .double(v): "\(v)"
        case let .bool(v): "\(v)"
        case let .other(t): "<\(t)>"
        }
    }

    var string: String? {
        switch self {
        case let .string(s), let .objectPath(s): s
        default: nil
        }
    }

    var uint32: UInt32? { if case let .uint32(v) = self { v } else { nil } }
}

/// A D-Bus failure: an error reply (`name` set) or a local one (`errno`).
struct DBusError: Error, Sendable, CustomStringConvertible {
    var name: String
    var message: String
    var errno: Int32

    init(name: String, message: String) {
        self.name = name
        self.message = message
        errno = 0
    }

    /// A negative errno from sd-bus, with what was being done.
    init(_ r: Int32, _ doing: String) {
        name = ""
        errno = -r
        message = "\(doing): \(String(cString: strerror(-r)))"
    }

    var description: String { name.isEmpty ? message : "\(name): \(message)" }
    /// The connection itself is gone (the bus closed it, or its peer died).
    var isDisconnect: Bool { [ECONNRESET, ENOTCONN, EPIPE, ESHUTDOWN].contains(errno) }
}

/// An owned `sd_bus_message`.
final class DBusMessage {
    let m: OpaquePointer

    init(owning m: OpaquePointer) { self.m = m }
    deinit { sd_bus_message_unref(m) }

    private func check(_ r: Int32, _ what: String) throws(DBusError) {
        if r < 0 { throw DBusError(r, what) }
    }

    // ---- writing ----

    func append(_ v: DBusValue) throws(DBusError) {
        var r: Int32
        switch v {
        case let .string(s): r = s.withCString { sd_bus_message_append_basic(m, CChar(UInt8(ascii: "s")), $0) }
        case let .objectPath(s): r = s.withCString { sd_bus_message_append_basic(m, CChar(UInt8(ascii: "o")), $0) }
        case var .uint32(x): r = sd_bus_message_append_basic(m, CChar(UInt8(ascii: "u")), &x)
        case var .int32(x): r = sd_bus_message_append_basic(m, CChar(UInt8(ascii: "i")), &x)
        case var .double(x): r = sd_bus_message_append_basic(m, CChar(UInt8(ascii: "d")), &x)
        // sd-bus reads a D-Bus boolean from an int.
        case let .bool(b): var x: Int32 = b ? 1 : 0; r = sd_bus_message_append_basic(m, CChar(UInt8(ascii: "b")), &x)
        case let .other(t): throw DBusError(name: "", message: "cannot write a value of type \(t)")
        }
        try check(r, "appending \(v)")
    }

    /// An `a{sv}` vardict with basic values.
    func appendOptions(_ options: [(String, DBusValue)]) throws(DBusError) {
        try check(sd_bus_message_open_container(m, CChar(UInt8(ascii: "a")), "{sv}"), "opening a{sv}")
        for (key, value) in options {
            try check(sd_bus_message_open_container(m, CChar(UInt8(ascii: "e")), "sv"), "opening {sv}")
            try append(.string(key))
            try check(sd_bus_message_open_container(m, CChar(UInt8(ascii: "v")), Self.signature(of: value)),
                      "opening a variant")
            try append(value)
            try check(sd_bus_message_close_container(m), "closing a variant")
            try check(sd_bus_message_close_container(m), "closing {sv}")
        }
        try check(sd_bus_message_close_container(m), "closing a{sv}")
    }

    static func signature(of v: DBusValue) -> String {
        switch v {
        case .string: "s"
        case .objectPath: "o"
        case .uint32: "u"
        case .int32: "i"
        case .double: "d"
        case .bool: "b"
        case let .other(t): t
        }
    }

    // ---- reading ----

    /// The next value, if it is a basic one; a container is skipped and
    /// read as `.other(signature)`.
    func read() throws(DBusError) -> DBusValue {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let r = sd_bus_message_peek_type(m, &type, &contents)
        try check(r, "reading a message")
        guard r > 0 else { throw DBusError(name: "", message: "a message ended before a value was read") }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            var p: UnsafePointer<CChar>?
            try check(sd_bus_message_read_basic(m, type, &p), "reading a string")
            let s = p.map { String(cString: $0) } ?? ""
            return type == CChar(UInt8(ascii: "o")) ? .objectPath(s) : .string(s)
        case UInt8(ascii: "u"):
            var x: UInt32 = 0
            try check(sd_bus_message_read_basic(m, type, &x), "reading a uint32")
            return .uint32(x)
        case UInt8(ascii: "i"):
            var x: Int32 = 0
            try check(sd_bus_message_read_basic(m, type, &x), "reading an int32")
            return .int32(x)
        case UInt8(ascii: "d"):
            var x: Double = 0
            try check(sd_bus_message_read_basic(m, type, &x), "reading a double")
            return .double(x)
        case UInt8(ascii: "b"):
            var x: Int32 = 0
            try check(sd_bus_message_read_basic(m, type, &x), "reading a boolean")
            return .bool(x != 0)
        case UInt8(ascii: "v"):
            let inner = contents.map { String(cString: $0) } ?? ""
            try check(sd_bus_message_enter_container(m, type, inner), "entering a variant")
            let v = try read()
            try check(sd_bus_message_exit_container(m), "leaving a variant")
            return v
        default:
            let sig: String
            if let contents {
                let c = String(cString: contents)
                sig = type == CChar(UInt8(ascii: "a")) ? "a" + c : "(" + c + ")"
            } else {
                sig = String(UnicodeScalar(UInt8(bitPattern: type)))
            }
            try check(sd_bus_message_skip(m, sig), "skipping \(sig)")
            return .other(sig)
        }
    }

    /// An `a{sv}` vardict; values that are not basic are `.other`.
    func readOptions() throws(DBusError) -> [String: DBusValue] {
        var out: [String: DBusValue] = [:]
        try check(sd_bus_message_enter_container(m, CChar(UInt8(ascii: "a")), "{sv}"), "entering a{sv}")
        while true {
            let r = sd_bus_message_enter_container(m, CChar(UInt8(ascii: "e")), "sv")
            try check(r, "entering {sv}")
            if r == 0 { break }
            guard case let .string(key) = try read() else {
                throw DBusError(name: "", message: "a vardict key is not a string")
            }
            out[key] = try read()
            try check(sd_bus_message_exit_container(m), "leaving {sv}")
        }
        try check(sd_bus_message_exit_container(m), "leaving a{sv}")
        return out
    }

    var member: String { sd_bus_message_get_member(m).map { String(cString: $0) } ?? "" }
    var path: String { sd_bus_message_get_path(m).map { String(cString: $0) } ?? "" }
}

/// What a signal is handed to. The connection keeps every handler alive
/// as long as itself, so sd-bus's userdata pointer never dangles.
final class DBusHandler {
    let body: (DBusMessage) -> Void
    init(_ body: @escaping (DBusMessage) -> Void) { self.body = body }
}

/// sd-bus calls this for signals; userdata is a DBusHandler.
private let trampoline: sd_bus_message_handler_t = { m, userdata, _ in
    guard let m, let userdata else { return 0 }
    let h = Unmanaged<DBusHandler>.fromOpaque(userdata).takeUnretainedValue()
    h.body(DBusMessage(owning: sd_bus_message_ref(m)))
    return 0
}

/// One connection to a message bus.
final class DBusConnection {
    let bus: OpaquePointer
    private var handlers: [DBusHandler] = []
    private var slots: [OpaquePointer] = []

    /// Connects to `address` (a D-Bus address such as `unix:path=...`), or
    /// to the user's session bus ($DBUS_SESSION_BUS_ADDRESS, else
    /// $XDG_RUNTIME_DIR/bus) when nil.
    init(address: String?) throws(DBusError) {
        var b: OpaquePointer?
        if let address {
            var r = sd_bus_new(&b)
            guard r >= 0, let nb = b else { throw DBusError(r, "sd_bus_new") }
            r = sd_bus_set_address(nb, address)
            if r >= 0 { r = sd_bus_set_bus_client(nb, 1) }
            if r >= 0 { r = sd_bus_start(nb) }
            if r < 0 {
                sd_bus_unref(nb)
                throw DBusError(r, "connecting to the D-Bus bus at \(address)")
            }
        } else {
            let r = sd_bus_open_user(&b)
            guard r >= 0, b != nil else { throw DBusError(r, "connecting to the session bus") }
        }
        bus = b!
    }

    deinit {
        for s in slots { sd_bus_slot_unref(s) }
        sd_bus_flush_close_unref(bus)
    }

    var uniqueName: String {
        var p: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &p) >= 0, let p else { return "" }
        return String(cString: p)
    }

    var isOpen: Bool { sd_bus_is_open(bus) > 0 }

    func methodCall(_ destination: String, _ path: String, _ interface: String,
                    _ member: String) throws(DBusError) -> DBusMessage {
        var m: OpaquePointer?
        let r = sd_bus_message_new_method_call(bus, &m, destination, path, interface, member)
        guard r >= 0, let m else { throw DBusError(r, "building \(interface).\(member)") }
        return DBusMessage(owning: m)
    }

    /// Sends `m` and waits for its reply (processing whatever else arrives
    /// meanwhile: signals are dispatched later by `process`).
    func call(_ m: DBusMessage, timeoutUs: UInt64 = 0) throws(DBusError) -> DBusMessage {
        var e = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&e) }
        var reply: OpaquePointer?
        let r = sd_bus_call(bus, m.m, timeoutUs, &e, &reply)
        if r < 0 {
            if sd_bus_error_is_set(&e) != 0 {
                var err = DBusError(name: e.name.map { String(cString: $0) } ?? "",
                                    message: e.message.map { String(cString: $0) } ?? "")
                err.errno = -r
                throw err
            }
            throw DBusError(r, "calling \(m.member)")
        }
        return DBusMessage(owning: reply!)
    }

    /// Routes matching signals to `handler` for the connection's life.
    func onSignal(sender: String?, path: String?, interface: String, member: String,
                  handler: DBusHandler) throws(DBusError) {
        keep(handler)
        var slot: OpaquePointer?
        let r = sd_bus_match_signal(bus, &slot, sender, path, interface, member, trampoline,
                                    Unmanaged.passUnretained(handler).toOpaque())
        if r < 0 { throw DBusError(r, "subscribing to \(interface).\(member)") }
        if let slot { slots.append(slot) }
    }

    private func keep(_ h: DBusHandler) {
        if !handlers.contains(where: { $0 === h }) { handlers.append(h) }
    }

    /// Dispatches everything that has arrived; false once nothing is left.
    func processAll() throws(DBusError) {
        while true {
            let r = sd_bus_process(bus, nil)
            if r < 0 { throw DBusError(r, "reading from the bus") }
            if r == 0 { return }
        }
    }

    /// Blocks until something arrives or `timeoutUs` passes.
    func wait(timeoutUs: UInt64) throws(DBusError) {
        let r = sd_bus_wait(bus, timeoutUs)
        if r < 0 && r != -EINTR { throw DBusError(r, "waiting on the bus") }
    }

    /// Writes out everything queued (blocks while the socket is full).
    func flush() throws(DBusError) {
        let r = sd_bus_flush(bus)
        if r < 0 { throw DBusError(r, "writing to the bus") }
    }

    var fd: Int32 { sd_bus_get_fd(bus) }
    /// poll(2) events to wait for now.
    var events: Int16 { Int16(truncatingIfNeeded: max(0, sd_bus_get_events(bus))) }
    /// When sd-bus next needs to run (a reply's timeout), CLOCK_MONOTONIC µs.
    var deadlineUs: UInt64? {
        var t: UInt64 = 0
        guard sd_bus_get_timeout(bus, &t) > 0, t != UInt64.max else { return nil }
        return t
    }

    /// `org.freedesktop.DBus.Properties.Get`.
    func property(_ destination: String, _ path: String, _ interface: String,
                  _ name: String) throws(DBusError) -> DBusValue {
        let m = try methodCall(destination, path, "org.freedesktop.DBus.Properties", "Get")
        try m.append(.string(interface))
        try m.append(.string(name))
        return try call(m, timeoutUs: 5_000_000).read()
    }

    /// The unique name owning `name`, or nil when none does.
    func owner(of name: String) -> String? {
        guard let m = try? methodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                      "GetNameOwner"),
              (try? m.append(.string(name))) != nil,
              let reply = try? call(m, timeoutUs: 5_000_000) else { return nil }
        return (try? reply.read())?.string
    }
}
