import Foundation
import RemoloPlayout
import RemoloLab
import RemoloTrace
import RemoloSession
import RemoloSystem
import Testing
import RemoloTestSupport

/// Runs Tests/Interop/datagram.py, an independent implementation written
/// from the documented layout with Python's `cryptography` package.
enum Python {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Interop/datagram.py").standardized.path
    static let fix = "install it with `python3 -m pip install cryptography` (or `apt-get install python3-cryptography`)"

    /// stdout of `python3 args...` fed `input`; throws with stderr on failure.
    /// The exchange goes through temporary files, so no pipe can fill up.
    static func run(_ args: [String], input: String = "") throws -> String {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("remolo-interop-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let inURL = dir.appendingPathComponent("in"), outURL = dir.appendingPathComponent("out"),
            errURL = dir.appendingPathComponent("err")
        try Data(input.utf8).write(to: inURL)
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3"] + args
        p.standardInput = try FileHandle(forReadingFrom: inURL)
        p.standardOutput = try FileHandle(forWritingTo: outURL)
        p.standardError = try FileHandle(forWritingTo: errURL)
        do { try p.run() } catch { throw Failure("cannot start python3 (\(error)); the interop test needs python3") }
        p.waitUntilExit()
        guard p.terminationReason == .exit, p.terminationStatus == 0 else {
            let err = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
            throw Failure("python3 \(args.joined(separator: " ")) exited \(p.terminationStatus): \(err)")
        }
        return try String(contentsOf: outURL, encoding: .utf8)
    }

    static func requireCryptography() throws {
        do { _ = try run(["-c", "import cryptography; print(cryptography.__version__)"]) } catch {
            throw Failure("the interop test needs Python's `cryptography` package: \(fix)\n\(error)")
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }
}

@Suite(.serialized) struct InteropTests {
    struct Vector {
        let key: [UInt8]
        let id: [UInt8]
        let counter: UInt64
        let kind: UInt8
        let a: Int32
        let b: Int32
        let tx: UInt64
        var line: String { "\(hex(key)) \(hex(id)) \(counter) \(kind) \(a) \(b) \(tx)" }
    }

    /// Deterministic spread of every kind, extreme fields and counters.
    static func vectors() -> [Vector] {
        var rng = SplitMix64(seed: 8439)
        func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        var v: [Vector] = []
        let fixed: [(UInt8, Int32, Int32)] = [
            (1, 0, 0), (1, .min, .max), (1, -1, 1), (2, 120 * 256, -120 * 256), (2, .max, .min),
            (3, 0x110, 1), (3, 0x110, 0), (3, 0xffff, 1), (4, 0, 0),
        ]
        let counters: [UInt64] = [0, 1, 255, 256, 1 << 32, .max - 1, .max]
        for (i, f) in fixed.enumerated() {
            for c in counters.prefix(i % 2 == 0 ? counters.count : 3) {
                v.append(Vector(key: bytes(32), id: bytes(8), counter: c, kind: f.0, a: f.1, b: f.2, tx: rng.next()))
            }
        }
        for _ in 0..<64 {
            let kind = UInt8(1 + rng.next() % 2)
            v.append(Vector(key: bytes(32), id: bytes(8), counter: rng.next(), kind: kind,
                            a: Int32(truncatingIfNeeded: rng.next()), b: Int32(truncatingIfNeeded: rng.next()),
                            tx: rng.next()))
        }
        return v
    }

    static func payload(_ v: Vector) -> DatagramPayload {
        switch v.kind {
        case 1: .motion(dx: v.a, dy: v.b)
        case 2: .scroll(vertical: v.a, horizontal: v.b)
        case 3: .button(code: UInt16(v.a), down: v.b == 1)
        default: .heartbeat
        }
    }

    @Test func pythonSelftestPassesRFC8439() throws {
        try Python.requireCryptography()
        #expect(try Python.run([Python.script, "selftest"]).trimmingCharacters(in: .whitespacesAndNewlines) == "ok")
    }

    @Test func pythonSealsRemoloCoreOpens() throws {
        try Python.requireCryptography()
        let vs = Self.vectors()
        let lines = try Python.run([Python.script, "seal"], input: vs.map(\.line).joined(separator: "\n") + "\n")
            .split(separator: "\n").map(String.init)
        try #require(lines.count == vs.count)
        for (i, (v, line)) in zip(vs, lines).enumerated() {
            let bytes = unhex(line)
            #expect(bytes.count == 49, "vector \(i + 1)")
            let opener = DatagramOpener()
            let id = try SessionID(bytes: v.id)
            try opener.addSession(id, key: try DatagramKey(bytes: v.key))
            let o = try opener.open(bytes).get()
            #expect(o.session == id && o.slot == 0 && o.counter == v.counter, "vector \(i + 1): \(v.line)")
            #expect(o.datagram == Datagram(Self.payload(v), senderTimeUs: v.tx), "vector \(i + 1): \(v.line)")
            // And it is the exact byte string our sealer makes.
            #expect(bytes == DatagramSealer.seal(Datagram(Self.payload(v), senderTimeUs: v.tx), counter: v.counter,
                                                 key: try DatagramKey(bytes: v.key), session: id), "vector \(i + 1)")
        }
    }

