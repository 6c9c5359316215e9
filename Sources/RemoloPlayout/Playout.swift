package import RemoloPlayoutCore
internal import Glibc
import RemoloTypes

/// Remolo: a smooth pointer over Wi-Fi.
public enum Remolo {
    public static let version = "0.1.0"
    /// Motion travels in Q8 fixed point: this many units per pixel (or per
    /// 1/120 wheel notch).
    public static let unitsPerPixel: Int32 = Int32(REMOLO_Q8_ONE)
    /// The drain timer's period (480 Hz).
    public static let tickNanoseconds: UInt64 = UInt64(REMOLO_TICK_NS)
}

/// The playout policy's knobs. `.seed` holds the design note's values; `.default`
/// is what the receiver runs.
public struct PlayoutConfig: Sendable, Equatable {
    public var creepPPM: UInt32
    public var gapResetUs: UInt32
    public var stepResetUs: UInt32
    public var window: UInt32
    public var quantilePermille: UInt32
    public var delayMarginUs: UInt32
    public var delayMinUs: UInt32
    public var delayMaxUs: UInt32
    public var delayStartUs: UInt32
    public var shrinkPermille: UInt32
    public var segMinUs: UInt32
    public var segMaxUs: UInt32
    public var lateMinUs: UInt32
    public var lateMaxUs: UInt32
    public var idleUs: UInt32
    /// 0: a packet's segment starts at its slot (the design note); 1: it ends at
    /// its slot, starting no earlier than the arrival.
    public var segEndAtSlot: UInt32
    /// 0: a packet spreads over the whole time since the previous one (the
    /// design note). Otherwise movement intervals up to this are sender frames and
    /// a packet spreads over at most the latest frame.
    public var frameMaxUs: UInt32
    /// 0: the clock offset rises only by creeping (the design note). Otherwise it
    /// also rises to the smallest trip of the last two windows this long.
    public var riseWindowUs: UInt32
    /// 0: offset and delay changes shift the segments and a late packet
    /// replays over 4-16 ms (the design note). Otherwise the schedule
    /// time-stretches by at most this fraction (permille) and a late packet
    /// moves it to its arrival, caught up by stretching.
    public var slewPermille: UInt32
    /// With `slewPermille`: how much faster (permille) a backlog behind a
    /// late packet plays until caught up (1000 = twice real time).
    public var catchupPermille: UInt32
    /// 0: the delay's target is the window's quantile + margin (the design
    /// note). Otherwise the delay is chosen by replaying the recent past at
    /// a fixed set of candidate delays, each charged its delay, its
    /// catch-up latency and this many times the time the cursor would have
    /// stood waiting (docs/playout.md, "How the delay is chosen").
    public var stallWeight: UInt32
    /// With `stallWeight`: the candidates' costs are discounted by 2^-shift
    /// per packet (a memory of about 2^shift packets).
    public var chooseHorizonShift: UInt32
    /// With `stallWeight`: a candidate replaces the one in use only when it
    /// costs less by this share (permille).
    public var chooseHysteresisPermille: UInt32
    /// 0, off. Otherwise the session keeps this sender's lateness across
    /// sessions (`Playout.recall`), and a session given a usable memory
    /// holds the delay that this share (permille) of its packets exceeded
    /// at no delay, until its own packets disagree; then the window's
    /// estimate, or the chooser's with `stallWeight` (docs/playout.md, "A
    /// returning sender").
    public var recallPermille: UInt32
    /// 0 or 1 (with `stallWeight` and `recallPermille`). 1: the chooser's
    /// pick is not used below the lesser of the window's target and this
    /// session's own reading at `recallPermille` (docs/playout.md, "The
    /// floor under the chooser").
    public var chooseFloor: UInt32
    /// With `slewPermille`: 0, the schedule keeps its place across offset
    /// changes up to `stepResetUs`; otherwise a larger change than this is a
    /// clock step and the delay applies at once.
    public var keepMaxUs: UInt32
    /// With `frameMaxUs`: motion recovered for lost datagrams (the
    /// redundancy feature) spreads over at most this long; 0, over the lost
    /// frames however long.
    public var lostSpanMaxUs: UInt32

    /// The policy the receiver runs.
    public static var `default`: PlayoutConfig {
        var c = playout_config()
        playout_config_default(&c)
        return PlayoutConfig(c)
    }

