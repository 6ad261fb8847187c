import Foundation
import YaOKSim

// yaok-sim: runs a delay-tolerant scenario (docs/SIMULATOR.md). The work is in YaOKSim, so
// that the tests run the same code; this file parses, runs and prints.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("yaok-sim: \(message)\n".utf8))
    exit(2)
}

do {
    let scenario = try Scenario.parse(Array(CommandLine.arguments.dropFirst()))
    let plan = try scenario.makePlan()
    let workload = scenario.makeWorkload(plan)
    print("plan \(plan.name): \(plan.nodeCount) nodes, \(Metrics.fixed(plan.duration / 86_400, 2)) days, "
          + "\(plan.encounters.count) encounters (\(Metrics.fixed(plan.contactsPerNodePerDay, 1)) per node per day); "
          + "\(workload.messages.count) messages, lifetime \(Metrics.fixed(workload.lifetime / 3600, 1)) h; seed \(scenario.seed)")
    var rows: [Metrics] = []
    for name in scenario.routers {
        var simulation = Simulation(plan: plan, workload: workload)
        simulation.keepLog = scenario.printLog
        let started = Date()
        let result = try simulation.run(try scenario.makeRouter(name))
        let seconds = Date().timeIntervalSince(started)
        if scenario.printLog { print(result.log.joined(), terminator: "") }
        if !scenario.compare { print(result.metrics.report) }
        print("\(name): \(Metrics.fixed(seconds, 2)) s wall clock")
        rows.append(result.metrics)
    }
    if scenario.compare { print(Metrics.table(rows)) }
    if rows.contains(where: { $0.duplicateDeliveries > 0 }) { fail("a message was delivered more than once") }
} catch let error as SimError {
    fail(error.message)
} catch {
    fail("\(error)")
}
