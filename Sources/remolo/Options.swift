import Foundation
import RemoloLab
import RemoloSession

// The one option parser of the command line: flags are read in order, each
// value checked where it is read, and every mistake ends the command with a
// message that says what was expected (exit status 2).

/// Prints to standard error and exits: errors say how to fix.
func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("remolo: \(message)\n".utf8))
    exit(code)
}

/// Prints a line now, even into a pipe (progress of long-running commands).
func say(_ line: String) {
    print(line)
    fflush(nil)
}

struct Options {
    private let args: [String]
    private var i = 0
    private var flag = ""
    let usage: String

    init(_ args: [String], usage: String) {
        self.args = args
        self.usage = usage
    }

    /// The next flag, nil at the end. `-h`/`--help` prints the usage and exits.
    mutating func next() -> String? {
        guard i < args.count else { return nil }
        flag = args[i]
        i += 1
        if flag == "-h" || flag == "--help" { print(usage); exit(0) }
        return flag
    }

    /// The current flag's value.
    mutating func value() -> String {
        guard i < args.count else { fail("\(flag) needs a value\n\(usage)") }
        i += 1
        return args[i - 1]
    }

    mutating func double(in range: ClosedRange<Double>) -> Double {
        let v = value()
        guard let d = Double(v), range.contains(d) else {
            fail("\(flag) takes a number from \(format(range.lowerBound)) to \(format(range.upperBound)), not '\(v)'")
        }
        return d
    }

    mutating func int<T: FixedWidthInteger>(in range: ClosedRange<T>) -> T {
        let v = value()
        guard let n = T(v), range.contains(n) else {
            fail("\(flag) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(v)'")
        }
        return n
    }

    /// HOST:PORT, [V6]:PORT, :PORT (the host then `defaultHost`), or a host
    /// alone (the port then 7420); see `parseHostPort`.
    mutating func hostPort(defaultHost: String = "0.0.0.0") -> (host: String, port: UInt16) {
        parseHostPort(value(), what: flag, defaultHost: defaultHost)
    }

    /// A scenario's name (S1..S7).
    mutating func scenario() -> Scenario {
        let v = value()
        guard let s = Scenario(name: v) else {
            fail("unknown scenario '\(v)': valid are " + Scenario.allCases.map { "\($0.rawValue) (\($0.title))" }.joined(separator: ", "))
        }
        return s
    }

    /// The word after the current one, which must be there (a command's
    /// operand, as in `peers forget FINGERPRINT`).
    mutating func operand(_ what: String) -> String {
        guard i < args.count else { fail("\(flag) needs \(what)\n\(usage)") }
        return value()
    }

    /// `allow` or `deny` (`--keyboard`).
    mutating func keyboardRight() -> KeyboardRight {
        let v = value()
        guard let k = KeyboardRight(rawValue: v) else { fail("\(flag) takes allow or deny, not '\(v)'") }
        return k
    }

    func unknown() -> Never { fail("unknown option '\(flag)'\n\(usage)") }

    private func format(_ d: Double) -> String { d == d.rounded() ? String(Int(d)) : String(d) }
}

/// HOST:PORT, [V6]:PORT, :PORT, or a host alone (the port then
/// `defaultPort`): HOST, [V6], or a bare IPv6 address (two colons or more).
/// An IPv6 address may carry its zone, `fe80::1%wlan0` (RFC 4007 section
/// 11): a link-local address means nothing without the interface it is on.
/// The zone is kept as typed; getaddrinfo turns it into the scope id. A
/// number alone is a port (`--listen 7420`).
func parseHostPort(_ s: String, what: String, defaultHost: String = "0.0.0.0") -> (host: String, port: UInt16) {
    let example = "e.g. 192.168.1.20:\(defaultPort), [fe80::1%wlan0]:\(defaultPort) or fe80::1%wlan0"
    var host = defaultHost
    var portText: String? = s
    if s.hasPrefix("[") {
        guard let close = s.firstIndex(of: "]") else { fail("\(what): '\(s)' lacks the closing ']' (\(example))") }
        host = String(s[s.index(after: s.startIndex)..<close])
        let rest = s[s.index(after: close)...]
        if rest.isEmpty {
            portText = nil
        } else {
            guard rest.hasPrefix(":") else { fail("\(what) takes [IPV6]:PORT (\(example)), not '\(s)'") }
            portText = String(rest.dropFirst())
        }
    } else if s.filter({ $0 == ":" }).count >= 2 {
        // Unbracketed IPv6: the colons belong to the address, so no port.
        host = s
        portText = nil
    } else if let colon = s.lastIndex(of: ":") {
        if colon != s.startIndex { host = String(s[..<colon]) }
        portText = String(s[s.index(after: colon)...])
    } else if UInt16(s) == nil {
        host = s
        portText = nil
    }
    guard !host.isEmpty else { fail("\(what): '\(s)' has an empty host (\(example))") }
    if host.hasSuffix("%") { fail("\(what): '\(s)' has an empty zone after '%': name the interface, as in fe80::1%wlan0") }
    guard let text = portText else { return (host, defaultPort) }
    guard let port = UInt16(text) else {
        fail("\(what) takes HOST:PORT (\(example)), not '\(s)'")
    }
    return (host, port)
}

/// host:port as typed back to a person: IPv6 in brackets.
func formatHostPort(_ host: String, _ port: UInt16) -> String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
}
