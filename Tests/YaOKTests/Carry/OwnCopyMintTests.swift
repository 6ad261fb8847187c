import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Keys of ours minted at a batch's commit (DeliveryEngine+CarryOwnCopies, `commitOwnCopies`):
/// a contact's first announcement heard while the batch sealed to its long-term key makes
/// the commit mint our first key for it, which its copies announce. The batch then syncs
/// before any copy leaves (docs/ARCHITECTURE.md "Disk syncs"), each ring holds its own
/// copies' records only, and a commit that fails keeps nothing of it.
@Suite(.serialized) struct OwnCopyMintTests {
    /// Alice, her contacts Carol and Dave (cards without a prekey: copies planned to their
    /// long-term keys) and Bob, a stranger she is meeting: what a batch offers leaves to him.
    struct Setup {
        let m: Meeting
        let pipe: MemoryPipe
        let contacts: [Int64]
        /// Each contact's own ring (its key announced to Alice) and announcement.
        var rings: [ReceiverKeyRing] = []
        var announcements: [Announcement] = []

        var alice: Node { m["Alice"] }

        init() throws {
            m = try Meeting(["Alice", "Bob"], callerRunsTimers: true)
            let alice = m["Alice"], bob = m["Bob"]
            contacts = try ["Carol", "Dave"].map { try alice.addContact(card: Identity(name: $0).card.text).id }
            pipe = try m.link("Alice", "Bob") { alice.carryIdle && bob.carryIdle }
            for _ in contacts {
                var ring = ReceiverKeyRing()
                announcements.append(try ring.announcement(nowMs: m.clock.now))
                rings.append(ring)
            }
        }

        /// Alice hears every contact's first announcement (as a routed message from each
        /// would bring it): her rings hold their keys, none of hers yet.
        var hearAnnouncements: @Sendable () throws -> Void {
            { [alice, contacts, announcements] in
                try alice.state.withLock { s in
                    for (contactID, announcement) in zip(contacts, announcements) {
                        var ring = try s.store!.receiverKeyRing(contactID: contactID, cipher: s.keys!.cipher)
                        try ring.acknowledged([], announced: announcement, nowMs: s.delivery.now)
                        try s.store!.saveReceiverKeyRing(ring, contactID: contactID, cipher: s.keys!.cipher)
                    }
                }
            }
        }

        /// Runs `body` between the next batch's sealing and its commit (the lock released).
        func whileSealing(_ body: @escaping @Sendable () -> Void) {
            alice.state.withLock { $0.delivery.ownCopySealing = body }
        }

        /// Alice's ring for `contactID` as the store gives it (its rows, after a reopen).
        func ring(_ contactID: Int64) throws -> ReceiverKeyRing {
            try alice.withUnlocked { store, keys, _ in try store.receiverKeyRing(contactID: contactID, cipher: keys.cipher) }
        }

        /// The messages whose unsettled record (message → key it went to) the ring holds.
        func recorded(_ contactID: Int64) throws -> Set<[UInt8]> { Set(try ring(contactID).pending.map(\.key)) }

        func ownCopies() throws -> [(message: [UInt8], contactID: Int64, packet: CarriedPacket)] {
            try alice.withStore { store, _ in
                try store.db.rows("SELECT message_id FROM carried_own ORDER BY message_id") { $0.blob(0) }.map { id in
                    let own = try #require(try store.ownCarried(messageID: id))
                    return (id, own.contactID, try #require(try store.carriedPacket(own.packetID)))
                }
            }
        }

        func outboxFlags(_ id: MessageID) throws -> Int64? {
            try alice.withDatabase { db in
                try db.rows("SELECT carried FROM outbox WHERE packet_id = ?", [.blob(id.bytes)]) { $0.int64(0) }.first
            }
        }

        func finish() {
            alice.state.withLock { $0.delivery.ownCopySealing = nil }
            pipe.close()
            m.finish()
        }
    }

