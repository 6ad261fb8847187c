/// Bytes posted per key over a rolling hour (issue 17 §2: limits by bytes as well as by
/// count): a log of (time, bytes) per key, at most one entry per POST let through, so
/// memory is bounded by the count limits. In memory, like `RateLimiter`. Loop thread only.
final class ByteRateLimiter {
    let bytesPerHour: Int
    private var logs: [[UInt8]: (entries: [(ms: Int64, bytes: Int)], total: Int)] = [:]

    init(bytesPerHour: Int) { self.bytesPerHour = bytesPerHour }

    /// Takes `bytes` if they fit in the key's hour; else the seconds until enough have aged out.
    func take(_ key: [UInt8], _ bytes: Int, nowMs: Int64) -> RateLimiter.Decision {
        var log = logs[key] ?? ([], 0)
        let cutoff = nowMs - RateLimiter.windowMs
        let expired = log.entries.prefix { $0.ms <= cutoff }
        if !expired.isEmpty {
            log.total -= expired.reduce(0) { $0 + $1.bytes }
            log.entries.removeFirst(expired.count)
        }
        guard log.total + bytes <= bytesPerHour else {
            // The oldest entries that must age out before `bytes` fit.
            var freed = 0
            var wait: Int64 = RateLimiter.windowMs
            for entry in log.entries {
                freed += entry.bytes
                if log.total - freed + bytes <= bytesPerHour {
                    wait = entry.ms + RateLimiter.windowMs - nowMs
                    break
                }
            }
            logs[key] = log.entries.isEmpty ? nil : log
            return .limited(retryAfterSeconds: max(1, Int((wait + 999) / 1000)))
        }
        log.entries.append((nowMs, bytes))
        log.total += bytes
        logs[key] = log
        return .allowed(remaining: bytesPerHour - log.total)
    }

    /// Gives back bytes taken at `takenAtMs` (a POST refused before the disk).
    func release(_ key: [UInt8], _ bytes: Int, takenAtMs: Int64) {
        guard var log = logs[key], let i = log.entries.lastIndex(where: { $0.ms == takenAtMs && $0.bytes == bytes }) else { return }
        log.entries.remove(at: i)
        log.total -= bytes
        logs[key] = log.entries.isEmpty ? nil : log
    }

    /// Forgets keys with nothing in the window.
    func prune(nowMs: Int64) {
        for key in Array(logs.keys) { _ = take(key, 0, nowMs: nowMs); if logs[key]?.entries.isEmpty ?? true { logs[key] = nil } }
    }
}
