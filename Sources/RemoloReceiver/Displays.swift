// The connected displays and the modes they show, read from the kernel's DRM
// mode-setting interface through libdrm: what `--drain-hz auto` divides.
//
// Read-only and without DRM master: GETRESOURCES, GETCONNECTOR (the
// "current" variant, which does not probe the outputs: a probe can take
// tens of milliseconds of DDC reads and makes some panels blink), GETENCODER,
// GETCRTC and GETPROPERTY are open to any client of a primary node. Opening
// the node needs read access to /dev/dri/cardN (group video on Debian, or the
// seat's uaccess ACL while a user is logged in on it).

internal import CDRM
internal import Glibc
import Foundation
import RemoloPlayout

/// Why no display could be read, with what to do about it.
public struct DisplayReadError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}

public enum Displays {
    /// Where the kernel puts the DRM nodes.
    public static let defaultDirectory = "/dev/dri"

    /// Every connected output of every card under `directory`, with the
    /// mode its CRTC shows (else the connector's preferred mode). Throws
    /// when there is no card, none can be opened, or none has a connected
    /// output with a mode.
    public static func read(directory: String = defaultDirectory) throws(DisplayReadError) -> [DisplayMode] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw DisplayReadError("\(directory) does not exist: no display driver is loaded "
                                   + "(a headless box, a server, or a VM without a display device)")
        }
        let cards = names.filter { $0.hasPrefix("card") && Int($0.dropFirst(4)) != nil }
            .sorted { Int($0.dropFirst(4))! < Int($1.dropFirst(4))! }
        guard !cards.isEmpty else {
            throw DisplayReadError("no card node in \(directory) (only \(names.sorted().joined(separator: ", "))): "
                                   + "no display output")
        }
        var found: [DisplayMode] = []
        var problems: [String] = []
        for card in cards {
            let path = directory + "/" + card
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let e = errno
                problems.append("cannot open \(path): \(String(cString: strerror(e)))"
                                + (e == EACCES || e == EPERM
                                   ? " (join the video group, or run where the desktop's user is logged in)" : ""))
                continue
            }
            defer { close(fd) }
            let modes = readCard(fd: fd, card: card)
            if modes.isEmpty { problems.append("\(card): no connected output with a mode") }
            found += modes
        }
        guard !found.isEmpty else { throw DisplayReadError(problems.joined(separator: "; ")) }
        return found
    }

    /// The connected outputs of one card.
    static func readCard(fd: Int32, card: String) -> [DisplayMode] {
        guard let res = drmModeGetResources(fd) else { return [] }   // not a mode-setting device
        defer { drmModeFreeResources(res) }
        var out: [DisplayMode] = []
        for i in 0..<Int(res.pointee.count_connectors) {
            let id = res.pointee.connectors[i]
            guard var conn = drmModeGetConnectorCurrent(fd, id) else { continue }
            // Never probed since boot (no client has asked yet): ask once.
            if conn.pointee.connection == DRM_MODE_CONNECTED && conn.pointee.count_modes == 0 {
                drmModeFreeConnector(conn)
                guard let probed = drmModeGetConnector(fd, id) else { continue }
                conn = probed
            }
            defer { drmModeFreeConnector(conn) }
            guard conn.pointee.connection == DRM_MODE_CONNECTED else { continue }
            let c = conn.pointee
            let typeName = drmModeGetConnectorTypeName(c.connector_type).map { String(cString: $0) } ?? "Unknown"
            let name = "\(card)-\(typeName)-\(c.connector_type_id)"
            var mode: drmModeModeInfo?
            var crtcID: UInt32 = 0
            if c.encoder_id != 0, let enc = drmModeGetEncoder(fd, c.encoder_id) {
                crtcID = enc.pointee.crtc_id
                drmModeFreeEncoder(enc)
            }
            if crtcID != 0, let crtc = drmModeGetCrtc(fd, crtcID) {
                if crtc.pointee.mode_valid != 0 { mode = crtc.pointee.mode }
                drmModeFreeCrtc(crtc)
            }
            let inUse = mode != nil
            if mode == nil, c.count_modes > 0 {
                let modes = UnsafeBufferPointer(start: c.modes, count: Int(c.count_modes))
                mode = modes.first { $0.type & UInt32(DRM_MODE_TYPE_PREFERRED) != 0 } ?? modes.first
            }
            guard let m = mode else { continue }
            out.append(DisplayMode(connector: name, width: Int(m.hdisplay), height: Int(m.vdisplay),
                                   refreshHz: exactRefresh(clockKHz: m.clock, htotal: m.htotal, vtotal: m.vtotal,
                                                           vscan: m.vscan, flags: m.flags),
                                   nominalHz: Int(m.vrefresh), inUse: inUse,
                                   vrrCapable: property(fd, id, DRM_MODE_OBJECT_CONNECTOR, "vrr_capable") == 1,
                                   vrrEnabled: crtcID != 0 && property(fd, crtcID, DRM_MODE_OBJECT_CRTC, "VRR_ENABLED") == 1))
        }
        return out
    }

    /// A mode's rate as the kernel computes it (drm_mode_vrefresh, Linux
    /// 5.9): clock * 1000 / (htotal * vtotal), doubled for interlace,
    /// halved for doublescan, divided by vscan; in hertz, unrounded.
    public static func exactRefresh(clockKHz: UInt32, htotal: UInt16, vtotal: UInt16, vscan: UInt16,
                                    flags: UInt32) -> Double {
        guard htotal > 0, vtotal > 0 else { return 0 }
        var num = Double(clockKHz) * 1000, den = Double(htotal) * Double(vtotal)
        if flags & UInt32(DRM_MODE_FLAG_INTERLACE) != 0 { num *= 2 }
        if flags & UInt32(DRM_MODE_FLAG_DBLSCAN) != 0 { den *= 2 }
        if vscan > 1 { den *= Double(vscan) }
        return num / den
    }

    /// An object's property value by name, or nil when it has none.
    static func property(_ fd: Int32, _ object: UInt32, _ type: UInt32, _ name: String) -> UInt64? {
        guard let props = drmModeObjectGetProperties(fd, object, type) else { return nil }
        defer { drmModeFreeObjectProperties(props) }
        for i in 0..<Int(props.pointee.count_props) {
            guard let p = drmModeGetProperty(fd, props.pointee.props[i]) else { continue }
            let match = withUnsafeBytes(of: p.pointee.name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) == name
            }
            drmModeFreeProperty(p)
            if match { return props.pointee.prop_values[i] }
        }
        return nil
    }

    /// `--drain-hz auto`: the displays read from `directory` and the rate
    /// DrainRule picks for them, or 480 Hz and why none could be read.
    public static func autoDrain(directory: String = defaultDirectory) -> DrainChoice {
        do { return DrainRule.auto(try read(directory: directory)) } catch {
            return DrainRule.fallback("no display to match: \(error.description)")
        }
    }
}
