import YaOKSupport
import YaOKStore

/// What a full PostgreSQL carry store evicts (docs/PROTOCOL.md §10.9), as the node's
/// `Store.carryVictims` (Store+CarryEviction) chooses it, reading only what the choice needs:
/// every take into a full store pays this, and it first read and shipped every row to the
/// relay. The indexes of relay schema migrations 7 and 9 answer each step: the expired by
/// (expires_ms, id), the lowest live budget by (copy_budget, taken_ms, id), the depositors
/// present in a budget by (copy_budget, depositor, taken_ms, id), each one's live packets by
/// (depositor, expires_ms), and a depositor's oldest packet in a budget by the first again.
/// The tied depositors' oldest packets come in one pipelined round trip. The victims are
/// exactly the full scan's (a property test, PostgresCarryEvictionOrderTests, compares them).
enum PostgresCarryEviction {
    /// Packets held and their bytes: one row kept by triggers (migration 9), not a sum over
    /// the store, since every take reads it.
    static func usage(_ c: PostgresConnection) throws -> (packets: Int, bytes: Int) {
        let rows = try c.query("carry_usage_kept", "SELECT packets, bytes FROM relay_carry_usage", types: [], [])
        return rows.count == 0 ? (0, 0) : (rows.int(0, 0), rows.int(0, 1))
    }

    /// The identities to evict so that a packet of `size` bytes and `budget`, from
    /// `depositor`, fits the caps, in the eviction order: every expired packet first (by
    /// expiry, then identity), then by copy budget, lowest first; within a budget the
    /// packets of the depositor that holds the most go first (the newcomer counts for its
    /// own), then the one taken longest ago, then by identity. nil when room would need a
    /// packet of a higher budget than the newcomer's.
    static func victims(_ c: PostgresConnection, size: Int, budget: Int, depositor: CarryDepositor, nowMs: Int64,
                        policy: CarryPolicy) throws -> [[UInt8]]? {
        var (packets, bytes) = try usage(c)
        func fits() -> Bool { packets + 1 <= policy.maxPackets && bytes + size <= policy.maxBytes }
        if fits() { return [] }
        var victims: [[UInt8]] = []
        let expired = try c.query("carry_expired_ordered", "SELECT id, size FROM relay_carried WHERE expires_ms <= $1 ORDER BY expires_ms, id",
                                  types: [PostgresType.int8], [.int(nowMs)])
        for r in 0..<expired.count {
            victims.append(expired.bytes(r, 0))
            packets -= 1
            bytes -= expired.int(r, 1)
        }
        // Live packets chosen so far, per depositor: they no longer count as held.
        var chosen: [[UInt8]: Int] = [:]
        var below = 0
        while !fits() {
            let lowest = try c.query("carry_lowest_budget", """
                SELECT b.copy_budget,
                       (SELECT depositor FROM relay_carried r WHERE r.copy_budget = b.copy_budget ORDER BY depositor LIMIT 1),
                       (SELECT depositor FROM relay_carried r WHERE r.copy_budget = b.copy_budget ORDER BY depositor DESC LIMIT 1)
                FROM (SELECT copy_budget FROM relay_carried WHERE copy_budget > $1 AND expires_ms > $2
                      ORDER BY copy_budget LIMIT 1) b
                """, types: [PostgresType.int8, PostgresType.int8], [.int(Int64(below)), .int(nowMs)])
            guard lowest.count == 1, lowest.int(0, 0) <= budget else { return nil }
            below = lowest.int(0, 0)
            var rank = try PostgresCarryBudgetClass(c, budget: below, onlyDepositor: lowest.bytes(0, 1) == lowest.bytes(0, 2) ? lowest.bytes(0, 1) : nil,
                                                    newcomer: depositor.bytes, chosen: chosen, nowMs: nowMs)
            while !fits(), let victim = try rank.next() {
                victims.append(victim.id)
                chosen[victim.depositor, default: 0] += 1
                packets -= 1
                bytes -= victim.size
            }
        }
        return victims
    }
}

/// The live packets of one copy budget, handed out in the eviction order: the depositor
/// holding the most first (its count over every budget, the newcomer counting for its own,
/// minus what was chosen already), then taken longest ago, then by identity.
private struct PostgresCarryBudgetClass {
    struct Victim {
        let taken: Int64
        let id: [UInt8]
        let size: Int
        let depositor: [UInt8]

        /// The order within a budget and depositor: taken first, then the identity as
        /// unsigned bytes, a shorter prefix first (as PostgreSQL compares bytea).
        static func precedes(_ a: Victim, _ b: Victim) -> Bool {
            a.taken != b.taken ? a.taken < b.taken : a.id.lexicographicallyPrecedes(b.id)
        }
    }

    /// Up to this many depositors tied for the most are compared by seeking each one's
    /// oldest packet (in one pipeline); more (strangers met once each hold 1) by walking the
    /// budget in order to the first packet of any of them, which comes soon when many tie.
    private static let seekLimit = 16
    private static let pageSize = 32

