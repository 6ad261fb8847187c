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

    /// Entries the address's log holds, aged ones not yet compacted included (tests).
    func storedEntries(_ key: [UInt8]) -> Int { addresses.storedEntries(key) }
}

/// A log of (time, bytes) per key over a rolling hour, at most one entry per POST let
/// through, so memory is bounded by the count limits.
///
/// Each key's log is an object changed in place, and aged entries are skipped by a head
/// index and compacted away only once they are half the log: a POST costs O(1) however
/// many the key logged this hour. Before, the log was a value copied out of the
/// dictionary, appended to (which copied the whole array, the dictionary still holding
/// it) and put back, and aging shifted the array: every POST copied all the posts of its
/// address in the last hour, so with many clients behind one address (a NAT, the load
/// test's 1,000 on 127.0.0.1) a relay slowed down the longer it ran (12,400 messages/s in
/// the first 5 s, 1,900/s after 100,000; page faults and memmove most of its CPU).
private struct HourlyBytes {
    private final class Log {
        var entries: [(ms: Int64, bytes: Int)] = []
        /// Entries before this index have aged out.
        var head = 0
        var total = 0

        var isEmpty: Bool { head == entries.count }

        /// Skips entries older than the window; compacts once they are half the log.
        func age(nowMs: Int64) {
            let cutoff = nowMs - RateLimiter.windowMs
            while head < entries.count && entries[head].ms <= cutoff {
                total -= entries[head].bytes
                head += 1
            }
            if head == entries.count {
                entries.removeAll(keepingCapacity: entries.count <= 1024)
                head = 0
            } else if head >= 64 && head * 2 >= entries.count {
                entries.removeFirst(head)
                head = 0
            }
        }
    }

    let limit: Int
    private var logs: [[UInt8]: Log] = [:]

    init(limit: Int) { self.limit = limit }

    /// Takes `bytes` if they fit in the key's hour; else the seconds until enough have
    /// aged out.
    mutating func take(_ key: [UInt8], _ bytes: Int, nowMs: Int64) -> RateLimiter.Decision {
        let log: Log
        if let known = logs[key] {
            log = known
        } else {
            log = Log()
            logs[key] = log
        }
        log.age(nowMs: nowMs)
        guard log.total <= limit - bytes else {
            // The oldest entries that must age out before `bytes` fit.
            var freed = 0
            var wait: Int64 = RateLimiter.windowMs
            for entry in log.entries[log.head...] {
                freed += entry.bytes
                if log.total - freed <= limit - bytes {
                    wait = entry.ms + RateLimiter.windowMs - nowMs
                    break
                }
            }
            if log.isEmpty { logs[key] = nil }
            return .limited(retryAfterSeconds: max(1, Int((wait + 999) / 1000)))
        }
        log.entries.append((nowMs, bytes))
        log.total += bytes
        return .allowed(remaining: limit - log.total)
    }

    mutating func release(_ key: [UInt8], _ bytes: Int, takenAtMs: Int64) {
        guard let log = logs[key],
              let i = log.entries[log.head...].lastIndex(where: { $0.ms == takenAtMs && $0.bytes == bytes }) else { return }
        log.entries.remove(at: i)
        log.total -= bytes
        if log.isEmpty { logs[key] = nil }
    }

    /// How many entries the key's log holds, aged ones not yet compacted away included
    /// (for tests: memory stays bounded by the posts of one hour).
    func storedEntries(_ key: [UInt8]) -> Int { logs[key]?.entries.count ?? 0 }

    /// Forgets keys with nothing in the window (taking 0 bytes would log an entry).
    mutating func prune(nowMs: Int64) {
        for (key, log) in logs {
            log.age(nowMs: nowMs)
            if log.isEmpty { logs[key] = nil }
        }
    }
}
