import YaOKSupport

/// The reads of the eviction walk (`CarryEviction`, docs/PROTOCOL.md §10.9) on the node's
/// database. The indexes of migrations 12 and 17 answer each: the expired by (expires_ms,
/// id), the lowest live budget by (copy_budget, taken_ms, id), the depositors present in a
/// budget by (copy_budget, depositor, taken_ms, id), each one's packets held by (depositor,
/// expires_ms), and a depositor's oldest packet in a budget by the first again.
extension Store {
    /// The identities to evict so that `entry` fits the caps, in the eviction order
    /// (`CarryEviction.victims`); nil when room would need a packet of a higher budget.
    /// "Taken" is the wall clock at the take: after the clock is set back, packets taken
    /// since count as older than they are (a misordering within one budget, no loss).
    func carryVictims(toFit entry: CarriedEntry, nowMs: Int64, policy: CarryPolicy) throws -> [[UInt8]]? {
        try CarryEviction.victims(SQLiteCarryEvictionQueries(db: db), usage: try carryUsage(),
                                  adding: CarryNewcomer(size: entry.size, budget: Int(entry.copyBudget), depositor: entry.depositor.bytes),
                                  nowMs: nowMs, policy: policy)
    }

    /// The identities to evict so that the store fits `policy` with nothing added (after a
    /// lowered cap), in the same order as a take's.
    func carryVictimsToShrink(to policy: CarryPolicy, nowMs: Int64) throws -> [[UInt8]] {
        try CarryEviction.victims(SQLiteCarryEvictionQueries(db: db), usage: try carryUsage(), adding: nil,
                                  nowMs: nowMs, policy: policy) ?? []
    }
}

private struct SQLiteCarryEvictionQueries: CarryEvictionQueries {
    let db: Database

    func expiredCarried(nowMs: Int64) throws -> [(id: [UInt8], size: Int)] {
        try db.rows("SELECT id, size FROM carried_packets WHERE expires_ms <= ? ORDER BY expires_ms, id", [.int(nowMs)]) {
            (id: $0.blob(0), size: $0.int(1))
        }
    }

    func lowestLiveBudget(above budget: Int, nowMs: Int64) throws -> CarryBudgetSpan? {
        guard let lowest = try db.rows("""
            SELECT copy_budget FROM carried_packets WHERE copy_budget > ? AND expires_ms > ? ORDER BY copy_budget LIMIT 1
            """, [.int(Int64(budget)), .int(nowMs)], map: { $0.int(0) }).first else { return nil }
        let b = SQLValue.int(Int64(lowest))
        let least = try db.rows("SELECT min(depositor) FROM carried_packets WHERE copy_budget = ?", [b]) { $0.blob(0) }.first
        let greatest = try db.rows("SELECT max(depositor) FROM carried_packets WHERE copy_budget = ?", [b]) { $0.blob(0) }.first
        return CarryBudgetSpan(budget: lowest, onlyDepositor: least != nil && least == greatest ? least : nil)
    }

    func liveCounts(ofDepositorsIn budget: Int, nowMs: Int64) throws -> [(depositor: [UInt8], packets: Int)] {
        try db.rows("""
            SELECT depositor, count(*) FROM carried_packets
            WHERE depositor IN (SELECT depositor FROM carried_packets WHERE copy_budget = ?) AND expires_ms > ?
            GROUP BY depositor
            """, [.int(Int64(budget)), .int(nowMs)]) { (depositor: $0.blob(0), packets: $0.int(1)) }
    }

    func oldest(inBudget budget: Int, of depositors: [(depositor: [UInt8], after: CarryCursor)],
                nowMs: Int64) throws -> [CarryCandidate?] {
        try depositors.map { depositor, after in
            try db.rows("""
                SELECT taken_ms, id, size FROM carried_packets
                WHERE copy_budget = ? AND depositor = ? AND (taken_ms, id) > (?, ?) AND expires_ms > ?
                ORDER BY taken_ms, id LIMIT 1
                """, [.int(Int64(budget)), .blob(depositor), .int(after.taken), .blob(after.id), .int(nowMs)]) {
                CarryCandidate(taken: $0.int64(0), id: $0.blob(1), size: $0.int(2), depositor: depositor)
            }.first
        }
    }

    func page(inBudget budget: Int, after cursor: CarryCursor, limit: Int, nowMs: Int64) throws -> [CarryCandidate] {
        try db.rows("""
            SELECT taken_ms, id, size, depositor FROM carried_packets
            WHERE copy_budget = ? AND (taken_ms, id) > (?, ?) AND expires_ms > ?
            ORDER BY taken_ms, id LIMIT ?
            """, [.int(Int64(budget)), .int(cursor.taken), .blob(cursor.id), .int(nowMs), .int(Int64(limit))]) {
            CarryCandidate(taken: $0.int64(0), id: $0.blob(1), size: $0.int(2), depositor: $0.blob(3))
        }
    }
}
