import YaOKSupport

/// Choosing what a full carry store evicts (docs/PROTOCOL.md §10.9), reading only what the
/// choice needs: a full store pays this on every take, and a busy sender's own carried
/// copies keep its store full, so reading all 2,000 rows per take (as this first did) cost
/// 40 % of `Node.send`. The indexes of migrations 12 and 17 answer each step: the expired
/// by (expires_ms, id), the lowest live budget by (copy_budget, taken_ms, id), the
/// depositors present in a budget by (copy_budget, depositor, taken_ms, id), each one's
/// packets held by (depositor, expires_ms), and a depositor's oldest packet in a budget by
/// the first again. The order is exactly the one a full scan gives (a property test
/// compares the two over random stores).
extension Store {
    /// The identities to evict so that `entry` fits the caps, in the eviction order
    /// (§10.9): every expired packet first, then by copy budget, lowest first; within a
    /// budget, the packets of the depositor that holds the most go first (so one stranger's
    /// flood, within its quota, pushes out its own packets before anyone else's), then the
    /// one taken longest ago, then by identity. nil when room would need a packet that ranks
    /// above `entry` for keeping (a higher budget: the newcomer, taken now, is the newest of
    /// its budget), so a full store of valuable copies refuses a wait-phase copy instead of
    /// churning. "Taken" is the wall clock at the take: after the clock is set back, packets
    /// taken since count as older than they are (a misordering within one budget, no loss).
    func carryVictims(toFit entry: CarriedEntry, nowMs: Int64, policy: CarryPolicy) throws -> [[UInt8]]? {
        var usage = try carryUsage()
        func fits() -> Bool { usage.packets + 1 <= policy.maxPackets && usage.bytes + entry.size <= policy.maxBytes }
        if fits() { return [] }
        var victims: [[UInt8]] = []
        try db.query("SELECT id, size FROM carried_packets WHERE expires_ms <= ? ORDER BY expires_ms, id", [.int(nowMs)]) { row in
            victims.append(row.blob(0))
            usage.packets -= 1
            usage.bytes -= row.int(1)
        }
        // Live packets chosen so far, per depositor: they no longer count as held.
        var chosen: [[UInt8]: Int] = [:]
        var below = 0
        while !fits() {
            guard let budget = try lowestLiveCarryBudget(above: below, nowMs: nowMs) else { return nil }
            guard budget <= Int(entry.copyBudget) else { return nil }
            below = budget
            var rank = try CarryBudgetClass(store: self, budget: budget, newcomer: entry.depositor.bytes, chosen: chosen,
                                            nowMs: nowMs)
            while !fits(), let victim = try rank.next() {
                victims.append(victim.id)
                chosen[victim.depositor, default: 0] += 1
                usage.packets -= 1
                usage.bytes -= victim.size
            }
        }
        return victims
    }

    /// The lowest copy budget above `budget` that a live packet has, or nil.
    private func lowestLiveCarryBudget(above budget: Int, nowMs: Int64) throws -> Int? {
        try db.rows("SELECT copy_budget FROM carried_packets WHERE copy_budget > ? AND expires_ms > ? ORDER BY copy_budget LIMIT 1",
                    [.int(Int64(budget)), .int(nowMs)]) { $0.int(0) }.first
    }
}

/// The live packets of one copy budget, handed out in the eviction order: the depositor
/// holding the most first (its count over every budget, the newcomer counting for its own,
/// minus what was chosen already), then taken longest ago, then by identity.
private struct CarryBudgetClass {
    struct Victim {
        let taken: Int64
        let id: [UInt8]
        let size: Int
        let depositor: [UInt8]

        /// The order within a budget and depositor: taken first, then the identity as
        /// unsigned bytes (as SQLite compares blobs).
        static func precedes(_ a: Victim, _ b: Victim) -> Bool {
            a.taken != b.taken ? a.taken < b.taken : a.id.lexicographicallyPrecedes(b.id)
        }
    }

    /// Up to this many depositors tied for the most are compared by seeking each one's
    /// oldest packet; more (strangers met once each hold 1) by walking the budget in order
    /// to the first packet of any of them, which comes soon when many tie.
    private static let seekLimit = 16
    private static let pageSize = 32

