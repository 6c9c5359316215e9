@testable import RemoloPlayout
@testable import RemoloKeymap
import Testing

/// How many key strokes one text message (1..256 bytes of UTF-8) can cost:
/// the key queue is sized from it.
@Suite struct StrokeBoundTests {
    /// The most strokes any text of at most `bytes` UTF-8 bytes gives in
    /// `keymap`, found exactly: a search over (bytes used, modifier keys
    /// held) choosing each next character from the keymap's table, with
    /// what `strokes(for:)` charges for it (modifier keys released and
    /// pressed, the key's press and release) and the final releases. Returns
    /// the count and one text that reaches it.
    static func worst(_ keymap: Keymap, bytes: Int) -> (strokes: Int, text: String) {
        let chars = keymap.table.map { (u: $0.key, t: $0.value, len: String(UnicodeScalar($0.key)!).utf8.count) }
        var helds: [[UInt16]] = [[]]
        for c in chars where !helds.contains(c.t.modifiers) { helds.append(c.t.modifiers) }
        func cost(_ from: [UInt16], _ to: [UInt16]) -> Int {
            from.filter { !to.contains($0) }.count + to.filter { !from.contains($0) }.count + 2
        }
        // best[b][h]: the most strokes for a text of b bytes leaving helds[h] held.
        var best = [[Int]](repeating: [Int](repeating: -1, count: helds.count), count: bytes + 1)
        var from = [[(b: Int, h: Int, u: UInt32)?]](repeating: [(b: Int, h: Int, u: UInt32)?](repeating: nil, count: helds.count),
                                                      count: bytes + 1)
        best[0][0] = 0
        for b in 0..<bytes {
            for h in helds.indices where best[b][h] >= 0 {
                for c in chars where b + c.len <= bytes {
                    let nh = helds.firstIndex(of: c.t.modifiers)!
                    let v = best[b][h] + cost(helds[h], c.t.modifiers)
                    if v > best[b + c.len][nh] {
                        best[b + c.len][nh] = v
                        from[b + c.len][nh] = (b, h, c.u)
                    }
                }
            }
        }
        var top = (v: 0, b: 0, h: 0)
        for b in 0...bytes {
            for h in helds.indices where best[b][h] >= 0 && best[b][h] + helds[h].count > top.v {
                top = (best[b][h] + helds[h].count, b, h)
            }
        }
        var scalars: [UnicodeScalar] = []
        var at: (b: Int, h: Int) = (top.b, top.h)
        while let f = from[at.b][at.h] {
            scalars.append(UnicodeScalar(f.u == 0x0D ? 0x0A : f.u)!)   // Enter's entry is typed from "\n"
            at = (f.b, f.h)
        }
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars.reversed())
        return (top.v, text)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let n: Int
        let keymap: String
        let modifierKeys: Int   // the most one character needs
        let worst256: Int       // the most strokes for a 256-byte text
        var testDescription: String { "\(n): \(keymap)" }
    }

    // Measured with xkb-data 2.35 (Debian 12). us needs Shift at most:
    // "!0!0..." costs 3 strokes a character (Shift down, key down, key up;
    // Shift up, key down, key up), 768 for 256 bytes. de and fr also need
    // AltGr and Shift+AltGr: "]K]K..." swaps AltGr for Shift at every
    // character, 4 strokes each, 1024 for 256 bytes; their Shift+AltGr
    // characters are 2 or 3 bytes long, so they cost less a byte.
    static let cases: [Case] = [
        Case(n: 1, keymap: "us", modifierKeys: 1, worst256: 768),
        Case(n: 2, keymap: "de", modifierKeys: 2, worst256: 1024),
        Case(n: 3, keymap: "fr", modifierKeys: 2, worst256: 1024),
    ]

    @Test(arguments: cases) func worstText(_ c: Case) {
        let k = Maps.named(c.keymap)
        #expect(k.modifierKeysNeeded == c.modifierKeys)
        #expect(k.maxStrokesPerCharacter == 2 + 2 * c.modifierKeys)
        let (n, text) = Self.worst(k, bytes: 256)
        #expect(n == c.worst256, "\(c.keymap): \(n) strokes for \(text.debugDescription)")
        #expect(text.utf8.count <= 256)
        // The search's count is what strokes(for:) gives for its text.
        let (s, u) = k.strokes(for: text)
        #expect(s.count == n && u == 0 && balanced(s))
        // The bound the key queue can be sized from holds, in every keymap.
        #expect(n <= Keymap.maxStrokesPerCharacter * 256)
        #expect(n <= k.maxStrokesPerCharacter * text.unicodeScalars.count)
    }

    /// Texts of 256 bytes built from each keymap's own characters stay
    /// within the per-character bound, whatever their mix.
    @Test func mixedTexts() {
        for name in ["us", "de", "fr", "ru"] {
            let k = Maps.named(name)
            let all = k.table.keys.sorted().map { UnicodeScalar($0 == 0x0D ? 0x0A : $0)! }
            var text = ""
            var i = 0
            while true {
                let next = all[(i * 7919) % all.count]
                if text.utf8.count + String(next).utf8.count > 256 { break }
                text.unicodeScalars.append(next)
                i += 1
            }
            let (s, u) = k.strokes(for: text)
            #expect(u == 0 && balanced(s), "\(name)")
            #expect(s.count <= k.maxStrokesPerCharacter * text.unicodeScalars.count, "\(name)")
            #expect(s.count <= Keymap.maxStrokesPerCharacter * 256, "\(name)")
        }
        #expect(Keymap.maxStrokesPerCharacter == 8)
    }
}
