import Glibc
import YaOK

/// What choosing victims costs when the carry store is at its 2,000-packet cap (issue 20:
/// `Store.carryVictims` was 40 % of a busy sender's `Node.send`). Every take evicts one
/// packet; the takes run as savepoints of one transaction, so no fsync is timed, only the
/// reads and writes of the take. Three shapes of a full store: one depositor at one budget
/// (a busy sender's own copies), 20 depositors of 100 at budgets 1 to 8 (meetings), and
/// 2,000 depositors of one packet each (strangers met once). Seeded inputs, so two builds
/// time the same stores.
enum CarryEvictionBench {
    static func run() throws {
        try measure("own copies: 1 depositor, budget 8", depositors: 1, budgets: [8])
        try measure("meetings: 20 depositors, budgets 1-8", depositors: 20, budgets: Array(1...8))
        try measure("strangers: 2,000 depositors, budgets 1-8", depositors: 2_000, budgets: Array(1...8))
    }

    private static func measure(_ label: String, depositors count: Int, budgets: [UInt8]) throws {
        let dir = "/tmp/yaok-bench-carry-evict-\(getpid())"
        defer { Measure.removeStore(dir) }
        let store = try Store(directory: dir)
        defer { store.close() }
        var rng = SeededRandom(seed: 20)
        var now: Int64 = 1_800_000_000_000
        let policy = CarryPolicy(maxPackets: 2_000, maxBytes: 32 << 20, depositorPacketsPerHour: 1 << 30,
                                 depositorBytesPerHour: 1 << 50)
        let depositors = try (0..<count).map { i in
            try CarryDepositor((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) } + [UInt8(i & 0xff)])
        }
        func packet(budget: UInt8) throws -> [UInt8] {
            try CarriedPacket(hopLimit: 8, copyBudget: budget,
                              expiryHour: CarriedPacket.expiryHour(createdMs: now, lifetimeMs: Int64.random(in: 1...336, using: &rng) * 3_600_000),
                              routingTag: RoutingTag(value: rng.next()),
                              claimHash: PurgeClaim.hash((0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }),
                              payload: (0..<440).map { _ in UInt8.random(in: 0...255, using: &rng) }).encode()
        }
        try store.db.transaction {
            for i in 0..<policy.maxPackets {
                now += 1
                _ = try store.takeCarried(try packet(budget: budgets[i % budgets.count]), from: depositors[i % count],
                                          nowMs: now, policy: policy)
            }
        }
        let newcomers = try (0..<300).map { _ in try packet(budget: 8) }
        var evicted = 0
        var times: [Double] = []
        try store.db.transaction {
            for (i, bytes) in newcomers.enumerated() {
                now += 1
                let t = Measure.now()
                if case .taken(_, let victims) = try store.takeCarried(bytes, from: depositors[i % count], nowMs: now, policy: policy) {
                    evicted += victims.count
                }
                times.append(Measure.now() - t)
            }
        }
        Measure.report("full take, \(label)",
                       Measure.format(Measure.median(times) * 1e6, decimals: 1) + " µs median (\(evicted) evicted)")
    }
}