    /// The chooser without its floor (`chooseFloor` 0) and with its clamp
    /// at 100 ms: `remolo receive --delay chooser`, the lab's `chooser`
    /// policy, kept for comparison (docs/smoothness.md, "The chooser
    /// against the frontier").
    public static var chooser: PlayoutConfig {
        var c = PlayoutConfig.default
        c.chooseFloor = 0
        c.delayMaxUs = UInt32(REMOLO_CHOOSER_DELAY_MAX_US)
        return c
    }

    /// The default before the chooser: the window's quantile plus margin
    /// sets the delay (`stallWeight` 0), with the same memory of a
    /// returning sender. `remolo receive --delay window`, the lab's
    /// `window` policy, kept for comparison.
    public static var window: PlayoutConfig {
        var c = PlayoutConfig.default
        c.stallWeight = 0
        c.chooseFloor = 0
        return c
    }

    /// Whether sessions learn from and leave a memory of their sender's
    /// network (`Playout.recall`, `Playout.load(recall:)`).
    public var keepsRecall: Bool { recallPermille != 0 }

    /// The design note's policy, exactly: kept for comparison.
    public static var seed: PlayoutConfig {
        var c = playout_config()
        playout_config_seed(&c)
        return PlayoutConfig(c)
    }

    package init(_ c: playout_config) {
        creepPPM = c.creep_ppm; gapResetUs = c.gap_reset_us; stepResetUs = c.step_reset_us
        window = c.window; quantilePermille = c.quantile_permille
        delayMarginUs = c.delay_margin_us; delayMinUs = c.delay_min_us
        delayMaxUs = c.delay_max_us; delayStartUs = c.delay_start_us
        shrinkPermille = c.shrink_permille; segMinUs = c.seg_min_us; segMaxUs = c.seg_max_us
        lateMinUs = c.late_min_us; lateMaxUs = c.late_max_us; idleUs = c.idle_us
        segEndAtSlot = c.seg_end_at_slot; frameMaxUs = c.frame_max_us; riseWindowUs = c.rise_window_us
        slewPermille = c.slew_permille; catchupPermille = c.catchup_permille
        stallWeight = c.stall_weight; chooseHorizonShift = c.choose_horizon_shift
        chooseHysteresisPermille = c.choose_hysteresis_permille; recallPermille = c.recall_permille
        chooseFloor = c.choose_floor
        keepMaxUs = c.keep_max_us
        lostSpanMaxUs = c.lost_span_max_us
    }

    package var c: playout_config {
        playout_config(creep_ppm: creepPPM, gap_reset_us: gapResetUs, step_reset_us: stepResetUs,
                       window: window, quantile_permille: quantilePermille,
                       delay_margin_us: delayMarginUs, delay_min_us: delayMinUs,
                       delay_max_us: delayMaxUs, delay_start_us: delayStartUs,
                       shrink_permille: shrinkPermille, seg_min_us: segMinUs, seg_max_us: segMaxUs,
                       late_min_us: lateMinUs, late_max_us: lateMaxUs, idle_us: idleUs,
                       seg_end_at_slot: segEndAtSlot, frame_max_us: frameMaxUs,
                       rise_window_us: riseWindowUs, slew_permille: slewPermille,
                       catchup_permille: catchupPermille, stall_weight: stallWeight,
                       choose_horizon_shift: chooseHorizonShift,
                       choose_hysteresis_permille: chooseHysteresisPermille, recall_permille: recallPermille,
                       choose_floor: chooseFloor, keep_max_us: keepMaxUs, lost_span_max_us: lostSpanMaxUs)
    }

    /// Whether the core accepts these values.
    public var isValid: Bool { problem == nil }

    /// The rule the first bad value breaks, in the core's words; nil when valid.
    public var problem: String? {
        var cc = c
        return playout_config_problem(&cc).map { String(cString: $0) }
    }

    /// The core's field names, in its order (`PLAYOUT_CONFIG_FIELDS`).
    public static var fieldNames: [String] {
        var names: [String] = []
        while let n = playout_config_field(UInt32(names.count)) { names.append(String(cString: n)) }
        return names
    }

