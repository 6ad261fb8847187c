import YaOKWire

/// One session's subscribed mailboxes and their cursors (§8.3 "Delivering": the sequence
/// number of the last packet sent), as one sorted array of 40-byte entries, sized to its
/// count (issue 17 §2: a `[MailboxID: Int64]` beside a `Set<MailboxID>` cost ~200 bytes
/// per subscription). Look-ups are a binary search (12 steps at 4,096); a SUBSCRIBE's
/// batch is merged in one pass.
struct SubscriptionTable {
    struct Entry {
        let key: MailboxKey
        var cursor: Int64
    }

    private(set) var entries: [Entry] = []

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }
    /// The array's capacity (for tests: it stays at the count).
    var capacity: Int { entries.capacity }

    private func index(of key: MailboxKey) -> Int? {
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].key < key { low = mid + 1 } else { high = mid }
        }
        return low < entries.count && entries[low].key == key ? low : nil
    }

    func contains(_ key: MailboxKey) -> Bool { index(of: key) != nil }
    func contains(_ mailbox: MailboxID) -> Bool { contains(MailboxKey(mailbox)) }

    /// The cursor of a subscribed mailbox; setting one that is not subscribed does nothing.
    subscript(key: MailboxKey) -> Int64? {
        get { index(of: key).map { entries[$0].cursor } }
        set {
            guard let newValue, let i = index(of: key) else { return }
            entries[i].cursor = newValue
        }
    }

    subscript(mailbox: MailboxID) -> Int64? {
        get { self[MailboxKey(mailbox)] }
        set { self[MailboxKey(mailbox)] = newValue }
    }

    /// Adds `keys` not yet subscribed, each with cursor 0 (one merge, into an array of
    /// exactly the new count).
    mutating func insert(_ keys: [MailboxKey]) {
        let added = Set(keys).filter { !contains($0) }.sorted()
        guard !added.isEmpty else { return }
        var merged: [Entry] = []
        merged.reserveCapacity(entries.count + added.count)
        var i = 0, j = 0
        while i < entries.count || j < added.count {
            if j == added.count || (i < entries.count && entries[i].key < added[j]) {
                merged.append(entries[i])
                i += 1
            } else {
                merged.append(Entry(key: added[j], cursor: 0))
                j += 1
            }
        }
        entries = merged
    }

    var keys: [MailboxKey] { entries.map(\.key) }
}
