import Glibc
import YaOK

/// What choosing victims costs when the carry store is at its 2,000-packet cap (issue 20:
/// `Store.carryVictims` was 40 % of a busy sender's `Node.send`). Every take evicts one
/// packet; the takes run as savepoints of one transaction, so no fsync is timed, only the
/// reads and writes of the take. The stores are `CarryEvictionWorkload`'s three shapes, the
/// same that `yaok-relay-load carry` builds on PostgreSQL.
enum CarryEvictionBench {
    static func run() throws {
        for shape in CarryEvictionWorkload.shapes { try measure(shape) }
    }

    private static func measure(_ shape: CarryEvictionWorkload.Shape) throws {
        let dir = "/tmp/yaok-bench-carry-evict-\(getpid())"
        defer { Measure.removeStore(dir) }
        let store = try Store(directory: dir)
        defer { store.close() }
        var workload = try CarryEvictionWorkload(shape)
        var now: Int64 = 1_800_000_000_000
        let policy = CarryEvictionWorkload.policy
        try store.db.transaction {
            for i in 0..<policy.maxPackets {
                now += 1
                let (bytes, depositor) = try workload.filling(i, nowMs: now)
                _ = try store.takeCarried(bytes, from: depositor, nowMs: now, policy: policy)
            }
        }
        let newcomers = try workload.newcomers(nowMs: now)
        var evicted = 0
        var times: [Double] = []
        try store.db.transaction {
            for (i, bytes) in newcomers.enumerated() {
                now += 1
                let t = Measure.now()
                if case .taken(_, let victims) = try store.takeCarried(bytes, from: workload.depositors[i % shape.depositors],
                                                                       nowMs: now, policy: policy) {
                    evicted += victims.count
                }
                times.append(Measure.now() - t)
            }
        }
        Measure.report("full take, \(shape.label)",
                       Measure.format(Measure.median(times) * 1e6, decimals: 1) + " µs median (\(evicted) evicted)")
    }
}
