import Foundation
import RemoloPlayout

// remolo version: the version (Remolo.version, the one constant) and the
// commit the binary was built from.

let versionUsage = """
usage: remolo version

Prints the version and the commit: the one a package build stamped into the
binary (packaging/deb/build), or, for a development build, the commit its
source tree is at now (asked of git), or "commit unknown".
"""

@Sendable func versionCommand(_ args: [String]) {
    var o = Options(args, usage: versionUsage)
    if o.next() != nil { o.unknown() }
    print(versionLine())
}

/// `remolo 0.1.0 (commit 9b3f982c0ffe)`, or what a development build knows.
func versionLine() -> String {
    if let c = buildCommit { return "remolo \(Remolo.version) (commit \(c))" }
    let tree = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    guard let head = git(["-C", tree, "rev-parse", "--short=12", "HEAD"]) else {
        return "remolo \(Remolo.version) (development build, commit unknown)"
    }
    let changed = git(["-C", tree, "status", "--porcelain", "--untracked-files=no"]).map { !$0.isEmpty } ?? false
    return "remolo \(Remolo.version) (development build; its source tree \(tree) is at commit \(head)"
        + (changed ? ", with uncommitted changes)" : ")")
}

/// git's trimmed output, or nil when git is missing or fails.
private func git(_ args: [String]) -> String? {
    guard FileManager.default.fileExists(atPath: args[1]) else { return nil }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["git"] + args
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    p.standardInput = FileHandle.nullDevice
    do { try p.run() } catch { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
