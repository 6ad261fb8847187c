import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// The eviction order of docs/PROTOCOL.md §10.9, as `Store.carryVictims` finds it through
/// the indexes, against the plain reading of the rule kept here: every row read, classes by
/// budget, and within a class the row of the depositor holding the most, first in (taken,
/// id) (the store's first algorithm). Random stores, seeded: budgets, depositors (one, a
/// few, or one per packet, so both ways of breaking ties run), sizes, times taken (with
/// ties), expiries (some past), both caps, newcomers of every budget from known and new
/// depositors. Any difference in the victims, their order, or a refusal fails.
@Suite struct CarryEvictionOrderTests {
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func theIndexedChoiceIsTheReferenceOrder(seed: UInt64) throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        var rng = SeededRandom(seed: seed)
        var compared = 0, refusals = 0, evictions = 0
        for _ in 0..<60 {
            try bench.store.db.execute("DELETE FROM carried_packets")
            let depositors = try randomStore(bench, &rng)
            for _ in 0..<6 {
                bench.now += Int64.random(in: 0...4, using: &rng) * 600_000
                let newcomer = try bench.packet(lifetimeMs: Int64.random(in: 1...20, using: &rng) * 3_600_000,
                                                budget: UInt8.random(in: 1...8, using: &rng),
                                                payloadLength: Int.random(in: 10...6_000, using: &rng))
                let depositor = Bool.random(using: &rng) ? depositors.randomElement(using: &rng) ?? .random() : .random()
                let usage = try bench.store.carryUsage()
                let policy = CarryPolicy(maxPackets: max(1, usage.packets + Int.random(in: -4...1, using: &rng)),
                                         maxBytes: max(Wire.maxPacketLength, usage.bytes + Int.random(in: -20_000...3_000, using: &rng)),
                                         depositorPacketsPerHour: 1 << 30, depositorBytesPerHour: 1 << 50)
                let encoded = newcomer.encode()
                let entry = CarriedEntry(id: newcomer.identity, expiresAtMs: newcomer.expiresAtMs, copyBudget: newcomer.copyBudget,
                                         hopLimit: newcomer.hopLimit, size: encoded.count, takenAtMs: bench.now,
                                         depositor: depositor, claimHash: newcomer.claimHash)
                let expected = try referenceVictims(bench.store, toFit: entry, nowMs: bench.now, policy: policy)
                let found = try bench.store.carryVictims(toFit: entry, nowMs: bench.now, policy: policy)
                #expect(found == expected, "seed \(seed), store of \(usage.packets)")
                // And the take itself evicts exactly those.
                switch try bench.take(newcomer, from: depositor, policy: policy) {
                case .taken(_, let evicted):
                    #expect(evicted == expected)
                    evictions += evicted.count
                case .full:
                    #expect(expected == nil)
                    refusals += 1
                case let other:
                    Issue.record("unexpected \(other.message)")
                }
                // The usage the triggers keep is the sum over the rows.
                let kept = try bench.store.carryUsage(), summed = try summedUsage(bench.store)
                #expect(kept.packets == summed.packets && kept.bytes == summed.bytes)
                compared += 1
            }
        }
        // The stores were full often enough, and refused sometimes.
        #expect(compared == 360 && evictions > 100 && refusals > 10)
    }

    /// 0 to 70 rows straight into the table: depositors from a pool of 1, 2 to 6, or one
    /// per row; budgets from all of 1...8 or two of them; sizes 100 to 6,000; times taken in
    /// a narrow window (ties); a quarter already expired. Returns the pool.
    private func randomStore(_ bench: CarryBench, _ rng: inout SeededRandom) throws -> [CarryDepositor] {
        let count = Int.random(in: 0...70, using: &rng)
        let poolSize = [1, Int.random(in: 2...6, using: &rng), max(1, count)].randomElement(using: &rng)!
        let pool = (0..<poolSize).map { _ in CarryDepositor.random() }
        let budgets: [UInt8] = Bool.random(using: &rng) ? Array(1...8) : [UInt8.random(in: 1...4, using: &rng), UInt8.random(in: 5...8, using: &rng)]
        try bench.store.db.transaction {
            for i in 0..<count {
                let expires = bench.now + (Int.random(in: 0..<4, using: &rng) == 0 ? -Int64.random(in: 0...3_600_000, using: &rng)
                                                                                      : Int64.random(in: 1...86_400_000, using: &rng))
                try bench.store.db.query("""
                    INSERT INTO carried_packets (id, expires_ms, copy_budget, hop_limit, size, taken_ms, depositor, claim_hash, packet)
                    VALUES (?, ?, ?, 8, ?, ?, ?, ?, x'00')
                    """, [.blob(Sodium.randomBytes(16)), .int(expires), .int(Int64(budgets.randomElement(using: &rng)!)),
                          .int(Int64(Int.random(in: 100...6_000, using: &rng))), .int(bench.now - Int64.random(in: 0...20, using: &rng)),
                          .blob(poolSize == count ? pool[i].bytes : pool.randomElement(using: &rng)!.bytes),
                          .blob(Sodium.randomBytes(16))])
            }
        }
        return pool
    }

    private func summedUsage(_ store: Store) throws -> (packets: Int, bytes: Int) {
        try store.db.rows("SELECT count(*), coalesce(sum(size), 0) FROM carried_packets") { ($0.int(0), $0.int(1)) }.first ?? (0, 0)
    }

    /// §10.9 read plainly (the store's first algorithm): all rows, classes by budget, and in
    /// each the row whose depositor holds the most, the first such in (taken, id).
    private func referenceVictims(_ store: Store, toFit entry: CarriedEntry, nowMs: Int64,
                                  policy: CarryPolicy) throws -> [[UInt8]]? {
        var usage = try summedUsage(store)
        func fits() -> Bool { usage.packets + 1 <= policy.maxPackets && usage.bytes + entry.size <= policy.maxBytes }
        if fits() { return [] }
        var victims: [[UInt8]] = []
        try store.db.query("SELECT id, size FROM carried_packets WHERE expires_ms <= ? ORDER BY expires_ms, id", [.int(nowMs)]) { row in
            victims.append(row.blob(0))
            usage.packets -= 1
            usage.bytes -= row.int(1)
        }
        if fits() { return victims }
        let expired = Set(victims)
        var held: [[UInt8]: Int] = [entry.depositor.bytes: 1]
        try store.db.query("SELECT depositor, count(*) FROM carried_packets WHERE expires_ms > ? GROUP BY depositor",
                           [.int(nowMs)]) { row in held[row.blob(0), default: 0] += row.int(1) }
        var classes: [(budget: Int, rows: [(id: [UInt8], size: Int, depositor: [UInt8])])] = []
        try store.db.query("SELECT id, copy_budget, size, depositor FROM carried_packets ORDER BY copy_budget, taken_ms, id") { row in
            let id = row.blob(0)
            guard !expired.contains(id) else { return }
            let budget = row.int(1)
            if classes.last?.budget != budget { classes.append((budget, [])) }
            classes[classes.count - 1].rows.append((id, row.int(2), row.blob(3)))
        }
        for var cls in classes {
            guard !fits() else { break }
            guard cls.budget <= Int(entry.copyBudget) else { return nil }
            while !fits(), !cls.rows.isEmpty {
                var pick = 0
                for i in cls.rows.indices.dropFirst() where held[cls.rows[i].depositor, default: 0] > held[cls.rows[pick].depositor, default: 0] {
                    pick = i
                }
                let victim = cls.rows.remove(at: pick)
                held[victim.depositor, default: 1] -= 1
                victims.append(victim.id)
                usage.packets -= 1
                usage.bytes -= victim.size
            }
        }
        return fits() ? victims : nil
    }
}
