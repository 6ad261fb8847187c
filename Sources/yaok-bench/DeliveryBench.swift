import Foundation
import YaOK

/// The delivery engine's figures (issue 7 §10): durable enqueue rate, printed beside a raw
/// SQLite insert rate measured the same way in the same run (WAL, synchronous=FULL, on the
/// real disk), and two nodes in one process over a memory link: send → delivered latency
/// and pipelined throughput. (Two processes over the LAN transport: scripts/bench-lan.)
enum DeliveryBench {
    static func run() throws {
        // YAOK_BENCH_DELIVERY_ONLY=threads: only the concurrent senders (to profile them alone).
        let only = ProcessInfo.processInfo.environment["YAOK_BENCH_DELIVERY_ONLY"]
        if let only, only != "threads" { throw BenchError("YAOK_BENCH_DELIVERY_ONLY=\(only): expected threads") }
        let threadsOnly = only == "threads"
        let root = Measure.scratchDirectory + "/yaok-bench-delivery-\(getpid())"
        defer { _ = system("rm -rf '\(root)'") }
        mkdir(root, 0o700)

        // Inside `root`, so that it goes with it (beside it, its -wal and -shm stayed in /tmp).
        let raw = try rawInsertRates(path: root + "/raw.db")
        Measure.report("raw SQLite insert, one commit each", "\(Int(raw.single)) rows/s")
        Measure.report("raw SQLite insert, 100 per commit", "\(Int(raw.batched)) rows/s")
        Measure.report("raw: a synced commit's wait for the disk", Measure.ms(raw.diskWait)
                       + " (its wall time less its own CPU)")

        let (alice, bob, bobID) = try BenchNodes.pair(in: root)
        defer { alice.close(); bob.close() }

        // Durable enqueue: encrypt, store, queue (no link yet, so nothing leaves).
        let n = 2_000
        var ids: [MessageID] = []
        var t = Measure.now()
        if !threadsOnly {
            let ownCPU = Measure.threadCPUSeconds()
            for i in 0..<n { ids.append(try alice.send(to: bobID, text: "enqueue \(i) " + String(repeating: "x", count: 100)).messageID) }
            let single = Double(n) / (Measure.now() - t)
            Measure.report("Node.send, one transaction each", "\(Int(single)) messages/s", target: "≥ 5,000/s")
            // What one thread cannot beat while each send returns once durable, at the CPU a
            // send takes now: that CPU (plan, seal, write) and then the disk's wait for one
            // synced commit, in series. Not the machine's limit: less CPU a send raises it, and
            // with no wait (a tmpfs) the rate is 100 % of it by construction (it says only that
            // the thread never waited for anything else).
            let cpuPerSend = (Measure.threadCPUSeconds() - ownCPU) / Double(n)
            let ceiling = 1 / (cpuPerSend + raw.diskWait)
            Measure.report("  one thread's ceiling at this CPU a send", "\(Int(ceiling)) messages/s (the send's own CPU "
                           + Measure.ms(cpuPerSend) + " + a synced commit's wait); measured "
                           + Measure.format(100 * single / ceiling, decimals: 0) + " % of it")
            t = Measure.now()
            for b in 0..<(n / 100) {
                ids += try alice.send((0..<100).map { (bobID, "batch \(b).\($0) " + String(repeating: "x", count: 100)) }).map(\.messageID)
            }
            let batched = Double(n) / (Measure.now() - t)
            Measure.report("Node.send(batch of 100), one transaction", "\(Int(batched)) messages/s", target: "≥ 5,000/s")
            // Made now, so that Alice's copies do not take the CPU from the runs below.
            try reportOwnCopiesLeft(alice, sent: ids.count)
        }

        // Concurrent senders: sealing runs outside the node's lock on each caller's thread,
        // and one disk sync commits every send waiting for it (group commit). Each on a node
        // of its own whose carry store is not full yet (2,000 packets: the first figure's
        // 2,000 filled Alice's, and a full store costs every further send a scan of it).
        for (k, (threads, batch)) in [(4, 1), (2, 100)].enumerated() {
            let sender = try BenchNodes.node(root + "/sender\(k)", name: "Sender", lockStatistics: true)
            defer { sender.close() }
            let contact = try sender.addContact(card: bob.profile().text).id
            let each = batch == 1 ? n / threads : n / threads / batch
            let sent = Locked<[MessageID]>([])
            t = Measure.now()
            let cpu = Measure.cpuSeconds()
            Measure.onThreads(threads) { k in
                for i in 0..<each {
                    let items = (0..<batch).map { (contact, "thread \(k).\(i).\($0) " + String(repeating: "x", count: 100)) }
                    if let messages = try? sender.send(items) { sent.withLock { $0 += messages.map(\.messageID) } }
                }
            }
            let elapsed = Measure.now() - t
            let cpuUsed = Measure.cpuSeconds() - cpu
            let got = sent.withLock { $0 }
            let commits = sender.sendCommitStatistics
            Measure.report("Node.send\(batch == 1 ? "" : "(batch of \(batch))"), \(threads) threads", "\(Int(Double(got.count) / elapsed)) messages/s"
                           + (got.count == n ? "" : " (\(n - got.count) FAILED)")
                           + ", \(Measure.format(Double(commits.sends) / Double(max(commits.groups, 1)), decimals: 1)) sends per commit"
                           + ", \(Measure.format(Double(commits.sends) / Double(max(commits.syncs, 1)), decimals: 1)) per disk sync",
                           target: batch == 1 ? "≥ 5,000/s" : "≥ 8,000/s")
            // Where a group's time goes: a sync's share of the run says whether the disk or
            // the senders' CPU and locks pace the groups.
            func perGroup(_ seconds: Double, _ count: Int) -> String { Measure.format(seconds * 1e6 / Double(max(count, 1)), decimals: 0) + " µs" }
            Measure.report("  group commit stages", "write \(perGroup(commits.writeSeconds, commits.groups)) a group, "
                           + "sync \(perGroup(commits.syncSeconds, commits.syncs)) a sync, "
                           + "announce \(perGroup(commits.announceSeconds, commits.groups)) a group; syncing "
                           + Measure.format(100 * commits.syncSeconds / elapsed, decimals: 0) + " % of the run")
            Measure.report("  CPU", Measure.format(cpuUsed * 1e6 / Double(max(got.count, 1)), decimals: 0)
                           + " µs a message (every thread), " + Measure.format(cpuUsed / elapsed, decimals: 2) + " cores busy")
            reportLock(sender.lockStatistics, elapsed: elapsed)
            // Nothing lost, nothing duplicated: each call got messages of its own, and the
            // sender's store (it receives nothing) holds every one once.
            let (rows, distinct) = try sender.withDatabase { db in
                try db.rows("SELECT count(*), count(DISTINCT message_id) FROM messages") { ($0.int(0), $0.int(1)) }.first ?? (0, 0)
            }
            let whole = got.count == n && Set(got).count == n && rows == n && distinct == n
            Measure.report("  nothing lost, nothing duplicated", "\(Set(got).count) distinct of \(n) sent; the store holds \(distinct) "
                           + "(\(rows - distinct) duplicated)" + (whole ? ": OK" : ": FAILED"))
            try reportOwnCopiesLeft(sender, sent: got.count)
        }
        if threadsOnly { return }

        // Delivered events from here on: each message counted once (the backlog's too).
        let delivered = DeliveredCounter()
        alice.setEventHandler { event in
            if case .messageStatusChanged(let m) = event, m.status == .delivered { delivered.add(m.messageID) }
        }

        // The backlog goes over a memory link: throughput of delivered messages.
        t = Measure.now()
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        for id in ids.reversed() { try waitUntil { try alice.outgoingMessage(id).status == .delivered } }
        Measure.report("backlog of \(ids.count) delivered over a memory link", "\(Int(Double(ids.count) / (Measure.now() - t))) messages/s",
                       target: "≥ 2,000/s")

        // One at a time: send → delivered, waiting on the delivered event (polling the
        // status would contend for the node's lock with the event thread it waits on).
        // Three synced commits lie on its way, in series: the send's, the receiver's drain
        // before its ack leaves, and the sender's drain of the ack before `delivered` is told
        // (DeliveredAfterAckDrainSyncTests). Their waits alone: not even the commits' own CPU.
        Measure.report("raw: floor, 3 synced commits' waits", Measure.ms(3 * raw.diskWait) + " (and no CPU at all)")
        try delivered.reportLatency("send → delivered, one at a time", node: alice, contact: bobID, count: 300)

        // 10 KB messages (the largest): what a slow link's throughput depends on, since the
        // engine's per-message cost must stay well under the link's time per 10 KB.
        let big = 10_000
        let p50 = try delivered.reportLatency("10 KB send → delivered, one at a time", node: alice, contact: bobID,
                                              count: 100, bytes: big, target: "p50 ≤ 10 ms", target99: nil)
        Measure.report("10 KB one at a time, throughput", Measure.format(Double(big) / p50 / 1024) + " KiB/s")
        let before = delivered.count
        t = Measure.now()
        _ = try alice.send((0..<200).map { (bobID, "bulk \($0) " + String(repeating: "y", count: big - 12)) })
        try delivered.wait(above: before + 199, timeout: 120)
        let seconds = Measure.now() - t
        Measure.report("200 × 10 KB sent as a batch, delivered", Measure.format(200 * Double(big) / seconds / 1024) + " KiB/s",
                       target: "≥ 8,000 KiB/s")

        // Nothing lost, nothing duplicated: every message Alice sent Bob, delivered once.
        try waitUntil { delivered.count >= ids.count + 300 + 100 + 200 }
        guard let aliceID = try bob.contacts().first?.id else { throw YaOKError(.internal, "Bob has no contact") }
        delivered.reportIntegrity(sent: ids.count + 300 + 100 + 200, receivedByPeer: try ReceivedCount.of(bob, conversation: aliceID))
    }

