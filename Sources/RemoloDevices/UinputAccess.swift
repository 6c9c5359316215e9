/// Who may open /dev/uinput, and how the system is set up for it: the
/// facts the devices' errors quote and the service's files write
/// (RemoloService.ServiceFiles), defined here, below both.
public enum UinputAccess {
    public static let udevRulePath = "/etc/udev/rules.d/60-remolo-uinput.rules"
    public static let modulesLoadPath = "/etc/modules-load.d/remolo.conf"
    /// The group that may open /dev/uinput (the udev rule's GROUP=); the
    /// system unit's dynamic user joins it.
    public static let uinputGroup = "input"
    /// The rule itself, which PointerDeviceError's advice quotes.
    public static let udevRuleLine = #"KERNEL=="uinput", SUBSYSTEM=="misc", GROUP="\#(uinputGroup)", MODE="0660", TAG+="uaccess", OPTIONS+="static_node=uinput""#
}
