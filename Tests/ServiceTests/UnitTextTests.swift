import Foundation
import Testing
@testable import RemoloPlayout
@testable import RemoloService

/// The unit's text: every hardening directive is there, and `--rt` trades
/// RestrictRealtime= for CAP_SYS_NICE and nothing else.
struct UnitTextTests {
    static let binary = "/usr/local/bin/remolo"

    static func lines(_ spec: ServiceSpec) throws -> [String] {
        try ServiceFiles.unit(spec).split(separator: "\n").map(String.init)
    }

    /// Every directive of the system unit, as it must appear (systemd.exec(5)).
    @Test("1: the system unit has every hardening directive", arguments: [
        (1, "NoNewPrivileges=yes"), (2, "ProtectSystem=strict"), (3, "ProtectHome=yes"),
        (4, "PrivateTmp=yes"), (5, "DevicePolicy=closed"), (6, "DeviceAllow=/dev/uinput rw"),
        (7, "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX"), (8, "RestrictNamespaces=yes"),
        (9, "LockPersonality=yes"), (10, "MemoryDenyWriteExecute=yes"), (11, "SystemCallArchitectures=native"),
        (12, "ProtectKernelTunables=yes"), (13, "ProtectKernelModules=yes"), (14, "ProtectKernelLogs=yes"),
        (15, "ProtectClock=yes"), (16, "ProtectHostname=yes"), (17, "ProtectControlGroups=yes"),
        (18, "RestrictRealtime=yes"), (19, "RestrictSUIDSGID=yes"), (20, "UMask=0077"),
        (21, "Restart=on-failure"), (22, "CapabilityBoundingSet="), (23, "DynamicUser=yes"),
        (24, "StateDirectory=remolo"), (25, "SupplementaryGroups=input"),
        (26, "SystemCallFilter=@system-service io_uring_setup io_uring_enter io_uring_register"),
        (27, "SystemCallFilter=~@privileged @resources"), (28, "Environment=REMOLO_CONFIG_DIR=%S/remolo"),
        (29, "ExecStart=/usr/local/bin/remolo receive --output uinput"), (30, "StateDirectoryMode=0700"),
        (31, "ProtectProc=invisible"), (32, "ProcSubset=pid"), (33, "PrivateMounts=yes"),
        (34, "WantedBy=multi-user.target"), (35, "SystemCallErrorNumber=EPERM"),
    ] as [(Int, String)])
    func systemDirective(_ id: Int, _ directive: String) throws {
        let l = try Self.lines(ServiceSpec(scope: .system, binary: Self.binary))
        #expect(l.contains(directive), "missing `\(directive)`")
    }

    @Test("2: without --rt: no capability at all, no ambient capability, realtime refused")
    func noCapabilities() throws {
        let l = try Self.lines(ServiceSpec(scope: .system, binary: Self.binary))
        #expect(l.filter { $0.hasPrefix("CapabilityBoundingSet=") } == ["CapabilityBoundingSet="])
        #expect(!l.contains { $0.hasPrefix("AmbientCapabilities=") })
        #expect(!l.contains { $0.contains("--rt") && $0.hasPrefix("ExecStart=") })
        #expect(!l.contains { $0.hasPrefix("PrivateUsers=") }, "PrivateUsers= would unmap the input group")
    }

    @Test("3: --rt keeps CAP_SYS_NICE only, passes the priority and drops RestrictRealtime=")
    func realtime() throws {
        let l = try Self.lines(ServiceSpec(scope: .system, binary: Self.binary, realtimePriority: 40))
        #expect(l.contains("ExecStart=/usr/local/bin/remolo receive --output uinput --rt 40"))
        #expect(l.filter { $0.hasPrefix("AmbientCapabilities=") } == ["AmbientCapabilities=CAP_SYS_NICE"])
        #expect(l.filter { $0.hasPrefix("CapabilityBoundingSet=") } == ["CapabilityBoundingSet=CAP_SYS_NICE"])
        #expect(!l.contains { $0.hasPrefix("RestrictRealtime=") })
        #expect(l.contains("SystemCallFilter=sched_setscheduler sched_setparam sched_setattr"))
        // Everything else stays.
        for d in ["NoNewPrivileges=yes", "ProtectSystem=strict", "MemoryDenyWriteExecute=yes", "DevicePolicy=closed"] {
            #expect(l.contains(d), "missing `\(d)` with --rt")
        }
    }