    @Test func remoloCoreSealsPythonOpens() throws {
        try Python.requireCryptography()
        let vs = Self.vectors()
        var input = ""
        var expected: [String] = []
        for v in vs {
            let d = DatagramSealer.seal(Datagram(Self.payload(v), senderTimeUs: v.tx), counter: v.counter,
                                        key: try DatagramKey(bytes: v.key), session: try SessionID(bytes: v.id))
            input += "\(hex(v.key)) \(hex(d))\n"
            expected.append("ok \(hex(v.id)) \(v.counter) \(v.kind) \(v.a) \(v.b) \(v.tx)")
            // The same datagram with its tag, then a ciphertext byte, damaged.
            var bad = d
            bad[48] ^= 1
            input += "\(hex(v.key)) \(hex(bad))\n"
            expected.append("drop bad_tag")
            bad = d
            bad[16 + Int(v.counter % 17)] ^= 0x40
            input += "\(hex(v.key)) \(hex(bad))\n"
            expected.append("drop bad_tag")
        }
        let got = try Python.run([Python.script, "open"], input: input).split(separator: "\n").map(String.init)
        try #require(got.count == expected.count)
        for (i, (g, e)) in zip(got, expected).enumerated() {
            #expect(g == e, "line \(i + 1)")
        }
    }

    /// The redundant layout both ways: Python seals a stroke with its
    /// running totals and every third datagram is withheld; the core opens
    /// the rest on a session that granted the layout and recovers exactly
    /// the withheld motion. The core's own 65-byte datagrams open in Python
    /// with the totals it sealed.
    @Test func redundantLayoutInterop() throws {
        try Python.requireCryptography()
        let k = hex(keyBytesA), id = hex(idBytesA)
        var totals = SIMD4<Int64>.zero
        var lines: [String] = []
        var moves: [(Int32, Int32, Bool)] = []
        for n in 0..<30 {
            let scroll = n % 10 == 9
            let a = Int32(n * 37 - 400), b = Int32(-n * 11 + 90)
            totals &+= scroll ? SIMD4(0, 0, Int64(a), Int64(b)) : SIMD4(Int64(a), Int64(b), 0, 0)
            moves.append((a, b, scroll))
            lines.append("\(k) \(id) \(n) \(scroll ? 2 : 1) \(a) \(b) \(1_000 + n * 8_333) \(totals[0]) \(totals[1]) \(totals[2]) \(totals[3])")
        }
        let sealed = try Python.run([Python.script, "seal"], input: lines.joined(separator: "\n") + "\n")
            .split(separator: "\n").map { unhex(String($0)) }
        try #require(sealed.count == 30)
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        #expect(opener.grantRedundancy(idA))
        var got = SIMD4<Int64>.zero
        for (n, d) in sealed.enumerated() where n % 3 != 1 {
            #expect(d.count == 65)
            let o = try opener.open(d).get()
            let r = o.recovered
            got &+= SIMD4(Int64(r[0]), Int64(r[1]), Int64(r[2]), Int64(r[3]))
            let m = moves[n]
            got &+= m.2 ? SIMD4(0, 0, Int64(m.0), Int64(m.1)) : SIMD4(Int64(m.0), Int64(m.1), 0, 0)
            #expect(o.lostDatagrams == (n % 3 == 2 ? 1 : 0), "datagram \(n)")
        }
        // Every withheld one (the last is 28) is followed by one that opens.
        #expect(got == totals, "recovered \(got), sent \(totals)")

        var t = DatagramTotals()
        let d = Datagram(.scroll(vertical: -120, horizontal: 7), senderTimeUs: 42)
        t.add(Datagram(.motion(dx: -3, dy: 4), senderTimeUs: 41))
        t.add(d)
        let bytes = DatagramSealer.seal(d, counter: 9, totals: t, key: keyA, session: idA)
        let py = try Python.run([Python.script, "open"], input: "\(k) \(hex(bytes))\n").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(py == "ok \(id) 9 2 -120 7 42 \(UInt32(bitPattern: -3)) 4 \(UInt32(bitPattern: -120)) 7")
    }

    /// Refusals agree: what Python refuses for a reason, RemoloCore refuses
    /// for the same reason (and the reverse direction for its own sealing).
    @Test func pythonRefusalsMatch() throws {
        try Python.requireCryptography()
        let k = hex(keyBytesA), id = hex(idBytesA)
        let sealLines = [
            "\(k) \(id) 1 9 0 0 1",          // unknown kind
            "\(k) \(id) 2 0 0 0 1",          // kind 0
            "\(k) \(id) 3 3 272 2 1",        // button down = 2
            "\(k) \(id) 4 3 65536 1 1",      // button code out of range
            "\(k) \(id) 5 4 0 1 1",          // heartbeat with a delta
        ]
        let sealed = try Python.run([Python.script, "seal"], input: sealLines.joined(separator: "\n") + "\n")
            .split(separator: "\n").map { unhex(String($0)) }
        try #require(sealed.count == 5)
        let want: [DatagramDropReason] = [.badKind, .badKind, .badField, .badField, .badField]
        let pyWant = ["drop bad_kind", "drop bad_kind", "drop bad_field", "drop bad_field", "drop bad_field"]
        let opener = DatagramOpener()
        try opener.addSession(idA, key: keyA)
        let shortAndLong = [Array(sealed[0].prefix(48)), sealed[0] + [0]]
        var pyInput = ""
        for (i, d) in sealed.enumerated() {
            #expect(Outcome(opener.open(d)) == .drop(want[i]), "case \(i + 1)")
            pyInput += "\(k) \(hex(d))\n"
        }
        for d in shortAndLong { pyInput += "\(k) \(hex(d))\n" }
        let py = try Python.run([Python.script, "open"], input: pyInput).split(separator: "\n").map(String.init)
        #expect(py == pyWant + ["drop short", "drop long"])
        #expect(Outcome(opener.open(shortAndLong[0])) == .drop(.short))
        #expect(Outcome(opener.open(shortAndLong[1])) == .drop(.long))
    }
}
