/// The relay-wide index from a mailbox to the sessions subscribed to it, for delivering a
/// new packet (issue 17 §2: a `[MailboxID: Set<UInt64>]` cost a Set allocation per
/// mailbox). Keyed by the mailbox's first 8 bytes (`MailboxKey.prefix`), holding the first
/// session inline: 16 bytes a bucket in the common case of one session per mailbox; the
/// rest of a shared mailbox's sessions are in `more`. A prefix may be shared by two
/// mailboxes, so what it returns are candidates: the caller checks the session's own
/// subscriptions (`SubscriptionTable`), which hold the whole key.
struct SubscriberIndex {
    private var first: [UInt64: UInt64] = [:]
    private var more: [UInt64: [UInt64]] = [:]

    /// Prefixes indexed.
    var count: Int { first.count }
    var capacity: Int { first.capacity }

    mutating func insert(_ key: MailboxKey, session: UInt64) {
        let p = key.prefix
        guard let head = first[p] else {
            first[p] = session
            return
        }
        guard head != session, more[p]?.contains(session) != true else { return }
        more[p, default: []].append(session)
    }

    /// Takes `session` out for `key`'s prefix (once per subscribed mailbox: a session with
    /// two mailboxes sharing a prefix was indexed once and is taken out at the first).
    mutating func remove(_ key: MailboxKey, session: UInt64) {
        let p = key.prefix
        guard let head = first[p] else { return }
        if head == session {
            if var rest = more[p], !rest.isEmpty {
                first[p] = rest.removeLast()
                more[p] = rest.isEmpty ? nil : rest
            } else {
                first[p] = nil
            }
        } else if var rest = more[p], let i = rest.firstIndex(of: session) {
            rest.swapAt(i, rest.count - 1)
            rest.removeLast()
            more[p] = rest.isEmpty ? nil : rest
        }
    }

    /// Sessions that may be subscribed to `key` (check each session's own table).
    func candidates(_ key: MailboxKey) -> [UInt64] {
        guard let head = first[key.prefix] else { return [] }
        return [head] + (more[key.prefix] ?? [])
    }

    /// Swift dictionaries keep their capacity when emptied: after a flood has gone, copy
    /// into right-sized ones. Returns whether it did (when under a quarter is used).
    mutating func compact() -> Bool {
        guard first.capacity > 1024, first.count < first.capacity / 4 else { return false }
        var f = [UInt64: UInt64](minimumCapacity: first.count)
        for (k, v) in first { f[k] = v }
        var m = [UInt64: [UInt64]](minimumCapacity: more.count)
        for (k, v) in more { m[k] = v }
        (first, more) = (f, m)
        return true
    }
}
