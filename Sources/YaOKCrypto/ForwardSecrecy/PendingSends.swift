/// A ring's unsettled sent messages (docs/PROTOCOL.md §13.3): message ID → the contact's key
/// it was sealed to and its expiry. A dictionary that also remembers which IDs were written
/// (added, changed or removed) since the store last read or wrote it, so that saving a ring
/// writes one row per message touched instead of all of them (a sender holds up to 4,096,
/// and a send touches one).
public struct PendingSends: Sendable, Collection {
    public typealias Entry = (keyID: UInt32, expiresMs: Int64)
    public typealias Storage = [[UInt8]: Entry]

    private var entries: Storage
    /// The IDs written since `markStored` (what the store must write back).
    package private(set) var touched: Set<[UInt8]> = []
    /// Per key ID sealed to: how many entries, and the latest expiry among them (exact), so
    /// that the release (§13.3 rule 1), asked at every send and ack, looks at a few keys
    /// instead of every entry.
    private var byKey: [UInt32: (count: Int, latest: Int64)] = [:]

    public init(_ entries: Storage = [:]) {
        self.entries = entries
        for entry in entries.values { counted(entry) }
    }

    /// While a change may still be abandoned (`beginJournal`): each entry changed since, as
    /// it was before its first change, and whether it was `touched` then.
    private var journal: [[UInt8]: (entry: Entry?, touched: Bool)]?

    public subscript(id: [UInt8]) -> Entry? {
        get { entries[id] }
        set {
            let old = entries[id]
            if journal != nil, journal?[id] == nil { journal?[id] = (old, touched.contains(id)) }
            entries[id] = newValue
            touched.insert(id)
            if let old, let newValue, old.keyID == newValue.keyID, newValue.expiresMs >= old.expiresMs {
                if let stats = byKey[old.keyID] { byKey[old.keyID] = (stats.count, Swift.max(stats.latest, newValue.expiresMs)) }
                return
            }
            if let old { uncounted(old) }
            if let newValue { counted(newValue) }
        }
    }

    /// The lowest key ID that `include` takes with an entry unexpired at `nowMs`.
    public func lowestKey(unexpiredAt nowMs: Int64, where include: (UInt32) -> Bool) -> UInt32? {
        var lowest: UInt32?
        for (keyID, stats) in byKey where stats.latest > nowMs && include(keyID) && keyID < (lowest ?? .max) {
            lowest = keyID
        }
        return lowest
    }

    private mutating func counted(_ entry: Entry) {
        let stats = byKey[entry.keyID] ?? (0, .min)
        byKey[entry.keyID] = (stats.count + 1, Swift.max(stats.latest, entry.expiresMs))
    }

    /// `entry` is gone (already out of `entries`): when it held its key's latest expiry and
    /// others remain, the latest is found again among them (rare: acks come oldest first).
    private mutating func uncounted(_ entry: Entry) {
        guard let stats = byKey[entry.keyID] else { return }
        guard stats.count > 1 else { byKey[entry.keyID] = nil; return }
        var latest = stats.latest
        if entry.expiresMs >= latest {
            latest = .min
            for other in entries.values where other.keyID == entry.keyID { latest = Swift.max(latest, other.expiresMs) }
        }
        byKey[entry.keyID] = (stats.count - 1, latest)
    }

    public var values: Storage.Values { entries.values }
    public var dictionary: Storage { entries }

    /// The store wrote (or read) every entry as it is now.
    package mutating func markStored() { touched = [] }

    /// From now on remembers what each change replaces, for `rollBack` (ReceiverKeyRing.checkpoint).
    package mutating func beginJournal() { journal = [:] }

    /// The changes since `beginJournal` stay; nothing is remembered any more.
    package mutating func endJournal() { journal = nil }

    /// Puts back every entry changed since `beginJournal` (its expiry statistics with it,
    /// and whether the store must write it), and ends the journal.
    package mutating func rollBack() {
        guard let saved = journal else { return }
        journal = nil
        for (id, before) in saved {
            self[id] = before.entry
            if !before.touched { touched.remove(id) }
        }
    }

    // Collection, by the dictionary's order (none to rely on).
    public typealias Index = Storage.Index
    public typealias Element = Storage.Element
    public var startIndex: Index { entries.startIndex }
    public var endIndex: Index { entries.endIndex }
    public subscript(position: Index) -> Element { entries[position] }
    public func index(after i: Index) -> Index { entries.index(after: i) }
    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
}
