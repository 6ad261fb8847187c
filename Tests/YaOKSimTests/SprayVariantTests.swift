import Testing
@testable import YaOKSim

/// The spray variants measured against the latency target (docs/SIMULATOR.md "Latency
/// against copies") and the workload variant whose friends live in one's own community.
@Suite struct SprayVariantTests {
    static func scenario(_ arguments: [String]) throws -> (Scenario, ContactPlan, Workload) {
        let s = try Scenario.parse(["--nodes", "30", "--days", "2", "--seed", "2"] + arguments)
        let plan = try s.makePlan()
        return (s, plan, s.makeWorkload(plan))
    }

    /// Each hand-over in a run's log, as (message, from, to); deliveries included.
    static func relays(_ log: [String]) -> [(message: Int, from: Int, to: Int)] {
        log.compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\n" })
            guard words.count == 4, words[1] == "relay", words[2].hasPrefix("m") else { return nil }
            let ends = words[3].split(separator: ">")
            guard let m = Int(words[2].dropFirst()), ends.count == 2, let from = Int(ends[0]), let to = Int(ends[1])
            else { return nil }
            return (m, from, to)
        }
    }

    @Test(arguments: SprayVariantRouter.Policy.names)
    func variantsRepeatAndStayWithinTheirBudget(_ name: String) throws {
        let (s, plan, workload) = try Self.scenario(["--router", name])
        let first = try Simulation(plan: plan, workload: workload).run(s.makeRouter(name)).metrics
        let again = try Simulation(plan: plan, workload: workload).run(s.makeRouter(name)).metrics
        #expect(first == again)
        #expect(first.delivered > 0)
        #expect(first.duplicateDeliveries == 0)
    }

    /// social-all: a spray copy goes only to a contact of its holder; only the last hop
    /// (to the recipient) may go to a stranger.
    @Test func socialSprayHandsCopiesOnlyToContacts() throws {
        let (s, plan, workload) = try Self.scenario(["--router", "social-all"])
        var simulation = Simulation(plan: plan, workload: workload)
        simulation.keepLog = true
        let result = try simulation.run(s.makeRouter("social-all"))
        let friends = Set(workload.friendships)
        let hops = Self.relays(result.log)
        let carried = hops.filter { workload.messages[$0.message].to != $0.to }
        #expect(!carried.isEmpty)
        #expect(carried.allSatisfy { friends.contains(NodePair($0.from, $0.to)) })
        // Plain spray hands copies to strangers too: the check above can fail.
        var plain = Simulation(plan: plan, workload: workload)
        plain.keepLog = true
        let sprayHops = Self.relays(try plain.run(s.makeRouter("spray")).log)
        #expect(sprayHops.contains { workload.messages[$0.message].to != $0.to && !friends.contains(NodePair($0.from, $0.to)) })
    }

    /// source: only the sender hands copies, one each; carriers wait for the recipient.
    @Test func sourceSprayHandsOnlyFromTheSender() throws {
        let (s, plan, workload) = try Self.scenario(["--router", "source"])
        var simulation = Simulation(plan: plan, workload: workload)
        simulation.keepLog = true
        let hops = Self.relays(try simulation.run(s.makeRouter("source")).log)
        let carried = hops.filter { workload.messages[$0.message].to != $0.to }
        #expect(!carried.isEmpty)
        #expect(carried.allSatisfy { workload.messages[$0.message].from == $0.from })
        #expect(Dictionary(grouping: carried, by: \.message).values.allSatisfy { $0.count <= 7 })
    }

    /// blind-floor: L − 1 copies at distinct nodes, never the sender or the recipient, at the
    /// moment of writing; carriers then only deliver.
    @Test func theBlindFloorPlacesCopiesAtOnce() throws {
        let (s, plan, workload) = try Self.scenario(["--router", "blind-floor:5"])
        var simulation = Simulation(plan: plan, workload: workload)
        simulation.keepLog = true
        let result = try simulation.run(s.makeRouter("blind-floor:5"))
        let carried = Self.relays(result.log).filter { workload.messages[$0.message].to != $0.to }
        let byMessage = Dictionary(grouping: carried, by: \.message)
        #expect(byMessage.count == workload.messages.count)
        for (id, hops) in byMessage {
            let m = workload.messages[id]
            #expect(hops.count == 4)
            #expect(Set(hops.map(\.to)).count == 4)
            #expect(hops.allSatisfy { $0.from == m.from && $0.to != m.from && $0.to != m.to })
        }
        #expect(result.metrics.copiesPerMessage <= 5)
    }

    @Test func unknownVariantsAreRefused() {
        #expect(throws: SimError.self) { try Scenario.parse(["--router", "spray,nonsense"]) }
        #expect(throws: SimError.self) { try Scenario.parse(["--router", "respray:0"]) }
        #expect(throws: SimError.self) { try Scenario.parse(["--router", "respray:4:4"]) }
        #expect(throws: SimError.self) { try Scenario.parse(["--friends-local", "1.5"]) }
    }

    /// --friends-local draws most friends from one's own community; the default workload
    /// is untouched by the option's existence (its friends are drawn from everyone).
    @Test func localFriendsLiveInTheirCommunity() throws {
        let model = CommunityModel(nodes: 30, days: 2)
        func localShare(_ w: Workload) -> Double {
            let local = w.friendships.filter { model.community(of: $0.a) == model.community(of: $0.b) }.count
            return Double(local) / Double(max(w.friendships.count, 1))
        }
        let (_, plan, defaults) = try Self.scenario([])
        let (_, _, local) = try Self.scenario(["--friends-local", "0.8"])
        #expect(defaults == Workload.generate(plan: plan, seed: 2))
        #expect(localShare(defaults) < 0.5)
        #expect(localShare(local) > 0.7)
        // Waypoint has no communities: the option changes nothing there.
        let (_, waypoint, plainWaypoint) = try Self.scenario(["--plan", "waypoint"])
        let (_, _, localWaypoint) = try Self.scenario(["--plan", "waypoint", "--friends-local", "0.8"])
        #expect(plainWaypoint == localWaypoint)
        #expect(plainWaypoint == Workload.generate(plan: waypoint, seed: 2))
    }
}
