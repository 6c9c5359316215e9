// The files `remolo install` writes: a systemd unit for the receiver, the
// udev rule that lets its group open /dev/uinput, and a modules-load.d entry
// that loads uinput at boot. Pure functions of the options: nothing here
// touches the file system, so the CLI, `--print` and the tests see the same
// text.

/// Which service manager runs the receiver.
public enum ServiceScope: String, Sendable, Equatable, CaseIterable {
    /// The system manager (PID 1): the unit in /etc/systemd/system, run as a
    /// dynamic user that owns nothing but its state directory.
    case system
    /// The user's own manager (`systemctl --user`): the unit in
    /// `$XDG_CONFIG_HOME/systemd/user`, run as that user.
    case user
}

/// What `remolo install` was asked for.
public struct ServiceSpec: Sendable, Equatable {
    public var scope: ServiceScope
    /// The absolute path of the `remolo` binary the unit starts.
    public var binary: String
    /// `--rt PRIORITY`: the drain loop runs SCHED_FIFO at this priority.
    public var realtimePriority: Int32?

    public init(scope: ServiceScope, binary: String, realtimePriority: Int32? = nil) {
        self.scope = scope
        self.binary = binary
        self.realtimePriority = realtimePriority
    }
}

/// A mistake in what was asked, saying how to fix it.
public struct ServiceError: Error, CustomStringConvertible, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One file to install: where it goes (without any `--root` prefix), what it
/// holds, and whether only root may write it.
public struct ServiceFile: Sendable, Equatable {
    public let path: String
    public let contents: String
    public let needsRoot: Bool
    /// For people: what the file is for.
    public let role: String
}

public enum ServiceFiles {
    /// The first line of every file remolo writes. `remolo install` only
    /// overwrites, and `remolo uninstall` only removes, files that start with it.
    public static let marker = "# Written by remolo install; `remolo uninstall` removes it."

    public static let unitName = "remolo.service"
    public static let systemUnitPath = "/etc/systemd/system/" + unitName
    public static let udevRulePath = "/etc/udev/rules.d/60-remolo-uinput.rules"
    public static let modulesLoadPath = "/etc/modules-load.d/remolo.conf"
    /// The group that may open /dev/uinput (the udev rule's GROUP=); the
    /// system unit's dynamic user joins it.
    public static let uinputGroup = "input"

