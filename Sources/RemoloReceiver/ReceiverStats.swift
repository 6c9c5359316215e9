// The receive loop's counters, as docs/protocol.md names them.

internal import RemoloCore
internal import RemoloPlayoutCore
import Foundation
import RemoloPlayout

/// The receive loop's counters.
public struct ReceiverStats: Sendable, Equatable {
    /// Datagrams received (any content).
    public var datagrams: UInt64
    /// Datagrams that opened (authentic, fresh, for a live session).
    public var opened: UInt64
    /// Datagrams dropped, by reason.
    public var drops: [DatagramDropReason: UInt64]
    /// Longer than a receive buffer (also counted as `.long`).
    public var truncated: UInt64
    /// The provided-buffer ring ran dry (the kernel dropped datagrams).
    public var bufferRingEmpty: UInt64
    /// Times the multishot receive had to be armed (1 = never re-armed).
    public var receiveArms: UInt64
    public var receiveErrors: UInt64
    /// Packets that missed their playout slot and were replayed from now.
    public var latePackets: UInt64
    /// Packets whose deltas were over the single-packet bound (1024 px per
    /// axis, 10 notches), clamped to it.
    public var clampedPackets: UInt64
    /// Datagrams whose running totals gave the motion of lost ones, which
    /// was played (the redundancy feature).
    public var recoveredPackets: UInt64
    /// The playout delay (us) of the session that last received a packet.
    public var delayUs: UInt64
    /// Drain ticks handled; ticks that found the timer had fired more than
    /// once since the last one; the expirations they missed.
    public var ticks: UInt64
    public var lateTicks: UInt64
    public var missedTicks: UInt64
    /// Frames written to the output (one write() each).
    public var frames: UInt64
    public var splitFrames: UInt64
    public var writeErrors: UInt64
    /// errno of the last failed write, 0 if none.
    public var lastWriteErrno: Int32
    public var timerStarts: UInt64
    public var timerStops: UInt64
    public var timerRunning: Bool
    public var commands: UInt64
    public var commandErrors: UInt64
    public var sessionsAdded: UInt64
    public var sessionsRemoved: UInt64
    public var liveSessions: Int
    /// Button changes pushed into playouts.
    public var buttons: UInt64
    /// Everything written, summed: REL_X, REL_Y (pixels), REL_WHEEL_HI_RES, REL_HWHEEL_HI_RES.
    public var totalDX: Int64
    public var totalDY: Int64
    public var totalWheelHiRes: Int64
    public var totalHWheelHiRes: Int64
    /// The loop thread runs SCHED_FIFO.
    public var realtime: Bool
    /// io_uring setup flags in use (IORING_SETUP_*).
    public var ringFlags: UInt32
    /// Arrival records written for `ArrivalRecorder`; records lost because
    /// its pipe was full (the loop never waits for it); other write failures.
    public var recordedArrivals: UInt64
    public var unrecordedArrivals: UInt64
    public var recordErrors: UInt64
    /// The loop has a keyboard device.
    public var keyboard: Bool
    /// Key changes the sessions let out (a key two sessions hold changes
    /// the device once).
    public var keys: UInt64
    /// Key changes refused at push, by reason.
    public var keysRefused: [LoopKeyRefusal: UInt64]
    /// Releases that found the session's key queue full, played after it.
    public var keysFolded: UInt64
    /// Frames written to the keyboard (one write() each); extra frames for
    /// more than 16 key changes across sessions in one tick; failed writes.
    public var keyFrames: UInt64
    public var splitKeyFrames: UInt64
    public var keyWriteErrors: UInt64
    /// SysRq presses left out because the keyboard held an Alt (the
    /// kernel's magic SysRq is not for senders).
    public var sysrqDropped: UInt64
    /// Gestures (docs/gestures.md): the loop has its touchpad; gestures
    /// begun; states and ends taken; refused (an ended gesture's, or no
    /// room); ended by the 1 s timeout; ticks a session's fingers waited for
    /// another's to lift; writes to the touchpad and failed ones.
    public var touchpad: Bool
    public var gestures: UInt64
    public var gestureStates: UInt64
    public var gesturesRefused: UInt64
    public var gestureTimeouts: UInt64
    public var gestureBlocked: UInt64
    public var touchFrames: UInt64
    public var touchWriteErrors: UInt64

    public var dropped: UInt64 { drops.values.reduce(0, +) }
    public subscript(reason: DatagramDropReason) -> UInt64 { drops[reason] ?? 0 }

