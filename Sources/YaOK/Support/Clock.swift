import Glibc

/// Wall-clock and monotonic time without Foundation.
public enum Clock {
    /// Milliseconds since the Unix epoch (CLOCK_REALTIME): message timestamps, lockout deadlines.
    public static func milliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Monotonic milliseconds (CLOCK_MONOTONIC): timeouts that must not jump with the wall clock.
    public static func monotonicMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
