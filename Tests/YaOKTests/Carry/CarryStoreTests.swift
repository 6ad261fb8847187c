import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// The carry store's basic operations (docs/PROTOCOL.md §10.9): take, list, range, remove.
@Suite struct CarryStoreTests {
    @Test func takesAndReturnsThePacketAsGiven() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet(budget: 4, hop: 7, payloadLength: 300)
        let entry = try bench.mustTake(packet)
        #expect(entry.id == packet.identity)
        #expect(entry.expiresAtMs == packet.expiresAtMs)
        #expect(entry.copyBudget == 4 && entry.hopLimit == 7)
        #expect(entry.size == packet.encode().count)
        #expect(entry.takenAtMs == bench.now)
        #expect(entry.depositor == CarryBench.alice)
        #expect(entry.claimHash == packet.claimHash)
        #expect(try bench.store.carriedEntry(packet.identity) == entry)
        #expect(try bench.store.carriedPacket(packet.identity) == packet)
        #expect(try bench.store.carryUsage() == (1, packet.encode().count))
    }

    /// A row changed in the file so that it no longer decodes (here its depositor token:
    /// no CHECK in the schema holds its length) is taken out, not thrown: thrown, it ended
    /// every offer list and hand-over answer that named it, and all behind it, at every
    /// meeting until it expired. The others stay.
    @Test func anEntryThatNoLongerDecodesIsTakenOut() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let bad = try bench.packet(budget: 4), good = try bench.packet(budget: 4)
        try bench.mustTake(bad)
        try bench.mustTake(good)
        try bench.store.db.query("UPDATE carried_packets SET depositor = X'' WHERE id = ?", [.blob(bad.identity)])
        #expect(try bench.store.carriedEntry(bad.identity) == nil)
        #expect(try bench.store.carriedPacket(bad.identity) == nil)
        #expect(try bench.store.carriedEntry(good.identity) != nil)
    }

    @Test func aDuplicateIsRefusedAndChangesNothing() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet(budget: 2)
        try bench.mustTake(packet)
        // The same sealed bytes with another budget and hop limit: the same identity.
        let other = try CarriedPacket(hopLimit: 3, copyBudget: 8, expiryHour: packet.expiryHour, routingTag: packet.routingTag,
                                      claimHash: packet.claimHash, payload: packet.payload)
        #expect(other.identity == packet.identity)
        #expect(try bench.take(other, from: CarryBench.bob) == .duplicate)
        #expect(try bench.store.carriedEntry(packet.identity)?.copyBudget == 2)
        #expect(try bench.store.carryQuotaUsed(CarryBench.bob, nowMs: bench.now) == (0, 0))
        #expect(try bench.store.carryUsage().packets == 1)
    }

    @Test func clampsBudgetAndHopLimit() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet(budget: 200, hop: 255)
        let entry = try bench.mustTake(packet)
        #expect(entry.copyBudget == CopyBudget.maximum && entry.hopLimit == HopLimit.maximum)
        let stored = try #require(try bench.store.carriedPacket(packet.identity))
        #expect(stored.copyBudget == CopyBudget.maximum && stored.hopLimit == HopLimit.maximum)
        #expect(stored.identity == packet.identity)
    }

    @Test func listsInTheOrderOfExpiryThenIdentity() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        var keys: [CarryKey] = []
        for hours in [30, 2, 30, 5, 2, 30, 200, 5] {
            keys.append(try bench.mustTake(try bench.packet(lifetimeMs: Int64(hours) * 3_600_000)).key)
        }
        let listed = try bench.store.carriedKeys(nowMs: bench.now, limit: 100)
        #expect(listed == keys.sorted())
        #expect(try bench.store.carriedEntries(nowMs: bench.now, limit: 100).map(\.key) == keys.sorted())
        // Pages of 3, each from the key after the last one: the same list.
        var paged: [CarryKey] = []
        var lower: CarryKey? = nil
        while true {
            let page = try bench.store.carriedKeys(from: lower, nowMs: bench.now, limit: 3)
            paged += page
            guard page.count == 3, let last = page.last else { break }
            lower = CarryKey(expiresAtMs: last.expiresAtMs, id: last.id + [0])  // just after `last`
        }
        #expect(paged == keys.sorted())
    }

    @Test func aRangeIsLowerInclusiveUpperExclusive() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        for hours in 1...12 { try bench.mustTake(try bench.packet(lifetimeMs: Int64(hours) * 3_600_000)) }
        let all = try bench.store.carriedKeys(nowMs: bench.now, limit: 100)
        #expect(all.count == 12)
        let range = try bench.store.carriedKeys(from: all[3], below: all[8], nowMs: bench.now, limit: 100)
        #expect(range == Array(all[3..<8]))
        #expect(try bench.store.carriedCount(from: all[3], below: all[8], nowMs: bench.now) == 5)
        #expect(try bench.store.carriedCount(nowMs: bench.now) == 12)
        // Bounds between stored keys (same expiry, an identity of all zero or all 0xff bytes).
        let lower = CarryKey(expiresAtMs: all[2].expiresAtMs, id: [UInt8](repeating: 0xff, count: 16))
        let upper = CarryKey(expiresAtMs: all[6].expiresAtMs, id: [UInt8](repeating: 0, count: 16))
        #expect(try bench.store.carriedKeys(from: lower, below: upper, nowMs: bench.now, limit: 100) == Array(all[3..<6]))
        #expect(try bench.store.carriedKeys(from: all[3], below: all[8], nowMs: bench.now, limit: 2) == Array(all[3..<5]))
    }

    @Test func removesAndUpdatesAfterAHandOver() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet(budget: 8, hop: 9)
        try bench.mustTake(packet)
        var rng = SystemRandomNumberGenerator()
        let (kept, given) = try #require(packet.handOver(using: &rng))
        #expect(try bench.store.updateCarried(packet.identity, copyBudget: kept.copyBudget, hopLimit: kept.hopLimit))
        #expect(try bench.store.carriedPacket(packet.identity) == kept)
        #expect(given.copyBudget == 4)
        #expect(throws: YaOKError(.invalidArgument)) { try bench.store.updateCarried(packet.identity, copyBudget: 0, hopLimit: 1) }
        #expect(try bench.store.removeCarried(packet.identity))
        #expect(try !bench.store.removeCarried(packet.identity))
        #expect(try bench.store.carriedPacket(packet.identity) == nil)
        #expect(try !bench.store.updateCarried(packet.identity, copyBudget: 1, hopLimit: 1))
        #expect(try bench.store.carryUsage() == (0, 0))
    }
}