    init(_ s: rx_stats) {
        datagrams = s.datagrams
        opened = s.opened
        var d: [DatagramDropReason: UInt64] = [:]
        withUnsafeBytes(of: s.drop) { raw in
            let counts = raw.bindMemory(to: UInt64.self)
            for r in DatagramDropReason.allCases { d[r] = counts[r.rawValue] }
        }
        drops = d
        truncated = s.truncated
        bufferRingEmpty = s.enobufs
        receiveArms = s.recv_arms
        receiveErrors = s.recv_errors
        latePackets = s.pushed_late
        clampedPackets = s.clamped
        recoveredPackets = s.recovered
        delayUs = s.delay_us
        ticks = s.ticks
        lateTicks = s.late_ticks
        missedTicks = s.missed_ticks
        frames = s.frames
        splitFrames = s.frames_split
        writeErrors = s.write_errors
        lastWriteErrno = Int32(truncatingIfNeeded: s.last_write_errno)
        timerStarts = s.timer_starts
        timerStops = s.timer_stops
        timerRunning = s.timer_armed != 0
        commands = s.commands
        commandErrors = s.command_errors
        sessionsAdded = s.sessions_added
        sessionsRemoved = s.sessions_removed
        liveSessions = Int(s.sessions_live)
        buttons = s.buttons
        totalDX = Int64(bitPattern: s.sum_dx)
        totalDY = Int64(bitPattern: s.sum_dy)
        totalWheelHiRes = Int64(bitPattern: s.sum_wheel_hires)
        totalHWheelHiRes = Int64(bitPattern: s.sum_hwheel_hires)
        realtime = s.rt != 0
        ringFlags = UInt32(truncatingIfNeeded: s.setup_flags)
        recordedArrivals = s.records
        unrecordedArrivals = s.record_dropped
        recordErrors = s.record_errors
        keyboard = s.keyboard != 0
        keys = s.keys
        var k: [LoopKeyRefusal: UInt64] = [:]
        withUnsafeBytes(of: s.key_refused) { raw in
            let counts = raw.bindMemory(to: UInt64.self)
            for r in LoopKeyRefusal.allCases { k[r] = counts[Int(r.core)] }
        }
        keysRefused = k
        keysFolded = s.keys_folded
        keyFrames = s.key_frames
        splitKeyFrames = s.key_frames_split
        keyWriteErrors = s.key_write_errors
        sysrqDropped = s.keys_sysrq_dropped
        touchpad = s.touchpad != 0
        gestures = s.gestures
        gestureStates = s.gesture_states
        gesturesRefused = s.gesture_refused
        gestureTimeouts = s.gesture_timeouts
        gestureBlocked = s.gesture_blocked
        touchFrames = s.touch_frames
        touchWriteErrors = s.touch_write_errors
    }

    /// The "gestures" object of the JSON statistics.
    public var gesturesJSONFields: [(String, String)] {
        [("touchpad", "\(touchpad)"), ("begun", "\(gestures)"), ("states", "\(gestureStates)"),
         ("refused", "\(gesturesRefused)"), ("timeouts", "\(gestureTimeouts)"), ("blocked", "\(gestureBlocked)"),
         ("frames", "\(touchFrames)"), ("write_errors", "\(touchWriteErrors)")]
    }

    /// Key changes refused for `reason`.
    public func keysRefused(_ reason: LoopKeyRefusal) -> UInt64 { keysRefused[reason] ?? 0 }

    /// The "keys" object of the JSON statistics: what the loop played and
    /// refused, refusals under the protocol's reason names.
    public var keysJSONFields: [(String, String)] {
        [("keyboard", "\(keyboard)"), ("played", "\(keys)")]
            + LoopKeyRefusal.allCases.map { ($0.name, "\(keysRefused($0))") }
            + [("folded", "\(keysFolded)"), ("frames", "\(keyFrames)"), ("split_frames", "\(splitKeyFrames)"),
               ("write_errors", "\(keyWriteErrors)"), ("sysrq_dropped", "\(sysrqDropped)")]
    }

    /// One JSON object on one line (`remolo receive --stats-json`): every
    /// counter, drops under docs/protocol.md's reason names.
    public var json: String { json() }

