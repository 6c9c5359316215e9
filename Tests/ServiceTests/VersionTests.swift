import Foundation
import RemoloPlayout
import RemoloTestSupport
import Testing

/// `remolo version`: the version constant and the commit. The test binary
/// is a development build (no commit stamped), so its commit is the one git
/// gives for the source tree; a stamped package build is checked by
/// Tests/Package/run.
@Suite struct VersionTests {
    static let tree = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test("1: version and --version print the same line: the version, then the commit")
    func line() throws {
        let v = try remolo(["version"])
        let dashed = try remolo(["--version"])
        #expect(v.status == 0 && dashed.status == 0)
        #expect(v.output == dashed.output)
        #expect(v.output.hasPrefix("remolo \(Remolo.version) ("), "\(v.output)")
        let stamped = /^remolo [0-9][0-9.]* \(commit [0-9a-f]{12}(, with uncommitted changes)?\)\n$/
        let development = /^remolo [0-9][0-9.]* \(development build(; its source tree .+ is at commit ([0-9a-f]{12})(, with uncommitted changes)?|, commit unknown)\)\n$/
        if v.output.wholeMatch(of: stamped) != nil { return }   // REMOLO_TEST_BINARY: a package's binary
        let m = try #require(v.output.wholeMatch(of: development), "\(v.output)")
        guard let git = which("git"), let commit = m.output.2 else { return }
        let head = try run(git, ["-C", Self.tree, "rev-parse", "--short=12", "HEAD"])
        if head.status == 0 { #expect(String(commit) + "\n" == head.output, "git says \(head.output)") }
    }

    @Test("2: version takes no operand")
    func operand() throws {
        let r = try remolo(["version", "--short"])
        #expect(r.status == 2 && r.output.contains("unknown option '--short'"), "\(r.output)")
    }
}
