import YaOKWire
import YaOKStore

/// Where a relay keeps the packets it carries (docs/PROTOCOL.md §12.9): the node's carry
/// store contract (§10.9), so the relay takes, evicts, purges and sweeps exactly as a node
/// does. Two implementations: the node's own `Store` over a SQLite file in the relay's
/// data directory (`carry/yaok.db`), and `PostgresRelayCarryStore` for a cluster over
/// PostgreSQL. Not thread-safe: the relay calls it from its carry thread only.
protocol RelayCarryStore: AnyObject {
    func takeCarried(_ bytes: [UInt8], from depositor: CarryDepositor, nowMs: Int64, policy: CarryPolicy) throws -> CarryTake
    func carriedKeys(from lower: CarryKey?, below upper: CarryKey?, nowMs: Int64, limit: Int) throws -> [CarryKey]
    func carriedPacket(_ id: [UInt8]) throws -> CarriedPacket?
    func carriedEntry(_ id: [UInt8]) throws -> CarriedEntry?
    func purgeCarried(_ record: PurgeRecord, nowMs: Int64, policy: CarryPolicy, own: Bool) throws -> [[UInt8]]
    func rememberedClaim(hash claimHash: [UInt8], nowMs: Int64) throws -> [UInt8]?
    func carryQuotaUsed(_ depositor: CarryDepositor, nowMs: Int64) throws -> (packets: Int, bytes: Int)
    func sweepCarried(nowMs: Int64) throws -> (packets: Int, purgeRecords: Int, quotaRows: Int)
    func carryUsage() throws -> (packets: Int, bytes: Int)
    func close()
}

/// The SQLite carry store is the node's: the same tables, eviction order, quota and purge
/// memory (`Store+Carry`, `Store+CarryPurge`), in a database of its own that holds nothing
/// else (no identity, no contacts: the relay has none).
extension Store: RelayCarryStore {}
