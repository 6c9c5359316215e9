// The receiver's config file: `$REMOLO_CONFIG_DIR/config`, one `key = value`
// per line, the keys being `remolo receive`'s long options without `--`. It
// becomes argument words put before the command line's, so one parser checks
// both and the command line wins (a later value replaces an earlier one).

import RemoloDevices
import RemoloPlayout

/// A mistake in the config file: which line, what is wrong, how to fix it.
public struct ReceiveConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    public let path: String
    public let line: Int
    public let message: String

    public var description: String { "\(path):\(line): \(message)" }
}

public enum ReceiveConfig {
    /// The file's name inside the config directory.
    public static let fileName = "config"

    /// One key: an option of `remolo receive` that takes a value, or a flag
    /// (`true`/`false`, `yes`/`no`). The table below is the one place each
    /// option of `remolo receive` is described: its --help, the manual's
    /// CONFIGURATION FILE, docs/cli.md's receive table (DocsTests compares
    /// it) and this parser all read it.
    public struct Key: Sendable, Equatable {
        public let name: String
        /// The value as the synopsis shows it (`ADDR:PORT`, `allow|deny`);
        /// nil for a flag.
        public let value: String?
        /// What it is when neither the file nor the command line sets it.
        public let defaultValue: String
        /// One line: what it does (the manual's and docs/cli.md's tables).
        public let summary: String
        /// The --help description's lines, laid out for the description
        /// column (at most `helpWidth` wide; deeper indentation is a table).
        public let help: [String]
        /// A value for the config file's example and its error messages.
        public let example: String

        public var takesValue: Bool { value != nil }

        init(_ name: String, _ value: String?, default defaultValue: String, example: String,
             _ summary: String, help: [String]) {
            self.name = name
            self.value = value
            self.defaultValue = defaultValue
            self.summary = summary
            self.help = help
            self.example = example
        }
    }

    /// The default port (TCP and UDP).
    public static let defaultPort = 7420

