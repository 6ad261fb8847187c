import Testing
@testable import YaOKSupport
@testable import YaOKStore
@testable import YaOKNode

/// The pages of the write-ahead log that one send, one received message and one
/// acknowledgement write (issue 20): each page is written and synced at the commit, and
/// each index a row is in costs one. Bounds, not exact counts, so that moving work off
/// these paths passes; an index put back onto them fails, with the pages named.
@Suite struct LogPagesTests {
    /// The tables and indexes the commits in `body` wrote to the log, one name per page.
    private func pagesWritten(_ node: Node, _ body: () throws -> Void) throws -> [String] {
        let before = try node.withDatabase { db -> Int in
            try db.checkpointByOwner()
            try db.checkpointPassive()  // the log restarts at the next commit
            return db.walFrames
        }
        try body()
        return try node.withDatabase { db in try db.logPages(frames: before..<db.walFrames) }
    }

    /// The sealed packets waiting in `node`'s outbox.
    private func outboxPackets(_ node: Node) throws -> [[UInt8]] {
        try node.withStore { store, _ in try store.outboxRows().map(\.packet) }
    }

    /// Carrying on (the default): the message, its outbox row, the carried copy and the
    /// unsettled send. 24 pages before migration 19 (sqlite_sequence, messages_by_id,
    /// outbox_by_contact, outbox_due and carried_own_expiry were five of them).
    @Test func aSendWritesAtMost20Pages() throws {
        let pair = try Pair()
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: "first")  // rings and caches settled
        let pages = try pagesWritten(pair.alice) { _ = try pair.alice.send(to: pair.bobID, text: "second") }
        #expect(pages.count <= 20, "\(pages)")
        #expect(Set(pages).count == pages.count, "a page written twice: \(pages)")
    }

    /// Making a message's own carried copy takes its outbox row's flag in place: the row
    /// keeps its size (`Store.outboxCarriedCopyTaken`), so SQLite writes its leaf page, not
    /// the whole row again with its packet (a 10 KB message's: five overflow pages, and
    /// five more freed, before).
    @Test func takingAnOwnCopyDoesNotRewriteTheOutboxPacket() throws {
        let pair = try Pair()
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: String(repeating: "o", count: 10_000))
        _ = try pair.alice.makeOwnCopyBatch()  // rings and caches settled
        _ = try pair.alice.send(to: pair.bobID, text: String(repeating: "p", count: 10_000))
        var made = 0
        let pages = try pagesWritten(pair.alice) { made = try pair.alice.makeOwnCopyBatch() }
        #expect(made == 1)
        #expect(pages.filter { $0 == "outbox" }.count <= 1, "\(pages)")
    }

    /// Carrying off: the message, its outbox row and the unsettled send (13 before).
    @Test func aSendWithoutCarryingWritesAtMost10Pages() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.alice.setCarry(mode: .off)
        _ = try pair.alice.send(to: pair.bobID, text: "first")
        let pages = try pagesWritten(pair.alice) { _ = try pair.alice.send(to: pair.bobID, text: "second") }
        #expect(pages.count <= 10, "\(pages)")
    }

    /// Bob receives a message and queues its ack (12 pages: 15 before migration 19); Alice
    /// takes the ack: delivered, off her outbox (10: 11 before). Both as one link would
    /// bring the packets, one at a time.
    @Test func aReceivedMessageAndItsAckWriteBoundedPages() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.alice.setCarry(mode: .off)
        try pair.bob.setCarry(mode: .off)
        for text in ["first", "second"] { _ = try pair.alice.send(to: pair.bobID, text: text) }
        let sent = try outboxPackets(pair.alice)
        try pair.bob.injectRouted(sent[0])
        try pair.alice.injectRouted(try outboxPackets(pair.bob)[0])  // rings settled both ways

        let received = try pagesWritten(pair.bob) { try pair.bob.injectRouted(sent[1]) }
        let acks = try outboxPackets(pair.bob)
        #expect(acks.count == 2)  // the second ack is still owed (the first one was never taken)
        let acked = try pagesWritten(pair.alice) { try pair.alice.injectRouted(acks[1]) }
        #expect(try pair.alice.outbox().isEmpty)
        #expect(received.count <= 12, "\(received)")
        #expect(acked.count <= 10, "\(acked)")
    }
}
