import YaOKWire
import YaOKStore

/// Where a relay keeps the packets it carries (docs/PROTOCOL.md §12.9): the node's carry
/// store contract (§10.9), so the relay takes, evicts, purges and sweeps exactly as a node
/// does. Two implementations: `SQLiteRelayCarryStore` (the node's own `Store` code over a
/// SQLite file of the relay's data directory) and `PostgresRelayCarryStore` (a cluster over
/// PostgreSQL, the same rules in SQL). Not thread-safe: the relay calls it from its carry
/// thread only.
protocol RelayCarryStore: AnyObject {
    /// Decodes and time-checks `bytes` (throws what `CarriedPacket.decode(_:nowMs:)`
    /// throws), clamps budget and hop limit, then in one transaction: held → duplicate;
    /// claim remembered → purged; over the depositor's hour → overQuota; room made by
    /// §10.9's eviction order or full.
    func takeCarried(_ bytes: [UInt8], from depositor: CarryDepositor, nowMs: Int64, policy: CarryPolicy) throws -> RelayCarryTake
    /// Live keys in the order (expiry, identity), at most `limit`.
    func carriedKeys(nowMs: Int64, limit: Int) throws -> [CarryKey]
    /// The packet as held (its budget and hop limit now); nil if not held or altered.
    func carriedPacket(_ id: [UInt8]) throws -> CarriedPacket?
    func holdsCarried(_ id: [UInt8]) throws -> Bool
    /// Applies a purge record (§10.6): deletes what its claims verify against, remembers
    /// every claim (ranked as §10.9 says). Returns the identities deleted.
    func purgeCarried(_ record: PurgeRecord, nowMs: Int64, policy: CarryPolicy) throws -> [[UInt8]]
    func rememberedClaim(hash claimHash: [UInt8], nowMs: Int64) throws -> [UInt8]?
    func carryQuotaUsed(_ depositor: CarryDepositor, nowMs: Int64) throws -> (packets: Int, bytes: Int)
    /// Expired packets, claims past their expiry, quota rows of past hours.
    func sweepCarried(nowMs: Int64) throws -> Int
    func carryUsage() throws -> (packets: Int, bytes: Int)
    func close()
}

/// What a take did (the node's `CarryTake`, without the entry).
package enum RelayCarryTake: Equatable {
    case taken(evicted: Int)
    case duplicate
    case purged
    case overQuota
    case full
}

/// The SQLite carry store is the node's: the same tables, eviction order, quota and purge
/// memory (`Store+Carry`, `Store+CarryPurge`), in a database of its own that holds nothing
/// else (no identity, no contacts: the relay has none).
final class SQLiteRelayCarryStore: RelayCarryStore {
    let store: Store

    init(directory: String) throws { store = try Store(directory: directory) }

    func takeCarried(_ bytes: [UInt8], from depositor: CarryDepositor, nowMs: Int64, policy: CarryPolicy) throws -> RelayCarryTake {
        switch try store.takeCarried(bytes, from: depositor, nowMs: nowMs, policy: policy) {
        case .taken(_, let evicted): return .taken(evicted: evicted.count)
        case .duplicate: return .duplicate
        case .purged: return .purged
        case .overQuota: return .overQuota
        case .full: return .full
        }
    }

    func carriedKeys(nowMs: Int64, limit: Int) throws -> [CarryKey] { try store.carriedKeys(nowMs: nowMs, limit: limit) }
    func carriedPacket(_ id: [UInt8]) throws -> CarriedPacket? { try store.carriedPacket(id) }
    func holdsCarried(_ id: [UInt8]) throws -> Bool { try store.carriedEntry(id) != nil }
    func purgeCarried(_ record: PurgeRecord, nowMs: Int64, policy: CarryPolicy) throws -> [[UInt8]] {
        try store.purgeCarried(record, nowMs: nowMs, policy: policy)
    }
    func rememberedClaim(hash claimHash: [UInt8], nowMs: Int64) throws -> [UInt8]? {
        try store.rememberedClaim(hash: claimHash, nowMs: nowMs)
    }
    func carryQuotaUsed(_ depositor: CarryDepositor, nowMs: Int64) throws -> (packets: Int, bytes: Int) {
        try store.carryQuotaUsed(depositor, nowMs: nowMs)
    }
    func sweepCarried(nowMs: Int64) throws -> Int { try store.sweepCarried(nowMs: nowMs).packets }
    func carryUsage() throws -> (packets: Int, bytes: Int) { try store.carryUsage() }
    func close() { store.close() }
}
