/// Connection IDs first in, first out: the order in which the connections of one address
/// are served from its DELETE budget (`RelayServer+DeleteBudget`). Popping is O(1); the
/// array is compacted once half of it has been popped.
struct ConnectionQueue {
    private var items: [UInt64] = []
    private var head = 0

    var count: Int { items.count - head }
    var isEmpty: Bool { head == items.count }

    mutating func append(_ id: UInt64) { items.append(id) }

    mutating func popFirst() -> UInt64? {
        guard head < items.count else { return nil }
        let id = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return id
    }
}
