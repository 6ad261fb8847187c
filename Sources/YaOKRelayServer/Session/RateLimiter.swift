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
    private var logs: [Key: [Int64]] = [:]

    init(messagesPerHour: Int, acksPerHour: Int) {
        messageLimit = messagesPerHour
        ackLimit = acksPerHour
    }

    private func limit(_ kind: Kind) -> Int { kind == .message ? messageLimit : ackLimit }

    /// Takes a slot if one is free (the caller gives it back with `release` if the packet
    /// turns out not to be stored).
    func take(_ pseudonym: [UInt8], _ kind: Kind, nowMs: Int64) -> Decision {
        let key = Key(pseudonym: pseudonym, kind: kind)
        var log = logs[key] ?? []
        log.removeAll { $0 <= nowMs - Self.windowMs }
        guard log.count < limit(kind) else {
            let wait = (log.min() ?? nowMs) + Self.windowMs - nowMs
            logs[key] = log
            return .limited(retryAfterSeconds: max(1, Int((wait + 999) / 1000)))
        }
        log.append(nowMs)
        logs[key] = log
        return .allowed(remaining: limit(kind) - log.count)
    }

    /// Returns a slot taken at `takenAtMs` (a duplicate, a refused or failed store).
    func release(_ pseudonym: [UInt8], _ kind: Kind, takenAtMs: Int64) {
        let key = Key(pseudonym: pseudonym, kind: kind)
        guard var log = logs[key], let i = log.lastIndex(of: takenAtMs) else { return }
        log.remove(at: i)
        logs[key] = log.isEmpty ? nil : log
    }

    /// How many messages `pseudonym` may still post this hour (READY's `remaining`).
    func remaining(_ pseudonym: [UInt8], _ kind: Kind = .message, nowMs: Int64) -> Int {
        let used = logs[Key(pseudonym: pseudonym, kind: kind)]?.filter { $0 > nowMs - Self.windowMs }.count ?? 0
        return max(0, limit(kind) - used)
    }

    /// The `n` keys with the most slots taken within the hour (messages and acks together),
    /// most first. Each log is in time order, so its live part is found by bisection.
    func top(_ n: Int, nowMs: Int64) -> [(key: [UInt8], count: Int)] {
        var totals: [[UInt8]: Int] = [:]
        let cutoff = nowMs - Self.windowMs
        for (key, log) in logs {
            var low = 0, high = log.count
            while low < high {
                let mid = (low + high) / 2
                if log[mid] <= cutoff { low = mid + 1 } else { high = mid }
            }
            if log.count > low { totals[key.pseudonym, default: 0] += log.count - low }
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
        logs = logs.compactMapValues { log in
            let kept = log.filter { $0 > nowMs - Self.windowMs }
            return kept.isEmpty ? nil : kept
        }
    }
}
