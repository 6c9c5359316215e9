import Foundation
import RemoloPlayout

// remolo COMMAND [options]; the commands are in Commands.swift, each in its own file.

let remoloVersion = Remolo.version

var arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first else { print(usage); exit(2) }
arguments.removeFirst()

switch name {
case "--version": print(versionLine())
case "-h", "--help", "help": print(usage)
default:
    guard let c = commands.first(where: { $0.name == name }) else { fail("unknown command '\(name)'\n\(usage)") }
    c.run(arguments)
}
