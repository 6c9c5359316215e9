// The uinput pointer's acceleration profile under an X server that runs
// xf86-input-libinput: the per-device property "libinput Accel Profile
// Enabled" (what `xinput set-prop` sets), changed for the Remolo pointer
// alone. Nothing global changes and nothing is written to disk: the setting
// lives as long as the device does.

internal import CXTest
import Foundation

/// What `X11PointerProfile.makeFlat` found and did.
public enum X11ProfileResult: Sendable, Equatable {
    /// The device had the adaptive profile and now has the flat one.
    case setFlat(devices: Int)
    /// It already had the flat profile (an xorg.conf.d snippet, or a setting).
    case alreadyFlat
    /// The X server has no device of that name (yet): not hot-plugged, or
    /// its input config ignores it.
    case notFound
    /// The device is there but not driven by xf86-input-libinput (no
    /// libinput properties: the evdev driver, whose acceleration is X's own).
    case notLibinput
    case failed(String)
}

public enum X11PointerProfile {
    /// The property xf86-input-libinput exposes (8-bit: adaptive, flat, and
    /// custom on drivers from 1.3).
    public static let property = "libinput Accel Profile Enabled"

    /// Sets the flat profile on every X input device named `deviceName`,
    /// waiting up to `wait` seconds for the server to hot-plug it.
    public static func makeFlat(deviceName: String, display: String? = nil, wait: Double = 5) -> X11ProfileResult {
        let x: X11Connection
        do { x = try X11Connection(display: display) } catch { return .failed(error.message) }
        var major: Int32 = 2, minor: Int32 = 0
        guard XIQueryVersion(x.dpy, &major, &minor) == 0 /* Success */ else {
            return .failed("the X server at '\(x.name)' lacks XInput 2")
        }
        let deadline = Date().addingTimeInterval(wait)
        var ids: [Int32] = []
        while true {
            ids = devices(x, named: deviceName)
            if !ids.isEmpty || Date() >= deadline || !x.alive() { break }
            usleep(100_000)
        }
        guard !ids.isEmpty else { return .notFound }
        let atom = XInternAtom(x.dpy, property, 1 /* only if it exists */)
        guard atom != 0 else { return .notLibinput }
        var changed = 0
        for id in ids {
            guard var values = read(x, id, atom) else { return .notLibinput }
            guard values.count >= 2 else { return .failed("'\(property)' has \(values.count) values") }
            if values[0] == 0 && values[1] == 1 { continue }
            for i in values.indices { values[i] = 0 }
            values[1] = 1
            values.withUnsafeMutableBufferPointer { b in
                XIChangeProperty(x.dpy, id, atom, Atom(XA_INTEGER), 8, PropModeReplace, b.baseAddress, Int32(b.count))
            }
            XSync(x.dpy, 0)
            guard let after = read(x, id, atom), after.count >= 2, after[0] == 0, after[1] == 1 else {
                return .failed("the X server did not take the flat profile for device \(id)")
            }
            changed += 1
        }
        return changed == 0 ? .alreadyFlat : .setFlat(devices: changed)
    }

    /// Slave pointers (and floating devices) called `name`.
    private static func devices(_ x: X11Connection, named name: String) -> [Int32] {
        var n: Int32 = 0
        guard let info = XIQueryDevice(x.dpy, XIAllDevices, &n) else { return [] }
        defer { XIFreeDeviceInfo(info) }
        var out: [Int32] = []
        for i in 0..<Int(n) {
            let d = info[i]
            guard d.use == XISlavePointer || d.use == XIFloatingSlave, let cname = d.name else { continue }
            if String(cString: cname) == name { out.append(d.deviceid) }
        }
        return out
    }

    private static func read(_ x: X11Connection, _ id: Int32, _ atom: Atom) -> [UInt8]? {
        var type: Atom = 0
        var format: Int32 = 0
        var count: UInt = 0, after: UInt = 0
        var data: UnsafeMutablePointer<UInt8>?
        let r = XIGetProperty(x.dpy, id, atom, 0, 16, 0, 0 /* AnyPropertyType */, &type, &format, &count, &after, &data)
        defer { if let data { XFree(data) } }
        guard r == 0, format == 8, let data, count > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(count)))
    }
}
