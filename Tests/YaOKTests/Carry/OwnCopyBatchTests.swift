import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The own carried copy is off `Node.send`'s path (docs/PROTOCOL.md §12.6, "Sending"): the
/// send flags its outbox row, the engine makes the copies later in batches (its timer, a
/// meeting's start, an unlock), exactly once, and none for a message already delivered.
/// No timer is armed in these tests: they run the engine's timer work themselves.
@Suite(.serialized) struct OwnCopyBatchTests {
    /// The outbox row's `carried` flags of message `id` (nil: no row).
    func outboxFlags(_ node: Node, _ id: MessageID) throws -> Int64? {
        try node.withDatabase { db in
            try db.rows("SELECT carried FROM outbox WHERE packet_id = ?", [.blob(id.bytes)]) { $0.int64(0) }.first
        }
    }

    func ownRecord(_ node: Node, _ id: MessageID) -> Store.OwnCarried? {
        node.state.withLock { s in (try? s.store?.ownCarried(messageID: id.bytes)) ?? nil }
    }

    @Test func aSendWritesNoCarriedCopyInItsOwnTransaction() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        try m["Alice"].withDatabase { $0.statementLog = [] }
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Copy later")
        let statements = try m["Alice"].withDatabase { db in
            defer { db.statementLog = nil }
            return db.statementLog ?? []
        }
        #expect(!statements.isEmpty)
        #expect(statements.filter { $0.contains("carried_packets") || $0.contains("carried_own") || $0.contains("carry_") } == [])
        #expect(m["Alice"].carriedCount == 0)
        #expect(ownRecord(m["Alice"], sent.messageID) == nil)
        // Owed: flagged on the row the send wrote anyway.
        #expect(try outboxFlags(m["Alice"], sent.messageID) == Store.outboxOwesCarriedCopy)
    }

    @Test func theCopyAppearsAfterTheEnginesBatchOnItsTimer() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let sent = try (0..<3).map { try m["Alice"].send(to: carolAtAlice, text: "Soon carried \($0)") }
        #expect(m["Alice"].carriedCount == 0)
        // The copies' timer is due within the delay of the first send; the delivery timer
        // is not brought forward (each of its runs sweeps and checkpoints).
        let due = m["Alice"].state.withLock { $0.delivery.carry.ownCopies.timerDue }
        #expect(due != nil && due! <= m.clock.now + OwnCopyQueue.delayMs)
        #expect(m["Alice"].state.withLock { $0.delivery.timerDue ?? .max } > m.clock.now + 60_000)
        m.clock.advance(seconds: 1)
        m["Alice"].runOwnCopyTimer()
        #expect(m["Alice"].carriedBudgets == [8, 8, 8])
        for message in sent {
            #expect(ownRecord(m["Alice"], message.messageID)?.contactID == carolAtAlice)
            #expect(try outboxFlags(m["Alice"], message.messageID) == Store.outboxCarriedCopyTaken)  // owed no more, made
        }
    }

    /// No timer runs here: the meeting itself makes the copy before its snapshot.
    @Test func aMeetingThatStartsRightAfterASendOffersIt() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        _ = try m["Alice"].send(to: carolAtAlice, text: "Just sent")
        try m.meet("Alice", "Bob") { m["Bob"].carriedCount == 1 }
        #expect(m["Bob"].carriedBudgets == [4])
        #expect(m["Alice"].carriedBudgets == [4])
    }

    /// A send while a meeting is in progress: the copies' timer is due within the short
    /// delay, and its batch offers the copy on that meeting at once.
    @Test func aSendDuringAMeetingIsOfferedOnItAfterTheShortDelay() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let pipe = try m.link("Alice", "Bob") { m["Alice"].carryIdle && m["Bob"].carryIdle }
        defer { pipe.close() }
        _ = try m["Alice"].send(to: carolAtAlice, text: "While we talk")
        let due = m["Alice"].state.withLock { $0.delivery.carry.ownCopies.timerDue }
        #expect(due != nil && due! <= m.clock.now + OwnCopyQueue.meetingDelayMs)
        #expect(m["Bob"].carriedCount == 0)
        m["Alice"].runOwnCopyTimer()
        #expect(eventually { m["Bob"].carriedCount == 1 })
        #expect(m["Bob"].carriedBudgets == [4])
    }

    /// A send while the only meeting in progress is with its recipient: that link carries
    /// the message routed, and the copy would not be offered there, so its copy is not
    /// hurried (the usual delay; most such messages are delivered before it). A message to
    /// another contact sent meanwhile is: the recipient could carry it.
    @Test func aMeetingWithTheRecipientDoesNotHurryTheCopy() throws {
        let m = try Meeting(["Alice", "Bob", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let (bobAtAlice, _) = try m.befriend("Alice", "Bob")
        let pipe = try m.link("Alice", "Carol") { m["Alice"].carryIdle && m["Carol"].carryIdle }
        defer { pipe.close() }
        _ = try m["Alice"].send(to: carolAtAlice, text: "To the one I am talking to")
        let due = m["Alice"].state.withLock { $0.delivery.carry.ownCopies.timerDue }
        #expect(due != nil && due! > m.clock.now + OwnCopyQueue.meetingDelayMs)
        #expect(due != nil && due! <= m.clock.now + OwnCopyQueue.delayMs)
        _ = try m["Alice"].send(to: bobAtAlice, text: "For Bob, whom Carol may meet")
        let hurried = m["Alice"].state.withLock { $0.delivery.carry.ownCopies.timerDue }
        #expect(hurried != nil && hurried! <= m.clock.now + OwnCopyQueue.meetingDelayMs)
    }

    /// A process that ends between the send and the batch: the copy is made at the next
    /// unlock, once, and a second batch (or a third open) makes no other.
    @Test func aKillBeforeTheBatchStillMakesTheCopyOnce() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Before the crash")
        #expect(m["Alice"].carriedCount == 0)
        try m.reopen("Alice")
        try m["Alice"].makeOwnCarriedCopies()
        #expect(m["Alice"].carriedBudgets == [8])
        #expect(ownRecord(m["Alice"], sent.messageID) != nil)
        // Run twice, and after another restart: still the one copy.
        try m["Alice"].makeOwnCarriedCopies()
        m.clock.advance(seconds: 1)
        m["Alice"].runDeliveryTimers()
        try m.reopen("Alice")
        try m["Alice"].makeOwnCarriedCopies()
        #expect(m["Alice"].carriedBudgets == [8])
        #expect(try m["Alice"].ownCopyRecordCount() == 1)
        // The routed message is unaffected: still on the outbox, pending.
        #expect(try m["Alice"].outbox().map(\.messageID) == [sent.messageID])
    }

    @Test func aBatchRunTwiceMakesNoDuplicate() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        _ = try m["Alice"].send([(carolAtAlice, "one"), (carolAtAlice, "two")])
        #expect(try m["Alice"].makeOwnCarriedCopies() == 2)
        // The same messages queued again (as a scan after a restart would find them, had
        // the flag stayed): the flag, taken with the copy, says nothing is owed.
        let ids = try m["Alice"].outbox().map(\.messageID)
        m["Alice"].state.withLock { $0.delivery.carry.ownCopies.append(ids.map { ($0, carolAtAlice) }, at: 0) }
        #expect(try m["Alice"].makeOwnCarriedCopies() == 2)
        #expect(m["Alice"].carriedBudgets == [8, 8])
        #expect(try m["Alice"].ownCopyRecordCount() == 2)
    }

    /// Acknowledged before the batch (the ack came over a link within the delay): no copy,
    /// no record; the outbox row, and its flag, went with the delivery.
    @Test func aMessageDeliveredBeforeItsCopyGetsNone() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let sent = try m["Alice"].send(to: carolAtAlice, text: "Delivered at once")
        let kept = try m["Alice"].send(to: carolAtAlice, text: "Still on its way")
        try m["Alice"].withUnlockedEngine { engine, store, keys in
            try engine.markDelivered(sent.messageID, contactID: carolAtAlice, store, keys)
        }
        #expect(try m["Alice"].status(of: sent.messageID) == .delivered)
        m.clock.advance(seconds: 1)
        m["Alice"].runDeliveryTimers()
        #expect(ownRecord(m["Alice"], sent.messageID) == nil)
        #expect(ownRecord(m["Alice"], kept.messageID) != nil)
        #expect(m["Alice"].carriedBudgets == [8])
    }
}
