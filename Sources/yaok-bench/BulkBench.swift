import Foundation
import YaOK

/// The delivery suite's 200 × 10 KB batch over a memory link, and nothing else (issue 20),
/// so that a profile of it (`scripts/profile yaok-bench bulk`) shows only the path of large
/// messages: sealing, the link, the receiver's store, the acks. Runs
/// YAOK_BENCH_BULK_ROUNDS batches (default 3) after a warm-up and prints each, their median,
/// and per message on both sides: the statements run, the pages written to the write-ahead
/// log and the writing commits.
enum BulkBench {
    static let size = 10_000
    static let batch = 200

    static func run() throws {
        let root = Measure.scratchDirectory + "/yaok-bench-bulk-\(getpid())"
        defer { _ = system("rm -rf '\(root)'") }
        mkdir(root, 0o700)
        let (alice, bob, bobID) = try BenchNodes.pair(in: root)
        defer { alice.close(); bob.close() }

        let delivered = DeliveredCounter()
        alice.setEventHandler { event in
            if case .messageStatusChanged(let m) = event, m.status == .delivered { delivered.add(m.messageID) }
        }
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        let body = String(repeating: "y", count: size - 12)
        var sent = 0
        var sendCalls: [Double] = []
        func sendBatch(_ tag: String) throws {
            let before = delivered.count
            let t = Measure.now()
            _ = try alice.send((0..<batch).map { (bobID, "\(tag) \($0) ".padding(to: 12) + body) })
            sendCalls.append(Measure.now() - t)
            sent += batch
            try delivered.wait(above: before + batch - 1, timeout: 120)
        }
        try sendBatch("warm")

        let rounds = Int(ProcessInfo.processInfo.environment["YAOK_BENCH_BULK_ROUNDS"] ?? "") ?? 3
        // The nodes checkpoint by themselves from their first send on (walFrames counts
        // from there); a passive checkpoint now restarts both logs at the next commit.
        func counters(_ node: Node) throws -> (statements: Int, commits: Int) {
            try node.withDatabase { ($0.statementsRun, $0.writingCommits) }
        }
        var rates: [Double] = []
        var perMessage = ""
        for round in 0..<max(rounds, 1) {
            let (a0, b0) = (try counters(alice), try counters(bob))
            let t = Measure.now()
            try sendBatch("bulk\(round)")
            let seconds = Measure.now() - t
            let (a1, b1) = (try counters(alice), try counters(bob))
            rates.append(Double(batch * size) / seconds / 1024)
            Measure.report("\(batch) × 10 KB batch, round \(round + 1)", Measure.format(rates.last ?? 0) + " KiB/s")
            let n = Double(batch)
            perMessage = "sender " + Measure.format(Double(a1.statements - a0.statements) / n, decimals: 1) + " statements, "
                + Measure.format(Double(a1.commits - a0.commits) / n, decimals: 2) + " commits; receiver "
                + Measure.format(Double(b1.statements - b0.statements) / n, decimals: 1) + " statements, "
                + Measure.format(Double(b1.commits - b0.commits) / n, decimals: 2) + " commits"
        }
        Measure.report("\(batch) × 10 KB sent as a batch, delivered, median", Measure.format(Measure.median(rates)) + " KiB/s",
                       target: "≥ 8,000 KiB/s")
        Measure.report("per 10 KB message (last round)", perMessage)
        // Sealing and storing the batch, before its first packet can leave (all or nothing).
        Measure.report("the send call, median", Measure.format(Measure.median(sendCalls.dropFirst().map { $0 * 1000 })) + " ms")
        let (aliceBytes, bobBytes) = (try databaseBytes(root + "/alice"), try databaseBytes(root + "/bob"))
        Measure.report("store files after \(sent) messages", "sender \(aliceBytes / 1024) KiB, receiver \(bobBytes / 1024) KiB")

        try DeliveryBench.waitUntil { delivered.count >= sent }
        guard let aliceID = try bob.contacts().first?.id else { throw YaOKError(.internal, "Bob has no contact") }
        delivered.reportIntegrity(sent: sent, receivedByPeer: try ReceivedCount.of(bob, conversation: aliceID))
    }

    /// Bytes of the files in a node's data directory (database, log, shared memory).
    private static func databaseBytes(_ dir: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: dir).reduce(0) { sum, name in
            sum + ((try? FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.size] as? Int) ?? 0)
        }
    }
}
