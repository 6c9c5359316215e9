import Foundation
import RemoloPlayout
import RemoloService
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

    /// docs/cli.md's `remolo receive` table as the key table makes it.
    static var receiveTable: String {
        var rows = ["| option / config key | value | default | what it does |", "|---|---|---|---|"]
        for k in ReceiveConfig.keys {
            let value = k.value.map { "`" + $0.replacingOccurrences(of: "|", with: "\\|") + "`" } ?? "flag"
            rows.append("| `--\(k.name)` / `\(k.name)` | \(value) | \(k.defaultValue) | \(k.summary) |")
        }
        return rows.joined(separator: "\n") + "\n"
    }

    @Test("4: docs/cli.md's receive table is the key table, row for row (the config file's keys, --help's options)")
    func configKeysDocumented() throws {
        let page = try Self.text("docs/cli.md")
        #expect(page.contains("\n" + Self.receiveTable), "docs/cli.md's receive table differs from the key table; it should read:\n\(Self.receiveTable)")
        // And the service's page points there instead of a second copy.
        let service = try Self.text("docs/service.md")
        #expect(service.contains("](cli.md)"), "docs/service.md does not link docs/cli.md for the keys")
        #expect(!service.contains("\n| `listen` | "), "docs/service.md keeps a second keys table")
    }

    @Test("7: the config file's keys are exactly receive's options, and the manual's CONFIGURATION FILE has each with its default")
    func keysAreTheOptions() throws {
        let options = ManualTests.listedOptions(try ManualTests.help("receive")).subtracting(["--help"])
        #expect(options == Set(ReceiveConfig.keys.map { "--" + $0.name }),
                "receive --help lists \(options.sorted()); the keys are \(ReceiveConfig.keys.map(\.name))")
        let (root, man, _) = try ManualTests.installed()
        defer { try? FileManager.default.removeItem(atPath: root) }
        guard let groff = which("groff") else { return skip("manual keys", "no groff") }
        let r = try run(groff, ["-man", "-Tutf8", "-rLL=200n", "-P-cbou", man])
        let section = try #require(r.output.components(separatedBy: "\nCONFIGURATION FILE\n").dropFirst().first?
            .components(separatedBy: "\nFILES\n").first, "no CONFIGURATION FILE section")
        let flat = ManualTests.words(section).joined(separator: " ")
        for k in ReceiveConfig.keys {
            #expect(flat.contains("\(k.name) = \(k.value ?? "true|false")"), "the manual lacks the key \(k.name)")
            #expect(flat.contains(ManualTests.words("Default: \(k.defaultValue).").joined(separator: " ")),
                    "the manual lacks \(k.name)'s default")
        }
        #expect(flat.contains(ManualTests.words(ReceiveConfig.exampleFile).joined(separator: " ")), "no example file")
        // The example is a file the parser takes.
        #expect(try !ReceiveConfig.arguments(parsing: ReceiveConfig.exampleFile, path: "example").isEmpty)
    }

    /// The documents packaging/deb/build ships (its `shipped_docs=(...)`).
    static func shippedDocs() throws -> Set<String> {
        let build = try text("packaging/deb/build")
        let m = try #require(build.firstMatch(of: /\nshipped_docs=\(([^)]*)\)/), "no shipped_docs in packaging/deb/build")
        return Set(m.output.1.split(separator: " ").map(String.init))
    }

    @Test("8: runtime text names no docs/*.md path; a document it names is one the package ships")
    func messagesNameShippedDocs() throws {
        let shipped = try Self.shippedDocs()
        for d in shipped { #expect(exists(Self.root + "/docs/" + d), "packaging/deb/build ships docs/\(d), which does not exist") }
        var checked = 0
        let sources = FileManager.default.enumerator(atPath: Self.root + "/Sources")!
        while let rel = sources.nextObject() as? String {
            guard rel.hasSuffix(".swift") else { continue }
            let text = try Self.text("Sources/" + rel)
            for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                // Code and string literals only: a comment may cite any doc.
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("//") { continue }
                let code = line.components(separatedBy: " // ").first!
                checked += 1
                for m in code.matches(of: /docs\/[a-z0-9-]+\.md/) {
                    Issue.record("Sources/\(rel):\(n + 1): names \(m.output), which no installed copy has; name it as the manual's SEE ALSO does")
                }
                for m in code.matches(of: /(?:^|[^\/\w-])([a-z0-9-]+)\.md\b/) where !shipped.contains(String(m.output.1) + ".md") {
                    Issue.record("Sources/\(rel):\(n + 1): names \(m.output.1).md, which the package does not ship (packaging/deb/build's shipped_docs)")
                }
            }
        }
        #expect(checked > 1000)
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