    private let store: Store
    private let budget: Int
    private let nowMs: Int64
    /// Packets held by each depositor still present in this budget.
    private var held: [[UInt8]: Int]
    /// Each depositor's oldest packet not yet chosen, once read.
    private var heads: [[UInt8]: Victim] = [:]
    /// Each depositor's last chosen packet (taken, id): its next one comes after.
    private var cursors: [[UInt8]: (taken: Int64, id: [UInt8])] = [:]
    private var chosenHere: Set<[UInt8]> = []

    init(store: Store, budget: Int, newcomer: [UInt8], chosen: [[UInt8]: Int], nowMs: Int64) throws {
        self.store = store
        self.budget = budget
        self.nowMs = nowMs
        let b = SQLValue.int(Int64(budget))
        let lowest = try store.db.rows("SELECT min(depositor) FROM carried_packets WHERE copy_budget = ?", [b]) { $0.blob(0) }.first
        let highest = try store.db.rows("SELECT max(depositor) FROM carried_packets WHERE copy_budget = ?", [b]) { $0.blob(0) }.first
        if let lowest, lowest == highest {
            // One depositor (a busy sender's own copies): no count to compare.
            held = [lowest: 1]
            return
        }
        held = [:]
        try store.db.query("""
            SELECT depositor, count(*) FROM carried_packets
            WHERE depositor IN (SELECT depositor FROM carried_packets WHERE copy_budget = ?) AND expires_ms > ?
            GROUP BY depositor
            """, [b, .int(nowMs)]) { row in
            let depositor = row.blob(0)
            held[depositor] = row.int(1) + (depositor == newcomer ? 1 : 0) - chosen[depositor, default: 0]
        }
    }

    /// The next packet to evict from this budget, or nil when none is left.
    mutating func next() throws -> Victim? {
        while let most = held.values.max() {
            let tied = held.filter { $0.value == most }.map(\.key)
            let pick: Victim?
            if tied.count <= Self.seekLimit {
                pick = try tied.compactMap { try head(of: $0) }.min(by: Victim.precedes)
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

    /// `depositor`'s oldest live packet of this budget not yet chosen; when it has none, it
    /// leaves the class.
    private mutating func head(of depositor: [UInt8]) throws -> Victim? {
        if let known = heads[depositor] { return known }
        let after = cursors[depositor] ?? (Int64.min, [])
        let found = try store.db.rows("""
            SELECT taken_ms, id, size FROM carried_packets
            WHERE copy_budget = ? AND depositor = ? AND (taken_ms, id) > (?, ?) AND expires_ms > ?
            ORDER BY taken_ms, id LIMIT 1
            """, [.int(Int64(budget)), .blob(depositor), .int(after.taken), .blob(after.id), .int(nowMs)]) {
            Victim(taken: $0.int64(0), id: $0.blob(1), size: $0.int(2), depositor: depositor)
        }.first
        if let found { heads[depositor] = found } else { held[depositor] = nil }
        return found
    }

    /// The first live packet of this budget, in the order (taken, id), whose depositor is in
    /// `wanted` and that is not chosen yet, read a page at a time.
    private func firstInOrder(among wanted: Set<[UInt8]>) throws -> Victim? {
        var after: (taken: Int64, id: [UInt8]) = (Int64.min, [])
        while true {
            let page = try store.db.rows("""
                SELECT taken_ms, id, size, depositor FROM carried_packets
                WHERE copy_budget = ? AND (taken_ms, id) > (?, ?) AND expires_ms > ?
                ORDER BY taken_ms, id LIMIT ?
                """, [.int(Int64(budget)), .int(after.taken), .blob(after.id), .int(nowMs), .int(Int64(Self.pageSize))]) {
                Victim(taken: $0.int64(0), id: $0.blob(1), size: $0.int(2), depositor: $0.blob(3))
            }
            if let hit = page.first(where: { wanted.contains($0.depositor) && !chosenHere.contains($0.id) }) { return hit }
            guard page.count == Self.pageSize, let last = page.last else { return nil }
            after = (last.taken, last.id)
        }
    }
}
