/// The order in which both stores decide a commit's writes (docs/RELAY.md, "Order of a
/// commit"): its DELETEs first, then its POSTs grouped by mailbox in key order, a
/// mailbox's POSTs in the order they came. PostgreSQL's `relay_commit` needs that order
/// (it locks the mailboxes' rows in key order and deletes in one statement before it
/// decides any POST); SQLite follows it so that one commit has the same outcomes on
/// either store: which POST a DELETE's room lets in, and which POST of an address takes
/// the last of its quota when it posts into several mailboxes.
enum RelayCommitOrder {
    /// Indices into `writes`: the DELETEs in arrival order, then the POSTs by mailbox.
    static func indices(_ writes: [RelayStoreWrite]) -> [Int] {
        var deletes: [Int] = [], posts: [(index: Int, mailbox: [UInt8])] = []
        for (i, write) in writes.enumerated() {
            switch write {
            case .delete: deletes.append(i)
            case .post(let post): posts.append((i, post.mailbox.bytes))
            }
        }
        return deletes + byMailbox(posts) { $0.mailbox }.map(\.index)
    }

    /// `items` sorted by mailbox key, stably (a mailbox's keep their order).
    static func byMailbox<T>(_ items: [T], _ mailbox: (T) -> [UInt8]) -> [T] {
        items.enumerated().sorted { a, b in
            let x = mailbox(a.element), y = mailbox(b.element)
            return x == y ? a.offset < b.offset : x.lexicographicallyPrecedes(y)
        }.map(\.element)
    }
}
