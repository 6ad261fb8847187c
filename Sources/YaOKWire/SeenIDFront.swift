import YaOKSupport

/// The bounded in-memory front of duplicate detection: the message IDs seen most recently.
///
/// Two generations instead of a true LRU list: inserts go to `current`; when it holds half
/// the capacity, it becomes `previous` and the old `previous` is dropped. A lookup checks
/// both, so the newest capacity/2 … capacity IDs are always remembered, memory never holds
/// more than `capacity` IDs, and both operations are a hash lookup with no list to relink
/// (the benchmark target is ≥ 5,000,000 lookups/s). Swift's hashing is seeded per process,
/// so a peer cannot choose IDs that collide. Not thread-safe. Pure Swift (fuzz build).
public struct SeenIDFront {
    public let capacity: Int
    private var current: Set<MessageID> = []
    private var previous: Set<MessageID> = []

    /// `capacity` ≥ 2 IDs (about 50 bytes each in the sets).
    public init(capacity: Int) throws {
        guard capacity >= 2 else { throw YaOKError(.invalidArgument, "Front capacity must be at least 2") }
        self.capacity = capacity
        current.reserveCapacity(capacity / 2)
    }

    public var count: Int { current.count + previous.count }

    public func contains(_ id: MessageID) -> Bool {
        current.contains(id) || previous.contains(id)
    }

    public mutating func insert(_ id: MessageID) {
        guard !current.contains(id) else { return }
        if current.count >= capacity / 2 {
            previous = current
            current = []
            current.reserveCapacity(capacity / 2)
        }
        current.insert(id)
    }

    public mutating func removeAll() {
        current = []
        previous = []
    }
}
