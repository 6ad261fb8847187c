import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// The eviction order of docs/PROTOCOL.md §10.9 on PostgreSQL, as `PostgresCarryEviction`
/// finds it through the indexes, against the plain reading of the rule kept here: every row
/// read, classes by budget, and within a class the row of the depositor holding the most,
/// first in (taken, id) (the relay store's first algorithm). Random stores, seeded, as the
/// node's CarryEvictionOrderTests: budgets, depositors (one, a few, or one per packet, so
/// both ways of breaking ties run), sizes, times taken (with ties), expiries (some past),
/// both caps, newcomers of every budget from known and new depositors. Any difference in the
/// victims, their order, or a refusal fails; so does a take that evicts others, or a kept
/// usage that is not the sum over the rows. Skipped without PostgreSQL (TestPostgres).
final class PostgresCarryEvictionOrderTests: XCTestCase {
    func testTheIndexedChoiceIsTheReferenceOrder() throws {
        let conninfo = try TestPostgres.freshDatabase()
        let store = try PostgresRelayCarryStore(conninfo: conninfo)
        defer { store.close() }
        let c = try PostgresConnection(conninfo: conninfo)
        var now = Clock.milliseconds()
        var compared = 0, refusals = 0, evictions = 0
        for seed in [1, 2, 3, 4] as [UInt64] {
            var rng = SeededRandom(seed: seed)
            for _ in 0..<40 {
                try c.execute("DELETE FROM relay_carried")
                let depositors = try randomStore(c, now: now, &rng)
                for _ in 0..<6 {
                    now += Int64.random(in: 0...4, using: &rng) * 600_000
                    let newcomer = try carriedPacket(nowMs: now, budget: UInt8.random(in: 1...min(8, CopyBudget.maximum), using: &rng),
                                                     lifetimeMs: Int64.random(in: 1...20, using: &rng) * 3_600_000,
                                                     payloadLength: Int.random(in: 10...6_000, using: &rng)).packet
                    let depositor = Bool.random(using: &rng) ? depositors.randomElement(using: &rng) ?? .random() : .random()
                    let usage = try summedUsage(c)
                    let policy = CarryPolicy(maxPackets: max(1, usage.packets + Int.random(in: -4...1, using: &rng)),
                                             maxBytes: max(Wire.maxPacketLength, usage.bytes + Int.random(in: -20_000...3_000, using: &rng)),
                                             depositorPacketsPerHour: 1 << 30, depositorBytesPerHour: 1 << 50)
                    let size = newcomer.encode().count, budget = Int(newcomer.copyBudget)
                    let expected = try referenceVictims(c, size: size, budget: budget, depositor: depositor, nowMs: now, policy: policy)
                    let found = try PostgresCarryEviction.victims(c, size: size, budget: budget, depositor: depositor, nowMs: now,
                                                                  policy: policy)
                    XCTAssertEqual(found, expected, "seed \(seed), store of \(usage.packets)")
                    // And the take itself evicts exactly those.
                    let outcome = try store.takeCarried(newcomer.encode(), from: depositor, nowMs: now, policy: policy)
                    if let expected {
                        XCTAssertEqual(outcome, .taken(evicted: expected.count))
                        for id in expected { XCTAssertFalse(try store.holdsCarried(id)) }
                        XCTAssertTrue(try store.holdsCarried(newcomer.identity))
                        evictions += expected.count
                    } else {
                        XCTAssertEqual(outcome, .full)
                        refusals += 1
                    }
                    // The usage the trigger keeps is the sum over the rows.
                    let kept = try store.carryUsage(), summed = try summedUsage(c)
                    XCTAssertTrue(kept == summed, "kept \(kept), summed \(summed)")
                    compared += 1
                }
            }
        }
        // The stores were full often enough, and refused sometimes.
        XCTAssertEqual(compared, 960)
        XCTAssertGreaterThan(evictions, 200)
        XCTAssertGreaterThan(refusals, 20)
        // The sweep's recount repairs a usage row skewed behind the trigger's back.
        try c.execute("UPDATE relay_carry_usage SET packets = packets + 5, bytes = 0")
        _ = try store.sweepCarried(nowMs: now)
        let kept = try store.carryUsage(), summed = try summedUsage(c)
        XCTAssertTrue(kept == summed, "kept \(kept), summed \(summed)")
    }

    /// A database at schema 8 holding carried packets migrates to 9 with the usage row
    /// counting them, and the trigger follows the next take.
    func testMigrationNineCountsWhatIsCarried() throws {
        let conninfo = try TestPostgres.freshDatabase()
        let c = try PostgresConnection(conninfo: conninfo)
        try c.execute("CREATE TABLE yaok_relay_schema (version INT NOT NULL); INSERT INTO yaok_relay_schema VALUES (8)")
        for migration in PostgresRelaySchema.migrations.prefix(8) { try c.execute(migration) }
        var rng = SeededRandom(seed: 9)
        let now = Clock.milliseconds()
        _ = try randomStore(c, now: now, &rng)
        let before = try summedUsage(c)
        try PostgresRelaySchema.migrate(c)
        let store = try PostgresRelayCarryStore(conninfo: conninfo)
        defer { store.close() }
        let migrated = try store.carryUsage()
        XCTAssertTrue(migrated == before, "\(migrated) for \(before)")
        XCTAssertGreaterThan(before.packets, 0)
        let packet = try carriedPacket(nowMs: now).packet
        let policy = CarryPolicy(maxPackets: 1_000, maxBytes: 1 << 30, depositorPacketsPerHour: 10, depositorBytesPerHour: 1 << 20)
        XCTAssertEqual(try store.takeCarried(packet.encode(), from: .random(), nowMs: now, policy: policy), .taken(evicted: 0))
        XCTAssertTrue(try store.carryUsage() == (before.packets + 1, before.bytes + packet.encode().count))
    }

