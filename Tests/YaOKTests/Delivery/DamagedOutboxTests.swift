import Testing
import Foundation
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// One outbox row that fails its integrity check (changed in the file, or damaged on disk)
/// must not hold back everything behind it (DeliveryEngine+DamagedOutbox), and a sweep that
/// fails on a store error must not leave the node without its timer.
@Suite struct DamagedOutboxTests {
    /// Alice's node with Bob as a contact and `texts` sent to him while no link was open,
    /// closed; then `sql` run on its file, as someone with the file (or a bad disk) would.
    private static func aliceWithQueued(_ texts: [String], edit sql: String, dirA: TempDir, bob: Node,
                                        clock: TestClock? = nil) throws -> (ids: [MessageID], bobID: Int64) {
        let alice = try makeNode(dirA, name: "Alice", clock: clock)
        let bobID = try alice.addContact(card: bob.profile().text).id
        _ = try bob.addContact(card: alice.profile().text)
        let ids = try texts.map { try alice.send(to: bobID, text: $0).messageID }
        alice.close()
        let db = try Database(path: dirA.path + "/" + Store.fileName)
        defer { db.close() }
        try db.execute(sql)
        return (ids, bobID)
    }

    private static func reopen(_ dir: TempDir, clock: TestClock? = nil) throws -> Node {
        let node = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        try node.unlock(pin: testPIN)
        return node
    }

    @Test func aDamagedRowIsTakenOutAndTheRestIsDelivered() throws {
        let dirA = TempDir(), dirB = TempDir()
        defer { dirA.remove(); dirB.remove() }
        let bob = try makeNode(dirB, name: "Bob")
        defer { bob.close() }
        // The first message's row gets another expiry (a column its MAC covers).
        let (ids, bobID) = try Self.aliceWithQueued(["first", "second", "third"], edit: """
            UPDATE outbox SET expires_ms = expires_ms + 1 WHERE seq = (SELECT min(seq) FROM outbox)
            """, dirA: dirA, bob: bob)
        let alice = try Self.reopen(dirA)
        defer { alice.close() }
        let aliceID = try #require(try bob.contacts().first?.id)

        let pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        // Behind the damaged row, the others go as before.
        #expect(eventually { (try? alice.status(of: ids[2])) == .delivered && (try? alice.status(of: ids[1])) == .delivered })
        #expect(try bob.texts(aliceID).sorted() == ["second", "third"])
        // The damaged one is failed, said so in the security log, and off the outbox.
        #expect(try alice.status(of: ids[0]) == .failed)
        let event = try #require(try alice.securityEvents().first { $0.kind == .outboxTampered })
        #expect(event.detail.contains("\(ids[0])"))
        #expect(event.detail.contains("can be retried"))
        #expect(try alice.outbox().isEmpty)
        // Nothing lost: a retry seals its text afresh, and it arrives once.
        _ = try alice.retry(ids[0])
        #expect(eventually { (try? alice.status(of: ids[0])) == .delivered })
        #expect(try bob.texts(aliceID).sorted() == ["first", "second", "third"])
    }

    /// The row's ID is the file's word: an edit can make a row name a message delivered long
    /// ago (its own row gone). The row is taken out, but that message stays `delivered`: it
    /// became `failed`, under our own MAC, before only waiting messages were marked.
    @Test func aRowNamingADeliveredMessageDoesNotFailIt() throws {
        let dirA = TempDir(), dirB = TempDir()
        defer { dirA.remove(); dirB.remove() }
        let bob = try makeNode(dirB, name: "Bob")
        defer { bob.close() }
        var alice = try makeNode(dirA, name: "Alice")
        let bobID = try alice.addContact(card: bob.profile().text).id
        _ = try bob.addContact(card: alice.profile().text)
        var pipe = try MemoryPipe(alice, bob)
        let delivered = try alice.send(to: bobID, text: "delivered").messageID
        #expect(eventually { (try? alice.status(of: delivered)) == .delivered })
        pipe.close()
        let queued = try alice.send(to: bobID, text: "queued").messageID
        alice.close()
        let hex = delivered.bytes.map { String(format: "%02x", $0) }.joined()
        do {
            let db = try Database(path: dirA.path + "/" + Store.fileName)
            defer { db.close() }
            try db.execute("UPDATE outbox SET packet_id = X'\(hex)'")
        }
        alice = try Self.reopen(dirA)
        defer { alice.close() }
        pipe = try MemoryPipe(alice, bob)
        defer { pipe.close() }
        #expect(eventually { (try? alice.securityEvents().contains { $0.kind == .outboxTampered }) == true })
        #expect(try alice.status(of: delivered) == .delivered)
        #expect(try alice.outbox().isEmpty)
        // The message whose row was renamed lost its row, as if it had been deleted: that
        // the file can do without any check noticing (docs/ABI.md, "Integrity").
        #expect(try alice.status(of: queued) == .pending)
        let event = try #require(try alice.securityEvents().first { $0.kind == .outboxTampered })
        #expect(!event.detail.contains("can be retried"))
    }