    /// Whether a file's text is one remolo wrote.
    public static func isOurs(_ contents: some StringProtocol) -> Bool {
        contents.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.hasPrefix(marker) } ?? false
    }

    /// Where the user unit goes: `$XDG_CONFIG_HOME/systemd/user`, else
    /// `~/.config/systemd/user` (systemd.unit(5), "User Unit Search Path").
    public static func userUnitPath(environment: [String: String]) throws(ServiceError) -> String {
        if let x = environment["XDG_CONFIG_HOME"], x.hasPrefix("/") {
            return x + "/systemd/user/" + unitName
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else {
            throw ServiceError("--user needs $HOME (or $XDG_CONFIG_HOME) to be an absolute path to find "
                               + "~/.config/systemd/user; set it, or install with --system")
        }
        return home + "/.config/systemd/user/" + unitName
    }

    /// Every file `remolo install` writes for `spec`, the unit first.
    public static func files(_ spec: ServiceSpec, environment: [String: String]) throws(ServiceError) -> [ServiceFile] {
        let unitPath = spec.scope == .system ? systemUnitPath : try userUnitPath(environment: environment)
        return [
            ServiceFile(path: unitPath, contents: try unit(spec), needsRoot: spec.scope == .system,
                        role: "the receiver's \(spec.scope.rawValue) unit"),
            ServiceFile(path: udevRulePath, contents: udevRule, needsRoot: true,
                        role: "the udev rule giving group \(uinputGroup) /dev/uinput"),
            ServiceFile(path: modulesLoadPath, contents: modulesLoad, needsRoot: true,
                        role: "loads uinput at boot"),
        ]
    }

    /// The rule the README and PointerDeviceError name, plus what a service
    /// needs: `static_node=uinput` applies it to the node devtmpfs creates
    /// before the module is loaded (udev(7), OPTIONS), `uaccess` gives the
    /// person at the seat access for `--user` units.
    public static let udevRule = """
        \(marker)
        # Lets group \(uinputGroup) (the remolo service joins it) create pointer devices.
        KERNEL=="uinput", SUBSYSTEM=="misc", GROUP="\(uinputGroup)", MODE="0660", TAG+="uaccess", OPTIONS+="static_node=uinput"

        """

    /// modules-load.d(5): one module name per line.
    public static let modulesLoad = """
        \(marker)
        # The receiver moves the pointer through /dev/uinput.
        uinput

        """

    /// The unit. Every directive is explained where it is set; the numbers
    /// `systemd-analyze security` gives it are in the README.
    public static func unit(_ spec: ServiceSpec) throws(ServiceError) -> String {
        guard spec.binary.hasPrefix("/") else {
            throw ServiceError("the remolo binary must be an absolute path, not '\(spec.binary)'; pass --bin /usr/local/bin/remolo")
        }
        if let p = spec.realtimePriority, !(1...99).contains(p) {
            throw ServiceError("--rt takes a priority from 1 to 99, not \(p)")
        }
        var exec = try execWord(spec.binary) + " receive"
        if let p = spec.realtimePriority { exec += " --rt \(p)" }
        let rt = spec.realtimePriority != nil
        let system = spec.scope == .system

        var l: [String] = [
            marker,
            "# Options go in the config file ($REMOLO_CONFIG_DIR/config, the keys of",
            "# `remolo receive`), not here; run `remolo install` again to change --rt or --bin.",
            "[Unit]",
            "Description=Remolo receiver (a smooth cursor over Wi-Fi)",
        ]
        if system {
            l += [
                // Loads uinput before the first start even without a reboot
                // after installing modules-load.d (systemd.special(7)).
                "Wants=modprobe@uinput.service",
                "After=modprobe@uinput.service network.target",
            ]
        }
        l += [
            "",
            "[Service]",
            // exec: a binary that cannot be started fails the start job.
            "Type=exec",
            "ExecStart=\(exec)",
            "Restart=on-failure",
            "RestartSec=2s",
        ]
        if system {
            l += [
                "# The identity and peer files persist in the state directory",
                "# (/var/lib/private/remolo, reached as /var/lib/remolo), owned by a",
                "# user that exists only while the service runs (systemd.exec(5), DynamicUser=).",
                "Environment=REMOLO_CONFIG_DIR=%S/remolo",
                "DynamicUser=yes",
                "StateDirectory=remolo",
                "StateDirectoryMode=0700",
                "# The udev rule gives this group /dev/uinput.",
                "SupplementaryGroups=\(uinputGroup)",
                "# No other device node can be opened (systemd.resource-control(5)).",
                "DevicePolicy=closed",
                "DeviceAllow=/dev/uinput rw",
                "# Read-only system, no home directories, private /tmp (systemd.exec(5), Sandboxing).",
                "ProtectSystem=strict",
                "ProtectHome=yes",
                "PrivateTmp=yes",
                "PrivateMounts=yes",
                "ProtectKernelTunables=yes",
                "ProtectKernelModules=yes",
                "ProtectKernelLogs=yes",
                "ProtectControlGroups=yes",
                "ProtectClock=yes",
                "ProtectHostname=yes",
                "ProtectProc=invisible",
                "ProcSubset=pid",
                "RemoveIPC=yes",
                "# PrivateUsers= is not set: its user namespace maps only the service's own",
                "# user and group, so the input group that opens /dev/uinput would be unmapped.",
            ]
            if let p = spec.realtimePriority {
                l += [
                    "# --rt \(p): SCHED_FIFO needs CAP_SYS_NICE, and nothing else is kept",
                    "# (systemd.exec(5), Capabilities).",
                    "AmbientCapabilities=CAP_SYS_NICE",
                    "CapabilityBoundingSet=CAP_SYS_NICE",
                ]
            } else {
                l += ["# No capabilities at all (systemd.exec(5), Capabilities).", "CapabilityBoundingSet="]
            }
        } else {
            l += [
                "Environment=REMOLO_CONFIG_DIR=%E/remolo",
                "# Only the seccomp half of the sandbox: a user manager can build mount",
                "# namespaces (ProtectSystem= and the like) only inside an implied user",
                "# namespace (systemd.exec(5), PrivateUsers=), which would unmap the input",
                "# group that opens /dev/uinput.",
            ]
            if let p = spec.realtimePriority {
                l += ["# --rt \(p): a user service gets SCHED_FIFO only up to RLIMIT_RTPRIO",
                      "# (limits.conf(5) rtprio); no capability can be granted here."]
            }
        }
        l += [
            "UMask=0077",
            "NoNewPrivileges=yes",
            "RestrictSUIDSGID=yes",
            "LockPersonality=yes",
            "# Swift and the C core never map memory writable and executable.",
            "MemoryDenyWriteExecute=yes",
            "# TCP and UDP; AF_UNIX for the D-Bus system bus, through which avahi-daemon",
            "# announces the receiver (DNS-SD). The journal gets stdout through a socket",
            "# it already holds.",
            "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
            "RestrictNamespaces=yes",
        ]
        if !rt { l.append("RestrictRealtime=yes") }
        l += [
            "SystemCallArchitectures=native",
            "# io_uring is named as well as @system-service: not every systemd version",
            "# keeps it in that set, and the receiver cannot run without it.",
            "SystemCallFilter=@system-service io_uring_setup io_uring_enter io_uring_register",
            "SystemCallFilter=~@privileged @resources",
        ]
        if rt {
            // A later allow line adds back to the set (systemd.exec(5), SystemCallFilter=).
            l.append("SystemCallFilter=sched_setscheduler sched_setparam sched_setattr")
        }
        l += [
            "SystemCallErrorNumber=EPERM",
            "",
            "[Install]",
            "WantedBy=\(system ? "multi-user.target" : "default.target")",
            "",
        ]
        return l.joined(separator: "\n")
    }

    /// A path as one word of ExecStart= (systemd.service(5), Command lines):
    /// `%` and `$` are doubled, and a path with spaces, quotes or backslashes
    /// is double-quoted with C escapes.
    static func execWord(_ path: String) throws(ServiceError) -> String {
        if path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
            throw ServiceError("the binary's path contains a control character; move remolo to a plain path and pass --bin")
        }
        var w = path.replacingAll("%", with: "%%").replacingAll("$", with: "$$")
        if w.contains(where: { $0 == " " || $0 == "\"" || $0 == "\\" || $0 == "'" || $0 == "\t" }) {
            w = "\"" + w.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"") + "\""
        }
        return w
    }
}

extension String {
    /// Replaces every `target` (no Foundation needed).
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
