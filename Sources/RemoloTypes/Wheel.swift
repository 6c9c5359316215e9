/// The wheel's one notch rule. Scroll travels in hi-res units, 1/120 of a
/// notch (REL_WHEEL_HI_RES, Linux 5.0; REMOLO_HIRES_PER_NOTCH in the core,
/// which WireTests holds equal), and every output that speaks whole notches
/// (the legacy REL_WHEEL, XTest's buttons 4-7, the portal's discrete axis)
/// turns the hi-res stream into notches the same way: a running remainder
/// per axis, a notch each time it crosses a multiple of 120, the sign kept,
/// so slow scrolling still adds up and nothing is lost or doubled.
public enum Wheel {
    /// Hi-res units per notch.
    public static let unitsPerNotch: Int32 = 120

    /// Adds `units` to the axis' remainder `carry` and returns the whole
    /// notches it now holds (towards zero), leaving the rest in `carry`.
    @inlinable
    public static func notches(adding units: Int32, to carry: inout Int32) -> Int32 {
        carry &+= units
        let n = carry / unitsPerNotch
        carry -= n * unitsPerNotch
        return n
    }
}