    /// Without the keys (a locked node's pump) a damaged row is passed over, not removed:
    /// its message could not be marked `failed`, and would stay `pending` for ever with
    /// nothing left to send. The first read with the keys takes it out. (An unknown kind:
    /// what fails its check without the keys, which check no MAC.)
    @Test func withoutTheKeysADamagedRowIsPassedOver() throws {
        let dirA = TempDir(), dirB = TempDir()
        defer { dirA.remove(); dirB.remove() }
        let bob = try makeNode(dirB, name: "Bob")
        defer { bob.close() }
        let (ids, _) = try Self.aliceWithQueued(["first"], edit: "UPDATE outbox SET kind = 9", dirA: dirA, bob: bob)
        let alice = try Node(dataDirectory: dirA.path, options: fastOptions())
        defer { alice.close() }
        let locked = try alice.withEngine { engine, store, _ in try engine.checkedOutboxRow(ids[0], store, nil) == nil }
        #expect(locked)
        #expect(try alice.withDatabase { db in try db.rows("SELECT count(*) FROM outbox") { $0.int(0) } } == [1])
        try alice.unlock(pin: testPIN)
        #expect(try alice.securityEvents().allSatisfy { $0.kind != .outboxTampered })
        let unlocked = try alice.withEngine { engine, store, keys in try engine.checkedOutboxRow(ids[0], store, keys) == nil }
        #expect(unlocked)
        #expect(try alice.status(of: ids[0]) == .failed)
        #expect(try alice.withDatabase { db in try db.rows("SELECT count(*) FROM outbox") { $0.int(0) } } == [0])
    }

    /// The unlock brings the messages' statuses in line with the outbox before it opens
    /// what arrived while locked: one damaged row (here to Carol, with no link, so that no
    /// pump reaches it) stopped it there, and the held packets stayed unopened, at every
    /// unlock while the row stayed.
    @Test func aDamagedRowDoesNotKeepHeldPacketsUnopened() throws {
        let pair = try Pair()
        defer { pair.close() }
        let carol = try pair.bob.addContact(card: try cardText("Carol")).id
        let toCarol = try pair.bob.send(to: carol, text: "to Carol").messageID
        try pair.bob.withDatabase { db in try db.execute("UPDATE outbox SET expires_ms = expires_ms + 1") }
        let (pipe, sent) = try pair.sendWhileBobIsLocked("while you sleep")
        defer { pipe.close() }
        try pair.bob.unlock(pin: testPIN)
        #expect(eventually { (try? pair.alice.status(of: sent)) == .delivered })
        #expect(try pair.bob.texts(pair.aliceID) == ["while you sleep"])
        // The damaged row was taken out on the way.
        #expect(try pair.bob.status(of: toCarol) == .failed)
        #expect(try pair.bob.securityEvents().filter { $0.kind == .outboxTampered }.count == 1)
    }

