import YaOKSupport
import YaOKWire
import YaOKCrypto

/// The carry store (docs/PROTOCOL.md §10.9): sealed packets this node carries for others,
/// in the node's own database (migration 12), so a node killed with SIGKILL loses nothing it
/// took and a restart resumes carrying.
///
/// Nothing here needs the database key, on purpose: a phone in a pocket is locked, and it
/// must still take packets from the people it passes and hand them on. Carried packets are
/// already sealed end to end by their sender (§10.4) and a carrier sees only their outside
/// (§10.8); sealing them again under the vault key would hide nothing from a file reader
/// that a carrier does not already see, and would make a locked node useless as a carrier.
/// For the same reason the rows have no integrity MAC (Store+Integrity): a file attacker who
/// edits one is no stronger than a hostile carrier, and a packet whose bytes no longer hash
/// to its identity is dropped when read (`carriedPacket`).
extension Store {
    private static let entryColumns = "id, expires_ms, copy_budget, hop_limit, size, taken_ms, depositor, claim_hash"

    /// Takes `bytes` offered by `depositor` at `nowMs`. The bytes are decoded strictly and
    /// their time checked first (`CarriedPacket.decode(_:nowMs:)`: `malformedPacket`,
    /// `unsupportedVersion`, `unknownPacketType`, `expired` are thrown, nothing is stored),
    /// the copy budget clamped to 8 and the hop limit to 10 (a depositor cannot buy copies or
    /// reach). Then, in one transaction: a packet already held is a `duplicate`; one whose
    /// claim was published is `purged`; one over the depositor's hourly quota `overQuota`;
    /// then room is made by the eviction order, or the packet is refused as `full`.
    ///
    /// When this returns `.taken` the packet is committed (with the quota charge), so the
    /// caller may acknowledge it to the depositor; inside a caller's transaction it is a
    /// savepoint, and the caller must commit before acknowledging.
    ///
    /// `quota: false` (the node's own packets, which no quota limits) neither checks nor
    /// charges the hourly quota: a row that nothing reads, and one page more in the log that
    /// every `send` synced (issue 20).
    package func takeCarried(_ bytes: [UInt8], from depositor: CarryDepositor, nowMs: Int64,
                             policy: CarryPolicy = .default, quota: Bool = true) throws -> CarryTake {
        try policy.validate()
        let packet = try CarriedPacket.offeredToCarry(bytes, nowMs: nowMs)
        return try db.transaction { try take(packet, from: depositor, nowMs: nowMs, policy: policy, quota: quota) }
    }

    /// `takeCarried` for a packet this node sealed itself a moment ago (an own carried
    /// copy, §12.6), in the caller's transaction: no bytes to decode (a `CarriedPacket` is
    /// encodable by construction, and `encode` makes what `decode` accepts; its time is
    /// checked and its budget and hop limit clamped as for any packet), no quota, and no
    /// savepoint of its own (~10 % of a copy's commit under the node's lock: SQLite copies
    /// every page it changes for a savepoint): the caller's transaction rolls back whole
    /// when this throws, so what it wrote never stays half done. `internal` outside one.
    package func takeOwnCarried(_ packet: CarriedPacket, from depositor: CarryDepositor, nowMs: Int64,
                                policy: CarryPolicy) throws -> CarryTake {
        guard db.inTransaction else { throw YaOKError(.internal, "An own carried packet is taken inside a transaction") }
        try policy.validate()
        return try take(try CarriedPacket.offeredToCarry(packet, nowMs: nowMs), from: depositor, nowMs: nowMs,
                        policy: policy, quota: false)
    }

