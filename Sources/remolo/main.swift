import Foundation
import Remolo

// remolo COMMAND [options]; each command lives in its own file.
let usage = """
usage: remolo COMMAND [options]

commands:
  identity    print this host's key fingerprint (created on first use)
  pair        receiver: issue a pairing code and wait for a sender to pair
  receive     receiver: move this machine's pointer for paired senders
  send        sender: connect to a receiver and send motion
  simulate    replay network scenarios through the playout core and score them
  relay       forward UDP datagrams with a scenario's delays and losses
  version     print the version

Run 'remolo COMMAND --help' for a command's options.
"""

/// Prints to standard error and exits: errors say how to fix.
func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("remolo: \(message)\n".utf8))
    exit(code)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { print(usage); exit(2) }
arguments.removeFirst()

switch command {
case "version", "--version": print("remolo \(Remolo.version)")
case "-h", "--help", "help": print(usage)
default:
    if let run = commands[command] { run(arguments) } else { fail("unknown command '\(command)'\n\(usage)") }
}