    /// An ack held while locked for a message whose row was altered: opening it threw, the
    /// unlock's batch rolled back, and nothing that arrived while locked was opened, at any
    /// unlock while the ack stayed held. The ack now changes nothing for that message (its
    /// row is never authenticated again) and the rest opens.
    @Test func aHeldAckForAnAlteredMessageDoesNotKeepTheRestHeld() throws {
        let pair = try Pair()
        defer { pair.close() }
        // Bob, locked, holds Alice's message: his ack waits for his unlock.
        let (firstLink, sent) = try pair.sendWhileBobIsLocked("altered")
        firstLink.close()
        // Alice locks, and her message's row is altered in the file meanwhile.
        try pair.alice.lock()
        try pair.alice.withDatabase { db in try db.execute("UPDATE messages SET unread = 1 WHERE direction = 0") }
        try pair.bob.unlock(pin: testPIN)
        #expect(eventually { (try? pair.bob.texts(pair.aliceID)) == ["altered"] })  // its ack queued
        let hello = try pair.bob.send(to: pair.aliceID, text: "hello").messageID
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        // Bob's ack (sent first: queued first) and his message, held by Alice.
        #expect(eventually { (try? pair.bob.status(of: hello)) == .sent })
        #expect(try pair.alice.state.withLock { try $0.store!.heldCount() } >= 2)
        try pair.alice.unlock(pin: testPIN)
        #expect(eventually { (try? pair.bob.status(of: hello)) == .delivered })
        #expect(try pair.alice.state.withLock { try $0.store!.heldCount() } == 0)
        #expect(throws: YaOKError(.corruptStore)) { try pair.alice.status(of: sent) }
    }

    @Test func aDamagedExpiredRowDoesNotStopTheSweep() throws {
        let clock = TestClock()
        let dirA = TempDir(), dirB = TempDir()
        defer { dirA.remove(); dirB.remove() }
        let bob = try makeNode(dirB, name: "Bob", clock: clock)
        defer { bob.close() }
        let (ids, _) = try Self.aliceWithQueued(["first", "second"], edit: """
            UPDATE outbox SET expires_ms = expires_ms + 1 WHERE seq = (SELECT min(seq) FROM outbox)
            """, dirA: dirA, bob: bob, clock: clock)
        let alice = try Self.reopen(dirA, clock: clock)
        defer { alice.close() }
        // Both expire with no link; the sweep takes the damaged one out and expires the other.
        clock.advance(seconds: 8 * 86_400)
        alice.runDeliveryTimers()
        #expect(try alice.status(of: ids[0]) == .failed)
        #expect(try alice.status(of: ids[1]) == .failed)
        #expect(try alice.outbox().isEmpty)
        #expect(try alice.securityEvents().filter { $0.kind == .outboxTampered }.count == 1)
    }

    @Test func aSweepThatFailsSetsTheTimerAgain() throws {
        let clock = TestClock()
        let dir = TempDir()
        defer { dir.remove() }
        let alice = try makeNode(dir, clock: clock)
        defer { alice.close() }
        let bob = try alice.addContact(card: try cardText("Bob"))
        let sent = try alice.send(to: bob.id, text: "expires")
        // The sweep's expiry fails on a store error (as a full disk or an I/O error would).
        try alice.withDatabase { db in
            try db.execute("CREATE TEMP TRIGGER injected_failure BEFORE DELETE ON outbox BEGIN SELECT RAISE(ABORT, 'injected'); END")
        }
        clock.advance(seconds: 8 * 86_400)
        let failedAt = try alice.withStore { _, s in s.delivery.now }
        alice.runDeliveryTimers()
        #expect(try alice.status(of: sent.messageID) == .pending)
        let due = try #require(try alice.withStore { _, s in s.delivery.timerDue })
        #expect(due >= failedAt + Node.failedSweepRetryMs)
        // The trouble gone, the timer's next sweep expires it.
        try alice.withDatabase { db in try db.execute("DROP TRIGGER injected_failure") }
        clock.advance(seconds: 10)
        alice.runDeliveryTimers()
        #expect(try alice.status(of: sent.messageID) == .failed)
    }
}

/// A relay's acceptance of a batch that names one message whose row fails its check marks
/// the others `sent`, instead of failing the whole batch (they were posted again at every
/// pump, and never shown `sent`).
@Suite struct DamagedMessageAcceptanceTests {
    @Test func anAcceptanceNamingAnAlteredMessageMarksTheOthersSent() throws {
        let pair = try Pair()
        defer { pair.close() }
        let (carrier, posted) = try pair.alice.recordingCarrier()
        let ids = try ["first", "second"].map { try pair.alice.send(to: pair.bobID, text: $0).messageID }
        #expect(eventually { Set(posted.withLock { $0 }).isSuperset(of: ids) })
        // The first message's row is altered (its status column is under its MAC).
        try pair.alice.withDatabase { db in try db.execute("UPDATE messages SET status = 3 WHERE message_id = X'\(ids[0])'") }
        carrier.accepted(ids)
        #expect(eventually { (try? pair.alice.status(of: ids[1])) == .sent })
    }
}
