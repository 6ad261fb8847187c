/// Per-pseudonym rate limits over a rolling hour (docs/PROTOCOL.md §8.3): messages, and
/// acks with their own, higher limit. A sliding log of the times of what was let through,
/// at most `limit` entries per pseudonym and kind, so memory is bounded by the limit and
/// the number of pseudonyms active within the hour. In memory: a restart forgets it (a
/// courtesy limit, §8.4, not a defence). Loop thread only.
final class RateLimiter {
    enum Kind { case message, ack }

    enum Decision: Equatable {
        /// Let through; `remaining` more may pass within the hour.
        case allowed(remaining: Int)
        /// Over the limit: the earliest slot frees in this many seconds (≥ 1).
        case limited(retryAfterSeconds: Int)
    }

    private struct Key: Hashable {
        let pseudonym: [UInt8]
        let kind: Kind
    }

    static let windowMs: Int64 = 3_600_000
    let messageLimit: Int
    let ackLimit: Int
    private var logs: [Key: SlidingLog] = [:]

    init(messagesPerHour: Int, acksPerHour: Int) {
        messageLimit = messagesPerHour
        ackLimit = acksPerHour
    }

    private func limit(_ kind: Kind) -> Int { kind == .message ? messageLimit : ackLimit }

    /// Takes a slot if one is free (the caller gives it back with `release` if the packet
    /// turns out not to be stored).
    func take(_ pseudonym: [UInt8], _ kind: Kind, nowMs: Int64) -> Decision {
        let key = Key(pseudonym: pseudonym, kind: kind)
        let log: SlidingLog
        if let known = logs[key] {
            log = known
        } else {
            log = SlidingLog()
            logs[key] = log
        }
        log.age(nowMs: nowMs)
        guard log.count < limit(kind) else {
            let wait = (log.oldest ?? nowMs) + Self.windowMs - nowMs
            return .limited(retryAfterSeconds: max(1, Int((wait + 999) / 1000)))
        }
        log.times.append(nowMs)
        return .allowed(remaining: limit(kind) - log.count)
    }

    /// Returns a slot taken at `takenAtMs` (a duplicate, a refused or failed store).
    func release(_ pseudonym: [UInt8], _ kind: Kind, takenAtMs: Int64) {
        let key = Key(pseudonym: pseudonym, kind: kind)
        guard let log = logs[key], let i = log.times[log.head...].lastIndex(of: takenAtMs) else { return }
        log.times.remove(at: i)
        if log.count == 0 { logs[key] = nil }
    }

    /// How many messages `pseudonym` may still post this hour (READY's `remaining`).
    func remaining(_ pseudonym: [UInt8], _ kind: Kind = .message, nowMs: Int64) -> Int {
        guard let log = logs[Key(pseudonym: pseudonym, kind: kind)] else { return limit(kind) }
        return max(0, limit(kind) - log.live(nowMs: nowMs).count)
    }

    /// The `n` keys with the most slots taken within the hour (messages and acks together),
    /// most first.
    func top(_ n: Int, nowMs: Int64) -> [(key: [UInt8], count: Int)] {
        var totals: [[UInt8]: Int] = [:]
        for (key, log) in logs {
            let live = log.live(nowMs: nowMs)
            if !live.isEmpty { totals[key.pseudonym, default: 0] += live.count }
        }
        var best: [(key: [UInt8], count: Int)] = []
        for (key, count) in totals {
            guard best.count < n || count > best[best.count - 1].count else { continue }
            let at = best.firstIndex { $0.count < count } ?? best.count
            best.insert((key, count), at: at)
            if best.count > n { best.removeLast() }
        }
        return best
    }

    /// Forgets pseudonyms with nothing in the window (called now and then).
    func prune(nowMs: Int64) {
        for (key, log) in logs {
            log.age(nowMs: nowMs)
            if log.count == 0 { logs[key] = nil }
        }
    }

    /// Slots the key's log holds, aged ones not yet compacted included (tests).
    func storedEntries(_ pseudonym: [UInt8], _ kind: Kind) -> Int {
        logs[Key(pseudonym: pseudonym, kind: kind)]?.times.count ?? 0
    }
}

/// The times of the slots a key took, oldest first, changed in place; aged times are
/// skipped by a head index and compacted away only once they are half the log, so a take
/// costs O(1) however many the key took this hour. Before, the log was an array copied out
/// of the dictionary, filtered (a copy, the dictionary still holding the original) and put
/// back at every take: the address limiter's log of 1,000 clients behind one address
/// (a NAT, the load test on 127.0.0.1) holds every POST of the hour, so each POST copied
/// them all and a relay slowed down the longer it ran.
final class SlidingLog {
    /// Times in the order taken (the wall clock: a step back leaves an entry behind a
    /// later one, aged out with it, a little late: on the safe side).
    var times: [Int64] = []
    /// Times before this index have aged out.
    var head = 0

    var count: Int { times.count - head }
    /// The first to age out (`age` goes in this order).
    var oldest: Int64? { head < times.count ? times[head] : nil }

    /// Skips times at or before an hour ago; compacts once they are half the log.
    func age(nowMs: Int64) {
        let cutoff = nowMs - RateLimiter.windowMs
        while head < times.count && times[head] <= cutoff { head += 1 }
        if head == times.count {
            times.removeAll(keepingCapacity: times.count <= 1024)
            head = 0
        } else if head >= 64 && head * 2 >= times.count {
            times.removeFirst(head)
            head = 0
        }
    }

    /// The times within the hour before `nowMs` (found by bisection: in time order).
    func live(nowMs: Int64) -> ArraySlice<Int64> {
        let cutoff = nowMs - RateLimiter.windowMs
        var low = head, high = times.count
        while low < high {
            let mid = (low + high) / 2
            if times[mid] <= cutoff { low = mid + 1 } else { high = mid }
        }
        return times[low...]
    }
}
