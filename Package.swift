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

        // The hot path: playout core, datagram crypto, io_uring receive, uinput output.
        .target(
            name: "RemoloCore",
            dependencies: ["CSodium", "CURing", "CEvdev"],
            path: "CSources/RemoloCore",
            cSettings: strictC,
            linkerSettings: [.linkedLibrary("sodium"), .linkedLibrary("uring"),
                             .linkedLibrary("evdev")]
        ),
        // Counts heap allocations for Bench (malloc interposer, executable-local).
        .target(name: "BenchSupport", path: "Bench/Support"),

        // The sender's input rules (acceleration, frames, gestures, momentum): plain
        // Swift with no dependency, so any sender can share them.
        .target(name: "RemoloInput", path: "Sources/RemoloInput"),

        // The Swift layers, each depending only on those above it:
        // RemoloSystem <- RemoloSession <- Remolo <- remolo (Tests/Layers checks the graph).
        .target(name: "RemoloSystem", path: "Sources/RemoloSystem"),
        .target(name: "RemoloSession", dependencies: ["RemoloSystem", "CSodium"], path: "Sources/RemoloSession"),
        .target(name: "Remolo", dependencies: ["RemoloSession", "RemoloSystem", "RemoloCore", "RemoloInput", "CSodium", "CEvdev"],
                path: "Sources/Remolo", exclude: ["Lab/RESULTS.md"]),
        .executableTarget(name: "remolo", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloInput"], path: "Sources/remolo"),
        .executableTarget(name: "Bench", dependencies: ["Remolo", "RemoloSession", "RemoloCore", "RemoloInput", "BenchSupport"],
                          path: "Bench/Sources"),

        // What the test targets share (subprocesses, paired configs, polling).
        .target(name: "RemoloTestSupport", dependencies: ["Remolo", "RemoloSession", "RemoloSystem"], path: "Tests/Support"),
        .testTarget(name: "RemoloCoreTests", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloCore"],
                    path: "Tests/RemoloCoreTests"),
        .testTarget(name: "WireTests", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloCore", "CSodium"],
                    path: "Tests/WireTests"),
        .testTarget(name: "SessionTests", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloCore", "CSodium"],
                    path: "Tests/SessionTests"),
        .testTarget(name: "ReceiverTests", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloCore", "RemoloInput"],
                    path: "Tests/ReceiverTests"),
        .testTarget(name: "InputTests", dependencies: ["RemoloInput"], path: "Tests/InputTests"),
        .testTarget(name: "LabTests", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloCore"],
                    path: "Tests/LabTests"),
        // Run for real inside the VM (Tests/VM/run); on a host without uinput they skip.
        // The commands as processes: pairing lockout, dead sessions, reconnection.
        .testTarget(name: "CLITests", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloTestSupport"], path: "Tests/CLITests"),
        .testTarget(name: "VMTests", dependencies: ["Remolo", "RemoloSession", "RemoloSystem", "RemoloCore", "RemoloInput", "CEvdev", "RemoloTestSupport"],
                    path: "Tests/VMTests"),
    ]
)
