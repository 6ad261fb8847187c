import Foundation
import YaOK

/// `Node.send` one at a time and nothing else (issue 20): no receiving node, no link, so
/// that a profile of this suite (`scripts/profile yaok-bench send`) shows only the sending
/// path. Prints the rate with carrying on (the default) and off, and per send: the SQL
/// statements run, the writing commits (disk syncs) and the wake-ups of the event thread.
/// YAOK_BENCH_SEND_TRACE=1 also lists the statements of one send and the pages it writes to
/// the log, each named by its table or index (the node then no longer checkpoints by
/// itself: time the rate without it). With YAOK_BENCH_DIR on a
/// tmpfs (/dev/shm) the syncs cost nothing and the rate is the CPU cost alone.
/// YAOK_BENCH_SEND_COUNT sets the sends timed (2,000), so that a run under
/// `valgrind --tool=callgrind` stays short: two counts' difference is the cost of the sends
/// alone, set-up and warm-up subtracted. YAOK_BENCH_SEND_CARRYING=on or off runs only that half.
/// YAOK_BENCH_SEND_RECEIVE=1 then delivers them to the receiver over a memory link (both
/// nodes in this process, as the delivery suite's backlog), to profile its inbound drain too;
/// YAOK_BENCH_SEND_RECEIVE=each sends them one at a time over the link instead, each once the
/// one before is delivered (the drains of one message: the receiver's, the sender's of the ack);
/// with YAOK_BENCH_SEND_TRACE=1 it then traces one more message through both nodes.
enum SendBench {
    static let count: Int = {
        guard let value = getenv("YAOK_BENCH_SEND_COUNT"), let n = Int(String(cString: value)), n > 0 else { return 2_000 }
        return n
    }()
    static let carryingModes: [Bool] = {
        guard let value = getenv("YAOK_BENCH_SEND_CARRYING") else { return [true, false] }
        return [String(cString: value) != "off"]
    }()
    static let receive = getenv("YAOK_BENCH_SEND_RECEIVE").map { String(cString: $0) == "1" } ?? false
    /// YAOK_BENCH_SEND_RECEIVE=each: instead of a backlog, YAOK_BENCH_SEND_COUNT messages
    /// each sent once the one before was delivered, both nodes linked (to profile the drains
    /// of one message at a time, the receiver's and the sender's of its ack).
    static let receiveEach = getenv("YAOK_BENCH_SEND_RECEIVE").map { String(cString: $0) == "each" } ?? false

    static func run() throws {
        let root = Measure.scratchDirectory + "/yaok-bench-send-\(getpid())"
        defer { _ = system("rm -rf '\(root)'") }
        mkdir(root, 0o700)
        let bob = try BenchNodes.node(root + "/bob", name: "Bob")
        defer { bob.close() }
        let card = try bob.profile().text
        for carrying in carryingModes {
            let alice = try BenchNodes.node(root + "/alice-\(carrying)", name: "Alice")
            defer { alice.close() }
            try alice.setCarry(mode: carrying ? .anyone : .off)  // both, whatever YAOK_BENCH_CARRY says
            let bobID = try alice.addContact(card: card).id
            let text = String(repeating: "x", count: 100)
            for i in 0..<50 { try alice.send(to: bobID, text: "warm-up \(i) " + text) }  // rings, caches, statements
            if ProcessInfo.processInfo.environment["YAOK_BENCH_SEND_TRACE"] == "1" {
                // The log's frames (pages written, each synced at the commit) are counted once
                // the node checkpoints by itself: the pages of one send, then one checkpoint.
                let frames0 = try alice.withDatabase { db -> Int in
                    try db.checkpointByOwner()
                    try db.checkpointPassive()
                    db.statementLog = []
                    return db.walFrames
                }
                try alice.send(to: bobID, text: "traced " + text)
                let (log, pages) = try alice.withDatabase { db -> ([String], [String]) in
                    defer { db.statementLog = nil }
                    return (db.statementLog ?? [], try db.logPages(frames: frames0..<db.walFrames))
                }
                _ = try alice.withDatabase { try $0.checkpointPassive() }
                print("statements of one send (carrying \(carrying ? "on" : "off")), \(pages.count) pages written to the log:")
                for sql in log { print("    " + sql.split(whereSeparator: \.isNewline).joined(separator: " ")) }
                print("  pages: " + pages.joined(separator: ", "))
            }
            if receiveEach {
                try oneAtATime(from: alice, to: bob, bobID: bobID, card: try alice.profile().text)
                continue
            }
            let n = count
            let (statements0, commits0) = try alice.withDatabase { ($0.statementsRun, $0.writingCommits) }
            let (posts0, wakeUps0) = (alice.eventThreadPosts, alice.eventThreadWakeUps)
            let t = Measure.now()
            let ids = try (0..<n).map { try alice.send(to: bobID, text: "send \($0) " + text).messageID }
            let rate = Double(n) / (Measure.now() - t)
            let (statements1, commits1) = try alice.withDatabase { ($0.statementsRun, $0.writingCommits) }
            let posts = alice.eventThreadPosts - posts0
            let wakeUps = alice.eventThreadWakeUps - wakeUps0
            Measure.report("Node.send one at a time, carrying \(carrying ? "on" : "off")", "\(Int(rate)) messages/s, "
                           + Measure.format(1e6 / rate, decimals: 0) + " µs each; per send: "
                           + Measure.format(Double(statements1 - statements0) / Double(n), decimals: 1) + " statements, "
                           + Measure.format(Double(commits1 - commits0) / Double(n), decimals: 2) + " commits, "
                           + Measure.format(Double(posts) / Double(n), decimals: 2) + " event-thread posts, "
                           + Measure.format(Double(wakeUps) / Double(n), decimals: 2) + " wake-ups",
                           target: "≥ 5,000/s")
            // The carried copies are made by the engine's batches on its own thread (§12.6),
            // not in `send`: those that ran meanwhile are in the counts above; the rest now.
            let t1 = Measure.now()
            let late = try alice.makeOwnCarriedCopies()
            let owed = try alice.withDatabase { db in
                try db.rows("SELECT count(*) FROM outbox WHERE carried & 2 != 0") { $0.int(0) }.first ?? 0
            }
            let statistics = try alice.carryStatistics()
            print("  carried copies: \(statistics.packetsHeld) held (the store's cap: \(statistics.limits.maxPackets)), "
                  + "\(late) made after the loop in " + Measure.format((Measure.now() - t1) * 1000, decimals: 1)
                  + " ms, \(owed) still owed" + (owed != 0 ? " (LOST)" : ""))
            if receive { try deliver(ids, from: alice, to: bob, card: try alice.profile().text) }
        }
    }