    /// 0 to 70 rows straight into the table: depositors from a pool of 1, 2 to 6, or one
    /// per row; budgets from all of 1...8 or two of them; sizes 100 to 6,000; times taken in
    /// a narrow window (ties); a quarter already expired. Returns the pool.
    private func randomStore(_ c: PostgresConnection, now: Int64, _ rng: inout SeededRandom) throws -> [CarryDepositor] {
        let count = Int.random(in: 0...70, using: &rng)
        let poolSize = [1, Int.random(in: 2...6, using: &rng), max(1, count)].randomElement(using: &rng)!
        let pool = (0..<poolSize).map { _ in CarryDepositor.random() }
        let budgets: [Int64] = Bool.random(using: &rng) ? Array(1...8) : [Int64.random(in: 1...4, using: &rng), Int64.random(in: 5...8, using: &rng)]
        try c.execute("BEGIN")
        for i in 0..<count {
            let expires = now + (Int.random(in: 0..<4, using: &rng) == 0 ? -Int64.random(in: 0...3_600_000, using: &rng)
                                                                          : Int64.random(in: 1...86_400_000, using: &rng))
            try c.query("test_insert", """
                INSERT INTO relay_carried (id, expires_ms, copy_budget, hop_limit, size, taken_ms, depositor, claim_hash, packet)
                VALUES ($1, $2, $3, 8, $4, $5, $6, $7, '\\x00')
                """, types: [PostgresType.bytea, PostgresType.int8, PostgresType.int8, PostgresType.int8, PostgresType.int8,
                             PostgresType.bytea, PostgresType.bytea],
                [.bytes(Sodium.randomBytes(16)), .int(expires), .int(budgets.randomElement(using: &rng)!),
                 .int(Int64.random(in: 100...6_000, using: &rng)), .int(now - Int64.random(in: 0...20, using: &rng)),
                 .bytes(poolSize == count ? pool[i].bytes : pool.randomElement(using: &rng)!.bytes), .bytes(Sodium.randomBytes(16))])
        }
        try c.execute("COMMIT")
        return pool
    }

    private func summedUsage(_ c: PostgresConnection) throws -> (packets: Int, bytes: Int) {
        let rows = try c.query("test_summed", "SELECT count(*), coalesce(sum(size), 0)::BIGINT FROM relay_carried", types: [], [])
        return (rows.int(0, 0), rows.int(0, 1))
    }

    /// §10.9 read plainly (the relay store's first algorithm): all rows, classes by budget,
    /// and in each the row whose depositor holds the most, the first such in (taken, id).
    private func referenceVictims(_ c: PostgresConnection, size: Int, budget: Int, depositor: CarryDepositor, nowMs: Int64,
                                  policy: CarryPolicy) throws -> [[UInt8]]? {
        var (packets, bytes) = try summedUsage(c)
        func fits() -> Bool { packets + 1 <= policy.maxPackets && bytes + size <= policy.maxBytes }
        if fits() { return [] }
        var victims: [[UInt8]] = []
        let expired = try c.query("test_expired", "SELECT id, size FROM relay_carried WHERE expires_ms <= $1 ORDER BY expires_ms, id",
                                  types: [PostgresType.int8], [.int(nowMs)])
        for r in 0..<expired.count {
            victims.append(expired.bytes(r, 0))
            packets -= 1
            bytes -= expired.int(r, 1)
        }
        if fits() { return victims }
        let expiredSet = Set(victims)
        var held: [[UInt8]: Int] = [depositor.bytes: 1]
        let byDepositor = try c.query("test_by_depositor",
                                      "SELECT depositor, count(*) FROM relay_carried WHERE expires_ms > $1 GROUP BY depositor",
                                      types: [PostgresType.int8], [.int(nowMs)])
        for r in 0..<byDepositor.count { held[byDepositor.bytes(r, 0), default: 0] += byDepositor.int(r, 1) }
        let ranked = try c.query("test_ranked", "SELECT id, copy_budget, size, depositor FROM relay_carried ORDER BY copy_budget, taken_ms, id",
                                 types: [], [])
        var classes: [(budget: Int, rows: [(id: [UInt8], size: Int, depositor: [UInt8])])] = []
        for r in 0..<ranked.count {
            let id = ranked.bytes(r, 0)
            guard !expiredSet.contains(id) else { continue }
            let b = ranked.int(r, 1)
            if classes.last?.budget != b { classes.append((b, [])) }
            classes[classes.count - 1].rows.append((id, ranked.int(r, 2), ranked.bytes(r, 3)))
        }
        for var cls in classes {
            guard !fits() else { break }
            guard cls.budget <= budget else { return nil }
            while !fits(), !cls.rows.isEmpty {
                var pick = 0
                for i in cls.rows.indices.dropFirst() where held[cls.rows[i].depositor, default: 0] > held[cls.rows[pick].depositor, default: 0] {
                    pick = i
                }
                let victim = cls.rows.remove(at: pick)
                held[victim.depositor, default: 1] -= 1
                victims.append(victim.id)
                packets -= 1
                bytes -= victim.size
            }
        }
        return fits() ? victims : nil
    }
}
