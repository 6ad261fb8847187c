import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Which inbound batches sync the disk (issue 20: each sync on a message's round trip is
/// its latency). A batch syncs before what it decided leaves when it wrote anything that
/// must survive a power loss: a message stored with its ack queued (its receipt and ack
/// must not leave before it is durable), an ack applied (its receipt makes the contact
/// drop the ack, and the same packet sent again would get a receipt only, never a second
/// ack). A link receipt alone (`sent`) syncs nothing: lost with the power, the message is
/// only sent again and delivered once.
@Suite struct DrainSyncTests {
    private func syncs(_ node: Node) throws -> Int { try node.withDatabase { $0.commitSyncs } }

    @Test func aLinkReceiptAloneSyncsNothingWhileAStoredMessageAndAnAppliedAckSyncOnce() throws {
        let pair = try Pair()
        defer { pair.close() }
        let id = try pair.alice.send(to: pair.bobID, text: "hello").messageID
        let packet = try pair.alice.withStore { store, _ in try store.outboxRow(id)?.packet ?? [] }

        // Bob stores it and queues his ack: synced inside the batch, before the section
        // that decided its receipt and ack ends.
        var before = try syncs(pair.bob)
        try pair.bob.injectRouted(packet)
        #expect(try syncs(pair.bob) - before == 1)

        // Alice takes the link's receipt: written, not synced (1 before the change).
        let (synced, written) = try pair.alice.withUnlocked { store, keys, s -> (Int, Int) in
            s.delivery.inflight.add(id, link: 12_345, deadline: s.delivery.now + 60_000, bytes: packet.count, kind: .message)
            let (syncs, commits) = (store.db.commitSyncs, store.db.writingCommits)
            try s.delivery.batch(store) { engine in try engine.confirmReceipt(id, store, keys) }
            return (store.db.commitSyncs - syncs, store.db.writingCommits - commits)
        }
        #expect(written == 1)
        #expect(synced == 0)
        #expect(try pair.alice.status(of: id) == .sent)
        // Every other commit still syncs in its COMMIT: one that must puts synchronous=FULL
        // back before it begins (SynchronousLeftNormalTests).
        let (full, fullSyncs) = try pair.alice.withDatabase { db -> (Bool, Int) in
            let before = db.commitSyncs
            try db.transaction {
                try db.execute("CREATE TABLE drain_sync_probe (x INTEGER)")
                try db.query("INSERT INTO drain_sync_probe VALUES (1)")
            }
            return (db.synchronousFull, db.commitSyncs - before)
        }
        #expect(full && fullSyncs == 1)

        // Bob's ack (and, with forward secrecy, a release-only ack beside it): each applied
        // in a batch that syncs before the receipt for it may leave.
        let acks = try pair.bob.withStore { store, _ in try store.outboxRows(kind: .ack).map(\.packet) }
        #expect(!acks.isEmpty)
        before = try syncs(pair.alice)
        for ack in acks { try pair.alice.injectRouted(ack) }
        #expect(try syncs(pair.alice) - before == acks.count)
        #expect(try pair.alice.status(of: id) == .delivered)
    }

    /// Why an applied ack keeps its sync: the contact answers a packet it took before (a
    /// known digest) with a link receipt only, and acknowledges again only the same message
    /// sealed again (docs/PROTOCOL.md §4.8, §6.2). An ack whose application a power loss
    /// took back after its receipt left would be lost for good, and the message would stay
    /// `sent` until it expired.
    @Test func aPacketTakenBeforeGetsNoSecondAckAndTheSameMessageSealedAgainDoes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let bob = try makeNode(dir, name: "Bob")
        defer { bob.close() }
        let carol = try Identity(name: "Carol")
        let carolID = try bob.addContact(card: carol.card.text).id
        func acks() throws -> Int { try bob.withStore { store, _ in try store.outboxRows(kind: .ack).count } }
        let id = MessageID.random()
        let packet = try bob.receive("once", from: carol, messageID: id)
        let first = try acks()
        #expect(first > 0)
        try bob.injectRouted(packet)
        #expect(try acks() == first)
        try bob.receive("once", from: carol, messageID: id)
        #expect(try acks() > first)
        #expect(try bob.texts(carolID) == ["once"])
    }

    /// A power loss right after the unsynced receipt batch: the node opens on the files as
    /// they were before it (what the disk holds when the commit's log frames never reached
    /// it). The message is `pending` again, is sent again, Bob answers its known bytes with
    /// a receipt, his ack (never confirmed, so still owed) makes it delivered: once, and Bob
    /// holds it once.
    @Test func aReceiptLostWithThePowerIsSentAgainAndDeliveredOnce() throws {
        let pair = try Pair()
        defer { pair.close() }
        let id = try pair.alice.send(to: pair.bobID, text: "hello").messageID
        let packet = try pair.alice.withStore { store, _ in try store.outboxRow(id)?.packet ?? [] }
        try pair.bob.injectRouted(packet)

        // The disk as the unsynced commit leaves it after a power loss: as before it (copied
        // in the same locked section, so that nothing else is written in between).
        let disk = TempDir()
        defer { disk.remove() }
        let synced = try pair.alice.withUnlocked { store, keys, s -> Int in
            try Self.copyFiles(of: pair.dirA.path, to: disk.path)
            s.delivery.inflight.add(id, link: 12_345, deadline: s.delivery.now + 60_000, bytes: packet.count, kind: .message)
            let before = store.db.commitSyncs
            try s.delivery.batch(store) { engine in try engine.confirmReceipt(id, store, keys) }
            return store.db.commitSyncs - before
        }
        #expect(synced == 0)
        #expect(try pair.alice.status(of: id) == .sent)
        pair.alice.close()

        let alice = try Node(dataDirectory: disk.path, options: fastOptions())
        defer { alice.close() }
        try alice.unlock(pin: testPIN)
        #expect(try alice.status(of: id) == .pending)
        let aliceEvents = EventRecorder(), bobEvents = EventRecorder()
        aliceEvents.attach(to: alice)
        bobEvents.attach(to: pair.bob)
        let pipe = try MemoryPipe(alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { (try? alice.status(of: id)) == .delivered })
        // Bob's ack leaves his outbox once the link confirmed it: nothing more is owed.
        #expect(eventually {
            (try? pair.bob.withStore { store, s in try store.outboxRows(kind: .ack).count - s.delivery.takenAcks.count }) == 0
        })
        let delivered = {
            aliceEvents.all.filter {
                if case .messageStatusChanged(let m) = $0 { m.messageID == id && m.status == .delivered } else { false }
            }.count
        }
        // The status is stored before the event thread posts its event: wait for the event.
        #expect(eventually { delivered() >= 1 })
        #expect(delivered() == 1)
        #expect(!bobEvents.all.contains { if case .messageReceived = $0 { true } else { false } })
        #expect(try pair.bob.texts(pair.aliceID) == ["hello"])
    }

    /// The data directory's files as they are now, but the lock and SQLite's shared-memory
    /// index (rebuilt from the log on open).
    private static func copyFiles(of source: String, to destination: String) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: destination, withIntermediateDirectories: true)
        for name in try files.contentsOfDirectory(atPath: source) where !name.hasSuffix("-shm") && !name.hasSuffix(".lock") {
            try files.copyItem(atPath: source + "/" + name, toPath: destination + "/" + name)
        }
    }
}
