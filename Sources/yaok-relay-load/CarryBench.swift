import Glibc
import YaOKCrypto
import YaOKRelayServer
import YaOKStore
import YaOKSupport
import YaOKWire

/// `yaok-relay-load carry --postgres CONNINFO`: what a take into a full PostgreSQL carry
/// store costs (issue 20: the eviction read and shipped every row on each take). The
/// relay-side twin of `yaok-bench carry-evict`: the store at its 2,000-packet cap, every
/// take evicts one packet; three shapes of store: one depositor at one budget (a busy
/// sender's own copies), 20 depositors of 100 at budgets 1 to 8 (meetings), 2,000
/// depositors of one packet each (strangers met once). Commits do not wait for the WAL
/// flush (synchronous_commit off on this connection), so the reads and writes of the take
/// are timed, not the disk. Seeded inputs, so two builds time the same stores. CONNINFO is
/// a key=value string of an otherwise unused database.
enum CarryBench {
    static func run(conninfo: String) throws {
        let store = try PostgresRelayCarryStore(conninfo: conninfo + " options='-c synchronous_commit=off'")
        defer { store.close() }
        var now: Int64 = 1_800_000_000_000
        for (label, count, budgets) in [("own copies: 1 depositor, budget 8", 1, [8] as [UInt8]),
                                        ("meetings: 20 depositors, budgets 1-8", 20, Array(1...8)),
                                        ("strangers: 2,000 depositors, budgets 1-8", 2_000, Array(1...8))] {
            // Everything held so far expires: the sweep empties the store.
            now += 400 * CarriedPacket.hourMs
            _ = try store.sweepCarried(nowMs: now)
            try measure(store, label, depositors: count, budgets: budgets, now: &now)
        }
    }

    private static func measure(_ store: PostgresRelayCarryStore, _ label: String, depositors count: Int, budgets: [UInt8],
                                now: inout Int64) throws {
        var rng = SeededRandom(seed: 20)
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
        // The first 300 takes, into a store not full, give the take's floor (its other
        // statements and the round trips), for comparison.
        var floor: [Double] = []
        for i in 0..<policy.maxPackets {
            now += 1
            let bytes = try packet(budget: budgets[i % budgets.count])
            let t = seconds()
            _ = try store.takeCarried(bytes, from: depositors[i % count], nowMs: now, policy: policy)
            if i < 300 { floor.append(seconds() - t) }
        }
        let newcomers = try (0..<300).map { _ in try packet(budget: 8) }
        var evicted = 0
        var times: [Double] = []
        for (i, bytes) in newcomers.enumerated() {
            now += 1
            let t = seconds()
            if case .taken(let n) = try store.takeCarried(bytes, from: depositors[i % count], nowMs: now, policy: policy) {
                evicted += n
            }
            times.append(seconds() - t)
        }
        print("full take on PostgreSQL, \(label): \(median(times)) µs median (\(evicted) evicted; "
              + "a take into the store not full: \(median(floor)) µs)")
    }

    private static func median(_ times: [Double]) -> Int { Int((times.sorted()[times.count / 2] * 1e6).rounded()) }

    private static func seconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
