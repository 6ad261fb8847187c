import YaOKWire

/// Addresses remembered across channel closes, at most `capacity`, the least recently
/// touched dropped first (a flood of fresh addresses pushes out only the oldest entries and
/// costs a bounded amount of memory). Touched only under the transport's lock.
///
/// The peer table (`BLEState.discovered`) forgets a peer when its channel closes (see
/// `closeLocked`) and when it is not heard for a minute; what must outlive that — that a
/// channel with an address once authenticated a contact (the fair order, PROTOCOL.md §9.2),
/// or that its peer turned out a stranger — is kept here.
struct BLERecentAddresses<Value> {
    let capacity: Int
    private var entries: [BLEAddress: (value: Value, stamp: UInt64)] = [:]
    private var clock: UInt64 = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    subscript(address: BLEAddress) -> Value? { entries[address]?.value }

    func contains(_ address: BLEAddress) -> Bool { entries[address] != nil }

    var count: Int { entries.count }

    /// Sets (or refreshes) `address`, dropping the least recently touched entry when full.
    mutating func set(_ address: BLEAddress, _ value: Value) {
        clock &+= 1
        if entries[address] == nil, entries.count >= capacity,
           let oldest = entries.min(by: { $0.value.stamp < $1.value.stamp })?.key {
            entries.removeValue(forKey: oldest)
        }
        entries[address] = (value, clock)
    }

    mutating func remove(_ address: BLEAddress) { entries.removeValue(forKey: address) }

    /// Drops the entries `keep` refuses (expired ones, say).
    mutating func filter(_ keep: (Value) -> Bool) { entries = entries.filter { keep($0.value.value) } }
}
