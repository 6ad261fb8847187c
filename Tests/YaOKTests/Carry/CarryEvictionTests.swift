import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// The global caps and the eviction order (docs/PROTOCOL.md §10.9): expired first, then the
/// lowest copy budget, then the copy taken longest ago; a newcomer that would itself be the
/// first to go is refused.
@Suite struct CarryEvictionTests {
    private func policy(packets: Int, bytes: Int = 1 << 30) -> CarryPolicy {
        CarryPolicy(maxPackets: packets, maxBytes: bytes, depositorPacketsPerHour: 10_000, depositorBytesPerHour: 1 << 30)
    }

    @Test func theDefaultsSuitAPhone() {
        #expect(CarryPolicy.default.maxPackets == 2_000)
        #expect(CarryPolicy.default.maxBytes == 32 << 20)
    }

    @Test func neverHoldsMoreThanTheCaps() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let caps = policy(packets: 10, bytes: 40_000)
        for i in 0..<60 {
            bench.now += 1_000
            _ = try bench.take(try bench.packet(budget: UInt8(1 + i % 8), payloadLength: [100, 1_000, 10_000][i % 3]), policy: caps)
            let usage = try bench.store.carryUsage()
            #expect(usage.packets <= 10 && usage.bytes <= 40_000)
        }
    }

    @Test func expiredGoFirstThenLowestBudgetThenOldest() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let caps = policy(packets: 5)
        let expiring = try bench.packet(lifetimeMs: 3_600_000, budget: 8)
        try bench.mustTake(expiring, policy: caps)
        bench.now += 1_000
        let oldBudget2 = try bench.packet(budget: 2)
        try bench.mustTake(oldBudget2, policy: caps)
        bench.now += 1_000
        let oldBudget1 = try bench.packet(budget: 1)
        try bench.mustTake(oldBudget1, policy: caps)
        bench.now += 1_000
        let newBudget1 = try bench.packet(budget: 1)
        try bench.mustTake(newBudget1, policy: caps)
        bench.now += 1_000
        let budget8 = try bench.packet(budget: 8)
        try bench.mustTake(budget8, policy: caps)

        // Full. Past the first packet's expiry: it goes, though its budget is the highest.
        bench.now = expiring.expiresAtMs
        guard case .taken(_, let evicted1) = try bench.take(try bench.packet(budget: 8), policy: caps) else {
            Issue.record("not taken"); return
        }
        #expect(evicted1 == [expiring.identity])
        // Then budget 1 before budget 2, and of the two budget-1 copies the older.
        guard case .taken(_, let evicted2) = try bench.take(try bench.packet(budget: 4), policy: caps) else {
            Issue.record("not taken"); return
        }
        #expect(evicted2 == [oldBudget1.identity])
        guard case .taken(_, let evicted3) = try bench.take(try bench.packet(budget: 4), policy: caps) else {
            Issue.record("not taken"); return
        }
        #expect(evicted3 == [newBudget1.identity])
        guard case .taken(_, let evicted4) = try bench.take(try bench.packet(budget: 2), policy: caps) else {
            Issue.record("not taken"); return
        }
        #expect(evicted4 == [oldBudget2.identity])
        #expect(try bench.heldIDs().contains(budget8.identity))
    }

    @Test func aNewcomerThatWouldGoFirstIsRefused() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let caps = policy(packets: 3)
        for _ in 0..<3 { try bench.mustTake(try bench.packet(budget: 4), policy: caps) }
        let before = try bench.heldIDs()
        #expect(try bench.take(try bench.packet(budget: 2), policy: caps) == .full)
        #expect(try bench.heldIDs() == before)
        // An equal budget is newer, so the oldest of that budget makes room.
        try bench.mustTake(try bench.packet(budget: 4), policy: caps)
        #expect(try bench.heldIDs().subtracting(before).count == 1)
    }

    @Test func aLargePacketEvictsAsManyAsItNeeds() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let caps = policy(packets: 100, bytes: 20_000)
        var small: [[UInt8]] = []
        for _ in 0..<8 {
            bench.now += 1
            small.append(try bench.mustTake(try bench.packet(budget: 1, payloadLength: 2_000), policy: caps).id)
        }
        guard case .taken(_, let evicted) = try bench.take(try bench.packet(budget: 2, payloadLength: 16_000), policy: caps) else {
            Issue.record("not taken"); return
        }
        #expect(evicted == Array(small.prefix(evicted.count)))
        #expect(evicted.count == 7)
        #expect(try bench.store.carryUsage().bytes <= 20_000)
    }

    @Test func shrinksToALoweredCap() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        var ids: [[UInt8]] = []
        for budget: UInt8 in [8, 1, 4, 1, 2] {
            bench.now += 1
            ids.append(try bench.mustTake(try bench.packet(budget: budget)).id)
        }
        let evicted = try bench.store.shrinkCarried(to: policy(packets: 2), nowMs: bench.now)
        #expect(evicted == [ids[1], ids[3], ids[4]])
        #expect(try bench.heldIDs() == Set([ids[0], ids[2]]))
    }
}
