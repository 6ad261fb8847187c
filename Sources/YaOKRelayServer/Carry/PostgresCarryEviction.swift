import YaOKSupport
import YaOKStore

/// The reads of the eviction walk (`CarryEviction`, docs/PROTOCOL.md §10.9) on the relay's
/// PostgreSQL carry store: the walk is the node's, so both stores evict alike. The indexes
/// of relay schema migrations 7 and 9 answer each read: the expired by (expires_ms, id),
/// the lowest live budget by (copy_budget, taken_ms, id), the depositors present in a
/// budget by (copy_budget, depositor, taken_ms, id), each one's live packets by (depositor,
/// expires_ms), and a depositor's oldest packet in a budget by the first again. The tied
/// depositors' oldest packets come in one pipelined round trip.
enum PostgresCarryEviction {
    /// Packets held and their bytes: one row kept by triggers (migration 9), not a sum over
    /// the store, since every take reads it.
    static func usage(_ c: PostgresConnection) throws -> (packets: Int, bytes: Int) {
        usage(try c.query(usageStatement.name, usageStatement.sql, types: [], []))
    }

    static let usageStatement = PostgresConnection.Statement(name: "carry_usage_kept", sql: "SELECT packets, bytes FROM relay_carry_usage",
                                                             types: [], parameters: [])

    static func usage(_ rows: PostgresRows) -> (packets: Int, bytes: Int) {
        rows.count == 0 ? (0, 0) : (rows.int(0, 0), rows.int(0, 1))
    }

    /// The identities to evict so that a packet of `size` bytes and `budget`, from
    /// `depositor`, fits the caps, in the eviction order (`CarryEviction.victims`); nil when
    /// room would need a packet of a higher budget than the newcomer's. `usage`: the store's,
    /// when already read in this transaction.
    static func victims(_ c: PostgresConnection, size: Int, budget: Int, depositor: CarryDepositor, nowMs: Int64,
                        policy: CarryPolicy, usage known: (packets: Int, bytes: Int)? = nil) throws -> [[UInt8]]? {
        try CarryEviction.victims(Queries(c: c), usage: try known ?? usage(c),
                                  adding: CarryNewcomer(size: size, budget: budget, depositor: depositor.bytes),
                                  nowMs: nowMs, policy: policy)
    }

    private struct Queries: CarryEvictionQueries {
        let c: PostgresConnection

        func expiredCarried(nowMs: Int64) throws -> [(id: [UInt8], size: Int)] {
            let rows = try c.query("carry_expired_ordered", "SELECT id, size FROM relay_carried WHERE expires_ms <= $1 ORDER BY expires_ms, id",
                                   types: [PostgresType.int8], [.int(nowMs)])
            return (0..<rows.count).map { (id: rows.bytes($0, 0), size: rows.int($0, 1)) }
        }

        func lowestLiveBudget(above budget: Int, nowMs: Int64) throws -> CarryBudgetSpan? {
            let rows = try c.query("carry_lowest_budget", """
                SELECT b.copy_budget,
                       (SELECT depositor FROM relay_carried r WHERE r.copy_budget = b.copy_budget ORDER BY depositor LIMIT 1),
                       (SELECT depositor FROM relay_carried r WHERE r.copy_budget = b.copy_budget ORDER BY depositor DESC LIMIT 1)
                FROM (SELECT copy_budget FROM relay_carried WHERE copy_budget > $1 AND expires_ms > $2
                      ORDER BY copy_budget LIMIT 1) b
                """, types: [PostgresType.int8, PostgresType.int8], [.int(Int64(budget)), .int(nowMs)])
            guard rows.count == 1 else { return nil }
            let least = rows.bytes(0, 1), greatest = rows.bytes(0, 2)
            return CarryBudgetSpan(budget: rows.int(0, 0), onlyDepositor: least == greatest ? least : nil)
        }

        func liveCounts(ofDepositorsIn budget: Int, nowMs: Int64) throws -> [(depositor: [UInt8], packets: Int)] {
            let rows = try c.query("carry_class_counts", """
                SELECT depositor, count(*) FROM relay_carried
                WHERE depositor IN (SELECT DISTINCT depositor FROM relay_carried WHERE copy_budget = $1) AND expires_ms > $2
                GROUP BY depositor
                """, types: [PostgresType.int8, PostgresType.int8], [.int(Int64(budget)), .int(nowMs)])
            return (0..<rows.count).map { (depositor: rows.bytes($0, 0), packets: rows.int($0, 1)) }
        }

        /// One pipeline, one round trip, for all of them.
        func oldest(inBudget budget: Int, of depositors: [(depositor: [UInt8], after: CarryCursor)],
                    nowMs: Int64) throws -> [CarryCandidate?] {
            let statements = depositors.map { depositor, after in
                PostgresConnection.Statement(name: "carry_head", sql: """
                    SELECT taken_ms, id, size FROM relay_carried
                    WHERE copy_budget = $1 AND depositor = $2 AND (taken_ms, id) > ($3, $4) AND expires_ms > $5
                    ORDER BY taken_ms, id LIMIT 1
                    """, types: [PostgresType.int8, PostgresType.bytea, PostgresType.int8, PostgresType.bytea, PostgresType.int8],
                    parameters: [.int(Int64(budget)), .bytes(depositor), .int(after.taken), .bytes(after.id), .int(nowMs)])
            }
            return zip(depositors, try c.pipeline(statements)).map { asked, rows in
                rows.count == 1 ? CarryCandidate(taken: rows.int64(0, 0), id: rows.bytes(0, 1), size: rows.int(0, 2),
                                                 depositor: asked.depositor) : nil
            }
        }

        func page(inBudget budget: Int, after cursor: CarryCursor, limit: Int, nowMs: Int64) throws -> [CarryCandidate] {
            let rows = try c.query("carry_class_page", """
                SELECT taken_ms, id, size, depositor FROM relay_carried
                WHERE copy_budget = $1 AND (taken_ms, id) > ($2, $3) AND expires_ms > $4
                ORDER BY taken_ms, id LIMIT $5
                """, types: [PostgresType.int8, PostgresType.int8, PostgresType.bytea, PostgresType.int8, PostgresType.int8],
                [.int(Int64(budget)), .int(cursor.taken), .bytes(cursor.id), .int(nowMs), .int(Int64(limit))])
            return (0..<rows.count).map {
                CarryCandidate(taken: rows.int64($0, 0), id: rows.bytes($0, 1), size: rows.int($0, 2), depositor: rows.bytes($0, 3))
            }
        }
    }
}