    /// The same, with `keys` added to the "keys" object and `extra` fields
    /// at the end (the receiver's control plane and socket).
    public func json(keys moreKeys: [(String, String)] = [], extra: [(String, String)] = []) -> String {
        var fields: [(String, String)] = [
            ("datagrams", "\(datagrams)"), ("opened", "\(opened)"), ("dropped", "\(dropped)"),
        ]
        let drops = DatagramDropReason.allCases.map { "\"\($0.name)\":\(self[$0])" }.joined(separator: ",")
        fields.append(("drops", "{" + drops + "}"))
        fields += [
            ("truncated", "\(truncated)"), ("buffer_ring_empty", "\(bufferRingEmpty)"),
            ("receive_arms", "\(receiveArms)"), ("receive_errors", "\(receiveErrors)"),
            ("late_packets", "\(latePackets)"), ("clamped_packets", "\(clampedPackets)"),
            ("recovered_packets", "\(recoveredPackets)"), ("delay_us", "\(delayUs)"),
            ("ticks", "\(ticks)"), ("late_ticks", "\(lateTicks)"), ("missed_ticks", "\(missedTicks)"),
            ("frames", "\(frames)"), ("split_frames", "\(splitFrames)"), ("write_errors", "\(writeErrors)"),
            ("last_write_errno", "\(lastWriteErrno)"), ("timer_starts", "\(timerStarts)"),
            ("timer_stops", "\(timerStops)"), ("timer_running", "\(timerRunning)"),
            ("commands", "\(commands)"), ("command_errors", "\(commandErrors)"),
            ("sessions_added", "\(sessionsAdded)"), ("sessions_removed", "\(sessionsRemoved)"),
            ("live_sessions", "\(liveSessions)"), ("buttons", "\(buttons)"),
            ("total_dx", "\(totalDX)"), ("total_dy", "\(totalDY)"),
            ("total_wheel_hires", "\(totalWheelHiRes)"), ("total_hwheel_hires", "\(totalHWheelHiRes)"),
            ("realtime", "\(realtime)"), ("ring_flags", "\(ringFlags)"),
            ("recorded_arrivals", "\(recordedArrivals)"), ("unrecorded_arrivals", "\(unrecordedArrivals)"),
            ("record_errors", "\(recordErrors)"),
            ("keys", "{" + (keysJSONFields + moreKeys).map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"),
            ("gestures", "{" + gesturesJSONFields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"),
        ]
        return "{" + (fields + extra).map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// One line for logs.
    public var summary: String {
        var s = "datagrams \(datagrams) opened \(opened) dropped \(dropped)"
        let reasons = DatagramDropReason.allCases.compactMap { r in self[r] > 0 ? "\(r.name) \(self[r])" : nil }
        if !reasons.isEmpty { s += " (" + reasons.joined(separator: ", ") + ")" }
        s += " | late packets \(latePackets) clamped \(clampedPackets)"
        if recoveredPackets > 0 { s += " recovered \(recoveredPackets)" }
        s += " | ticks \(ticks) late \(lateTicks) missed \(missedTicks) | frames \(frames)"
        s += " | timer \(timerRunning ? "on" : "off") (starts \(timerStarts)) | sessions \(liveSessions)"
        s += " | io_uring flags 0x" + String(ringFlags, radix: 16) + (realtime ? " | SCHED_FIFO" : "")
        if keys > 0 || keysRefused.values.contains(where: { $0 > 0 }) {
            s += " | keys \(keys)"
            let refused = LoopKeyRefusal.allCases.compactMap { r in keysRefused(r) > 0 ? "\(r.name) \(keysRefused(r))" : nil }
            if !refused.isEmpty { s += " (refused: " + refused.joined(separator: ", ") + ")" }
        }
        if bufferRingEmpty > 0 { s += " | ENOBUFS \(bufferRingEmpty)" }
        if writeErrors > 0 { s += " | write errors \(writeErrors) (errno \(lastWriteErrno))" }
        if recordedArrivals + unrecordedArrivals + recordErrors > 0 {
            s += " | recorded \(recordedArrivals)"
            if unrecordedArrivals + recordErrors > 0 { s += " (not recorded \(unrecordedArrivals + recordErrors))" }
        }
        return s
    }
}

/// The receive loop's latency histograms (rx_stats: REMOLO_HIST_BUCKETS
/// buckets of microseconds, linear then log-spaced).
public enum LatencyHistogram {
    /// A quantile of one histogram's counts: the nearest rank, placed inside
    /// its bucket by linear interpolation (the samples taken as spread
    /// evenly over the bucket, as Prometheus' histogram_quantile does), so a
    /// figure and its floor in the same bucket still differ by where their
    /// ranks fall. Exact in the linear part; the last, open-ended bucket
    /// gives its lower bound. NaN for an empty histogram.
    public static func quantile(_ counts: [UInt64], _ q: Double) -> Double {
        let n = counts.reduce(0, +)
        guard n > 0 else { return .nan }
        let rank = max(1, UInt64((q * Double(n)).rounded(.up)))
        var seen: UInt64 = 0
        for (i, c) in counts.enumerated() {
            guard seen + c >= rank else { seen += c; continue }
            let lo = Double(rx_hist_lower_us(UInt32(i)))
            if i == counts.count - 1 { return lo }
            let hi = Double(rx_hist_lower_us(UInt32(i + 1)))
            if hi - lo <= 1 { return lo }
            return lo + (hi - lo) * (Double(rank - seen) - 0.5) / Double(c)
        }
        return .nan
    }
}
