import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The relay's carry store in PostgreSQL (docs/RELAY.md, "Carrying"), shared by the
/// relays of a cluster: the node's rules (`Store+Carry`, `Store+CarryPurge`, §10.9) in
/// the same SQL, over tables of the relay schema (`relay_carried`, `relay_carry_quota`,
/// `relay_carry_purges`). Every write transaction first takes one advisory lock, so two
/// relays never evict against each other's half-written state; carried traffic is small
/// next to routed mail, so the serialisation costs little.
package final class PostgresRelayCarryStore: RelayCarryStore {
    private let pool: PostgresPool
    /// pg_advisory_xact_lock key of carry writes ("YaOKcarr" as an integer).
    static let writeLock: Int64 = 0x59614f4b_63617272

    /// Connects and migrates the relay schema (which holds the carry tables).
    package init(conninfo: String) throws {
        pool = PostgresPool(conninfo: conninfo, size: 1)
        try pool.withConnection { try PostgresRelaySchema.migrate($0) }
    }

    package func close() { pool.close() }

    private func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try pool.withConnection { c in
            try c.execute("BEGIN")
            do {
                try c.query(Self.lock.name, Self.lock.sql, types: Self.lock.types, Self.lock.parameters)
                let value = try body(c)
                try c.execute("COMMIT")
                return value
            } catch {
                if !c.broken { try? c.execute("ROLLBACK") }
                throw error
            }
        }
    }

    package func takeCarried(_ bytes: [UInt8], from depositor: CarryDepositor, nowMs: Int64, policy: CarryPolicy) throws -> RelayCarryTake {
        try policy.validate()
        let packet = try CarriedPacket.offeredToCarry(bytes, nowMs: nowMs)
        let encoded = packet.encode()
        let id = packet.identity
        let hour = Self.hour(nowMs)
        // Two round trips when no eviction is needed (nine when each statement waited for its
        // answer): the lock and every read the decision needs in one pipeline, the eviction's
        // first reads included (they read nothing unless the store is full), then the
        // deletes, the writes and the commit in another; a full store adds only the reads
        // that depend on what the first ones found (one round trip for one depositor's copies).
        return try pool.withConnection { c in
            do {
                let read = try c.pipeline([
                    Self.begin, Self.lock,
                    PostgresConnection.Statement(name: "carry_held", sql: "SELECT 1 FROM relay_carried WHERE id = $1",
                                                 types: [PostgresType.bytea], parameters: [.bytes(id)]),
                    PostgresConnection.Statement(name: "carry_purged", sql: "SELECT 1 FROM relay_carry_purges WHERE claim_hash = $1 AND expires_ms > $2",
                                                 types: [PostgresType.bytea, PostgresType.int8],
                                                 parameters: [.bytes(packet.claimHash), .int(nowMs)]),
                    Self.quotaStatement(depositor, hour),
                ] + PostgresCarryEviction.prefetchStatements(size: encoded.count, nowMs: nowMs, policy: policy))
                let used = Self.quotaUsed(read[4])
                let refusal: RelayCarryTake? = read[2].count > 0 ? .duplicate
                    : read[3].count > 0 ? .purged
                    : used.packets + 1 > policy.depositorPacketsPerHour || used.bytes + encoded.count > policy.depositorBytesPerHour ? .overQuota
                    : nil
                if let refusal {
                    try c.execute("COMMIT")
                    return refusal
                }
                let (usage, prefetched) = PostgresCarryEviction.prefetched(read[5...])
                guard let victims = try PostgresCarryEviction.victims(c, size: encoded.count, budget: Int(packet.copyBudget),
                                                                      depositor: depositor, nowMs: nowMs, policy: policy,
                                                                      usage: usage, prefetched: prefetched) else {
                    try c.execute("COMMIT")
                    return .full
                }
                let deletes = victims.map {
                    PostgresConnection.Statement(name: "carry_delete", sql: "DELETE FROM relay_carried WHERE id = $1",
                                                 types: [PostgresType.bytea], parameters: [.bytes($0)])
                }
                _ = try c.pipeline(deletes + [
                    PostgresConnection.Statement(name: "carry_insert", sql: """
                        INSERT INTO relay_carried (id, expires_ms, copy_budget, hop_limit, size, taken_ms, depositor, claim_hash, packet)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                        """, types: [PostgresType.bytea, PostgresType.int8, PostgresType.int8, PostgresType.int8, PostgresType.int8,
                                     PostgresType.int8, PostgresType.bytea, PostgresType.bytea, PostgresType.bytea],
                        parameters: [.bytes(id), .int(packet.expiresAtMs), .int(Int64(packet.copyBudget)), .int(Int64(packet.hopLimit)),
                                     .int(Int64(encoded.count)), .int(nowMs), .bytes(depositor.bytes), .bytes(packet.claimHash),
                                     .bytes(encoded)]),
                    PostgresConnection.Statement(name: "carry_charge", sql: """
                        INSERT INTO relay_carry_quota (depositor, hour, packets, bytes) VALUES ($1, $2, 1, $3)
                        ON CONFLICT (depositor, hour) DO UPDATE SET packets = relay_carry_quota.packets + 1,
                            bytes = relay_carry_quota.bytes + excluded.bytes
                        """, types: [PostgresType.bytea, PostgresType.int8, PostgresType.int8],
                        parameters: [.bytes(depositor.bytes), .int(hour), .int(Int64(encoded.count))]),
                    Self.commit,
                ])
                return .taken(evicted: victims.count)
            } catch {
                if !c.broken { try? c.execute("ROLLBACK") }
                throw error
            }
        }
    }

    /// The transaction's start and end, and its lock, as statements of a pipeline.
    private static let begin = PostgresConnection.Statement(name: "carry_begin", sql: "BEGIN", types: [], parameters: [])
    private static let commit = PostgresConnection.Statement(name: "carry_commit", sql: "COMMIT", types: [], parameters: [])
    private static let lock = PostgresConnection.Statement(name: "carry_lock", sql: "SELECT pg_advisory_xact_lock($1)",
                                                           types: [PostgresType.int8], parameters: [.int(writeLock)])

    func carriedKeys(nowMs: Int64, limit: Int) throws -> [CarryKey] {
        try pool.withConnection { c in
            let rows = try c.query("carry_keys", "SELECT expires_ms, id FROM relay_carried WHERE expires_ms > $1 ORDER BY expires_ms, id LIMIT $2",
                                   types: [PostgresType.int8, PostgresType.int8], [.int(nowMs), .int(Int64(max(0, limit)))])
            return (0..<rows.count).map { CarryKey(expiresAtMs: rows.int64($0, 0), id: rows.bytes($0, 1)) }
        }
    }

    /// As `Store.carriedPacket`: the stored bytes with the budget and hop limit now; a row
    /// whose bytes no longer decode or hash to `id` is deleted and nil returned.
    func carriedPacket(_ id: [UInt8]) throws -> CarriedPacket? {
        let row = try pool.withConnection { c -> (Int, Int, [UInt8])? in
            let rows = try c.query("carry_packet", "SELECT copy_budget, hop_limit, packet FROM relay_carried WHERE id = $1",
                                   types: [PostgresType.bytea], [.bytes(id)])
            return rows.count == 0 ? nil : (rows.int(0, 0), rows.int(0, 1), rows.bytes(0, 2))
        }
        guard let (budget, hop, bytes) = row else { return nil }
        var patched = bytes
        if patched.count >= 4, let b = UInt8(exactly: budget), let h = UInt8(exactly: hop) {
            patched[2] = h
            patched[3] = b
        }
        guard let packet = try? CarriedPacket.decode(patched), packet.identity == id else {
            _ = try transaction { c in
                try c.query("carry_delete", "DELETE FROM relay_carried WHERE id = $1", types: [PostgresType.bytea], [.bytes(id)])
            }
            return nil
        }
        return packet
    }

    func holdsCarried(_ id: [UInt8]) throws -> Bool {
        try pool.withConnection { c in
            try c.query("carry_held", "SELECT 1 FROM relay_carried WHERE id = $1", types: [PostgresType.bytea], [.bytes(id)]).count > 0
        }
    }

    /// As `Store.purgeCarried` (never `own`: the relay opens nothing).
    func purgeCarried(_ record: PurgeRecord, nowMs: Int64, policy: CarryPolicy) throws -> [[UInt8]] {
        try policy.validate()
        return try transaction { c in
            var purged: [[UInt8]] = []
            for claim in record.claims {
                let hash = PurgeClaim.hash(claim)
                let candidates = try c.query("carry_by_claim", "SELECT id, packet FROM relay_carried WHERE claim_hash = $1",
                                             types: [PostgresType.bytea], [.bytes(hash)])
                var heldUntil: Int64?
                for r in 0..<candidates.count {
                    guard let packet = try? CarriedPacket.decode(candidates.bytes(r, 1)), PurgeClaim.purges(claim, packet) else { continue }
                    let id = candidates.bytes(r, 0)
                    try c.query("carry_delete", "DELETE FROM relay_carried WHERE id = $1", types: [PostgresType.bytea], [.bytes(id)])
                    purged.append(id)
                    heldUntil = max(heldUntil ?? .min, packet.expiresAtMs)
                }
                try c.query("carry_remember", """
                    INSERT INTO relay_carry_purges (claim_hash, claim, expires_ms, held) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (claim_hash) DO UPDATE SET
                        expires_ms = CASE WHEN excluded.held > relay_carry_purges.held THEN excluded.expires_ms
                                          ELSE GREATEST(relay_carry_purges.expires_ms, excluded.expires_ms) END,
                        held = GREATEST(relay_carry_purges.held, excluded.held)
                    """, types: [PostgresType.bytea, PostgresType.bytea, PostgresType.int8, PostgresType.int8],
                    [.bytes(hash), .bytes(claim), .int(heldUntil ?? nowMs &+ CarriedPacket.maxExpiryAheadMs), .int(heldUntil != nil ? 1 : 0)])
            }
            let count = try c.query("carry_purge_count", "SELECT count(*) FROM relay_carry_purges", types: [], []).int(0, 0)
            if count > policy.maxPurgeRecords {
                try c.query("carry_purge_trim", """
                    DELETE FROM relay_carry_purges WHERE claim_hash IN
                    (SELECT claim_hash FROM relay_carry_purges ORDER BY held, expires_ms LIMIT $1)
                    """, types: [PostgresType.int8], [.int(Int64(count - policy.maxPurgeRecords))])
            }
            return purged
        }
    }

    func rememberedClaim(hash claimHash: [UInt8], nowMs: Int64) throws -> [UInt8]? {
        try pool.withConnection { c in
            let rows = try c.query("carry_claim", "SELECT claim FROM relay_carry_purges WHERE claim_hash = $1 AND expires_ms > $2",
                                   types: [PostgresType.bytea, PostgresType.int8], [.bytes(claimHash), .int(nowMs)])
            return rows.count == 0 ? nil : rows.bytes(0, 0)
        }
    }

    func carryQuotaUsed(_ depositor: CarryDepositor, nowMs: Int64) throws -> (packets: Int, bytes: Int) {
        try pool.withConnection { try quotaUsed($0, depositor, nowMs) }
    }

    private func quotaUsed(_ c: PostgresConnection, _ depositor: CarryDepositor, _ nowMs: Int64) throws -> (packets: Int, bytes: Int) {
        let s = Self.quotaStatement(depositor, Self.hour(nowMs))
        return Self.quotaUsed(try c.query(s.name, s.sql, types: s.types, s.parameters))
    }

    /// What `depositor` had taken in `hour`: one row, or none.
    private static func quotaStatement(_ depositor: CarryDepositor, _ hour: Int64) -> PostgresConnection.Statement {
        PostgresConnection.Statement(name: "carry_quota", sql: "SELECT packets, bytes FROM relay_carry_quota WHERE depositor = $1 AND hour = $2",
                                     types: [PostgresType.bytea, PostgresType.int8], parameters: [.bytes(depositor.bytes), .int(hour)])
    }

    private static func quotaUsed(_ rows: PostgresRows) -> (packets: Int, bytes: Int) {
        rows.count == 0 ? (0, 0) : (rows.int(0, 0), rows.int(0, 1))
    }

    package func sweepCarried(nowMs: Int64) throws -> Int {
        try transaction { c in
            let gone = try c.query("carry_sweep", "DELETE FROM relay_carried WHERE expires_ms <= $1 RETURNING 1",
                                   types: [PostgresType.int8], [.int(nowMs)]).count
            try c.query("carry_sweep_claims", "DELETE FROM relay_carry_purges WHERE expires_ms <= $1", types: [PostgresType.int8], [.int(nowMs)])
            try c.query("carry_sweep_quota", "DELETE FROM relay_carry_quota WHERE hour < $1", types: [PostgresType.int8], [.int(Self.hour(nowMs))])
            // The usage the trigger keeps, counted afresh: only a TRUNCATE or a hand edit skews it.
            try c.query("carry_recount", """
                UPDATE relay_carry_usage SET packets = (SELECT count(*) FROM relay_carried),
                                             bytes = (SELECT coalesce(sum(size), 0) FROM relay_carried)
                """, types: [], [])
            return gone
        }
    }

    package func carryUsage() throws -> (packets: Int, bytes: Int) {
        try pool.withConnection { try PostgresCarryEviction.usage($0) }
    }

    /// The clock hour of `nowMs`, floored (as the node's quota, `Store.quotaHour`).
    static func hour(_ nowMs: Int64) -> Int64 {
        nowMs >= 0 ? nowMs / CarriedPacket.hourMs : -((-nowMs - 1) / CarriedPacket.hourMs) - 1
    }
}
