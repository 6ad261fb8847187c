import Glibc
import YaOKCrypto
import YaOKRelayServer
import YaOKStore
import YaOKSupport
import YaOKWire

/// `yaok-relay-load carry --postgres CONNINFO`: what a take into a full PostgreSQL carry
/// store costs (issue 20: the eviction read and shipped every row on each take). The
/// relay-side twin of `yaok-bench carry-evict`, over the same stores
/// (`CarryEvictionWorkload`): at the 2,000-packet cap, every take evicts one packet.
/// Commits do not wait for the WAL flush (synchronous_commit off on this connection), so
/// the reads and writes of the take are timed, not the disk. CONNINFO is a key=value string
/// of an otherwise unused database.
enum CarryBench {
    static func run(conninfo: String) throws {
        let store = try PostgresRelayCarryStore(conninfo: conninfo + " options='-c synchronous_commit=off'")
        defer { store.close() }
        var now: Int64 = 1_800_000_000_000
        for shape in CarryEvictionWorkload.shapes {
            // Everything held so far expires: the sweep empties the store.
            now += 400 * CarriedPacket.hourMs
            _ = try store.sweepCarried(nowMs: now)
            try measure(store, shape, now: &now)
        }
    }

    private static func measure(_ store: PostgresRelayCarryStore, _ shape: CarryEvictionWorkload.Shape, now: inout Int64) throws {
        var workload = try CarryEvictionWorkload(shape)
        let policy = CarryEvictionWorkload.policy
        // The first 300 takes, into a store not full, give the take's floor (its other
        // statements and the round trips), for comparison.
        var floor: [Double] = []
        for i in 0..<policy.maxPackets {
            now += 1
            let (bytes, depositor) = try workload.filling(i, nowMs: now)
            let t = seconds()
            _ = try store.takeCarried(bytes, from: depositor, nowMs: now, policy: policy)
            if i < 300 { floor.append(seconds() - t) }
        }
        let newcomers = try workload.newcomers(nowMs: now)
        var evicted = 0
        var times: [Double] = []
        for (i, bytes) in newcomers.enumerated() {
            now += 1
            let t = seconds()
            if case .taken(let n) = try store.takeCarried(bytes, from: workload.depositors[i % shape.depositors], nowMs: now,
                                                          policy: policy) {
                evicted += n
            }
            times.append(seconds() - t)
        }
        print("full take on PostgreSQL, \(shape.label): \(median(times)) µs median (\(evicted) evicted; "
              + "a take into the store not full: \(median(floor)) µs)")
    }

    private static func median(_ times: [Double]) -> Int { Int((times.sorted()[times.count / 2] * 1e6).rounded()) }

    private static func seconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