    /// One batch with copies to two contacts, each minting our first key for it at the
    /// commit: the batch syncs before the first copy's offer leaves, each ring is saved with
    /// its key and exactly its own contact's copies recorded, and each copy is sealed to
    /// its own contact's key.
    @Test func twoContactsMintingAtOneCommitAreBothDurableBeforeACopyLeaves() throws {
        let setup = try Setup()
        defer { setup.finish() }
        let alice = setup.alice, contacts = setup.contacts
        var sent: [Int64: Set<[UInt8]>] = [:]
        for i in 0..<3 {
            for contactID in contacts {
                let id = try alice.send(to: contactID, text: "Copy \(i) to \(contactID)").messageID
                sent[contactID, default: []].insert(id.bytes)
            }
        }
        // The log's syncs (the batch's own: it commits unsynced and syncs after) when Alice's
        // first unit after the batch's sealing leaves on the meeting, read on her event thread
        // as it sends it.
        let syncer = try alice.withDatabase { try $0.logSync() }
        let syncsBefore = Locked<Int?>(nil), syncsAtFirstUnit = Locked<Int?>(nil)
        setup.pipe.drop { [loop = alice.loop] _ in
            guard loop.isLoopThread, syncsBefore.withLock({ $0 }) != nil else { return false }
            syncsAtFirstUnit.withLock { $0 = $0 ?? syncer.syncs }
            return false
        }
        let hear = setup.hearAnnouncements
        setup.whileSealing {
            try? hear()
            syncsBefore.withLock { $0 = syncer.syncs }
        }
        #expect(try alice.makeOwnCopyBatch() == 6)
        #expect(eventually { setup.m["Bob"].carriedCount == 6 })
        let before = try #require(syncsBefore.withLock { $0 })
        #expect(syncsAtFirstUnit.withLock { $0 } == before + 1)

        // Saved with the batch (read from the rows: the process started again).
        try setup.m.reopen("Alice")
        for (contactID, ownRing) in zip(contacts, setup.rings) {
            let ring = try setup.ring(contactID)
            #expect(ring.lastID == 1)
            #expect(try setup.recorded(contactID) == sent[contactID])
            #expect(ring.pending.values.allSatisfy { $0.keyID == ownRing.openingKeys[0].key.id })
        }
        let copies = try setup.ownCopies()
        #expect(copies.count == 6)
        for copy in copies {
            #expect(sent[copy.contactID]?.contains(copy.message) == true)
            for (contactID, ownRing) in zip(contacts, setup.rings) {
                #expect(CarriedSeal.isForwardSecret(copy.packet, receiverKeys: ownRing.openingKeys) == (contactID == copy.contactID))
            }
        }
    }

    /// Where the store fails in the batch after the ring changed: the ring's save (the
    /// minted key's row), or the second copy's record.
    static let failures = [
        "BEFORE INSERT ON receiver_keys",
        "BEFORE INSERT ON carried_own WHEN (SELECT count(*) FROM carried_own) >= 1",
    ]

    /// A commit that fails after its key was minted keeps nothing: the flags are still owed,
    /// no copy is stored or offered, the ring neither holds the key nor records a copy; the
    /// next batch then makes each copy once, minting the key again.
    @Test(arguments: failures) func aCommitThatFailsAfterMintingKeepsNothing(failing at: String) throws {
        let setup = try Setup()
        defer { setup.finish() }
        let alice = setup.alice, carolID = setup.contacts[0]
        let sent = try (0..<2).map { try alice.send(to: carolID, text: "Copy \($0)").messageID }
        let hear = setup.hearAnnouncements
        setup.whileSealing {
            try? hear()
            _ = try? alice.withDatabase { db in
                try db.execute("CREATE TEMP TRIGGER injected_failure \(at) BEGIN SELECT RAISE(ABORT, 'injected'); END")
            }
        }
        #expect(throws: YaOKError.self) { try alice.makeOwnCopyBatch() }
        try alice.withDatabase { try $0.execute("DROP TRIGGER injected_failure") }
        alice.state.withLock { $0.delivery.ownCopySealing = nil }

        setup.m.settle("Alice", "Bob")
        #expect(setup.m["Bob"].carriedCount == 0)
        #expect(alice.carriedCount == 0)
        #expect(try alice.ownCopyRecordCount() == 0)
        for id in sent { #expect(try setup.outboxFlags(id) == Store.outboxOwesCarriedCopy) }
        #expect(try setup.ring(carolID).lastID == 0)
        #expect(try setup.recorded(carolID).isEmpty)

        // The next batch: each copy once, the key minted (again) with it, both offered.
        #expect(try alice.makeOwnCarriedCopies() == 2)
        #expect(try alice.makeOwnCarriedCopies() == 0)
        #expect(eventually { setup.m["Bob"].carriedCount == 2 })
        #expect(alice.carriedCount == 2)
        for id in sent { #expect(try setup.outboxFlags(id) == Store.outboxCarriedCopyTaken) }  // owed no more, made
        try setup.m.reopen("Alice")
        #expect(try setup.ownCopies().map(\.message).sorted { $0.lexicographicallyPrecedes($1) }
                == sent.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
        #expect(try setup.ring(carolID).lastID == 1)
        #expect(try setup.recorded(carolID) == Set(sent.map(\.bytes)))
    }
}