    private let c: PostgresConnection
    private let budget: Int
    private let nowMs: Int64
    /// Packets held by each depositor still present in this budget.
    private var held: [[UInt8]: Int]
    /// Each depositor's oldest packet not yet chosen, once read.
    private var heads: [[UInt8]: Victim] = [:]
    /// Each depositor's last chosen packet (taken, id): its next one comes after.
    private var cursors: [[UInt8]: (taken: Int64, id: [UInt8])] = [:]
    private var chosenHere: Set<[UInt8]> = []

    /// `onlyDepositor`: the budget's one depositor when its least and greatest are the same.
    init(_ c: PostgresConnection, budget: Int, onlyDepositor: [UInt8]?, newcomer: [UInt8], chosen: [[UInt8]: Int],
         nowMs: Int64) throws {
        self.c = c
        self.budget = budget
        self.nowMs = nowMs
        if let onlyDepositor {
            // One depositor (a busy sender's own copies): no count to compare.
            held = [onlyDepositor: 1]
            return
        }
        held = [:]
        let counts = try c.query("carry_class_counts", """
            SELECT depositor, count(*) FROM relay_carried
            WHERE depositor IN (SELECT DISTINCT depositor FROM relay_carried WHERE copy_budget = $1) AND expires_ms > $2
            GROUP BY depositor
            """, types: [PostgresType.int8, PostgresType.int8], [.int(Int64(budget)), .int(nowMs)])
        for r in 0..<counts.count {
            let depositor = counts.bytes(r, 0)
            held[depositor] = counts.int(r, 1) + (depositor == newcomer ? 1 : 0) - chosen[depositor, default: 0]
        }
    }

    /// The next packet to evict from this budget, or nil when none is left.
    mutating func next() throws -> Victim? {
        while let most = held.values.max() {
            let tied = held.filter { $0.value == most }.map(\.key)
            let pick: Victim?
            if tied.count <= Self.seekLimit {
                try readHeads(of: tied)
                pick = tied.compactMap { heads[$0] }.min(by: Victim.precedes)
            } else {
                pick = try firstInOrder(among: Set(tied))
            }
            guard let pick else {
                // The tied depositors hold nothing live in this budget (only expired, or
                // everything already chosen): they are out of it.
                for depositor in tied { held[depositor] = nil }
                continue
            }
            held[pick.depositor, default: 1] -= 1
            heads[pick.depositor] = nil
            cursors[pick.depositor] = (pick.taken, pick.id)
            chosenHere.insert(pick.id)
            return pick
        }
        return nil
    }

    /// Reads, in one round trip, the oldest live packet of this budget not yet chosen of
    /// each of `depositors` whose head is not known; one that has none leaves the class.
    private mutating func readHeads(of depositors: [[UInt8]]) throws {
        let unknown = depositors.filter { heads[$0] == nil }
        guard !unknown.isEmpty else { return }
        let statements = unknown.map { depositor -> PostgresConnection.Statement in
            let after = cursors[depositor] ?? (Int64.min, [])
            return PostgresConnection.Statement(name: "carry_head", sql: """
                SELECT taken_ms, id, size FROM relay_carried
                WHERE copy_budget = $1 AND depositor = $2 AND (taken_ms, id) > ($3, $4) AND expires_ms > $5
                ORDER BY taken_ms, id LIMIT 1
                """, types: [PostgresType.int8, PostgresType.bytea, PostgresType.int8, PostgresType.bytea, PostgresType.int8],
                parameters: [.int(Int64(budget)), .bytes(depositor), .int(after.taken), .bytes(after.id), .int(nowMs)])
        }
        for (depositor, rows) in zip(unknown, try c.pipeline(statements)) {
            if rows.count == 1 {
                heads[depositor] = Victim(taken: rows.int64(0, 0), id: rows.bytes(0, 1), size: rows.int(0, 2), depositor: depositor)
            } else {
                held[depositor] = nil
            }
        }
    }

    /// The first live packet of this budget, in the order (taken, id), whose depositor is in
    /// `wanted` and that is not chosen yet, read a page at a time.
    private func firstInOrder(among wanted: Set<[UInt8]>) throws -> Victim? {
        var after: (taken: Int64, id: [UInt8]) = (Int64.min, [])
        while true {
            let page = try c.query("carry_class_page", """
                SELECT taken_ms, id, size, depositor FROM relay_carried
                WHERE copy_budget = $1 AND (taken_ms, id) > ($2, $3) AND expires_ms > $4
                ORDER BY taken_ms, id LIMIT $5
                """, types: [PostgresType.int8, PostgresType.int8, PostgresType.bytea, PostgresType.int8, PostgresType.int8],
                [.int(Int64(budget)), .int(after.taken), .bytes(after.id), .int(nowMs), .int(Int64(Self.pageSize))])
            let victims = (0..<page.count).map {
                Victim(taken: page.int64($0, 0), id: page.bytes($0, 1), size: page.int($0, 2), depositor: page.bytes($0, 3))
            }
            if let hit = victims.first(where: { wanted.contains($0.depositor) && !chosenHere.contains($0.id) }) { return hit }
            guard victims.count == Self.pageSize, let last = victims.last else { return nil }
            after = (last.taken, last.id)
        }
    }
}
