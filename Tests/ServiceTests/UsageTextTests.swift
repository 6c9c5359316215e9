@testable import RemoloPlayout
@testable import RemoloService
import Testing

/// Reading a usage text back into its parts (UsageText), the source of the
/// manual page and the completion: the synopsis's options and words, an
/// item's first line, and whole texts' blocks.
@Suite struct UsageTextTests {
    typealias O = UsageOption

    @Test("synopsis line: its options with their values, and its words", arguments: [
        (1, "remolo demo [--scenario S1..S7] [--seconds N] [--svg FILE|none] [--no-uinput]",
         [O(flag: "--scenario", value: "S1..S7"), O(flag: "--seconds", value: "N"), O(flag: "--svg", value: "FILE|none"),
          O(flag: "--no-uinput")], []),
        (2, "remolo install [--system | --user] [--print] [--rt PRIORITY]",
         [O(flag: "--system"), O(flag: "--user"), O(flag: "--print"), O(flag: "--rt", value: "PRIORITY")], []),
        (3, "                [--seed S] [--json|--markdown] [--trace FILE]",
         [O(flag: "--seed", value: "S"), O(flag: "--json"), O(flag: "--markdown"), O(flag: "--trace", value: "FILE")], []),
        (4, "remolo receive [--web [ADDR:]PORT] [--no-announce]",
         [O(flag: "--web", value: "[ADDR:]PORT"), O(flag: "--no-announce")], []),
        (5, "remolo send [--to HOST:PORT] --device PATH|auto [--grab [--keyboard PATH|auto]]",
         [O(flag: "--to", value: "HOST:PORT"), O(flag: "--device", value: "PATH|auto"), O(flag: "--grab"),
          O(flag: "--keyboard", value: "PATH|auto")], []),
        (6, "remolo peers forget FINGERPRINT [--service]", [O(flag: "--service")], ["forget"]),
        (7, "remolo relay --scenario NAME --listen ADDR:PORT --to ADDR:PORT",
         [O(flag: "--scenario", value: "NAME"), O(flag: "--listen", value: "ADDR:PORT"), O(flag: "--to", value: "ADDR:PORT")], []),
        (8, "[--display-hz HZ,...] [--drain-hz auto|HZ,...] [--sender-hz 60-240]",
         [O(flag: "--display-hz", value: "HZ,..."), O(flag: "--drain-hz", value: "auto|HZ,..."),
          O(flag: "--sender-hz", value: "60-240")], []),
        (9, "remolo version", [], []),
        (10, "remolo peers [--json] [--service]", [O(flag: "--json"), O(flag: "--service")], []),
        (11, "remolo install --package --root DIR [--bin PATH]",
         [O(flag: "--package"), O(flag: "--root", value: "DIR"), O(flag: "--bin", value: "PATH")], []),
    ] as [(Int, String, [UsageOption], [String])])
    func synopsis(_ id: Int, _ line: String, _ options: [UsageOption], _ words: [String]) {
        let s = UsageText.scanSynopsis(line, program: "remolo")
        #expect(s.flags == options, "case \(id)")
        #expect(s.words == words, "case \(id)")
    }