    /// Every key, in the order of `remolo receive --help`.
    public static let keys: [Key] = [
        Key("listen", "ADDR:PORT", default: "[::]:\(defaultPort)", example: "[::]:\(defaultPort)",
            "address and port for TCP and UDP; 0.0.0.0 for IPv4 only", help: [
            "address and port for TCP (handshakes, buttons) and UDP (pointer",
            "datagrams) (default [::]:\(defaultPort): IPv6 and IPv4; 0.0.0.0",
            "for IPv4 only; a link-local address takes its zone,",
            "[fe80::1%wlan0]:\(defaultPort))"]),
        Key("web", "[ADDR:]PORT", default: "off", example: "8443",
            "serve the phone page over HTTPS on this TCP port, its data channel on this UDP port", help: [
            "serve the phone page over HTTPS on this port (e.g. 8443; the",
            "address defaults to --listen's): the phone's browser becomes",
            "the trackpad, speaking the same sealed protocol through a",
            "WebSocket. Its motion rides a WebRTC data channel on UDP on",
            "the same port number where the browser has one, so a",
            "firewall must let in TCP and UDP PORT (ufw allow PORT). The",
            "self-signed certificate is made on first use (web-cert.pem,",
            "web-key.pem in the config directory)"]),
        Key("ca", nil, default: "false", example: "true",
            "with web: the page's certificate from this receiver's own authority", help: [
            "with --web: a certificate issued by this receiver's own",
            "certificate authority instead of the self-signed one. The",
            "authority is made on first use (web-ca.pem, web-ca-key.pem)",
            "and served at /ca.crt (Android) and /remolo.mobileconfig",
            "(iPhone): installed once, the phone trusts the page without a",
            "warning (certificates.md, SEE ALSO)"]),
        Key("pair", nil, default: "false", example: "true",
            "issue a pairing code at start and print it", help: [
            "also issue a pairing code now and print it, with the sender's",
            "command (with --web: as the page's URL and a QR code for the",
            "phone's camera)"]),
        Key("keyboard", "allow|deny", default: "allow", example: "allow",
            "whether the sender paired with pair's code may type", help: [
            "whether the sender pairing with --pair's code may type on",
            "this machine, not only point (default allow; change it later",
            "with remolo peers allow-keyboard / deny-keyboard FINGERPRINT)"]),
        Key("output", "uinput|x11|portal|auto", default: "auto", example: "uinput",
            "where the pointer moves", help: [
            "where the pointer moves (default auto; desktop.md):",
            "uinput  a virtual mouse (/dev/uinput): consoles, login",
            "        screens, services, games reading evdev. A desktop's",
            "        libinput accelerates it a second time unless its",
            "        profile is flat: the receiver says so, and sets it",
            "        flat where it can for this device alone (sway, KDE",
            "        Plasma, X11)",
            "x11     XTest on $DISPLAY: not accelerated; falls back to",
            "        uinput if the X server goes away",
            "portal  the RemoteDesktop portal (a Wayland session: GNOME,",
            "        KDE): not accelerated; the desktop asks to allow it",
            "auto    portal on a Wayland session that offers it (on GNOME",
            "        whose portal cannot remember consent, mutter's own",
            "        RemoteDesktop API, which asks nothing), x11 on an X11",
            "        session with XTest, else uinput; one line says which"]),
        Key("name", "NAME", default: "\"\(PointerDevice.defaultName)\"", example: "Living room pointer",
            "the pointer device's name", help: [
            "the pointer device's name (default \"\(PointerDevice.defaultName)\")"]),
        Key("keymap", "LAYOUT[:VARIANT]", default: "/etc/default/keyboard's, else us", example: "de:nodeadkeys",
            "the keyboard layout text from senders is typed in", help: [
            "the keyboard layout text from senders is typed in (e.g. us,",
            "de, fr:bepo; default: XKBLAYOUT and XKBVARIANT of",
            "/etc/default/keyboard, else us)"]),
        Key("no-keyboard", nil, default: "false", example: "true",
            "take no keys or text from any sender", help: [
            "take no keys or text from any sender (they are told why); no",
            "\"Remolo keyboard\" device is made"]),
        Key("no-redundancy", nil, default: "false", example: "true",
            "grant no sender the running totals that replay lost motion", help: [
            "grant no sender the redundancy feature: its datagrams stay 49",
            "bytes and the motion of a lost one is lost (by default a",
            "sender that asks sends the session's running totals in each",
            "datagram, 65 bytes, and the motion of lost ones is played",
            "from the next)"]),
        Key("no-gestures", nil, default: "false", example: "true",
            "grant no sender gestures; make no touchpad", help: [
            "grant no sender gestures (three- and four-finger swipes and",
            "pinches) and make no \"Remolo touchpad\" device (by default",
            "one is made when a sender first asks, and its gestures reach",
            "the desktop through libinput)"]),
        Key("no-announce", nil, default: "false", example: "true",
            "do not announce this receiver on the LAN (DNS-SD)", help: [
            "do not announce this receiver on the LAN (by default it does,",
            "as _remolo._udp through avahi-daemon, so that `remolo send`",
            "finds it without --to)"]),
        Key("drain-hz", "auto|HZ", default: "auto", example: "576",
            "how often motion is let out to the pointer", help: [
            "how often motion is let out to the pointer (default auto): a",
            "whole multiple of the display's refresh, so that every frame",
            "shows as many steps (576 Hz for 144 Hz, 495 for 165, 720 for",
            "360; with several displays the rate that suits all best).",
            "auto reads the connected displays' modes from /dev/dri (DRM)",
            "and keeps 480 Hz, saying why, when it cannot; HZ sets it, from",
            "\(DrainRate.minHz) to \(DrainRate.maxHz) (drain-rate.md)"]),
        Key("delay", "default|window|chooser", default: "default", example: "window",
            "how the playout delay is sized", help: [
            "how the playout delay is sized (default default: the delay",
            "that replaying the last seconds at each candidate delay says",
            "costs least, never below what both the last 2 s and the",
            "whole session say most packets need; window: the last 2 s's",
            "p95 lateness plus a margin; chooser: the replay alone, up to",
            "100 ms). With each,",
            "a returning sender's session starts at the delay its network",
            "needed before (kept per sender and network in delay-memory/",
            "in the config directory)"]),
        Key("rt", "PRIORITY", default: "off", example: "50",
            "run the drain loop SCHED_FIFO at this priority (1-99)", help: [
            "run the drain loop SCHED_FIFO at PRIORITY (1-99; needs",
            "CAP_SYS_NICE: for the service, remolo install --rt)"]),
        Key("stats", "SECONDS", default: "off", example: "10",
            "print the loop's counters every SECONDS", help: [
            "print the loop's counters every SECONDS"]),
        Key("stats-json", nil, default: "false", example: "true",
            "print the counters as one JSON object per line", help: [
            "print them as one JSON object per line (every second unless",
            "--stats says; drop reasons: short, long, unknown_session,",
            "replay, bad_tag, bad_kind, bad_field)"]),
        Key("sink", "FILE", default: "off (uinput)", example: "/var/lib/remolo/frames",
            "write the evdev frames to FILE instead of a device", help: [
            "write the pointer's evdev frames (struct input_event, one",
            "write per drain tick) to FILE instead of a uinput device:",
            "a recording sink for machines without /dev/uinput"]),
        Key("touchpad-sink", "FILE", default: "off (uinput)", example: "/var/lib/remolo/touches",
            "write the touchpad's evdev frames to FILE instead of a device", help: [
            "write the gesture touchpad's evdev frames to FILE instead of",
            "a uinput device (made at the first sender granted gestures);",
            "with --sink, gestures are offered only with this"]),
        Key("record-arrivals", "FILE", default: "off", example: "/var/lib/remolo/arrivals.trace",
            "record every datagram's send and arrival time", help: [
            "record every datagram's send and arrival time in the lab's",
            "trace format (the first session's only); replay your own",
            "network with `remolo simulate --trace FILE`"]),
        Key("seconds", "N", default: "until SIGINT or SIGTERM", example: "3600",
            "stop after N seconds", help: [
            "stop after N seconds (default: until SIGINT/SIGTERM)"]),
    ]

