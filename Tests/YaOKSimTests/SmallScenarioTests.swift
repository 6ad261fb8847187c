import Testing
@testable import YaOKSim

/// The small scenario of the test command (scripts/test-sim runs it through the CLI too):
/// 30 nodes, 2 simulated days, every router over one plan and workload.
@Suite struct SmallScenarioTests {
    @Test func thirtyNodesTwoDays() throws {
        var s = try Scenario.parse(["--plan", "community", "--nodes", "30", "--days", "2", "--seed", "1", "--compare"])
        s.printLog = false
        let plan = try s.makePlan()
        let workload = s.makeWorkload(plan)
        #expect(workload.messages.count > 50)
        var results: [String: Metrics] = [:]
        for name in s.routers {
            results[name] = try Simulation(plan: plan, workload: workload).run(s.makeRouter(name)).metrics
        }
        guard let direct = results["direct"], let spray = results["spray"], let epidemic = results["epidemic"],
              let courier = results["courier"], let ours = results["ours"] else {
            Issue.record("missing routers: \(results.keys)")
            return
        }
        #expect(direct.duplicateDeliveries == 0)
        #expect(direct.delivered > 0)
        #expect(spray.deliveryProbability > direct.deliveryProbability)
        #expect(courier.deliveryProbability > direct.deliveryProbability)
        #expect(epidemic.deliveryProbability >= spray.deliveryProbability)
        #expect(spray.copiesPerMessage <= 8)
        #expect(direct.overheadRatio == 0)
        #expect(epidemic.reconciliationBytesPerEncounter == 0)
        // Ours: the real engine carrying through strangers (docs/PROTOCOL.md §12), exactly once.
        #expect(ours.duplicateDeliveries == 0)
        #expect(ours.deliveryProbability > direct.deliveryProbability)
        #expect(ours.deliveryProbability > courier.deliveryProbability)
        // Budget 8: the sender and at most 7 carriers hold a message, plus its delivery.
        #expect(ours.copiesPerMessage <= 8)
        // Its meetings reconcile (§11), at least the first message of each.
        #expect(ours.reconciliationBytesPerEncounter > 0)
    }

    /// Linked at every encounter, strangers too (what carrying will run on), today's engine
    /// delivers exactly what direct does: strangers carry nothing, and a stranger's link
    /// disturbs nothing.
    @Test func everyEncounterLinkedChangesNothingToday() throws {
        var s = Scenario()
        s.nodes = 12
        s.days = 1
        s.seed = 4
        let plan = try s.makePlan()
        let workload = s.makeWorkload(plan)
        var sim = Simulation(plan: plan, workload: workload)
        sim.keepLog = true
        let direct = try sim.run(s.makeRouter("direct"))
        let all = try sim.run(s.makeRouter("direct-all"))
        func deliveries(_ r: Simulation.Result) -> [String] { r.log.filter { $0.contains(" deliver ") } }
        #expect(all.metrics.delivered == direct.metrics.delivered)
        #expect(deliveries(all) == deliveries(direct))
        #expect(all.metrics.duplicateDeliveries == 0)
        #expect(all.log.filter { $0.contains(" link ") }.count > direct.log.filter { $0.contains(" link ") }.count)
    }

    @Test(arguments: [
        (["--nodes", "1"], "--nodes must be 2 to 10000"),
        (["--router", "flood"], "--router: flood is not"),
        (["--plan", "one:"], "--plan: one: is not"),
        (["--days"], "--days needs a value"),
        (["--seed", "-1"], "--seed: -1 is not a valid number"),
        (["--lifetime-hours", "400"], "--lifetime-hours must be"),
        (["--frobnicate"], "Unknown option --frobnicate"),
    ])
    func refusesBadOptions(_ arguments: [String], _ expected: String) {
        #expect(refusal { try Scenario.parse(arguments) }?.hasPrefix(expected) == true)
    }

    @Test func missingTraceFile() throws {
        let s = try Scenario.parse(["--plan", "haggle:/nonexistent/contacts.dat"])
        #expect(refusal { try s.makePlan() } == "Cannot read /nonexistent/contacts.dat")
    }
}