    /// The own carried copies a run of sends left owed (they wait for the app's pause,
    /// OwnCopyQueue.quietMs): how many, and the time making them takes now. With carrying
    /// off, nothing.
    static func reportOwnCopiesLeft(_ node: Node, sent: Int) throws {
        guard !Measure.carryOff else { return }
        let owed = try node.withDatabase { db in
            try db.rows("SELECT count(*) FROM outbox WHERE carried & 2 != 0") { $0.int(0) }.first ?? 0
        }
        let t = Measure.now()
        _ = try node.makeOwnCarriedCopies()  // the node's timer may make some of them meanwhile
        let left = try node.withDatabase { db in
            try db.rows("SELECT count(*) FROM outbox WHERE carried & 2 != 0") { $0.int(0) }.first ?? 0
        }
        Measure.report("  own carried copies", "\(sent - owed) of \(sent) settled during the run; the \(owed) owed at its end "
                       + "took " + Measure.format((Measure.now() - t) * 1000, decimals: 0) + " ms after it"
                       + (left == 0 ? "" : ", \(left) still owed (LOST)"))
    }

    /// Where the node's lock went during a run of `elapsed` seconds: per kind of section, how
    /// many, the mean wait for the lock and hold of it, and the share of the run it was held.
    static func reportLock(_ lock: NodeLockStatistics, elapsed: Double) {
        func micros(_ nanos: UInt64, _ count: Int) -> String { Measure.format(Double(nanos) / 1e3 / Double(max(count, 1)), decimals: 0) }
        for section in LockSection.allCases where lock[section].sections > 0 {
            let f = lock[section]
            Measure.report("  lock: \(section.name)", "\(f.sections) × wait \(micros(f.waitNanos, f.sections)) µs "
                           + "(max \(micros(f.maxWaitNanos, 1))), hold \(micros(f.holdNanos, f.sections)) µs; held "
                           + Measure.format(100 * Double(f.holdNanos) / 1e9 / elapsed, decimals: 0) + " % of the run")
        }
        if lock.reseals > 0 {
            Measure.report("  lock: re-seals in group writes", "\(lock.reseals) × \(micros(lock.resealNanos, lock.reseals)) µs")
        }
    }