    /// The width of --help's lines, so that `man` at 80 columns fits them.
    public static let helpWidth = 78
    /// Where the descriptions start in --help.
    static let descriptionColumn = 14

    /// `remolo receive`'s synopsis, wrapped to `helpWidth`.
    public static var synopsis: String {
        let lead = "usage: remolo receive "
        var lines: [String] = []
        var line = lead
        for k in keys {
            let word = "[--\(k.name)" + (k.value.map { " " + $0 } ?? "") + "]"
            if line.count > lead.count && line.count + 1 + word.count > helpWidth {
                lines.append(line)
                line = String(repeating: " ", count: lead.count)
            }
            line += (line.hasSuffix(" ") ? "" : " ") + word
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }

    /// The options part of `remolo receive --help`: every key as an item,
    /// `--name VALUE` then its description at the description column (on
    /// the next line when the term is too long for the space before it).
    public static var optionItems: String {
        var out: [String] = []
        let pad = String(repeating: " ", count: descriptionColumn)
        for k in keys {
            let term = "  --" + k.name + (k.value.map { " " + $0 } ?? "")
            var help = k.help
            if term.count + 2 <= descriptionColumn, let first = help.first {
                out.append(term + String(repeating: " ", count: descriptionColumn - term.count) + first)
                help.removeFirst()
            } else {
                out.append(term)
            }
            out += help.map { pad + $0 }
        }
        return out.joined(separator: "\n")
    }

    /// An example file: a receiver serving the phone page (what
    /// docs/service.md's flow writes).
    public static let exampleFile = """
        # /var/lib/remolo/config: the service serves the phone page
        web = 8443
        ca = true
        keymap = de
        stats = 60
        """

    private static var keyList: String { keys.map(\.name).joined(separator: ", ") }

    /// The file's text as argument words for `remolo receive`, e.g.
    /// `listen = :7420` and `stats-json = true` give
    /// `["--listen", ":7420", "--stats-json"]`.
    ///
    /// Blank lines and lines whose first non-blank character is `#` are
    /// skipped. A value may be put in double quotes to keep blanks at its
    /// ends. `#` after a value is part of the value. `path` only names the
    /// file in errors.
    public static func arguments(parsing text: String, path: String) throws(ReceiveConfigError) -> [String] {
        var words: [String] = []
        var seen: [String: Int] = [:]
        var number = 0
        // "\r\n" is one Character in Swift, so it is a separator of its own.
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            let line = trimmed(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            func error(_ m: String) -> ReceiveConfigError { ReceiveConfigError(path: path, line: number, message: m) }

            guard let eq = line.firstIndex(of: "=") else {
                let bare = line.hasPrefix("--") ? String(line.dropFirst(2)) : line
                if let k = keys.first(where: { $0.name == bare }) {
                    throw error("'\(line)' needs a value: write `\(k.name) = \(k.example)`")
                }
                throw error("expected `key = value`, not '\(line)'; e.g. `listen = [::]:7420`, "
                            + "or put `#` in front to make it a comment")
            }
            var name = trimmed(line[..<eq])
            var value = trimmed(line[line.index(after: eq)...])
            if name.isEmpty {
                throw error("no key before '='; write `key = value` with one of: \(keyList)")
            }
            if name.hasPrefix("-") {
                let plain = String(name.drop(while: { $0 == "-" }))
                throw error("write the key without dashes: `\(plain) = \(value)`")
            }
            guard let key = keys.first(where: { $0.name == name }) else {
                throw error("unknown key '\(name)'; the keys are the long options of `remolo receive` "
                            + "without --: \(keyList)")
            }
            name = key.name
            if let first = seen[name] {
                throw error("'\(name)' is already set on line \(first); keep one of the two lines")
            }
            seen[name] = number
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            } else if value.hasPrefix("\"") || value.hasSuffix("\"") {
                throw error("unbalanced quote in '\(value)'; quote the whole value or none of it")
            }
            if key.takesValue {
                guard !value.isEmpty else { throw error("'\(name)' needs a value, e.g. `\(name) = \(key.example)`") }
                words += ["--" + name, value]
            } else {
                switch value.lowercased() {
                case "true", "yes": words.append("--" + name)
                case "false", "no": break
                default: throw error("'\(name)' is a flag: write `\(name) = true` or `\(name) = false`, not '\(value)'")
                }
            }
        }
        return words
    }

    private static func trimmed(_ s: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(s.drop(while: blank).reversed().drop(while: blank).reversed())
    }

    private static func trimmed(_ s: String) -> String { trimmed(Substring(s)) }
}