    @Test("4: the user unit: the config in XDG, the seccomp half of the sandbox, no capability lines")
    func userUnit() throws {
        let l = try Self.lines(ServiceSpec(scope: .user, binary: Self.binary))
        for d in ["Environment=REMOLO_CONFIG_DIR=%E/remolo", "NoNewPrivileges=yes", "MemoryDenyWriteExecute=yes",
                  "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "RestrictRealtime=yes", "SystemCallArchitectures=native",
                  "LockPersonality=yes", "UMask=0077", "Restart=on-failure", "WantedBy=graphical-session.target", "PartOf=graphical-session.target"] {
            #expect(l.contains(d), "missing `\(d)`")
        }
        for prefix in ["DynamicUser=", "CapabilityBoundingSet=", "AmbientCapabilities=", "ProtectSystem=", "StateDirectory="] {
            #expect(!l.contains { $0.hasPrefix(prefix) }, "a user unit cannot use \(prefix)")
        }
        let rt = try Self.lines(ServiceSpec(scope: .user, binary: Self.binary, realtimePriority: 5))
        #expect(rt.contains("ExecStart=/usr/local/bin/remolo receive --output auto --rt 5"))
        #expect(!rt.contains { $0.hasPrefix("RestrictRealtime=") || $0.hasPrefix("AmbientCapabilities=") })
    }

    @Test("5: ExecStart quotes what systemd would otherwise split or expand", arguments: [
        (1, "/usr/bin/remolo", "/usr/bin/remolo"),
        (2, "/opt/my apps/remolo", "\"/opt/my apps/remolo\""),
        (3, "/opt/100%/remolo", "/opt/100%%/remolo"),
        (4, "/opt/$HOME/remolo", "/opt/$$HOME/remolo"),
        (5, "/opt/a\"b/remolo", "\"/opt/a\\\"b/remolo\""),
    ] as [(Int, String, String)])
    func execQuoting(_ id: Int, _ path: String, _ word: String) throws {
        #expect(try ServiceFiles.execWord(path) == word)
    }

    @Test("6: what cannot be a unit is refused with how to fix it", arguments: [
        (1, "remolo", nil, "absolute"),
        (2, "/usr/bin/remolo\n", nil, "control character"),
        (3, "/usr/bin/remolo", 0, "1 to 99"),
        (4, "/usr/bin/remolo", 100, "1 to 99"),
    ] as [(Int, String, Int32?, String)])
    func refused(_ id: Int, _ binary: String, _ rt: Int32?, _ says: String) {
        #expect {
            try ServiceFiles.unit(ServiceSpec(scope: .system, binary: binary, realtimePriority: rt))
        } throws: { ($0 as? ServiceError)?.message.contains(says) == true }
    }

    @Test("7: every file starts with the marker; the rule and module entry are what docs/service.md says")
    func otherFiles() throws {
        let files = try ServiceFiles.files(ServiceSpec(scope: .system, binary: Self.binary), environment: [:])
        #expect(files.map(\.path) == ["/etc/systemd/system/remolo.service", "/etc/udev/rules.d/60-remolo-uinput.rules",
                                      "/etc/modules-load.d/remolo.conf"])
        for f in files { #expect(ServiceFiles.isOurs(f.contents), "\(f.path) lacks the marker") }
        #expect(ServiceFiles.udevRule.contains(#"KERNEL=="uinput""#) && ServiceFiles.udevRule.contains(#"GROUP="input""#)
                && ServiceFiles.udevRule.contains(#"MODE="0660""#) && ServiceFiles.udevRule.contains(#"TAG+="uaccess""#))
        #expect(ServiceFiles.modulesLoad.split(separator: "\n").filter { !$0.hasPrefix("#") } == ["uinput"])
        #expect(!ServiceFiles.isOurs("[Unit]\n" + ServiceFiles.marker + "\n"), "the marker counts on the first line only")
    }

    @Test("8: the user unit goes to XDG_CONFIG_HOME, else ~/.config; neither is an error")
    func userPath() throws {
        #expect(try ServiceFiles.userUnitPath(environment: ["XDG_CONFIG_HOME": "/x/cfg", "HOME": "/h"])
                == "/x/cfg/systemd/user/remolo.service")
        #expect(try ServiceFiles.userUnitPath(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/h"])
                == "/h/.config/systemd/user/remolo.service")
        #expect(throws: ServiceError.self) { try ServiceFiles.userUnitPath(environment: [:]) }
    }
}