    /// Raw SQLite inserts (WAL, synchronous=FULL) in this run: rows a second one commit
    /// each and 100 per commit, and how long a synced commit waits for the disk (its wall
    /// time less the thread's CPU: what no CPU work of ours can take back).
    static func rawInsertRates(path: String) throws -> (single: Double, batched: Double, diskWait: Double) {
        let db = try Database(path: path)
        defer { db.close() }
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, k BLOB NOT NULL UNIQUE, v BLOB NOT NULL)")
        let blob = [UInt8](repeating: 7, count: 400)
        let n = 2_000
        var t = Measure.now()
        let cpu = Measure.threadCPUSeconds()
        for i in 0..<n {
            try db.transaction { try db.query("INSERT INTO t (k, v) VALUES (?, ?)", [.int(Int64(i)), .blob(blob)]) }
        }
        let wall = Measure.now() - t
        let single = Double(n) / wall
        let diskWait = max(0, wall - (Measure.threadCPUSeconds() - cpu)) / Double(n)
        t = Measure.now()
        for b in 0..<(n / 100) {
            try db.transaction {
                for i in 0..<100 {
                    try db.query("INSERT INTO t (k, v) VALUES (?, ?)", [.int(Int64(n + b * 100 + i)), .blob(blob)])
                }
            }
        }
        return (single, Double(n) / (Measure.now() - t), diskWait)
    }

    static func waitUntil(_ done: () throws -> Bool) throws {
        let deadline = Measure.now() + 120
        while try !done() {
            guard Measure.now() < deadline else { throw YaOKError(.internal, "benchmark timed out") }
            usleep(1000)
        }
    }

}
