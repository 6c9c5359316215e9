// The files `remolo install` writes: a systemd unit for the receiver, the
// udev rule that lets its group open /dev/uinput, and a modules-load.d entry
// that loads uinput at boot. Pure functions of the options: nothing here
// touches the file system, so the CLI, `--print` and the tests see the same
// text.

import RemoloDevices

/// Which service manager runs the receiver.
public enum ServiceScope: String, Sendable, Equatable, CaseIterable {
    /// The system manager (PID 1): the unit in /etc/systemd/system, run as a
    /// dynamic user that owns nothing but its state directory.
    case system
    /// The user's own manager (`systemctl --user`): the unit in
    /// `$XDG_CONFIG_HOME/systemd/user`, run as that user.
    case user
}

/// Whose directories the files go in.
public enum ServiceLayout: String, Sendable, Equatable, CaseIterable {
    /// The administrator's (`remolo install`): /etc for the unit, the udev
    /// rule and the module entry, /usr/local/share for the manual and the
    /// completion; each file carries `ServiceFiles.marker`.
    case local
    /// A distribution package's (packaging/deb/build): /lib/systemd/system,
    /// /lib/udev/rules.d, /usr/lib/modules-load.d and /usr/share, where a
    /// file of the same name in /etc overrides them (systemd.unit(5),
    /// udev(7), modules-load.d(5)). The package manager owns these files, so
    /// they carry `ServiceFiles.packageMarker` and `remolo uninstall` leaves
    /// them alone.
    case package
}

/// What `remolo install` was asked for.
public struct ServiceSpec: Sendable, Equatable {
    public var scope: ServiceScope
    /// The absolute path of the `remolo` binary the unit starts.
    public var binary: String
    /// `--rt PRIORITY`: the drain loop runs SCHED_FIFO at this priority.
    public var realtimePriority: Int32?
    public var layout: ServiceLayout

