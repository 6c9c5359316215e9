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
        .executable(name: "remolo", targets: ["remolo"]),
        .executable(name: "Bench", targets: ["Bench"]),
        // The sender and the lab alone, each as a shared object whose
        // DT_NEEDED entries Tests/Layers/check reads (ldd): the sender links
        // no desktop library, the lab neither liburing nor libevdev.
        .library(name: "RemoloSenderLibrary", type: .dynamic, targets: ["RemoloSender"]),
        .library(name: "RemoloLabLibrary", type: .dynamic, targets: ["RemoloLab"]),
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
        // SCTP over DTLS for the phone page's data channel (CSources/RemoloWebServer/sctp.c):
        // the stack the browsers use, in AF_CONN mode. No pkgConfig: usrsctp.pc adds
        // -DINET -DINET6, which SwiftPM refuses with a warning, and usrsctp.h needs
        // neither; the header is in /usr/include.
        .systemLibrary(name: "CUsrsctp", path: "CSources/CUsrsctp",
                       providers: [.apt(["libusrsctp-dev"])]),
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

        // The hot path in C, in two: the playout and the sealed datagram
        // (clock offset, delay, segments, keys, ChaCha20-Poly1305), which the
        // lab and the sender use too; and the receive loop with its devices
        // (io_uring, uinput through libevdev), which only the receiver links.
        .target(
            name: "RemoloPlayoutCore",
            dependencies: ["CSodium"],
            path: "CSources/RemoloPlayoutCore",
            cSettings: strictC,
            linkerSettings: [.linkedLibrary("sodium")]
        ),
        .target(
            name: "RemoloCore",
            dependencies: ["RemoloPlayoutCore", "CURing", "CEvdev"],
            path: "CSources/RemoloCore",
            cSettings: strictC,
            linkerSettings: [.linkedLibrary("uring"), .linkedLibrary("evdev"), .linkedLibrary("m")]
        ),
        // The web bridge: TLS, HTTP/1.1 and WebSocket for the phone page,
        // relayed to the receiver's own ports (README, "The phone page"),
        // and the data-channel endpoint (remolo_rtc.h): STUN, DTLS, SCTP, DCEP.
        .target(
            name: "RemoloWebServer",
            dependencies: ["COpenSSL", "CQREncode", "CUsrsctp"],
            path: "CSources/RemoloWebServer",
            cSettings: strictC,
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto"), .linkedLibrary("qrencode"),
                             .linkedLibrary("usrsctp")]
        ),
        // Bench's C side: counts heap allocations (malloc interposer), runs
        // the bare timerfd the loop's tick lateness is compared with, reads
        // a thread's CPU clock, and plays the phone page's side of a data
        // channel (STUN, DTLS, SCTP, DCEP; rtc_client.c).
        .target(name: "BenchSupport", dependencies: ["COpenSSL"], path: "Bench/Support",
                linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),

        // The Swift targets, one job each, in layers: a target imports only
        // targets of the layers before it (docs/architecture.md draws the
        // graph; Tests/Layers/check holds this list, the imports and the
        // link rules to it).
        //
        // The types every layer shares: no dependency at all.
        .target(name: "RemoloTypes", path: "Sources/RemoloTypes"),
        .target(name: "RemoloSystem", path: "Sources/RemoloSystem"),
        // The sender's input rules (acceleration, frames, gestures, momentum):
        // plain Swift, so any sender can share them.
        .target(name: "RemoloInput", dependencies: ["RemoloTypes"], path: "Sources/RemoloInput"),
        .target(name: "RemoloSession", dependencies: ["RemoloSystem", "CSodium"], path: "Sources/RemoloSession"),
        .target(name: "RemoloTrace", dependencies: ["RemoloTypes"], path: "Sources/RemoloTrace"),
        // The Swift face of the playout and the sealed datagram (C types never public).
        .target(name: "RemoloPlayout", dependencies: ["RemoloTypes", "RemoloSystem", "RemoloSession", "RemoloPlayoutCore", "CSodium"],
                path: "Sources/RemoloPlayout"),
        // The uinput pointer and keyboard.
        .target(name: "RemoloDevices", dependencies: ["RemoloTypes", "RemoloPlayout", "RemoloCore", "RemoloPlayoutCore"],
                path: "Sources/RemoloDevices"),
        // Text to keys in the receiver's layout (xkbcommon).
        .target(name: "RemoloKeymap", dependencies: ["RemoloTypes", "CXkbcommon"], path: "Sources/RemoloKeymap"),
        // The desktop outputs (XTest, the RemoteDesktop portal, desktop
        // acceleration): the devices' frames turned into a desktop's calls.
        // The receiver sees them only as a FrameOutput.
        .target(name: "RemoloDesktop", dependencies: ["RemoloTypes", "RemoloSystem", "RemoloPlayout", "RemoloDevices", "CXTest", "CSystemd", "RemoloPlayoutCore", "RemoloCore", "RemoloInput", "RemoloSession"],
                path: "Sources/RemoloDesktop"),
        // The receiver runtime: the loop's owner, sessions, statistics.
        .target(name: "RemoloReceiver", dependencies: ["RemoloTypes", "RemoloSystem", "RemoloSession", "RemoloPlayout", "RemoloDevices", "RemoloKeymap", "RemoloCore", "CDRM", "CSodium", "RemoloPlayoutCore", "RemoloTrace"],
                path: "Sources/RemoloReceiver"),
        // The sender: datagrams and control channel, its devices (evdev).
        .target(name: "RemoloSender", dependencies: ["RemoloTypes", "RemoloSystem", "RemoloSession", "RemoloPlayout", "RemoloInput", "CEvdev"],
                path: "Sources/RemoloSender"),
        // The service's files and the manual's text (unit, udev rule, config,
        // man page, completion), made from one table of options.
        .target(name: "RemoloService", dependencies: ["RemoloPlayout", "RemoloDevices"],
                path: "Sources/RemoloService"),
        // Scenarios, policies, scoring, the relay: the model, no device.
        .target(name: "RemoloLab", dependencies: ["RemoloTypes", "RemoloTrace", "RemoloPlayout", "RemoloPlayoutCore", "RemoloInput"],
                path: "Sources/RemoloLab", exclude: ["RESULTS.md", "figures"]),
        // The page's files (a resource bundle beside the binary) and the bridge's Swift face.
        .target(name: "RemoloWeb", dependencies: ["RemoloWebServer", "RemoloSystem"], path: "Sources/RemoloWeb",
                resources: [.copy("page")]),
        // Announcing and finding receivers (DNS-SD through Avahi): beside the
        // receiver, never in its hot path, so only the CLI links it.
        .target(name: "RemoloDiscovery", dependencies: ["CAvahi"], path: "Sources/RemoloDiscovery"),
        // The CLI: the only place the layers are put together.
        .executableTarget(name: "remolo", dependencies: ["RemoloTypes", "RemoloSystem", "RemoloSession", "RemoloTrace", "RemoloInput", "RemoloPlayout", "RemoloDevices", "RemoloKeymap", "RemoloDesktop", "RemoloReceiver", "RemoloSender", "RemoloService", "RemoloLab", "RemoloWeb", "RemoloDiscovery", "RemoloPlayoutCore", "RemoloCore"],
                          path: "Sources/remolo"),
        .executableTarget(name: "Bench", dependencies: ["RemoloTypes", "RemoloSystem", "RemoloSession", "RemoloTrace", "RemoloInput", "RemoloPlayout", "RemoloReceiver", "RemoloSender", "RemoloLab", "RemoloWeb", "RemoloCore", "RemoloPlayoutCore", "COpenSSL", "BenchSupport", "CEvdev", "CSodium", "RemoloDesktop"],
                          path: "Bench/Sources"),

        // What the test targets share (subprocesses, paired configs, polling).
        .target(name: "RemoloTestSupport", dependencies: ["RemoloSession", "RemoloSystem", "RemoloPlayout"], path: "Tests/Support"),
        .testTarget(name: "RemoloCoreTests", dependencies: ["RemoloTestSupport", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloPlayoutCore", "RemoloPlayout", "RemoloReceiver", "RemoloCore"],
                    path: "Tests/RemoloCoreTests"),
        .testTarget(name: "WireTests", dependencies: ["RemoloTestSupport", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloPlayoutCore", "RemoloTypes", "RemoloPlayout"],
                    path: "Tests/WireTests"),
        .testTarget(name: "SessionTests", dependencies: ["RemoloTestSupport", "RemoloSession", "RemoloSystem", "RemoloDiscovery", "RemoloPlayout", "RemoloSender"],
                    path: "Tests/SessionTests"),
        .testTarget(name: "ReceiverTests", dependencies: ["RemoloTestSupport", "RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore", "RemoloInput", "RemoloPlayoutCore", "RemoloTypes", "RemoloPlayout", "RemoloDevices", "RemoloKeymap", "RemoloDesktop", "RemoloReceiver", "RemoloSender"],
                    path: "Tests/ReceiverTests"),
        // Text to keys with real xkbcommon keymaps (us, de, fr, ...).
        .testTarget(name: "KeymapTests", dependencies: ["RemoloTypes", "RemoloPlayout", "RemoloKeymap"], path: "Tests/KeymapTests"),
        .testTarget(name: "InputTests", dependencies: ["RemoloTestSupport", "RemoloInput", "RemoloTypes"], path: "Tests/InputTests"),
        .testTarget(name: "LabTests", dependencies: ["RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloPlayout"],
                    path: "Tests/LabTests"),
        // The commands as processes: pairing lockout, dead sessions, reconnection.
        .testTarget(name: "CLITests", dependencies: ["RemoloSession", "RemoloSystem", "RemoloTestSupport", "RemoloPlayout", "RemoloService"], path: "Tests/CLITests"),
        // The web bridge's certificates (the self-signed one, the local
        // certificate authority) judged by OpenSSL as a client.
        .testTarget(name: "WebTests", dependencies: ["RemoloWeb", "COpenSSL"], path: "Tests/WebTests"),
        // The systemd unit, udev rule and config file; systemd-analyze judges the unit.
        .testTarget(name: "ServiceTests", dependencies: ["RemoloTestSupport", "RemoloPlayout", "RemoloService"],
                    path: "Tests/ServiceTests"),
        // Run for real inside the VM (Tests/VM/run); on a host without uinput they skip.
        .testTarget(name: "VMTests", dependencies: ["RemoloLab", "RemoloTrace", "RemoloSession", "RemoloSystem", "RemoloCore", "RemoloInput", "CEvdev", "RemoloTestSupport", "RemoloPlayoutCore", "RemoloTypes", "RemoloPlayout", "RemoloDevices", "RemoloDesktop", "RemoloReceiver", "RemoloSender", "RemoloService"],
                    path: "Tests/VMTests"),
        // The RemoteDesktop portal output against a real compositor (headless
        // mutter, xdg-desktop-portal-gnome): run by Tests/Portal/run, which
        // sets REMOLO_PORTAL_TESTS; elsewhere they skip.
        .testTarget(name: "PortalTests", dependencies: ["RemoloTestSupport", "RemoloTypes", "RemoloPlayout", "RemoloDesktop"],
                    path: "Tests/PortalTests"),
    ]
)
