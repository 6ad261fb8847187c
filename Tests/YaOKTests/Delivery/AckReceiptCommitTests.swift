import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// A link's receipt for one of our acks (one arrives for every message we receive) changes
/// only the outbox's ack row, which need not survive a crash (a lost removal sends the ack
/// again, and the contact drops the duplicate): it leaves with the next commit that syncs
/// anyway, so the drain that takes the receipt alone syncs nothing (issue 20: every disk sync
/// of a node holds its lock, and each message cost the receiver one more).
@Suite struct AckReceiptCommitTests {
    @Test func aReceiptForAnAckCommitsNothingAndTheAckLeavesWithTheNextWritingCommit() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? pair.alice.contact(pair.bobID).connection) == .online(transport: "memory") })
        let linkID = pipe.initiator.id
        let id = MessageID.random()
        let counts = try pair.alice.withUnlocked { store, keys, s -> [Int] in
            let t = s.delivery.now
            try store.enqueue(.ack, packetID: id, contactID: pair.bobID, packet: [UInt8](repeating: 1, count: 40),
                              now: t, expiresAt: t + 3_600_000)
            s.delivery.inflight.add(id, link: linkID, deadline: t + 60_000, bytes: 40)
            let before = store.db.writingCommits
            // The link's receipt for the ack, as a drain takes it: one batch.
            try s.delivery.batch(store) { engine in try engine.confirmReceipt(id, store, keys) }
            let afterReceipt = store.db.writingCommits - before  // 1 before the fix
            // Still a row, but taken: the pump does not send it again.
            let kept = try store.outboxRow(id) != nil ? 1 : 0
            try s.delivery.pump(store, keys)
            let resent = s.delivery.inflight[id] != nil ? 1 : 0
            // The next batch that writes takes the row off, in its own commit.
            try s.delivery.batch(store) { _ in try store.setSetting("ack_receipt_test", 1) }
            let afterWrite = store.db.writingCommits - before
            let left = try store.outboxRow(id) != nil ? 1 : 0
            return [afterReceipt, kept, resent, afterWrite, left, s.delivery.takenAcks.count]
        }
        #expect(counts == [0, 1, 0, 1, 0, 0])
    }

    @Test func aTakenAckStaysTakenWhenTheBatchThatWouldRemoveItRollsBack() throws {
        struct Failure: Error {}
        let pair = try Pair()
        defer { pair.close() }
        let id = MessageID.random()
        let left = try pair.alice.withUnlocked { store, keys, s -> [Int] in
            let t = s.delivery.now
            try store.enqueue(.ack, packetID: id, contactID: pair.bobID, packet: [UInt8](repeating: 2, count: 40),
                              now: t, expiresAt: t + 3_600_000)
            s.delivery.inflight.add(id, link: 12_345, deadline: t + 60_000, bytes: 40)
            try s.delivery.batch(store) { engine in try engine.confirmReceipt(id, store, keys) }
            #expect(throws: Failure.self) {
                try s.delivery.batch(store) { _ in
                    try store.setSetting("ack_receipt_test", 2)
                    throw Failure()
                }
            }
            let stillTaken = s.delivery.takenAcks.contains(id) ? 1 : 0
            try s.delivery.batch(store) { _ in try store.setSetting("ack_receipt_test", 3) }
            return [stillTaken, try store.outboxRow(id) != nil ? 1 : 0, s.delivery.takenAcks.count]
        }
        #expect(left == [1, 0, 0])
    }
}
