// swift-tools-version:6.0
import PackageDescription

// The C hot path is strict: any warning fails the build.
let strictC: [CSetting] = [
    .unsafeFlags(["-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wstrict-prototypes",
                  "-Wno-unused-parameter", "-O2", "-fno-strict-aliasing"]),
]

let package = Package(
    name: "Remolo",
    products: [
        .library(name: "Remolo", targets: ["Remolo"]),
        .executable(name: "remolo", targets: ["remolo"]),
        .executable(name: "Bench", targets: ["Bench"]),
    ],
    targets: [
        // System libraries, one each, found with pkg-config (Debian -dev packages).
        .systemLibrary(name: "CSodium", path: "CSources/CSodium", pkgConfig: "libsodium",
                       providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CURing", path: "CSources/CURing", pkgConfig: "liburing",
                       providers: [.apt(["liburing-dev"])]),
        .systemLibrary(name: "CEvdev", path: "CSources/CEvdev", pkgConfig: "libevdev",
                       providers: [.apt(["libevdev-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "CSources/COpenSSL", pkgConfig: "openssl",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CQREncode", path: "CSources/CQREncode", pkgConfig: "libqrencode",
                       providers: [.apt(["libqrencode-dev"])]),
        // The receiver's keyboard layout: text becomes keys (docs/keymap.md).
        .systemLibrary(name: "CXkbcommon", path: "CSources/CXkbcommon", pkgConfig: "xkbcommon",
                       providers: [.apt(["libxkbcommon-dev"])]),
        // The displays' refresh rates (remolo receive --drain-hz auto), read
        // through the kernel's DRM mode-setting interface.
        .systemLibrary(name: "CDRM", path: "CSources/CDRM", pkgConfig: "libdrm",
                       providers: [.apt(["libdrm-dev"])]),
        // DNS-SD through the Avahi daemon (discovery); the daemon itself is optional.
        // No pkgConfig: avahi-client.pc adds -D_REENTRANT, which SwiftPM
        // refuses with a warning (and glibc no longer needs); the module map
        // links both libraries and the headers are in /usr/include.
        .systemLibrary(name: "CAvahi", path: "CSources/CAvahi",
                       providers: [.apt(["libavahi-client-dev"])]),
        // X11 output (remolo receive --output x11): XTest for motion, buttons,
        // wheel and keys, XInput 2 for the uinput pointer's acceleration
        // property. Linked by the output adapter only, never by RemoloCore.
        .systemLibrary(name: "CXTest", path: "CSources/CXTest", pkgConfig: "xtst",
                       providers: [.apt(["libxtst-dev", "libxi-dev", "libx11-dev"])]),
        // D-Bus through sd-bus (the RemoteDesktop portal output). Linked by
        // the output adapter's backends only, never by RemoloCore.
        .systemLibrary(name: "CSystemd", path: "CSources/CSystemd", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),

        // The hot path: playout core, datagram crypto, io_uring receive, uinput output.
        .target(
            name: "RemoloCore",
            dependencies: ["CSodium", "CURing", "CEvdev"],
            path: "CSources/RemoloCore",
            cSettings: strictC,
            linkerSettings: [.linkedLibrary("sodium"), .linkedLibrary("uring"),
                             .linkedLibrary("evdev")]
        ),
        // The web bridge: TLS, HTTP/1.1 and WebSocket for the phone page,
        // relayed to the receiver's own ports (README, "The phone page").
        .target(
            name: "RemoloWebServer",
            dependencies: ["COpenSSL", "CQREncode"],
            path: "CSources/RemoloWebServer",
            cSettings: strictC,
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto"), .linkedLibrary("qrencode")]
        ),
        // Bench's C side: counts heap allocations (malloc interposer) and runs
        // the bare timerfd the loop's tick lateness is compared with.
        .target(name: "BenchSupport", path: "Bench/Support"),

        // The sender's input rules (acceleration, frames, gestures, momentum): plain
        // Swift with no dependency, so any sender can share them.
        .target(name: "RemoloInput", path: "Sources/RemoloInput"),

        // The Swift layers, each depending only on those above it:
        // RemoloSystem <- RemoloSession <- RemoloTrace <- Remolo <- RemoloLab <- remolo (Tests/Layers checks the graph);
        // RemoloSystem <- RemoloWeb <- remolo; RemoloDiscovery (DNS-SD, Avahi) <- remolo.
        .target(name: "RemoloSystem", path: "Sources/RemoloSystem"),
        .target(name: "RemoloSession", dependencies: ["RemoloSystem", "CSodium"], path: "Sources/RemoloSession"),
        .target(name: "RemoloTrace", path: "Sources/RemoloTrace"),
        .target(name: "Remolo", dependencies: ["RemoloSession", "RemoloSystem", "RemoloTrace", "RemoloInput", "RemoloCore", "CSodium", "CEvdev", "CXkbcommon", "CDRM", "CXTest", "CSystemd"],
                path: "Sources/Remolo"),
        .target(name: "RemoloLab", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloTrace", "RemoloCore"],
                path: "Sources/RemoloLab", exclude: ["RESULTS.md", "figures"]),
        // The page's files (a resource bundle beside the binary) and the bridge's Swift face.
        .target(name: "RemoloWeb", dependencies: ["RemoloSystem", "RemoloWebServer"], path: "Sources/RemoloWeb",
                resources: [.copy("page")]),
        // Announcing and finding receivers (DNS-SD through Avahi): beside the
        // receiver, never in its hot path, so only the CLI links it.
        .target(name: "RemoloDiscovery", dependencies: ["CAvahi"], path: "Sources/RemoloDiscovery"),
        .executableTarget(name: "remolo", dependencies: ["Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloWeb", "RemoloInput", "RemoloDiscovery"],
                          path: "Sources/remolo"),
        .executableTarget(name: "Bench", dependencies: ["Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore", "RemoloInput", "RemoloWeb", "COpenSSL", "BenchSupport", "CEvdev"],
                          path: "Bench/Sources"),

        // What the test targets share (subprocesses, paired configs, polling).
        .target(name: "RemoloTestSupport", dependencies: ["Remolo", "RemoloSession", "RemoloSystem"], path: "Tests/Support"),
        .testTarget(name: "RemoloCoreTests", dependencies: ["RemoloTestSupport", "Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore"],
                    path: "Tests/RemoloCoreTests"),
        .testTarget(name: "WireTests", dependencies: ["RemoloTestSupport", "Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore", "CSodium"],
                    path: "Tests/WireTests"),
        .testTarget(name: "SessionTests", dependencies: ["RemoloTestSupport", "Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore", "CSodium", "RemoloDiscovery"],
                    path: "Tests/SessionTests"),
        .testTarget(name: "ReceiverTests", dependencies: ["RemoloTestSupport", "Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore", "RemoloInput"],
                    path: "Tests/ReceiverTests"),
        // Text to keys with real xkbcommon keymaps (us, de, fr, ...).
        .testTarget(name: "KeymapTests", dependencies: ["Remolo"], path: "Tests/KeymapTests"),
        .testTarget(name: "InputTests", dependencies: ["RemoloTestSupport", "RemoloInput"], path: "Tests/InputTests"),
        .testTarget(name: "LabTests", dependencies: ["Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore"],
                    path: "Tests/LabTests"),
        // The commands as processes: pairing lockout, dead sessions, reconnection.
        .testTarget(name: "CLITests", dependencies: ["Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloTestSupport"], path: "Tests/CLITests"),
        // The web bridge's certificates (the self-signed one, the local
        // certificate authority) judged by OpenSSL as a client.
        .testTarget(name: "WebTests", dependencies: ["RemoloWeb", "COpenSSL"], path: "Tests/WebTests"),
        // The systemd unit, udev rule and config file; systemd-analyze judges the unit.
        .testTarget(name: "ServiceTests", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloTestSupport"],
                    path: "Tests/ServiceTests"),
        // Run for real inside the VM (Tests/VM/run); on a host without uinput they skip.
        .testTarget(name: "VMTests", dependencies: ["Remolo", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore", "RemoloInput", "CEvdev", "RemoloTestSupport"],
                    path: "Tests/VMTests"),
        // The RemoteDesktop portal output against a real compositor (headless
        // mutter, xdg-desktop-portal-gnome): run by Tests/Portal/run, which
        // sets REMOLO_PORTAL_TESTS; elsewhere they skip.
        .testTarget(name: "PortalTests", dependencies: ["Remolo", "RemoloTestSupport"],
                    path: "Tests/PortalTests"),
    ]
)
