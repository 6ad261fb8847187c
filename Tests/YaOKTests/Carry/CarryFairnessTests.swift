import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// Depositor fairness in eviction (docs/PROTOCOL.md §10.9): within a budget, the packets of
/// the depositor that holds the most go first, so a stranger who fills the store within its
/// quota pushes out its own packets before an honest carrier's older ones.
@Suite struct CarryFairnessTests {
    private let caps = CarryPolicy(maxPackets: 8, maxBytes: 1 << 30, depositorPacketsPerHour: 10_000,
                                   depositorBytesPerHour: 1 << 30)

    /// Fills the store (8 packets): an honest carrier's 2, then a flooder's 6; their ids.
    private func fill(_ bench: CarryBench) throws -> (honest: [[UInt8]], flooder: [[UInt8]]) {
        let honest = CarryDepositor.random(), flooder = CarryDepositor.random()
        var ids: (honest: [[UInt8]], flooder: [[UInt8]]) = ([], [])
        for i in 0..<8 {
            bench.now += 1_000
            let id = try bench.mustTake(try bench.packet(), from: i < 2 ? honest : flooder, policy: caps).id
            if i < 2 { ids.honest.append(id) } else { ids.flooder.append(id) }
        }
        return ids
    }

    @Test func theDepositorHoldingTheMostLosesFirst() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let newcomer = CarryDepositor.random()
        let (honestIDs, flooderIDs) = try fill(bench)
        // Full. Before fairness the honest carrier's oldest packet went first.
        bench.now += 1_000
        guard case .taken(_, let evicted) = try bench.take(try bench.packet(), from: newcomer, policy: caps) else {
            Issue.record("the newcomer was refused")
            return
        }
        #expect(evicted == [flooderIDs[0]])
        // The flooder keeps losing its own, oldest first, while it holds more than the others
        // (after three more it holds two, as the honest carrier does).
        for i in 1...3 {
            bench.now += 1_000
            guard case .taken(_, let next) = try bench.take(try bench.packet(), from: CarryDepositor.random(), policy: caps) else {
                Issue.record("refused")
                return
            }
            #expect(next == [flooderIDs[i]])
        }
        #expect(try bench.heldIDs().isSuperset(of: honestIDs))
    }

    /// One depositor: the order is the budget's, then the oldest (as before).
    @Test func oneDepositorKeepsTheOldOrder() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        var ids: [[UInt8]] = []
        for _ in 0..<8 {
            bench.now += 1_000
            ids.append(try bench.mustTake(try bench.packet(), policy: caps).id)
        }
        bench.now += 1_000
        guard case .taken(_, let evicted) = try bench.take(try bench.packet(), policy: caps) else {
            Issue.record("refused")
            return
        }
        #expect(evicted == [ids[0]])
    }

    /// A lowered cap evicts what takes would: the flooder's packets, though the honest
    /// carrier's are older (it used to go by budget and age alone, so the honest ones went).
    @Test func aLoweredCapEvictsTheFloodFirst() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let (honestIDs, flooderIDs) = try fill(bench)
        var lowered = caps
        lowered.maxPackets = 4
        let evicted = try bench.store.shrinkCarried(to: lowered, nowMs: bench.now)
        #expect(evicted == Array(flooderIDs.prefix(4)))
        #expect(try bench.heldIDs() == Set(honestIDs + flooderIDs.suffix(2)))
    }
}
