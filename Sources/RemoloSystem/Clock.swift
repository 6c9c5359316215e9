// The one monotonic clock: CLOCK_MONOTONIC, the time base of the playout,
// the sender's stamps, timeouts and lockouts.

internal import Glibc

public enum MonotonicClock {
    public static func nowNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    public static func nowUs() -> UInt64 { nowNs() / 1000 }

    public static func seconds() -> Double { Double(nowNs()) / 1e9 }

    /// Sleeps until the clock reads `us` (absolute, so a frame loop never
    /// drifts by its own work).
    public static func sleep(untilUs us: UInt64) {
        var ts = timespec(tv_sec: Int(us / 1_000_000), tv_nsec: Int(us % 1_000_000) * 1000)
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}
