import Glibc

/// Wall-clock time without Foundation (monotonic time is the event loop's).
public enum Clock {
    /// Milliseconds since the Unix epoch (CLOCK_REALTIME): message timestamps, lockout deadlines.
    public static func milliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