    /// Sets one field by its core name (e.g. "delay_max_us"). The result may
    /// still break a rule: see `problem`.
    public mutating func set(_ name: String, _ value: Int64) throws(PlayoutError) {
        var cc = c
        let r = playout_config_set(&cc, name, value)
        if r == -ENOENT {
            throw PlayoutError(description: "unknown playout field '\(name)': fields are \(Self.fieldNames.joined(separator: ", "))")
        }
        if r == -ERANGE { throw PlayoutError(description: "\(name) = \(value): a playout field takes 0...\(UInt32.max)") }
        self = PlayoutConfig(cc)
    }
}

public struct PlayoutError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

/// One decoded pointer packet, stamped with the sender's clock.
public struct PointerPacket: Sendable, Equatable {
    public var senderTimeUs: UInt64
    public var kind: PacketKind
    /// Motion: dx, dy in Q8 px. Scroll: vertical, horizontal in Q8 hi-res
    /// wheel units (positive = up / right). Button: unused.
    public var a: Int32
    public var b: Int32
    /// Button: the evdev code (BTN_LEFT = 0x110 ...) and the new state.
    public var code: UInt16
    public var down: Bool
    /// The redundancy feature: how many datagrams the counter skipped just
    /// before this one, and the motion they carried, recovered from the
    /// running totals: x, y (Q8 px), vertical, horizontal (Q8 hi-res).
    public var lostDatagrams: UInt32 = 0
    public var recovered: SIMD4<Int32> = .zero

    public init(senderTimeUs: UInt64, kind: PacketKind, a: Int32 = 0, b: Int32 = 0,
                code: UInt16 = 0, down: Bool = false) {
        self.senderTimeUs = senderTimeUs; self.kind = kind; self.a = a; self.b = b
        self.code = code; self.down = down
    }

    public static func motion(dx: Int32, dy: Int32, at t: UInt64) -> PointerPacket {
        PointerPacket(senderTimeUs: t, kind: .motion, a: dx, b: dy)
    }
    public static func scroll(vertical: Int32, horizontal: Int32, at t: UInt64) -> PointerPacket {
        PointerPacket(senderTimeUs: t, kind: .scroll, a: vertical, b: horizontal)
    }
    public static func button(_ code: UInt16, down: Bool, at t: UInt64) -> PointerPacket {
        PointerPacket(senderTimeUs: t, kind: .button, code: code, down: down)
    }
    public static func heartbeat(at t: UInt64) -> PointerPacket {
        PointerPacket(senderTimeUs: t, kind: .heartbeat)
    }

    package var c: playout_pkt {
        playout_pkt(tx_us: senderTimeUs, a: a, b: b, code: code, kind: kind.rawValue, down: down ? 1 : 0,
                    lost_n: lostDatagrams, lost: (recovered[0], recovered[1], recovered[2], recovered[3]), g: playout_gesture())
    }
}

/// What happened to a pushed packet.
public enum PushResult: Int32, Sendable {
    case onTime = 0, late = 1, merged = 2, forced = 3, rejected = 4
    /// A key refused (`PLAYOUT_KIND_KEY` packets only): a press of a key
    /// already down, a release of a key not down, a code the keyboard does
    /// not have, a press while the key queue is full.
    case keyAlreadyHeld = 5, keyNotHeld = 6, keyUnknown = 7, keyFlood = 8
}

/// One evdev frame: what a playout tick produces and what the pointer
/// device writes (one write() ending in SYN_REPORT). Zero fields are left
/// out of the frame; an empty frame writes nothing.
public struct PointerFrame: Sendable, Equatable {
    /// REL_X / REL_Y, pixels.
    public var dx: Int32 = 0
    public var dy: Int32 = 0
    /// REL_WHEEL / REL_HWHEEL, whole notches (positive = up / right).
    public var wheel: Int32 = 0
    public var hwheel: Int32 = 0
    /// REL_WHEEL_HI_RES / REL_HWHEEL_HI_RES, 1/120 of a notch.
    public var wheelHiRes: Int32 = 0
    public var hwheelHiRes: Int32 = 0
    /// Button changes in order; at most one per button per frame.
    public var buttons: ButtonChanges = ButtonChanges()
    /// Nothing queued and the last motion is older than the idle time: the
    /// drain timer may stop.
    public var idle: Bool = false

    public init() {}