    @Test("an item's first line: term, value shown, description; text is no item", arguments: [
        (1, "  --to        the receiver (remolo receive)", "--to", nil, "the receiver (remolo receive)"),
        (2, "  --sink FILE write the pointer's frames", "--sink", "FILE", "write the pointer's frames"),
        (3, "  --reconnect when the session dies", "--reconnect", nil, "when the session dies"),
        (4, "  --web [ADDR:]PORT", "--web", "[ADDR:]PORT", nil),
        (5, "  --dump-frames FILE  per-vsync cursor", "--dump-frames", "FILE", "per-vsync cursor"),
        (6, "  --pointer-speed  pixels per point", "--pointer-speed", nil, "pixels per point"),
        (7, "  forget          remove the sender", "forget", nil, "remove the sender"),
        (8, "  Let go: Ctrl+Alt+Esc held on any keyboard", nil, nil, nil),
        (9, "  --scenario     S1..S7, a comma list", "--scenario", nil, "S1..S7, a comma list"),
        (10, "  --system    (default) /etc/systemd/system", "--system", nil, "(default) /etc/systemd/system"),
        (11, "  --no-announce", "--no-announce", nil, nil),
        // --json is a switch in the synopsis: what follows one space is its description.
        (12, "  --json JSON lines, one per row", "--json", nil, "JSON lines, one per row"),
        (13, "  forget the rest of it", nil, nil, nil),
        (14, "  --rt PRIORITY", "--rt", "PRIORITY", nil),
        (15, "  -- alone", nil, nil, nil),
        (16, "  uinput  a virtual mouse", nil, nil, nil),
    ] as [(Int, String, String?, String?, String?)])
    func itemHead(_ id: Int, _ line: String, _ term: String?, _ value: String?, _ description: String?) {
        let known = [O(flag: "--json"), O(flag: "--rt", value: "PRIORITY"), O(flag: "--web", value: "[ADDR:]PORT")]
        let h = UsageText.itemHead(line, options: known, words: ["forget"])
        #expect(h?.flag == term, "case \(id)")
        #expect(h?.value == value, "case \(id)")
        #expect(h?.description == description, "case \(id)")
    }

    @Test("1: a whole text: synopsis, paragraph, items (running text and a table), indented text, options in order")
    func wholeText() {
        let text = """
            usage: remolo receive [--listen ADDR:PORT] [--stats-json]
                                  [--output uinput|x11]

            Receives.
            Two lines.

              --listen    where,
                          and more
              --stats-json  print them as one JSON object per line (drop reasons as in
                          the README)
              --output    where the pointer moves:
                          uinput  a virtual mouse
                                  (/dev/uinput)
                          x11     XTest
              --dump FILE  the frames
              Let go: Ctrl+Alt+Esc held
              on any keyboard.

            The end.
            """
        let u = UsageText(parsing: text)
        #expect(u.blocks == [
            .synopsis(["remolo receive [--listen ADDR:PORT] [--stats-json]", "               [--output uinput|x11]"]),
            .paragraph(["Receives.", "Two lines."]),
            .item(UsageItem(term: "--listen", lines: ["where,", "and more"])),
            .item(UsageItem(term: "--stats-json", lines: ["print them as one JSON object per line (drop reasons as in", "the README)"])),
            .item(UsageItem(term: "--output", lines: ["where the pointer moves:", "uinput  a virtual mouse", "        (/dev/uinput)", "x11     XTest"],
                            filled: false)),
            .item(UsageItem(term: "--dump", value: "FILE", lines: ["the frames"])),
            .verbatim(["Let go: Ctrl+Alt+Esc held", "on any keyboard."]),
            .paragraph(["The end."]),
        ])
        #expect(u.options == [O(flag: "--listen", value: "ADDR:PORT"), O(flag: "--stats-json"), O(flag: "--output", value: "uinput|x11"),
                              O(flag: "--dump", value: "FILE")])
        #expect(u.words.isEmpty)
    }

    @Test("2: subcommand words of several forms, described as items")
    func words() {
        let text = """
            usage: remolo peers [--json]
                   remolo peers forget FINGERPRINT
                   remolo peers allow-keyboard FINGERPRINT

            Lists.

              forget          remove the sender
              allow-keyboard  let it type
              --json          as JSON
            """
        let u = UsageText(parsing: text)
        #expect(u.words == ["forget", "allow-keyboard"])
        #expect(u.options == [O(flag: "--json")])
        let terms = u.blocks.compactMap { if case .item(let i) = $0 { i.term } else { nil } }
        #expect(terms == ["forget", "allow-keyboard", "--json"])
    }

    @Test("3: a text without a synopsis or items is kept as text")
    func plain() {
        let u = UsageText(parsing: "Just words.\n\n  indented")
        #expect(u.blocks == [.paragraph(["Just words."]), .verbatim(["indented"])])
        #expect(u.options.isEmpty && u.words.isEmpty)
    }
}
