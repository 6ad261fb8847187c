import Testing
@testable import YaOKSupport
@testable import YaOKStore

/// What the shared eviction walk (`CarryEviction`, docs/PROTOCOL.md §10.9) reads when many
/// depositors tie for the most, each holding one packet (strangers met once): a lowered cap
/// (`shrinkCarried`, which uses the walk since issue 20) or a large newcomer evicts many of
/// them, and the walk must not read the budget again from its start for each one. Counted
/// on a store in memory, so the figure is the walk's own and not a database's.
@Suite struct CarryEvictionWalkCostTests {
    @Test func manyTiedStrangersAreWalkedOnce() throws {
        let strangers = 3_000
        var packets: [CarryCandidate] = []
        for i in 0..<strangers {
            let n: [UInt8] = [UInt8(i >> 8), UInt8(i & 0xFF)]
            packets.append(CarryCandidate(taken: Int64(i), id: n, size: 100, depositor: [0xD0] + n))
        }
        let store = CountingCarryStore(packets)
        let policy = CarryPolicy(maxPackets: 1, maxBytes: 1 << 30)
        let victims = try #require(try CarryEviction.victims(store, usage: (strangers, strangers * 100), adding: nil,
                                                             nowMs: 0, policy: policy))
        // The order is (taken, identity) among depositors tied at one packet each.
        let expected: [[UInt8]] = store.packets.prefix(strangers - 1).map { (p: CarryCandidate) in p.id }
        #expect(victims == expected)
        // One pass over the budget (32 rows a page), not one from its start per victim
        // (4.5 million rows read before the fix, 3,000 victims a page of 32 each with a
        // cursor alone).
        #expect(store.rowsRead <= strangers + 64)
    }

    /// More than 16 depositors tied at two packets, then (once each lost one) more tied at
    /// one with those holding one from the start: the walk starts again for each count, and
    /// the choice is the rule's read plainly (the depositor holding the most, its oldest).
    @Test func aCrowdTiedAtEachCountKeepsTheRulesOrder() throws {
        var packets: [CarryCandidate] = []
        var rng = SeededRandom(seed: 20)
        for d in 0..<70 {
            for _ in 0..<(d < 40 ? 2 : 1) {
                let id = (0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) }
                packets.append(CarryCandidate(taken: Int64.random(in: 0...50, using: &rng), id: id, size: 100, depositor: [0xD0, UInt8(d)]))
            }
        }
        let store = CountingCarryStore(packets)
        let policy = CarryPolicy(maxPackets: 5, maxBytes: 1 << 30)
        let victims = try #require(try CarryEviction.victims(store, usage: (packets.count, packets.count * 100), adding: nil,
                                                             nowMs: 0, policy: policy))
        var left = store.packets, expected: [[UInt8]] = []
        while left.count > 5 {
            var held: [[UInt8]: Int] = [:]
            for packet in left { held[packet.depositor, default: 0] += 1 }
            let most = held.values.max() ?? 0
            let index = try #require(left.firstIndex { held[$0.depositor] == most })  // left is in (taken, id) order
            expected.append(left.remove(at: index).id)
        }
        #expect(victims == expected)
    }
}

/// One copy budget of live packets held in memory, counting the rows its pages hand out.
private final class CountingCarryStore: CarryEvictionQueries {
    let packets: [CarryCandidate]  // in the order (taken, identity)
    private(set) var rowsRead = 0

    init(_ packets: [CarryCandidate]) {
        self.packets = packets.sorted(by: CarryCandidate.precedes)
    }

    func expiredCarried(nowMs: Int64) throws -> [(id: [UInt8], size: Int)] { [] }

    func lowestLiveBudget(above budget: Int, nowMs: Int64) throws -> CarryBudgetSpan? {
        budget < 1 ? CarryBudgetSpan(budget: 1, onlyDepositor: nil) : nil
    }

    func liveCounts(ofDepositorsIn budget: Int, nowMs: Int64) throws -> [(depositor: [UInt8], packets: Int)] {
        var counts: [[UInt8]: Int] = [:]
        for packet in packets { counts[packet.depositor, default: 0] += 1 }
        return counts.map { (depositor: $0.key, packets: $0.value) }
    }

    func oldest(inBudget budget: Int, of depositors: [(depositor: [UInt8], after: CarryCursor)],
                nowMs: Int64) throws -> [CarryCandidate?] {
        depositors.map { depositor, after in
            packets.first { $0.depositor == depositor && Self.after($0, after) }
        }
    }

    func page(inBudget budget: Int, after cursor: CarryCursor, limit: Int, nowMs: Int64) throws -> [CarryCandidate] {
        let page = Array(packets.lazy.filter { Self.after($0, cursor) }.prefix(limit))
        rowsRead += page.count
        return page
    }

    private static func after(_ packet: CarryCandidate, _ cursor: CarryCursor) -> Bool {
        packet.taken != cursor.taken ? packet.taken > cursor.taken : cursor.id.lexicographicallyPrecedes(packet.id)
    }
}