    /// A frame from its fields (for scripts and tests: the array is copied
    /// into the inline storage; more than `maxButtons` changes trap).
    public init(dx: Int32 = 0, dy: Int32 = 0, wheel: Int32 = 0, hwheel: Int32 = 0,
                wheelHiRes: Int32 = 0, hwheelHiRes: Int32 = 0, buttons: [KeyChange]) {
        self.init(dx: dx, dy: dy, wheel: wheel, hwheel: hwheel, wheelHiRes: wheelHiRes, hwheelHiRes: hwheelHiRes)
        precondition(buttons.count <= Self.maxButtons, "at most \(Self.maxButtons) button changes in one frame")
        for b in buttons { self.buttons.append(b) }
    }

    public init(dx: Int32 = 0, dy: Int32 = 0, wheel: Int32 = 0, hwheel: Int32 = 0,
                wheelHiRes: Int32 = 0, hwheelHiRes: Int32 = 0) {
        self.dx = dx; self.dy = dy
        self.wheel = wheel; self.hwheel = hwheel
        self.wheelHiRes = wheelHiRes; self.hwheelHiRes = hwheelHiRes
    }

    /// Button changes one frame may carry (PLAYOUT_BTN_PER_TICK).
    public static let maxButtons = ButtonChanges.capacity

    public var isEmpty: Bool {
        dx == 0 && dy == 0 && wheel == 0 && hwheel == 0 && wheelHiRes == 0 && hwheelHiRes == 0
            && buttons.isEmpty
    }
}

/// Up to eight button changes, stored inline so a tick never allocates.
public struct ButtonChanges: RandomAccessCollection, Sendable, Equatable {
    typealias Storage = (KeyChange, KeyChange, KeyChange, KeyChange,
                         KeyChange, KeyChange, KeyChange, KeyChange)
    /// PLAYOUT_BTN_PER_TICK, which the inline storage must match.
    public static let capacity: Int = {
        let c = Int(PLAYOUT_BTN_PER_TICK)
        precondition(MemoryLayout<Storage>.stride == c * MemoryLayout<KeyChange>.stride,
                     "ButtonChanges.Storage must hold PLAYOUT_BTN_PER_TICK changes")
        return c
    }()
    private var storage: Storage
    public private(set) var count: Int = 0

    public init() {
        let z = KeyChange(code: 0, down: false)
        storage = (z, z, z, z, z, z, z, z)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public subscript(i: Int) -> KeyChange {
        precondition(i >= 0 && i < count, "button index out of range")
        return withUnsafeBytes(of: storage) { $0.load(fromByteOffset: i * MemoryLayout<KeyChange>.stride, as: KeyChange.self) }
    }

    package mutating func append(_ b: KeyChange) {
        precondition(count < Self.capacity)
        withUnsafeMutableBytes(of: &storage) {
            $0.storeBytes(of: b, toByteOffset: count * MemoryLayout<KeyChange>.stride, as: KeyChange.self)
        }
        count += 1
    }

    public static func == (l: ButtonChanges, r: ButtonChanges) -> Bool { l.elementsEqual(r) }
}

public struct PlayoutStats: Sendable, Equatable {
    public var packets: UInt64
    public var late: UInt64
    public var merged: UInt64
    public var forced: UInt64
    public var clamped: UInt64
    public var clockResets: UInt64
    public var clockSteps: UInt64
    public var buttonsCollapsed: UInt64
    public var rejected: UInt64
    /// Packets that played the motion of lost ones (the redundancy feature).
    public var recovered: UInt64 = 0
    /// Key changes let out; refused at push, by reason; releases folded
    /// by a full key queue.
    public var keys: UInt64 = 0
    public var keysRefused: [LoopKeyRefusal: UInt64] = [:]
    public var keysFolded: UInt64 = 0
}

/// The receiver's playout: push packets as they arrive, tick at 480 Hz.
/// Owns its fixed-size state; nothing allocates after init.
public final class Playout {
    let p: UnsafeMutablePointer<playout>

    public init(config: PlayoutConfig = .default) throws(PlayoutError) {
        var c = config.c
        // Checked before anything is allocated: once every stored property
        // is set, a throwing init runs deinit.
        if let why = playout_config_problem(&c) {
            throw PlayoutError(description: "invalid playout configuration: \(String(cString: why)); start from PlayoutConfig.default and change one knob at a time")
        }
        p = .allocate(capacity: 1)
        _ = playout_init(p, &c)
    }

    deinit { p.deallocate() }

    public var config: PlayoutConfig { PlayoutConfig(p.pointee.cfg) }

