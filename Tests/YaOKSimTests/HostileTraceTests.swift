import Testing
@testable import YaOKSim

/// Traces from elsewhere are input: junk is refused with a message, never a crash, and a
/// file cannot make the simulator allocate per id it names.
@Suite struct HostileTraceTests {
    /// Lines of random tokens (numbers huge, negative, non-finite, words, control bytes).
    @Test func junkIsRefusedOrRead() {
        var rng = SimRandom(seed: 42)
        let tokens = ["0", "1", "2", "-1", "1e308", "inf", "nan", "CONN", "up", "down", "C", "99999999999999999999",
                      "3.5", "", "\u{0}", "é", "#", "0x10", "100000", "100001", "  ", "\t"]
        for _ in 0..<2000 {
            let lines = (0..<(1 + rng.below(6))).map { _ in
                (0..<rng.below(8)).map { _ in tokens[rng.below(tokens.count)] }.joined(separator: " ")
            }
            let text = lines.joined(separator: "\n")
            for importer in [{ try ONEConnectionImporter.plan(text: text) }, { try HaggleImporter.plan(text: text) }] {
                do {
                    let plan = try importer()
                    #expect(plan.nodeCount >= 2 && plan.nodeCount <= 100_001)
                    #expect(plan.encounters.allSatisfy { $0.start >= 0 && $0.end > $0.start && $0.end <= plan.duration })
                } catch let error as SimError {
                    #expect(!error.message.isEmpty)
                } catch {
                    Issue.record("not a SimError: \(error)")
                }
            }
        }
    }

    /// A trace naming host 100,000 plans that many ids, but only people with friends get a
    /// real node (two here), and the run finishes.
    @Test func sparseIdsCostNothing() throws {
        let text = "0 CONN 3 100000 up\n50 CONN 3 100000 down\n"
        let plan = try ONEConnectionImporter.plan(text: text, duration: 3600)
        #expect(plan.nodeCount == 100_001)
        let workload = Workload.generate(plan: plan, seed: 1)
        #expect(workload.friendships == [NodePair(3, 100_000)])
        let result = try Simulation(plan: plan, workload: workload).run(RealNodeRouter())
        #expect(result.metrics.duplicateDeliveries == 0)
    }
}
