import Foundation
import YaOK

/// Two processes on loopback over the LAN transport, both stores durable (WAL,
/// synchronous=FULL): send → delivered latency one message at a time, and the throughput
/// of pipelined messages until all are delivered (issue 7 §10), beside the raw limits of the
/// same run (loopback TCP with the same frame sizes, one synced SQLite commit), and a check
/// that nothing was lost or duplicated. The peer is this same executable started as
/// `yaok-bench lan-peer …`. YAOK_BENCH_LAN_ONLY=batches runs only the batches of 100,
/// YAOK_BENCH_LAN_ONLY=latency only the messages one at a time, YAOK_BENCH_LAN_ONLY=pipelined
/// only the pipelined ones (each to profile alone).
enum LANBench {
    static func run() throws {
        // YAOK_BENCH_LAN_ONLY=batches, latency or pipelined: only that part (to profile it alone).
        let only = ProcessInfo.processInfo.environment["YAOK_BENCH_LAN_ONLY"]
        // A misspelt part ran every part, and the profile then showed all three mixed.
        if let only, !["batches", "latency", "pipelined"].contains(only) {
            throw BenchError("YAOK_BENCH_LAN_ONLY=\(only): expected batches, latency or pipelined")
        }
        let batchesOnly = only == "batches", latencyOnly = only == "latency", pipelinedOnly = only == "pipelined"
        let root = Measure.scratchDirectory + "/yaok-bench-lan-\(getpid())"
        defer { _ = try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let peer = Process()
        peer.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        peer.arguments = ["lan-peer", root + "/b", root + "/b.card", root + "/a.card", root + "/b.port"]
        try peer.run()
        defer {
            if peer.isRunning { peer.terminate() }
            peer.waitUntilExit()
        }

        let alice = try BenchNodes.node(root + "/a", name: "Alice")
        defer { alice.close() }
        try alice.profile().text.write(toFile: root + "/a.card", atomically: true, encoding: .utf8)
        let bobID = try alice.addContact(card: try waitForFile(root + "/b.card")).id
        let port = try waitForFile(root + "/b.port")

        let delivered = DeliveredCounter()
        alice.setEventHandler { event in
            if case .messageStatusChanged(let m) = event, m.status == .delivered { delivered.add(m.messageID) }
        }
        var options = LANTransport.Options()
        options.listenAddress = "127.0.0.1"
        options.discovery = nil
        options.staticPeers = ["127.0.0.1:" + port]
        try alice.addTransport(try LANTransport(options: options))
        try alice.setTransport("lan", enabled: true)
        let deadline = Date().addingTimeInterval(30)
        while (try? alice.contact(bobID).connection) != .online(transport: "WiFi") {
            guard Date() < deadline else { throw YaOKError(.internal, "the LAN peer did not connect") }
            usleep(10_000)
        }

        // The raw limits, in this run: loopback TCP with the frames one message costs, and
        // one durable SQLite commit (the disk is shared by both processes).
        let rtt = try LoopbackLimits.roundTrips(2_000).sorted()
        Measure.report("raw: loopback TCP round trip, p50", Measure.ms(rtt[rtt.count / 2]))
        Measure.report("raw: loopback TCP round trip, p99", Measure.ms(rtt[rtt.count * 99 / 100]))
        Measure.report("raw: loopback TCP, 3000 pipelined", "\(Int(try LoopbackLimits.pipelined(3_000))) round trips/s")
        let raw = try DeliveryBench.rawInsertRates(path: root + "/raw.db")
        Measure.report("raw: SQLite commit (one row, synced)", Measure.ms(1 / raw.single)
                       + ", of which waiting for the disk " + Measure.ms(raw.diskWait))
        // What one message one at a time cannot go below on this machine: three synced
        // commits' waits in series (the send's, the receiver's drain before its ack leaves,
        // the sender's drain of the ack before `delivered` is told:
        // DeliveredAfterAckDrainSyncTests) and a round trip for the message and its ack, with
        // no CPU at all (not even the commits' own).
        Measure.report("raw: floor, 3 syncs + 1 round trip", Measure.ms(3 * raw.diskWait + rtt[rtt.count / 2]))

        let n = 3_000
        if !batchesOnly && !pipelinedOnly {
            // One at a time: send, wait for the delivered event.
            try delivered.reportLatency("LAN, send → delivered, one at a time", node: alice, contact: bobID,
                                        count: latencyOnly ? 2_000 : 500, target: "p50 ≤ 1 ms", target99: "p99 ≤ 3 ms")
        }
        if !batchesOnly && !latencyOnly {
            // Pipelined: 3,000 sent back to back; the clock stops at the last delivered.
            let before = delivered.count
            let syncsBefore = try alice.withDatabase { $0.commitSyncs }
            let start = Measure.now()
            let ownCPU = Measure.threadCPUSeconds()
            for i in 0..<n { _ = try alice.send(to: bobID, text: "bulk \(i) " + String(repeating: "x", count: 100)) }
            let sentIn = Measure.now() - start
            let cpuPerSend = (Measure.threadCPUSeconds() - ownCPU) / Double(n)
            try delivered.wait(above: before + n - 1, timeout: 300)
            let elapsed = Measure.now() - start
            Measure.report("LAN, \(n) pipelined, sent in", "\(Measure.format(sentIn, decimals: 2)) s (\(Int(Double(n) / sentIn)) sends/s)")
            Measure.report("LAN, \(n) pipelined, delivered", "\(Int(Double(n) / elapsed)) messages/s", target: "≥ 2,500/s")
            // One thread's sends, each returning once durable: a sync each at least (the
            // drains that apply the acks mostly share theirs: LogSync).
            let syncs = try alice.withDatabase { $0.commitSyncs } - syncsBefore
            Measure.report("LAN, \(n) pipelined, the sender's disk syncs", "\(Measure.format(Double(syncs) / Double(n), decimals: 2)) a message")
            // Where the sending thread's time goes: its own CPU a send (plan, seal, write),
            // and the rest waiting (for its sync, beside the receiver's on the same disk, for
            // the node's lock, or for a core: both processes' threads share two here; the
            // clock cannot tell which). One thread whose sends each return once durable
            // cannot send faster than one over their sum.
            Measure.report("LAN, \(n) pipelined, the sending thread", "CPU " + Measure.ms(cpuPerSend) + " a send, waiting "
                           + Measure.ms(max(0, sentIn / Double(n) - cpuPerSend)) + " a send")
        }

        // The same, handed over in batches of 100 (one transaction and one disk sync each).
        if !latencyOnly && !pipelinedOnly {
            let before = delivered.count
            let start = Measure.now()
            for b in 0..<(n / 100) {
                _ = try alice.send((0..<100).map { (bobID, "batch \(b).\($0) " + String(repeating: "x", count: 100)) })
            }
            try delivered.wait(above: before + n - 1, timeout: 300)
            Measure.report("LAN, \(n) in batches of 100, delivered", "\(Int(Double(n) / (Measure.now() - start))) messages/s",
                           target: "≥ 2,500/s")
        }
        Measure.report("peak RSS of the sending process", "\(Measure.format(Measure.peakRSSMiB(), decimals: 1)) MiB")

        // Nothing lost, nothing duplicated: every message sent was delivered once (by the
        // sender's events), and the peer's store holds each exactly once (opened here once
        // the peer has exited).
        let sent = batchesOnly || pipelinedOnly ? n : latencyOnly ? 2_000 : 500 + 2 * n
        peer.terminate()
        peer.waitUntilExit()
        let bob = try Node(dataDirectory: root + "/b", options: BenchNodes.options)
        defer { bob.close() }
        try bob.unlock(pin: pin)
        guard let aliceID = try bob.contacts().first?.id else { throw YaOKError(.internal, "the peer has no contact") }
        let received = try ReceivedCount.of(bob, conversation: aliceID)
        delivered.reportIntegrity(sent: sent, receivedByPeer: received)
    }

    /// The peer process: sets up, swaps cards through files, listens on the LAN, runs until killed.
    static func peer(_ args: [String]) throws -> Never {
        guard args.count == 4 else { throw YaOKError(.invalidArgument, "lan-peer DIR CARD_OUT PEER_CARD PORT_OUT") }
        let bob = try BenchNodes.node(args[0], name: "Bob")
        try bob.profile().text.write(toFile: args[1], atomically: true, encoding: .utf8)
        _ = try bob.addContact(card: try waitForFile(args[2]))
        var options = LANTransport.Options()
        options.listenAddress = "127.0.0.1"
        options.discovery = nil
        let lan = try LANTransport(options: options)
        try bob.addTransport(lan)
        try bob.setTransport("lan", enabled: true)
        try String(lan.listeningPort ?? 0).write(toFile: args[3], atomically: true, encoding: .utf8)
        while true { sleep(60) }
    }

    private static let pin = BenchNodes.pin

    private static func waitForFile(_ path: String) throws -> String {
        for _ in 0..<3000 {
            if let text = try? String(contentsOfFile: path, encoding: .utf8), !text.isEmpty {
                return text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            usleep(10_000)
        }
        throw YaOKError(.internal, "\(path) never appeared")
    }

}

/// Counts delivered events (they arrive on the node's event thread).
final class DeliveredCounter: @unchecked Sendable {
    private let condition = NSCondition()
    private var value = 0
    private var ids: Set<MessageID> = []
    private var duplicates = 0

    /// Distinct messages delivered so far.
    var count: Int { condition.lock(); defer { condition.unlock() }; return value }

    func add(_ id: MessageID) {
        condition.lock()
        if ids.insert(id).inserted { value += 1 } else { duplicates += 1 }
        condition.broadcast()
        condition.unlock()
    }

    /// Prints the integrity line: `sent` messages, delivered (distinct, by the sender's
    /// events), delivered events for a message already delivered, and what the receiving
    /// store holds (`receivedByPeer`, when it can be read).
    func reportIntegrity(sent: Int, receivedByPeer: ReceivedCount? = nil) {
        condition.lock()
        let (delivered, twice) = (value, duplicates)
        condition.unlock()
        var line = "\(delivered) of \(sent) delivered, \(twice) delivered twice"
        if let r = receivedByPeer {
            line += "; the receiver holds \(r.distinct) (\(r.total - r.distinct) duplicated)"
        }
        let whole = delivered == sent && twice == 0
            && (receivedByPeer.map { $0.distinct == sent && $0.total == sent } ?? true)
        Measure.report("nothing lost, nothing duplicated", line + (whole ? ": OK" : ": FAILED"))
    }

    /// Sends `count` messages one at a time, each after the previous one was delivered, and
    /// prints the p50 and p99 of send → delivered.
    @discardableResult
    func reportLatency(_ label: String, node: Node, contact: Int64, count: Int, bytes: Int = 0,
                       target: String = "p50 ≤ 1 ms", target99: String? = "p99 ≤ 3 ms") throws -> Double {
        var latencies: [Double] = [], calls: [Double] = []
        let padding = String(repeating: "x", count: bytes)
        let (posts, wakeUps) = (node.eventThreadPosts, node.eventThreadWakeUps)
        for i in 0..<count {
            let before = self.count
            let start = Measure.now()
            let text = "ping \(i) " + padding
            _ = try node.send(to: contact, text: bytes > 0 ? String(text.prefix(bytes)) : text)
            calls.append(Measure.now() - start)
            try wait(above: before)
            latencies.append(Measure.now() - start)
        }
        latencies.sort()
        calls.sort()
        Measure.report(label + ", p50", Measure.ms(latencies[latencies.count / 2]), target: target)
        Measure.report(label + ", p99", Measure.ms(latencies[latencies.count * 99 / 100]), target: target99)
        // The sender's own call alone (plan, seal, write, its disk sync), its own median: the
        // rest of a message's time is the way there and back, the receiver's drain and the
        // sender's drain of the ack.
        Measure.report(label + ", the send call alone, p50", Measure.ms(calls[calls.count / 2]))
        // Each a hop through the event thread (the sender's flush, the arrivals' drains).
        Measure.report(label + ", sender's event-thread posts",
                       Measure.format(Double(node.eventThreadPosts - posts) / Double(count), decimals: 2) + " a message, "
                       + Measure.format(Double(node.eventThreadWakeUps - wakeUps) / Double(count), decimals: 2)
                       + " wake-ups (eventfd writes)")
        return latencies[latencies.count / 2]
    }

    func wait(above: Int, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while value <= above {
            guard condition.wait(until: deadline) else { throw YaOKError(.internal, "timed out waiting for delivery") }
        }
    }
}

/// What a receiving node's store holds of one conversation: incoming messages, and how many
/// distinct message IDs among them.
struct ReceivedCount {
    let total: Int
    let distinct: Int

    static func of(_ node: Node, conversation: Int64) throws -> ReceivedCount {
        var total = 0
        var ids: Set<MessageID> = []
        var cursor: String? = nil
        repeat {
            let page = try node.history(conversation, before: cursor, limit: 1000)
            for m in page.messages where m.direction == .incoming {
                total += 1
                ids.insert(m.messageID)
            }
            cursor = page.messages.isEmpty ? nil : page.olderCursor
        } while cursor != nil
        return ReceivedCount(total: total, distinct: ids.count)
    }
}
