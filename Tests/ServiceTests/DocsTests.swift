import Foundation
import Remolo
import RemoloTestSupport
import Testing

/// The documentation as a reader finds it: a README short enough to read
/// in five minutes, links that lead somewhere, and the reference tables
/// holding every key, option and figure the code and its other tests use.
@Suite struct DocsTests {
    /// The package root (this file is Tests/ServiceTests/DocsTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    static func text(_ relative: String) throws -> String {
        try #require(read(root + "/" + relative), "no \(relative)")
    }

    /// README.md and every docs/*.md, as paths from the root.
    static func pages() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs")
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return ["README.md"] + docs
    }

    /// The page's text without fenced code blocks and code spans, where a
    /// `](` is code, not a link.
    static func prose(_ page: String) -> String {
        var out: [Substring] = []
        var fenced = false
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.drop(while: { $0 == " " }).hasPrefix("```") { fenced.toggle(); continue }
            if !fenced { out.append(line) }
        }
        return out.joined(separator: "\n").replacing(/`[^`\n]*`/, with: "")
    }

    /// Every link target (`[text](target)`, `![alt](target)`) of a page.
    static func links(_ page: String) -> [String] {
        prose(page).matches(of: /\]\(([^)\s]+)(?:\s+"[^"]*")?\)/).map { String($0.output.1) }
    }

    @Test("1: README.md is at most 300 lines")
    func readmeIsShort() throws {
        let lines = try Self.text("README.md").split(separator: "\n", omittingEmptySubsequences: false)
        let count = lines.last == "" ? lines.count - 1 : lines.count
        #expect(count <= 300, "README.md has \(count) lines; move the detail to docs/ and link it")
    }

    @Test("2: every relative link in README.md and docs/*.md leads to a file that exists, without an anchor")
    func linksResolve() throws {
        var checked = 0
        for page in try Self.pages() {
            let dir = (page as NSString).deletingLastPathComponent
            for target in Self.links(try Self.text(page)) {
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                checked += 1
                #expect(!target.contains("#"), "\(page): link \(target) has an anchor; headings move, files stay: link the file")
                let path = String(target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0])
                let resolved = ((Self.root + "/" + (dir.isEmpty ? "" : dir + "/") + path) as NSString).standardizingPath
                #expect(!path.isEmpty && exists(resolved), "\(page): link \(target) leads nowhere (\(resolved))")
                #expect(resolved.hasPrefix(Self.root + "/"), "\(page): link \(target) leaves the repository")
            }
        }
        #expect(checked > 40, "only \(checked) relative links found: is the link pattern still right?")
    }

    @Test("3: README.md links every page of docs/")
    func readmeLinksEveryDoc() throws {
        let linked = Set(Self.links(try Self.text("README.md")))
        for page in try Self.pages().dropFirst() where !linked.contains(page) {
            Issue.record("README.md does not link \(page)")
        }
    }

    @Test("4: docs/service.md's keys table has a row for every key of the config file")
    func configKeysDocumented() throws {
        let page = try Self.text("docs/service.md")
        for key in ReceiveConfig.keys where !page.contains("\n| `\(key.name)` | ") {
            Issue.record("docs/service.md's keys table lacks `\(key.name)`")
        }
    }

    @Test("5: docs/service.md states the exposure SystemdTests hold the units to")
    func exposureDocumented() throws {
        let page = try Self.text("docs/service.md")
        let stated = page.matches(of: /\*\*(\d+\.\d) (?:OK|MEDIUM|SAFE|EXPOSED|UNSAFE)\*\*/).compactMap { Double($0.output.1) }
        #expect(stated == SystemdTests.statedExposure.map(\.2), "docs/service.md states \(stated)")
    }

    @Test("6: docs/cli.md names every command and every option its --help lists")
    func cliDocumented() throws {
        let page = try Self.text("docs/cli.md")
        for name in try ManualTests.commandNames() {
            if !page.contains("`remolo \(name)`") { Issue.record("docs/cli.md lacks the command \(name)") }
            for flag in ManualTests.listedOptions(try ManualTests.help(name)).sorted()
            where flag != "--help" && !page.contains("`\(flag)`") && !page.contains("`\(flag) ") {
                Issue.record("docs/cli.md lacks remolo \(name) \(flag)")
            }
        }
    }
}