    /// `count` messages over a memory link, each sent once the one before was delivered.
    private static func oneAtATime(from alice: Node, to bob: Node, bobID: Int64, card: String) throws {
        _ = try bob.addContact(card: card)
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        let delivered = DeliveredCounter()
        alice.setEventHandler { event in
            if case .messageStatusChanged(let m) = event, m.status == .delivered { delivered.add(m.messageID) }
        }
        try delivered.reportLatency("  one at a time over a memory link", node: alice, contact: bobID, count: count,
                                    target: "p50 ≤ 1 ms", target99: nil)
        if ProcessInfo.processInfo.environment["YAOK_BENCH_SEND_TRACE"] == "1" {
            try traceOne(from: alice, to: bob, bobID: bobID, delivered: delivered)
        }
    }

    /// The statements and log pages of one message's whole way, node by node: the sender's
    /// send, the receiver's drain (store, ack) and the sender's drain of the ack.
    private static func traceOne(from alice: Node, to bob: Node, bobID: Int64, delivered: DeliveredCounter) throws {
        let nodes = [("sender", alice), ("receiver", bob)]
        var frames0: [Int] = []
        for (_, node) in nodes {
            frames0.append(try node.withDatabase { db -> Int in
                try db.checkpointByOwner()
                try db.checkpointPassive()
                db.statementLog = []
                return db.walFrames
            })
        }
        let before = delivered.count
        try alice.send(to: bobID, text: "traced")
        try delivered.wait(above: before)
        usleep(100_000)  // the receipt of the ack, which follows the delivered event
        for ((name, node), start) in zip(nodes, frames0) {
            let (log, pages) = try node.withDatabase { db -> ([String], [String]) in
                defer { db.statementLog = nil }
                return (db.statementLog ?? [], try db.logPages(frames: start..<db.walFrames))
            }
            _ = try node.withDatabase { try $0.checkpointPassive() }
            print("  the \(name)'s statements for one message, \(pages.count) pages written to the log:")
            for sql in log { print("    " + sql.split(whereSeparator: \.isNewline).joined(separator: " ")) }
            print("    pages: " + pages.joined(separator: ", "))
        }
    }

    /// Delivers the backlog that holds `ids` from `alice` to `bob` over a memory link and
    /// reports the rate and the receiver's statements and commits per message.
    private static func deliver(_ ids: [MessageID], from alice: Node, to bob: Node, card: String) throws {
        _ = try bob.addContact(card: card)
        let (statements0, commits0) = try bob.withDatabase { ($0.statementsRun, $0.writingCommits) }
        let t = Measure.now()
        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        for id in ids.reversed() { try DeliveryBench.waitUntil { try alice.outgoingMessage(id).status == .delivered } }
        let rate = Double(ids.count) / (Measure.now() - t)
        let (statements1, commits1) = try bob.withDatabase { ($0.statementsRun, $0.writingCommits) }
        Measure.report("  then delivered over a memory link", "\(Int(rate)) messages/s; the receiver's per message: "
                       + Measure.format(Double(statements1 - statements0) / Double(ids.count), decimals: 1) + " statements, "
                       + Measure.format(Double(commits1 - commits0) / Double(ids.count), decimals: 2) + " commits")
    }
}