    /// Feeds one packet that arrived at `arrivalUs` (receiver clock).
    @discardableResult
    public func push(_ packet: PointerPacket, arrivalUs: UInt64) -> PushResult {
        var pkt = packet.c
        return PushResult(rawValue: playout_push(p, arrivalUs, &pkt)) ?? .rejected
    }

    /// One drain tick at `nowUs` (receiver clock).
    public func tick(nowUs: UInt64) -> PointerFrame {
        var o = playout_out()
        playout_tick(p, nowUs, &o)
        var f = PointerFrame()
        f.dx = o.dx; f.dy = o.dy; f.wheel = o.wheel; f.hwheel = o.hwheel
        f.wheelHiRes = o.wheel_hires; f.hwheelHiRes = o.hwheel_hires; f.idle = o.idle
        if o.nbtn > 0 {
            withUnsafeBytes(of: o.btn) { raw in
                let b = raw.bindMemory(to: playout_btn.self)
                for i in 0..<Int(o.nbtn) {
                    f.buttons.append(KeyChange(code: b[i].code, down: b[i].down != 0))
                }
            }
        }
        return f
    }

    /// Makes everything queued due now and releases every button afterwards
    /// (end of a session: nothing lost, nothing stuck).
    public func flush(nowUs: UInt64) { playout_flush(p, nowUs) }

    /// The current playout delay (jitter buffer size), microseconds.
    public var delayUs: UInt32 { p.pointee.delay.delay_us }
    /// The current clock offset (receiver - sender), microseconds.
    public var offsetUs: Int64 { p.pointee.clock.offset_us }
    /// When the latest pushed movement is fully due (receiver clock), and
    /// whether only a tick strictly after that time emits it.
    public var lastDueUs: UInt64 { p.pointee.last_due_us }
    public var lastDueStrict: Bool { p.pointee.last_due_strict }
    /// Where the latest recovered motion plays (receiver clock): its
    /// segment's start and end.
    public var lostSpanUs: (start: UInt64, end: UInt64) { (p.pointee.lost_start_us, p.pointee.lost_end_us) }
    /// Segments waiting or playing.
    public var queuedSegments: Int { Int(p.pointee.q.tail &- p.pointee.q.head) }
    /// Q8 motion not yet emitted as whole pixels: x, y, wheel, hwheel.
    public var remainders: (Int64, Int64, Int64, Int64) {
        (p.pointee.acc.0, p.pointee.acc.1, p.pointee.acc.2, p.pointee.acc.3)
    }

    /// What this session adds to its sender's memory (recall.c): the memory
    /// it was given (none once its own packets overruled it) followed by its
    /// own movement. Save it at the session's end, keyed by sender and
    /// network; empty unless the configuration has `recallPermille`.
    public var recall: DelayRecall {
        var r = RemoloPlayoutCore.recall()
        chooser_recall_out(&p.pointee.delay.chooser, &r)
        return DelayRecall(r)
    }

    /// Before the first packet: the memory of this sender's earlier sessions
    /// on this network. With `recallPermille` and enough of it
    /// (`DelayRecall.isUsable`) the session holds the delay it reads.
    public func load(recall memory: DelayRecall) {
        var r = memory.c
        var cfg = p.pointee.cfg
        chooser_recall(&p.pointee.delay.chooser, &cfg, &r)
    }

    /// The delay a loaded memory holds, while the session's own packets
    /// agree with it; nil when none is held.
    public var heldDelayUs: UInt32? {
        p.pointee.delay.chooser.holding ? p.pointee.delay.chooser.held_us : nil
    }

    public var stats: PlayoutStats {
        let s = p.pointee.stats
        var refused: [LoopKeyRefusal: UInt64] = [:]
        withUnsafeBytes(of: s.key_refused) { raw in
            let counts = raw.bindMemory(to: UInt64.self)
            for r in LoopKeyRefusal.allCases where counts[Int(r.core)] > 0 { refused[r] = counts[Int(r.core)] }
        }
        return PlayoutStats(packets: s.packets, late: s.late, merged: s.merged, forced: s.forced,
                            clamped: s.clamped, clockResets: s.clock_resets, clockSteps: s.clock_steps,
                            buttonsCollapsed: s.btn_collapsed, rejected: s.rejected,
                            recovered: s.recovered, keys: s.keys, keysRefused: refused, keysFolded: s.key_folded)
    }
}
