import Foundation

/// A program run to completion: its exit status and its output (stdout
/// and stderr together, in the order written).
public struct CommandResult: Sendable {
    public var status: Int32
    public var output: String
}

/// Runs a program to completion, with `environment` over this process's.
@discardableResult
public func runCommand(_ path: String, _ args: [String], environment: [String: String] = [:]) throws -> CommandResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    if !environment.isEmpty {
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { _, n in n }
    }
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = pipe
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return CommandResult(status: p.terminationStatus, output: String(decoding: data, as: UTF8.self))
}
