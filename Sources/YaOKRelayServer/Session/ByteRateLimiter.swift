/// Bytes posted per client address and per its /24 over a rolling hour (issue 17 §2:
/// limits by bytes as well as by count; the /24 so that the addresses of one network
/// cannot multiply the address's limit). Keys are an IPv4 address's four bytes (the /24
/// is their first three). In memory, like `RateLimiter`. Loop thread only.
final class ByteRateLimiter {
    let bytesPerHour: Int
    let prefixBytesPerHour: Int
    private var addresses: HourlyBytes
    private var prefixes: HourlyBytes

    init(bytesPerHour: Int, prefixBytesPerHour: Int = .max) {
        self.bytesPerHour = bytesPerHour
        self.prefixBytesPerHour = prefixBytesPerHour
        addresses = HourlyBytes(limit: bytesPerHour)
        prefixes = HourlyBytes(limit: prefixBytesPerHour)
    }

    private static func prefix(_ key: [UInt8]) -> [UInt8] { Array(key.prefix(3)) }

    /// Takes `bytes` if they fit in the address's hour and its /24's; else the seconds
    /// until enough have aged out (nothing is taken then).
    func take(_ key: [UInt8], _ bytes: Int, nowMs: Int64) -> RateLimiter.Decision {
        let decision = addresses.take(key, bytes, nowMs: nowMs)
        guard case .allowed(let left) = decision else { return decision }
        switch prefixes.take(Self.prefix(key), bytes, nowMs: nowMs) {
        case .allowed(let prefixLeft):
            return .allowed(remaining: min(left, prefixLeft))
        case .limited(let seconds):
            addresses.release(key, bytes, takenAtMs: nowMs)
            return .limited(retryAfterSeconds: seconds)
        }
    }

    /// Gives back bytes taken at `takenAtMs` (a POST refused before the disk).
    func release(_ key: [UInt8], _ bytes: Int, takenAtMs: Int64) {
        addresses.release(key, bytes, takenAtMs: takenAtMs)
        prefixes.release(Self.prefix(key), bytes, takenAtMs: takenAtMs)
    }

    /// Forgets keys with nothing in the window.
    func prune(nowMs: Int64) {
        addresses.prune(nowMs: nowMs)
        prefixes.prune(nowMs: nowMs)
    }
}

/// A log of (time, bytes) per key over a rolling hour, at most one entry per POST let
/// through, so memory is bounded by the count limits.
private struct HourlyBytes {
    let limit: Int
    private var logs: [[UInt8]: (entries: [(ms: Int64, bytes: Int)], total: Int)] = [:]

    init(limit: Int) { self.limit = limit }

    /// Takes `bytes` if they fit in the key's hour; else the seconds until enough have
    /// aged out.
    mutating func take(_ key: [UInt8], _ bytes: Int, nowMs: Int64) -> RateLimiter.Decision {
        var log = Self.aged(logs[key] ?? ([], 0), nowMs: nowMs)
        guard log.total <= limit - bytes else {
            // The oldest entries that must age out before `bytes` fit.
            var freed = 0
            var wait: Int64 = RateLimiter.windowMs
            for entry in log.entries {
                freed += entry.bytes
                if log.total - freed <= limit - bytes {
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
        return .allowed(remaining: limit - log.total)
    }

    mutating func release(_ key: [UInt8], _ bytes: Int, takenAtMs: Int64) {
        guard var log = logs[key], let i = log.entries.lastIndex(where: { $0.ms == takenAtMs && $0.bytes == bytes }) else { return }
        log.entries.remove(at: i)
        log.total -= bytes
        logs[key] = log.entries.isEmpty ? nil : log
    }

    /// Drops entries older than the window.
    private static func aged(_ log: (entries: [(ms: Int64, bytes: Int)], total: Int), nowMs: Int64)
        -> (entries: [(ms: Int64, bytes: Int)], total: Int) {
        var log = log
        let cutoff = nowMs - RateLimiter.windowMs
        let expired = log.entries.prefix { $0.ms <= cutoff }
        if !expired.isEmpty {
            log.total -= expired.reduce(0) { $0 + $1.bytes }
            log.entries.removeFirst(expired.count)
        }
        return log
    }

    /// Forgets keys with nothing in the window (taking 0 bytes would log an entry).
    mutating func prune(nowMs: Int64) {
        for (key, log) in logs {
            let aged = Self.aged(log, nowMs: nowMs)
            logs[key] = aged.entries.isEmpty ? nil : aged
        }
    }
}
