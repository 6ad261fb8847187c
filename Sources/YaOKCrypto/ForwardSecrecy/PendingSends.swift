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

    public init(_ entries: Storage = [:]) { self.entries = entries }

    public subscript(id: [UInt8]) -> Entry? {
        get { entries[id] }
        set {
            entries[id] = newValue
            touched.insert(id)
        }
    }

    public var values: Storage.Values { entries.values }
    public var dictionary: Storage { entries }

    /// The store wrote (or read) every entry as it is now.
    package mutating func markStored() { touched = [] }

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
