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

/// A reading of the clock that keeps counting through suspend (CLOCK_BOOTTIME) and cannot
/// be set, with the identity of the boot it belongs to: the PIN lockout is measured with
/// it, so that neither a wall-clock change nor a restart shortens a lockout.
public struct BootTime: Sendable, Equatable {
    /// The kernel's random boot ID (/proc/sys/kernel/random/boot_id), "" if unreadable:
    /// readings from different boots cannot be compared.
    public let bootID: String
    /// Milliseconds since boot, suspend included.
    public let milliseconds: Int64

    public init(bootID: String, milliseconds: Int64) {
        self.bootID = bootID
        self.milliseconds = milliseconds
    }

    /// Now, by CLOCK_BOOTTIME.
    public static func now() -> BootTime {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return BootTime(bootID: currentBootID, milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    /// Read once: it cannot change while a process runs.
    private static let currentBootID: String = {
        guard let file = fopen("/proc/sys/kernel/random/boot_id", "r") else { return "" }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
    }()
}
