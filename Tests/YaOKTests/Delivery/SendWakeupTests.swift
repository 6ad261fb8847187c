import Testing
@testable import YaOKSupport
@testable import YaOKStore
@testable import YaOKNode

/// What one `send` writes and wakes (issue 20: a single sender's cost outside the sync).
///
/// A send that queued nothing for a transport (no link open, no carrier) wakes nothing:
/// each section of the delivery engine used to post a flush to the event thread when it
/// ended, so every `send` from an app's thread woke the event thread, which took the node's
/// lock twice to find nothing to flush (issue 20: a single sender's CPU outside the sync).
@Suite struct SendWakeupTests {
    @Test func aSendWithNoLinkPostsNothingToTheEventThread() throws {
        let pair = try Pair()
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: "first")  // rings and caches settled
        let before = pair.alice.eventThreadPosts
        for i in 0..<5 { _ = try pair.alice.send(to: pair.bobID, text: "message \(i)") }
        #expect(pair.alice.eventThreadPosts - before == 0)  // 5 before the fix
        #expect(try pair.alice.outbox().count == 6)
    }

    @Test func aSendOverAnOpenLinkStillFlushesAndIsDelivered() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? pair.alice.contact(pair.bobID).connection) == .online(transport: "memory") })
        let before = pair.alice.eventThreadPosts
        let id = try pair.alice.send(to: pair.bobID, text: "over the link").messageID
        #expect(pair.alice.eventThreadPosts - before >= 1)  // the unit is flushed on the event thread
        #expect(eventually { (try? pair.alice.status(of: id)) == .delivered })
    }

    /// The carried copy of a message is the node's own packet, which no hourly quota limits:
    /// taking it neither reads nor charges the quota row (two statements and one page of the
    /// log per send before), and it is still stored and remembered as our own.
    @Test func theCarriedCopyOfASendChargesNoQuota() throws {
        let pair = try Pair()
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: "first")  // the directory and the ring loaded
        try pair.alice.withDatabase { $0.statementLog = [] }
        for i in 0..<3 { _ = try pair.alice.send(to: pair.bobID, text: "message \(i)") }
        // Not counted: a `PRAGMA synchronous` switch (Database.unsynced), when a commit at FULL ran between groups.
        let statements = try pair.alice.withDatabase { db in
            defer { db.statementLog = nil }
            return (db.statementLog ?? []).count { !$0.hasPrefix("PRAGMA synchronous") }
        }
        try pair.alice.makeOwnCarriedCopies()  // made after the sends, in a batch (§12.6)
        let (charged, held) = try pair.alice.withStore { store, s in
            (try store.carryQuotaUsed(DeliveryEngine.ownDepositor, nowMs: s.delivery.now).packets,
             try store.carryUsage().packets)
        }
        #expect(charged == 0)  // 4 before the fix
        #expect(held == 4)
        #expect(statements <= 3 * 17)  // 19 a send before the fix (forward secrecy on)
    }
}
