import Foundation

// swift run -c release Bench [--json] [--filter SUBSTRING] [--quick]
var settings = BenchSettings()
var json = false
var filter: String?
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--json": json = true
    case "--quick": settings.quick = true
    case "--filter":
        guard let f = args.popFirst() else {
            FileHandle.standardError.write(Data("--filter needs a substring, e.g. --filter core.\n".utf8))
            exit(2)
        }
        filter = f
    case "-h", "--help":
        print("usage: Bench [--json] [--filter SUBSTRING] [--quick]")
        exit(0)
    default:
        FileHandle.standardError.write(Data("unknown option \(a); try --help\n".utf8))
        exit(2)
    }
}

let cases = coreBenches() + wireBenches() + sessionBenches() + receiverBenches() + timingBenches() + inputBenches() + senderBenches() + drainBenches()
var selected = cases
if let f = filter { selected = cases.filter { $0.matches(f) } }
if selected.isEmpty {
    FileHandle.standardError.write(Data("no benchmark matches \(filter ?? ""); names: \(cases.map(\.name))\n".utf8))
    exit(2)
}
if !json {
    print("Remolo bench: median of \(settings.repetitions) repetitions\(settings.quick ? " (quick: smoke run, figures not meaningful)" : "")")
    print(String(repeating: "-", count: 60))
}
for c in selected {
    for r in c.run(settings) {
        if let f = filter, !r.name.contains(f), !c.name.contains(f) { continue }
        if json {
            let v = r.value.isFinite ? String(format: "%.3f", r.value) : "null"
            print("{\"name\": \"\(r.name)\", \"value\": \(v), \"unit\": \"\(r.unit)\"}")
        } else {
            let name = r.name.padding(toLength: 36, withPad: " ", startingAt: 0)
            print("\(name) \(String(format: "%12.1f", r.value)) \(r.unit)")
        }
        fflush(nil)
    }
}
