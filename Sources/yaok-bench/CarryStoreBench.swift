import Glibc
import YaOK

/// The carry store's figures (issue 18 §3), with the default caps (2,000 packets, 32 MiB),
/// `synchronous=FULL` on the real disk: taking a packet (its own commit, and 100 in one
/// transaction as a meeting's batch would), taking into a full store (eviction), a page of
/// 100 keys in the reconciliation order, a range count, a purge record of 255 claims, the sweep.
enum CarryStoreBench {
    static func run() throws {
        let dir = "/tmp/yaok-bench-carry-\(getpid())"
        defer { Measure.removeStore(dir) }
        let store = try Store(directory: dir)
        defer { store.close() }
        var now: Int64 = 1_800_000_000_000
        let policy = CarryPolicy.default
        var claims: [[UInt8]] = []

        func packet(_ payloadLength: Int, budget: UInt8) throws -> [UInt8] {
            let claim = PurgeClaim.random()
            claims.append(claim)
            return try CarriedPacket(hopLimit: 8, copyBudget: budget,
                                     expiryHour: CarriedPacket.expiryHour(createdMs: now, lifetimeMs: Int64.random(in: 1...336) * 3_600_000),
                                     routingTag: RoutingTag(value: UInt64.random(in: .min ... .max)),
                                     claimHash: PurgeClaim.hash(claim), payload: Sodium.randomBytes(payloadLength)).encode()
        }

        // Taking, one commit (one fsync) each: what a packet costs when acknowledged at once.
        var singles: [Double] = []
        for i in 0..<200 {
            let bytes = try packet(440, budget: UInt8(1 + i % 8))
            let t = Measure.now()
            _ = try store.takeCarried(bytes, from: CarryDepositor.random(), nowMs: now, policy: policy)
            singles.append(Measure.now() - t)
        }
        Measure.report("take a 474-byte packet, own commit, median", Measure.ms(Measure.median(singles)))

        // Batches of 100 in one transaction, up to the 2,000-packet cap.
        var batches: [Double] = []
        while try store.carryUsage().packets + 100 <= policy.maxPackets {
            let depositor = CarryDepositor.random()
            let batch = try (0..<100).map { i in try packet(440, budget: UInt8(1 + i % 8)) }
            let t = Measure.now()
            try store.db.transaction {
                for bytes in batch { _ = try store.takeCarried(bytes, from: depositor, nowMs: now, policy: policy) }
            }
            batches.append((Measure.now() - t) / 100)
        }
        Measure.report("take in batches of 100, per packet, median", Measure.ms(Measure.median(batches)))
        let usage = try store.carryUsage()
        Measure.report("store", "\(usage.packets) packets, \(usage.bytes) bytes")

        // Full: each take evicts (budget 8 newcomers evict the lowest budget, oldest first).
        now += 1_000
        var evicting: [Double] = []
        for _ in 0..<100 {
            let bytes = try packet(440, budget: 8)
            let t = Measure.now()
            _ = try store.takeCarried(bytes, from: CarryDepositor.random(), nowMs: now, policy: policy)
            evicting.append(Measure.now() - t)
        }
        Measure.report("take into a full store (evicts one), median", Measure.ms(Measure.median(evicting)))

        // Reconciliation's reads: a page of 100 keys from the middle, a range count.
        let all = try store.carriedKeys(nowMs: now, limit: policy.maxPackets)
        let middle = all[all.count / 2]
        let page = Measure.perIteration(500) { _ = try? store.carriedKeys(from: middle, nowMs: now, limit: 100) }
        Measure.report("page of 100 keys from the middle of 2,000", Measure.ms(page))
        let upper = all[all.count * 3 / 4]
        let count = Measure.perIteration(500) { _ = try? store.carriedCount(from: middle, below: upper, nowMs: now) }
        Measure.report("count a range of 500 of 2,000", Measure.ms(count))
        let usageTime = Measure.perIteration(500) { _ = try? store.carryUsage() }
        Measure.report("usage (count and bytes of 2,000)", Measure.ms(usageTime))

        // A purge record of 255 claims, half of them for packets held.
        let record = try PurgeRecord(claims: Array(claims.suffix(128)) + (0..<127).map { _ in PurgeClaim.random() })
        var t = Measure.now()
        let purged = try store.purgeCarried(record, nowMs: now, policy: policy)
        Measure.report("purge record of 255 claims (\(purged.count) held)", Measure.ms(Measure.now() - t))

        // The sweep, a week later: the packets that expired meanwhile go.
        now += 7 * 86_400_000
        t = Measure.now()
        let swept = try store.sweepCarried(nowMs: now)
        Measure.report("sweep a week later (\(swept.packets) packets expired)", Measure.ms(Measure.now() - t))
    }
}
