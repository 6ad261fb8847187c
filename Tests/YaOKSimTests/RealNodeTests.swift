import Testing
@testable import YaOKSim

/// Direct delivery on real nodes: the real engine and stores, linked through the link API
/// while a contact is up, on the virtual clock.
@Suite struct RealNodeTests {
    /// Two friends who meet three times: every message arrives exactly once (the engine's
    /// duplicate filter and acknowledgements at work), none before their first meeting.
    @Test func exactlyOnceAcrossMeetings() throws {
        let plan = try ContactPlan(name: "pair", nodeCount: 2, duration: 86_400, encounters: [
            Encounter(a: 0, b: 1, start: 3600, end: 3700, bandwidth: 250_000),
            Encounter(a: 0, b: 1, start: 20_000, end: 20_100, bandwidth: 250_000),
            Encounter(a: 0, b: 1, start: 50_000, end: 50_100, bandwidth: 250_000),
        ])
        let messages = (0..<9).map { i in
            SimMessage(id: i, from: i % 2, to: 1 - i % 2, created: Double(i) * 6000 + 10, size: 40 + i * 300)
        }
        let workload = Workload(messages: messages, lifetime: 86_400, friendships: [NodePair(0, 1)])
        var sim = Simulation(plan: plan, workload: workload)
        sim.keepLog = true
        let result = try sim.run(RealNodeRouter())
        let m = result.metrics
        #expect(m.duplicateDeliveries == 0)
        #expect(!result.log.contains { $0.contains("history holds") || $0.contains("stalled") })
        // Written before 50,000 s: m0…m8 (the last at 48,010 s); all arrive.
        #expect(m.delivered == 9)
        let deliveries = result.log.filter { $0.contains(" deliver ") }
        #expect(deliveries.count == 9)
        // Each at the first meeting after it was written.
        for line in deliveries {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\n" })
            guard let t = Int64(f[0]), let id = Int(f[2].dropFirst()) else { Issue.record("bad line \(line)"); continue }
            let created = messages[id].created * 1000
            let meeting = [3_600_000, 20_000_000, 50_000_000].first { Double($0) >= created }
            #expect(t == meeting.map(Int64.init))
        }
    }

    /// An encounter too short for the link handshake carries nothing; the message goes at
    /// the next, longer one — and still once.
    @Test func bandwidthLimitsAnEncounter() throws {
        let plan = try ContactPlan(name: "pair", nodeCount: 2, duration: 10_000, encounters: [
            Encounter(a: 0, b: 1, start: 100, end: 100.1, bandwidth: 1000),     // 100 bytes each way
            Encounter(a: 0, b: 1, start: 5000, end: 5010, bandwidth: 250_000),
        ])
        let workload = Workload(messages: [SimMessage(id: 0, from: 0, to: 1, created: 10, size: 500)],
                                lifetime: 86_400, friendships: [NodePair(0, 1)])
        var sim = Simulation(plan: plan, workload: workload)
        sim.keepLog = true
        let result = try sim.run(RealNodeRouter())
        #expect(result.metrics.delivered == 1)
        #expect(result.metrics.duplicateDeliveries == 0)
        #expect(result.log.contains("5000000 deliver m0\n"))
    }

    /// A message written while its recipient is in range goes in that encounter, on real
    /// nodes (a second link for what is left of it) and in the model alike.
    @Test func writtenDuringAnEncounter() throws {
        let plan = try ContactPlan(name: "pair", nodeCount: 2, duration: 10_000, encounters: [
            Encounter(a: 0, b: 1, start: 100, end: 200, bandwidth: 250_000),
        ])
        let workload = Workload(messages: [SimMessage(id: 0, from: 1, to: 0, created: 150, size: 100)],
                                lifetime: 86_400, friendships: [NodePair(0, 1)])
        for router: Router in [RealNodeRouter(), PacketRouter(.direct)] {
            var sim = Simulation(plan: plan, workload: workload)
            sim.keepLog = true
            let result = try sim.run(router)
            #expect(result.metrics.delivered == 1, "\(router.name)")
            let at = result.log.first { $0.contains(" deliver m0") }.flatMap { Int($0.split(separator: " ")[0]) }
            #expect(at.map { (150_000...150_010).contains($0) } == true, "\(router.name): \(String(describing: at))")
        }
    }

    /// The models enforce the same budget: a packet that does not fit waits.
    @Test func modelBandwidth() {
        let e = ActiveEncounter(Encounter(a: 0, b: 1, start: 0, end: 1, bandwidth: 1000))
        #expect(e.transfer(600, from: 0, now: 0) == 0.6)
        #expect(e.transfer(600, from: 0, now: 0) == nil)
        #expect(e.transfer(400, from: 0, now: 0) == 1.0)
        #expect(e.transfer(900, from: 1, now: 0) == 0.9)   // the other direction has its own
    }
}
