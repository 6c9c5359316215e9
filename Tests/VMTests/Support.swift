import Foundation
import RemoloTestSupport
import Testing

/// Where the VM suite runs, and why a test may have to skip.
enum VMEnv {
    /// Set by Tests/VM/guest: inside the VM nothing may skip.
    static let insideVM = ProcessInfo.processInfo.environment["REMOLO_VM"] == "1"
    static let hasUinput = access("/dev/uinput", F_OK) == 0
    static let isRoot = getuid() == 0

    /// Kernel tests run where /dev/uinput exists, and always in the VM (where
    /// a missing device is then a failure, not a skip).
    static let kernel = insideVM || (hasUinput && isRoot)
    static let kernelReason = Comment(rawValue:
        "needs /dev/uinput and root (here: " + (hasUinput ? "uinput present" : "no /dev/uinput") + ", "
        + (isRoot ? "root" : "not root") + "); run Tests/VM/suite for a real kernel in qemu")

    static let netem = insideVM
    static let netemReason: Comment =
        "changes network namespaces and qdiscs: runs only inside the VM (Tests/VM/suite)"
}

/// The whole kernel-facing suite runs one test at a time: the guest has one
/// vCPU, and the timing tests must not share it with the others.
@Suite(.serialized) enum VMSuite {}

/// Runs a program to completion, stdout and stderr together.
@discardableResult
func run(_ path: String, _ args: String...) throws -> CommandResult { try runCommand(path, args) }

func run(_ path: String, _ args: [String]) throws -> CommandResult { try runCommand(path, args) }

/// Runs a program that must succeed.
func must(_ path: String, _ args: String...) throws { try must(path, args) }

/// Runs a program that must succeed.
func must(_ path: String, _ args: [String]) throws {
    let r = try run(path, args)
    let cmd = ([path] + args).joined(separator: " ")
    try #require(r.status == 0, "\(cmd) failed (\(r.status)): \(r.output)")
}

func monotonicNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
