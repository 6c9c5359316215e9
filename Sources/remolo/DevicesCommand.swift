import Foundation
import RemoloPlayout
import RemoloSender

// remolo devices: the input devices `remolo send --device` can read, and
// why each of the others cannot be used.

let devicesUsage = """
usage: remolo devices

Lists /dev/input/event* with what each one is to `remolo send --device`:
touchpad (multi-touch protocol B with a resolution) and mouse are usable;
keyboards are watched for the let-go chord (Ctrl+Alt+Esc) and forwarded
with `remolo send --keyboard`; every other device says why it is not
usable. `--device auto` takes the first touchpad, else the first mouse.
Reading needs root or membership of the input group.
"""

@Sendable func devicesCommand(_ args: [String]) {
    var o = Options(args, usage: devicesUsage)
    while o.next() != nil { o.unknown() }
    let all = InputDevices.list()
    guard !all.isEmpty else {
        fail("no input devices in \(InputDevices.directory) (no evdev module, or a container without /dev/input)", code: 1)
    }
    let width = all.map(\.path.count).max() ?? 0
    for d in all {
        let kind = d.kind.map { $0 == .keyboard ? "keyboard" : $0.rawValue } ?? "not usable"
        say(d.path.padding(toLength: width + 2, withPad: " ", startingAt: 0)
            + kind.padding(toLength: 23, withPad: " ", startingAt: 0)
            + "\"\(d.name)\": \(d.note)")
    }
    if let a = try? InputDevices.automatic() {
        say("--device auto: \(a.path) (\(a.name))")
    } else {
        say("--device auto: none usable")
    }
}