    /// The checks and writes of a take, in the caller's transaction or savepoint.
    private func take(_ packet: CarriedPacket, from depositor: CarryDepositor, nowMs: Int64, policy: CarryPolicy,
                      quota: Bool) throws -> CarryTake {
        let encoded = packet.encode()
        let entry = CarriedEntry(id: packet.identity, expiresAtMs: packet.expiresAtMs, copyBudget: packet.copyBudget,
                                 hopLimit: packet.hopLimit, size: encoded.count, takenAtMs: nowMs, depositor: depositor,
                                 claimHash: packet.claimHash)
        if try !db.rows("SELECT 1 FROM carried_packets WHERE id = ?", [.blob(entry.id)], map: { $0.int(0) }).isEmpty {
            return .duplicate
        }
        if try isPurged(claimHash: entry.claimHash, nowMs: nowMs) { return .purged }
        guard try !quota || carryQuotaAllows(depositor, size: entry.size, nowMs: nowMs, policy: policy) else { return .overQuota }
        guard let victims = try carryVictims(toFit: entry, nowMs: nowMs, policy: policy) else { return .full }
        for victim in victims { try db.query("DELETE FROM carried_packets WHERE id = ?", [.blob(victim)]) }
        try db.query("""
            INSERT INTO carried_packets (id, expires_ms, copy_budget, hop_limit, size, taken_ms, depositor, claim_hash, packet)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.blob(entry.id), .int(entry.expiresAtMs), .int(Int64(entry.copyBudget)), .int(Int64(entry.hopLimit)),
                  .int(Int64(entry.size)), .int(nowMs), .blob(depositor.bytes), .blob(entry.claimHash), .blob(encoded)])
        if quota { try chargeCarryQuota(depositor, size: entry.size, nowMs: nowMs) }
        return .taken(entry, evicted: victims)
    }

    /// Packets held and their bytes (as encoded): one row the triggers of migration 17 keep,
    /// not a sum over the store, since every take reads it.
    package func carryUsage() throws -> (packets: Int, bytes: Int) {
        try db.rows("SELECT packets, bytes FROM carry_usage") { (packets: $0.int(0), bytes: $0.int(1)) }.first ?? (0, 0)
    }

    /// Counts the usage afresh (the sweep): only a hand-edited file could have skewed it.
    private func recountCarryUsage() throws {
        try db.query("""
            UPDATE carry_usage SET packets = (SELECT count(*) FROM carried_packets),
                                   bytes = (SELECT coalesce(sum(size), 0) FROM carried_packets)
            """)
    }

    /// The entry with identity `id`, or nil. A row whose columns no longer decode (the file
    /// was altered: a depositor token of no valid length, say) is deleted and nil returned,
    /// as `carriedPacket` does with its bytes: thrown instead, it would end every hand-over
    /// answer and every offer list that named it, and what came after it, at each meeting
    /// until it expired.
    package func carriedEntry(_ id: [UInt8]) throws -> CarriedEntry? {
        let rows = try db.rows("SELECT \(Self.entryColumns) FROM carried_packets WHERE id = ?", [.blob(id)]) { row in
            Result { try Self.carriedEntry(row) }
        }
        guard let entry = try? rows.first?.get() else {
            if !rows.isEmpty { try removeCarried(id) }
            return nil
        }
        return entry
    }

    /// The packet with identity `id` as this node holds it (its budget and hop limit now),
    /// or nil. A row whose bytes no longer decode or hash to `id` (the file was altered) is
    /// deleted and nil returned: it must not be handed on.
    package func carriedPacket(_ id: [UInt8]) throws -> CarriedPacket? {
        guard let (budget, hop, bytes) = try db.rows("SELECT copy_budget, hop_limit, packet FROM carried_packets WHERE id = ?",
                                                     [.blob(id)], map: { ($0.int(0), $0.int(1), $0.blob(2)) }).first else {
            return nil
        }
        var patched = bytes
        if patched.count >= 4, let b = UInt8(exactly: budget), let h = UInt8(exactly: hop) {
            patched[2] = h
            patched[3] = b
        }
        guard let packet = try? CarriedPacket.decode(patched), packet.identity == id else {
            try removeCarried(id)
            return nil
        }
        return packet
    }

    /// Up to `limit` keys in [`lower`, `upper`) in the order (expiry, id), of packets not
    /// expired at `nowMs`: the page query reconciliation runs (nil bounds: open). Reads
    /// only the order index.
    package func carriedKeys(from lower: CarryKey? = nil, below upper: CarryKey? = nil, nowMs: Int64,
                             limit: Int) throws -> [CarryKey] {
        let (filter, values) = Self.rangeFilter(lower, upper, nowMs: nowMs)
        return try db.rows("SELECT expires_ms, id FROM carried_packets WHERE \(filter) ORDER BY expires_ms, id LIMIT ?",
                           values + [.int(Int64(max(0, limit)))]) { CarryKey(expiresAtMs: $0.int64(0), id: $0.blob(1)) }
    }

    /// How many live packets lie in [`lower`, `upper`).
    package func carriedCount(from lower: CarryKey? = nil, below upper: CarryKey? = nil, nowMs: Int64) throws -> Int {
        let (filter, values) = Self.rangeFilter(lower, upper, nowMs: nowMs)
        return try db.rows("SELECT count(*) FROM carried_packets WHERE \(filter)", values) { $0.int(0) }.first ?? 0
    }

    /// Up to `limit` entries (without bytes) in the order (expiry, id), from `lower` on:
    /// the listing for diagnostics and for choosing what to hand over.
    package func carriedEntries(from lower: CarryKey? = nil, nowMs: Int64, limit: Int) throws -> [CarriedEntry] {
        let (filter, values) = Self.rangeFilter(lower, nil, nowMs: nowMs)
        return try db.rows("SELECT \(Self.entryColumns) FROM carried_packets WHERE \(filter) ORDER BY expires_ms, id LIMIT ?",
                           values + [.int(Int64(max(0, limit)))], map: Self.carriedEntry)
    }

    /// After a hand-over (`CarriedPacket.handOver`): what this node keeps. `invalidArgument`
    /// for a budget of 0; false if the packet is no longer held.
    @discardableResult
    package func updateCarried(_ id: [UInt8], copyBudget: UInt8, hopLimit: UInt8) throws -> Bool {
        guard copyBudget >= 1 else { throw YaOKError(.invalidArgument, "A carried packet's copy budget is at least 1") }
        try db.query("UPDATE carried_packets SET copy_budget = ?, hop_limit = ? WHERE id = ?",
                     [.int(Int64(min(copyBudget, CopyBudget.maximum))), .int(Int64(min(hopLimit, HopLimit.maximum))), .blob(id)])
        return db.changes > 0
    }

    /// Deletes one packet (handed to its recipient, or given up); false if it was not held.
    @discardableResult
    package func removeCarried(_ id: [UInt8]) throws -> Bool {
        try db.query("DELETE FROM carried_packets WHERE id = ?", [.blob(id)])
        return db.changes > 0
    }

    /// Deletes packets expired at `nowMs` (expiry ≤ now); returns how many.
    @discardableResult
    package func deleteExpiredCarried(nowMs: Int64) throws -> Int {
        try db.query("DELETE FROM carried_packets WHERE expires_ms <= ?", [.int(nowMs)])
        return db.changes
    }

    /// The sweep the engine runs now and then (and at start): expired packets, purge claims
    /// past their packet's expiry, and quota counters of past hours, in one transaction.
    package func sweepCarried(nowMs: Int64) throws -> (packets: Int, purgeRecords: Int, quotaRows: Int) {
        try db.transaction {
            let swept = (try deleteExpiredCarried(nowMs: nowMs), try forgetExpiredPurges(nowMs: nowMs),
                         try forgetOldCarryQuota(nowMs: nowMs))
            try recountCarryUsage()
            return swept
        }
    }

    /// Evicts until the store fits `policy` (after a lowered cap), choosing as a take would
    /// (§10.9: expired, then lowest budget, the depositor holding the most, its oldest), so a
    /// lowered cap cannot be used to push out a few packets of one depositor while another's
    /// flood stays. Expired packets are deleted whether or not the store fits. Returns the
    /// live identities evicted.
    @discardableResult
    package func shrinkCarried(to policy: CarryPolicy, nowMs: Int64) throws -> [[UInt8]] {
        try policy.validate()
        return try db.transaction {
            try deleteExpiredCarried(nowMs: nowMs)
            let victims = try carryVictimsToShrink(to: policy, nowMs: nowMs)
            for victim in victims { try removeCarried(victim) }
            return victims
        }
    }

    /// Deletes every carried packet, purge claim and quota counter: carrying turned off, or
    /// before a reset deletes the files. `secure_delete` (Database) zeroes the freed
    /// content, and the WAL is checkpointed and truncated (outside a caller's transaction),
    /// so the file no longer shows which packets this node carried.
    package func deleteAllCarried() throws {
        try db.transaction {
            try db.execute("DELETE FROM carried_packets; DELETE FROM carry_purges; DELETE FROM carry_quota;")
        }
        try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    private static func carriedEntry(_ row: Row) throws -> CarriedEntry {
        guard let budget = UInt8(exactly: row.int(2)), let hop = UInt8(exactly: row.int(3)) else {
            throw YaOKError(.corruptStore, "A carried packet's budget or hop limit is out of range")
        }
        return CarriedEntry(id: row.blob(0), expiresAtMs: row.int64(1), copyBudget: budget, hopLimit: hop, size: row.int(4),
                            takenAtMs: row.int64(5), depositor: try CarryDepositor(row.blob(6)), claimHash: row.blob(7))
    }

    /// The bounds as row-value comparisons on (expires_ms, id), which SQLite runs as a seek
    /// and a range over the order index. "Not expired" (`expires_ms > now`) is folded into
    /// the lower bound as (now + 1, empty identity), which sorts before every identity: a
    /// separate `expires_ms > ?` would make SQLite seek on it and scan up to `lower`.
    private static func rangeFilter(_ lower: CarryKey?, _ upper: CarryKey?, nowMs: Int64) -> (String, [SQLValue]) {
        let live = CarryKey(expiresAtMs: nowMs &+ 1, id: [])
        let from = lower.map { max($0, live) } ?? live
        var filter = "(expires_ms, id) >= (?, ?)"
        var values: [SQLValue] = [.int(from.expiresAtMs), .blob(from.id)]
        if let upper {
            filter += " AND (expires_ms, id) < (?, ?)"
            values += [.int(upper.expiresAtMs), .blob(upper.id)]
        }
        return (filter, values)
    }
}

extension CarriedPacket {
    /// `bytes` offered to a carry store at `nowMs`, decoded strictly and time-checked
    /// (`decode(_:nowMs:)` throws what it refuses), with the copy budget clamped to 8 and the
    /// hop limit to 10: a depositor cannot buy copies or reach (§10.9).
    package static func offeredToCarry(_ bytes: [UInt8], nowMs: Int64) throws -> CarriedPacket {
        try offeredToCarry(decode(bytes), nowMs: nowMs)
    }

    /// `offered` (decoded, or built by this node) time-checked and clamped as `bytes` are.
    package static func offeredToCarry(_ offered: CarriedPacket, nowMs: Int64) throws -> CarriedPacket {
        try offered.checkTime(nowMs: nowMs)
        return try CarriedPacket(hopLimit: min(offered.hopLimit, HopLimit.maximum),
                                 copyBudget: min(offered.copyBudget, CopyBudget.maximum),
                                 expiryHour: offered.expiryHour, routingTag: offered.routingTag,
                                 claimHash: offered.claimHash, payload: offered.payload)
    }
}
