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
    /// when already read in this transaction; `prefetched`: the walk's first reads, when
    /// they came with it (`prefetchStatements`).
    static func victims(_ c: PostgresConnection, size: Int, budget: Int, depositor: CarryDepositor, nowMs: Int64,
                        policy: CarryPolicy, usage known: (packets: Int, bytes: Int)? = nil,
                        prefetched: Prefetched? = nil) throws -> [[UInt8]]? {
        try CarryEviction.victims(Queries(c: c, prefetched: prefetched), usage: try known ?? usage(c),
                                  adding: CarryNewcomer(size: size, budget: budget, depositor: depositor.bytes),
                                  nowMs: nowMs, policy: policy)
    }

    /// The walk's first two reads (the expired packets, the lowest live budget), read with
    /// the take's other reads in one pipeline, so a take into a full store costs no round
    /// trip for them.
    struct Prefetched {
        /// The first page of the expired packets.
        let expired: ExpiredPage
        let lowest: CarryBudgetSpan?
    }

    /// Up to `expiredPageSize` expired packets, in the order (expiry, identity). A limit, so
    /// that even a cached generic plan (which guesses that a third of the table matches
    /// `expires_ms <= $1`) walks the order index and stops, rather than reading every dead
    /// row a sweep left behind: a bitmap scan does not mark them dead, so it would read them
    /// again on every take until a vacuum.
    struct ExpiredPage {
        let packets: [(id: [UInt8], size: Int)]
        /// Where the next page starts, when this one was full.
        let next: CarryKey?
    }

    static let expiredPageSize = 256

    /// Whether anything has expired ($1 is now): the soonest expiry, the first entry of the
    /// order index, whatever plan is cached. A generic plan of `expires_ms <= $1` alone may
    /// scan the table (it was 90 to 145 µs of a take into a full store where nothing had
    /// expired); with this condition, that scan runs only when something has expired.
    /// After a sweep the index starts with dead entries until a vacuum, so this reading
    /// costs up to ~100 µs then: in a take's pipeline it comes after the condition that
    /// the store is full, and PostgreSQL evaluates it only when that holds.
    private static let anyExpired = "(SELECT min(expires_ms) FROM relay_carried) <= $1"

    /// Statements for a take's pipeline: the usage, whether a packet of `size` overflows the
    /// caps, and only then (the store full) the walk's first reads; not full, they read no
    /// row. `prefetched` reads their answers.
    static func prefetchStatements(size: Int, nowMs: Int64, policy: CarryPolicy) -> [PostgresConnection.Statement] {
        let caps: [PostgresValue] = [.int(Int64(size)), .int(Int64(policy.maxPackets)), .int(Int64(policy.maxBytes))]
        let full = "EXISTS (SELECT 1 FROM relay_carry_usage WHERE packets + 1 > $3 OR bytes + $2 > $4)"
        return [
            PostgresConnection.Statement(name: "carry_usage_full", sql: """
                SELECT packets, bytes, packets + 1 > $2 OR bytes + $1 > $3 FROM relay_carry_usage
                """, types: [PostgresType.int8, PostgresType.int8, PostgresType.int8], parameters: caps),
            PostgresConnection.Statement(name: "carry_expired_if_full", sql: """
                SELECT id, size, expires_ms FROM relay_carried WHERE expires_ms <= $1 AND \(full) AND \(anyExpired)
                ORDER BY expires_ms, id LIMIT \(expiredPageSize)
                """, types: [PostgresType.int8, PostgresType.int8, PostgresType.int8, PostgresType.int8],
                parameters: [.int(nowMs)] + caps),
            PostgresConnection.Statement(name: "carry_lowest_budget_if_full", sql: lowestBudgetSQL(above: "0", live: "$1", and: full),
                                         types: [PostgresType.int8, PostgresType.int8, PostgresType.int8, PostgresType.int8],
                                         parameters: [.int(nowMs)] + caps),
        ]
    }

    /// The usage, and the walk's first reads when the store was full, from the rows of
    /// `prefetchStatements`.
    static func prefetched(_ rows: ArraySlice<PostgresRows>) -> (usage: (packets: Int, bytes: Int), prefetched: Prefetched?) {
        let usageRows = rows[rows.startIndex], full = usageRows.count == 1 && usageRows.int(0, 2) == 1
        return (usage(usageRows), full ? Prefetched(expired: expired(rows[rows.startIndex + 1]),
                                                    lowest: lowestBudget(rows[rows.startIndex + 2])) : nil)
    }

    /// The lowest budget above `above` that a packet live at `live` has, with its least and
    /// greatest depositor (the same: only one), where `condition` holds.
    private static func lowestBudgetSQL(above: String, live: String, and condition: String = "TRUE") -> String {
        """
        SELECT b.copy_budget,
               (SELECT depositor FROM relay_carried r WHERE r.copy_budget = b.copy_budget ORDER BY depositor LIMIT 1),
               (SELECT depositor FROM relay_carried r WHERE r.copy_budget = b.copy_budget ORDER BY depositor DESC LIMIT 1)
        FROM (SELECT copy_budget FROM relay_carried WHERE copy_budget > \(above) AND expires_ms > \(live) AND \(condition)
              ORDER BY copy_budget LIMIT 1) b
        """
    }

    private static func expired(_ rows: PostgresRows) -> ExpiredPage {
        let last = rows.count - 1
        return ExpiredPage(packets: (0..<rows.count).map { (id: rows.bytes($0, 0), size: rows.int($0, 1)) },
                           next: rows.count == expiredPageSize ? CarryKey(expiresAtMs: rows.int64(last, 2), id: rows.bytes(last, 0)) : nil)
    }

    private static func lowestBudget(_ rows: PostgresRows) -> CarryBudgetSpan? {
        guard rows.count == 1 else { return nil }
        let least = rows.bytes(0, 1), greatest = rows.bytes(0, 2)
        return CarryBudgetSpan(budget: rows.int(0, 0), onlyDepositor: least == greatest ? least : nil)
    }

    private struct Queries: CarryEvictionQueries {
        let c: PostgresConnection
        let prefetched: Prefetched?

        func expiredCarried(nowMs: Int64) throws -> [(id: [UInt8], size: Int)] {
            var page = try prefetched?.expired ?? self.page(after: CarryKey(expiresAtMs: .min, id: []), nowMs: nowMs)
            var all = page.packets
            while let next = page.next {
                page = try self.page(after: next, nowMs: nowMs)
                all += page.packets
            }
            return all
        }

        private func page(after key: CarryKey, nowMs: Int64) throws -> ExpiredPage {
            PostgresCarryEviction.expired(try c.query("carry_expired_page", """
                SELECT id, size, expires_ms FROM relay_carried
                WHERE expires_ms <= $1 AND (expires_ms, id) > ($2, $3) AND \(anyExpired)
                ORDER BY expires_ms, id LIMIT \(expiredPageSize)
                """, types: [PostgresType.int8, PostgresType.int8, PostgresType.bytea],
                [.int(nowMs), .int(key.expiresAtMs), .bytes(key.id)]))
        }

        func lowestLiveBudget(above budget: Int, nowMs: Int64) throws -> CarryBudgetSpan? {
            if budget == 0, let prefetched { return prefetched.lowest }
            return PostgresCarryEviction.lowestBudget(try c.query("carry_lowest_budget", PostgresCarryEviction.lowestBudgetSQL(above: "$1", live: "$2"),
                                                                  types: [PostgresType.int8, PostgresType.int8],
                                                                  [.int(Int64(budget)), .int(nowMs)]))
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