    public init(scope: ServiceScope, binary: String, realtimePriority: Int32? = nil, layout: ServiceLayout = .local) {
        self.scope = scope
        self.binary = binary
        self.realtimePriority = realtimePriority
        self.layout = layout
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
    /// The marker as the manual page's first line (a roff comment, man(7)).
    public static let manMarker = ".\\\"" + marker.dropFirst()
    /// The first line of the files a package ships (`ServiceLayout.package`).
    public static let packageMarker = "# Installed by the remolo package; removing the package removes it."

    public static let unitName = "remolo.service"
    public static let systemUnitPath = "/etc/systemd/system/" + unitName
    public static let udevRulePath = UinputAccess.udevRulePath
    public static let modulesLoadPath = UinputAccess.modulesLoadPath
    /// Where man(1) and bash-completion look first, for `remolo install
    /// --system` (man-db's /usr/local/share/man; bash-completion's
    /// $XDG_DATA_DIRS, /usr/local/share first).
    public static let manPagePath = "/usr/local/share/man/man1/remolo.1"
    public static let completionPath = "/usr/local/share/bash-completion/completions/remolo"

    /// The package's paths (Debian 12: units and udev rules under /lib).
    public static let packageUnitPath = "/lib/systemd/system/" + unitName
    public static let packageUdevRulePath = "/lib/udev/rules.d/60-remolo-uinput.rules"
    public static let packageModulesLoadPath = "/usr/lib/modules-load.d/remolo.conf"
    public static let packageManPagePath = "/usr/share/man/man1/remolo.1"
    public static let packageCompletionPath = "/usr/share/bash-completion/completions/remolo"
    /// The group that may open /dev/uinput (the udev rule's GROUP=); the
    /// system unit's dynamic user joins it.
    public static let uinputGroup = UinputAccess.uinputGroup

    /// Whether a file's text is one remolo wrote.
    public static func isOurs(_ contents: some StringProtocol) -> Bool {
        isOurs(contents, layout: .local)
    }

    /// Whether a file's text starts with `layout`'s marker (as a shell or a
    /// roff comment).
    public static func isOurs(_ contents: some StringProtocol, layout: ServiceLayout) -> Bool {
        let m = marker(layout)
        return contents.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.hasPrefix(m) || $0.hasPrefix(".\\\"" + m.dropFirst()) } ?? false
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

    /// Where a user's manual pages go: man-db finds ~/.local/share/man for
    /// ~/.local/bin on $PATH (manpath(5)).
    public static func userManPagePath(environment: [String: String]) throws(ServiceError) -> String {
        try home(environment) + "/.local/share/man/man1/remolo.1"
    }

    /// Where bash-completion looks for a user's completions:
    /// $XDG_DATA_HOME/bash-completion/completions, else ~/.local/share/...
    public static func userCompletionPath(environment: [String: String]) throws(ServiceError) -> String {
        if let x = environment["XDG_DATA_HOME"], x.hasPrefix("/") {
            return x + "/bash-completion/completions/remolo"
        }
        return try home(environment) + "/.local/share/bash-completion/completions/remolo"
    }

    private static func home(_ environment: [String: String]) throws(ServiceError) -> String {
        guard let home = environment["HOME"], home.hasPrefix("/") else {
            throw ServiceError("--user needs $HOME to be an absolute path to find ~/.local/share; set it, or install with --system")
        }
        return home
    }

    /// The first line of every file for `layout`.
    static func marker(_ layout: ServiceLayout) -> String {
        layout == .local ? marker : packageMarker
    }

    /// Every file `remolo install` writes for `spec`, the unit first.
    public static func files(_ spec: ServiceSpec, environment: [String: String]) throws(ServiceError) -> [ServiceFile] {
        if spec.layout == .package && spec.scope == .user {
            throw ServiceError("a package ships the system unit only: leave out --user, or leave out --package")
        }
        let unitPath = spec.layout == .package ? packageUnitPath
            : spec.scope == .system ? systemUnitPath : try userUnitPath(environment: environment)
        let package = spec.layout == .package
        return [
            ServiceFile(path: unitPath, contents: try unit(spec), needsRoot: spec.scope == .system,
                        role: "the receiver's \(spec.scope.rawValue) unit"),
            ServiceFile(path: package ? packageUdevRulePath : udevRulePath, contents: udevRule(spec.layout), needsRoot: true,
                        role: "the udev rule giving group \(uinputGroup) /dev/uinput"),
            ServiceFile(path: package ? packageModulesLoadPath : modulesLoadPath, contents: modulesLoad(spec.layout),
                        needsRoot: true, role: "loads uinput at boot"),
        ]
    }

    /// The manual page and the bash completion for `spec`, their texts made
    /// by the caller (from the command table); each gets the layout's marker
    /// as its first line. Paths alone (for `remolo uninstall`): pass "".
    public static func documentation(_ spec: ServiceSpec, environment: [String: String],
                                     manPage: String, completion: String) throws(ServiceError) -> [ServiceFile] {
        let (man, comp): (String, String)
        switch (spec.layout, spec.scope) {
        case (.package, _): (man, comp) = (packageManPagePath, packageCompletionPath)
        case (.local, .system): (man, comp) = (manPagePath, completionPath)
        case (.local, .user): (man, comp) = (try userManPagePath(environment: environment), try userCompletionPath(environment: environment))
        }
        let first = marker(spec.layout)
        return [
            ServiceFile(path: man, contents: ".\\\"" + first.dropFirst() + "\n" + manPage, needsRoot: spec.scope == .system,
                        role: "the manual page, man remolo"),
            ServiceFile(path: comp, contents: first + "\n" + completion, needsRoot: spec.scope == .system,
                        role: "bash completion"),
        ]
    }

    /// The rule docs/service.md and PointerDeviceError name, plus what a service
    /// needs: `static_node=uinput` applies it to the node devtmpfs creates
    /// before the module is loaded (udev(7), OPTIONS), `uaccess` gives the
    /// person at the seat access for `--user` units.
    public static let udevRule = udevRule(.local)

    /// The rule itself, which PointerDeviceError's advice quotes.
    public static let udevRuleLine = UinputAccess.udevRuleLine

    public static func udevRule(_ layout: ServiceLayout) -> String {
        """
        \(marker(layout))
        # Lets group \(uinputGroup) (the remolo service joins it) create pointer devices.
        \(udevRuleLine)

        """
    }

    /// modules-load.d(5): one module name per line.
    public static let modulesLoad = modulesLoad(.local)

    public static func modulesLoad(_ layout: ServiceLayout) -> String {
        """
        \(marker(layout))
        # The receiver moves the pointer through /dev/uinput.
        uinput

        """
    }

    /// The unit. Every directive is explained where it is set; the numbers
    /// `systemd-analyze security` gives it are in docs/service.md.
    public static func unit(_ spec: ServiceSpec) throws(ServiceError) -> String {
        guard spec.binary.hasPrefix("/") else {
            throw ServiceError("the remolo binary must be an absolute path, not '\(spec.binary)'; pass --bin /usr/local/bin/remolo")
        }
        if let p = spec.realtimePriority, !(1...99).contains(p) {
            throw ServiceError("--rt takes a priority from 1 to 99, not \(p)")
        }
        let rt = spec.realtimePriority != nil
        let system = spec.scope == .system
        // The system service runs before and without any login: a uinput
        // pointer (the only output there is). A user's service runs in the
        // desktop session, where the desktop's own injection path (the
        // RemoteDesktop portal, XTest) moves the pointer unaccelerated
        // (docs/desktop.md): --output auto picks it.
        var exec = try execWord(spec.binary) + " receive --output " + (system ? "uinput" : "auto")
        if let p = spec.realtimePriority { exec += " --rt \(p)" }

        var l: [String] = [marker(spec.layout), "# Options go in the config file ($REMOLO_CONFIG_DIR/config, the keys of"]
        l.append(spec.layout == .local
            ? "# `remolo receive`), not here; run `remolo install` again to change --rt or --bin."
            : "# `remolo receive`), not here; `remolo install --rt N` writes a unit in /etc that overrides this one.")
        l.append("# With `web = PORT` there, a firewall must let in TCP and UDP PORT: the phone page, and its motion on a data channel.")
        l += [
            "[Unit]",
            "Description=Remolo receiver (a smooth cursor over Wi-Fi)",
            // `systemctl status` shows it; install writes the page beside the unit.
            "Documentation=man:remolo(1)",
        ]
        if system {
            l += [
                // Loads uinput before the first start even without a reboot
                // after installing modules-load.d (systemd.special(7)).
                "Wants=modprobe@uinput.service",
                "After=modprobe@uinput.service network.target",
            ]
        } else {
            l += [
                "# Started with the desktop session and stopped with it, so that its",
                "# WAYLAND_DISPLAY/DISPLAY and session bus are there (systemd.special(7),",
                "# graphical-session.target).",
                "PartOf=graphical-session.target",
                "After=graphical-session.target",
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
            "WantedBy=\(system ? "multi-user.target" : "graphical-session.target")",
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
