import Foundation

// The command table (the shape of wireguard-tools' wg.c): each command's
// name, one line for the usage, and its entry point in its own file. The
// top-level usage text is generated from it.

struct Command: Sendable {
    let name: String
    let summary: String
    let run: @Sendable ([String]) -> Void
}

let commands: [Command] = [
    Command(name: "demo", summary: "the whole product on this machine over a simulated Wi-Fi link, scored", run: demoCommand),
    Command(name: "devices", summary: "sender: list the touchpads and mice `send --device` can read, and why others not", run: devicesCommand),
    Command(name: "identity", summary: "print this host's key fingerprint (created on first use)", run: identityCommand),
    Command(name: "pair", summary: "receiver: issue a pairing code and wait for a sender to pair", run: pairCommand),
    Command(name: "peers", summary: "receiver: list paired senders and their rights; forget one, allow or deny it typing", run: peersCommand),
    Command(name: "receive", summary: "receiver: move this machine's pointer for paired senders", run: receiveCommand),
    Command(name: "install", summary: "receiver: install the systemd unit, udev rule, uinput module entry, manual and completion", run: installCommand),
    Command(name: "uninstall", summary: "receiver: remove what install wrote", run: uninstallCommand),
    Command(name: "send", summary: "sender: connect to a receiver and send motion", run: sendCommand),
    Command(name: "discover", summary: "sender: list the receivers announced on the LAN (DNS-SD)", run: discoverCommand),
    Command(name: "simulate", summary: "replay network scenarios through the playout core and score them", run: simulateCommand),
    Command(name: "relay", summary: "forward UDP datagrams with a scenario's delays and losses", run: relayCommand),
    Command(name: "version", summary: "print the version and the commit it was built from", run: versionCommand),
]

let usage: String = {
    let width = commands.map(\.name.count).max() ?? 0
    let lines = commands.map { "  " + $0.name.padding(toLength: width + 4, withPad: " ", startingAt: 0) + $0.summary }
    return "usage: remolo COMMAND [options]\n\ncommands:\n" + lines.joined(separator: "\n")
        + "\n\nRun 'remolo COMMAND --help' for a command's options."
}()
