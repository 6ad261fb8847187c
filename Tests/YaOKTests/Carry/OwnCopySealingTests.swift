import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A timer's batch of own carried copies seals with the node's lock released
/// (DeliveryEngine+CarryOwnCopies): what the app does meanwhile is not held up, and what it
/// changes meanwhile is honoured by the commit.
@Suite(.serialized) struct OwnCopySealingTests {
    /// Runs `body` on another thread while `node`'s next batch is between sealing and
    /// committing, and waits for it at most 10 s: a body that needs the node's lock, run
    /// while the batch still held it, would not finish in time (and finishes later).
    /// Returns whether it finished in time.
    func whileSealing(_ node: Node, _ body: @escaping @Sendable () -> Void) -> Locked<Bool> {
        let finished = Locked(false)
        node.state.withLock { s in
            s.delivery.ownCopySealing = {
                let done = DispatchSemaphore(value: 0)
                Thread {
                    body()
                    done.signal()
                }.start()
                finished.withLock { $0 = done.wait(timeout: .now() + 10) == .success }
            }
        }
        return finished
    }

    @Test func aSendWhileABatchSealsIsNotKeptWaiting() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        for i in 0..<3 { _ = try alice.send(to: carolAtAlice, text: "Carried later \(i)") }
        let sentMeanwhile = Locked(false)
        let finished = whileSealing(alice) {
            if (try? alice.send(to: carolAtAlice, text: "Sent while the copies seal")) != nil {
                sentMeanwhile.withLock { $0 = true }
            }
        }
        m.clock.advance(seconds: 1)
        alice.runOwnCopyTimer()
        #expect(finished.withLock { $0 })
        #expect(sentMeanwhile.withLock { $0 })
        // The batch made its three; the message sent meanwhile owes its own, made next.
        #expect(alice.carriedBudgets == [8, 8, 8])
        alice.state.withLock { $0.delivery.ownCopySealing = nil }
        m.clock.advance(seconds: 1)
        alice.runOwnCopyTimer()
        #expect(alice.carriedBudgets == [8, 8, 8, 8])
        #expect(try alice.ownCopyRecordCount() == 4)
    }

    /// Delivered after the batch planned its copy, before it committed: no copy, no record.
    @Test func aMessageDeliveredWhileItsCopySealsGetsNone() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        let delivered = try alice.send(to: carolAtAlice, text: "Acknowledged meanwhile")
        let kept = try alice.send(to: carolAtAlice, text: "Still on its way")
        let finished = whileSealing(alice) {
            _ = try? alice.withUnlockedEngine { engine, store, keys in
                try engine.markDelivered(delivered.messageID, contactID: carolAtAlice, store, keys)
            }
        }
        m.clock.advance(seconds: 1)
        alice.runOwnCopyTimer()
        #expect(finished.withLock { $0 })
        #expect(try alice.status(of: delivered.messageID) == .delivered)
        #expect(alice.carriedBudgets == [8])
        #expect(alice.state.withLock { s in (try? s.store?.ownCarried(messageID: delivered.messageID.bytes)) ?? nil } == nil)
        #expect(alice.state.withLock { s in (try? s.store?.ownCarried(messageID: kept.messageID.bytes)) ?? nil } != nil)
    }

    /// Locked after the batch planned, before it committed: nothing is stored with keys the
    /// node no longer holds, and the copies come once after the unlock.
    @Test func aLockWhileABatchSealsLeavesTheCopiesOwed() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        _ = try alice.send([(carolAtAlice, "one"), (carolAtAlice, "two")])
        let finished = whileSealing(alice) { try? alice.lock() }
        m.clock.advance(seconds: 1)
        alice.runOwnCopyTimer()
        #expect(finished.withLock { $0 })
        #expect(alice.carriedCount == 0)
        alice.state.withLock { $0.delivery.ownCopySealing = nil }
        try alice.unlock(pin: testPIN)
        try alice.makeOwnCarriedCopies()
        #expect(alice.carriedBudgets == [8, 8])
        #expect(try alice.ownCopyRecordCount() == 2)
    }

    /// The key a copy was planned for is checked again at its commit (§13.6: sealed as a
    /// send at that moment would seal): a receiver key the contact announced in between
    /// wins over the card's prekey the batch planned with.
    @Test func aKeyAnnouncedWhileABatchSealsIsTheOneSealedTo() throws {
        let pair = try Pair()
        defer { pair.close() }
        let alice = pair.alice
        let sent = try alice.send(to: pair.bobID, text: "Copied after the key")
        // Bob's announcement (his first key for Alice), heard by Alice while the batch seals.
        let announcement = try pair.bob.state.withLock { s -> Announcement in
            var ring = try s.store!.receiverKeyRing(contactID: pair.aliceID, cipher: s.keys!.cipher)
            let a = try ring.announcement(nowMs: s.delivery.now)
            try s.store!.saveReceiverKeyRing(ring, contactID: pair.aliceID, cipher: s.keys!.cipher)
            return a
        }
        // Planned (in the batch below) to his card's prekey, which his ring's keys do not hold.
        let finished = whileSealing(alice) {
            try? alice.state.withLock { s in
                var ring = try s.store!.receiverKeyRing(contactID: pair.bobID, cipher: s.keys!.cipher)
                try ring.acknowledged([], announced: announcement, nowMs: s.delivery.now)
                try s.store!.saveReceiverKeyRing(ring, contactID: pair.bobID, cipher: s.keys!.cipher)
            }
        }
        #expect(try alice.makeOwnCopyBatch() == 1)
        #expect(finished.withLock { $0 })
        let packet = try alice.state.withLock { s -> CarriedPacket? in
            guard let own = try s.store!.ownCarried(messageID: sent.messageID.bytes) else { return nil }
            return try s.store!.carriedPacket(own.packetID)
        }
        let bobKeys = try pair.bob.state.withLock { s in
            try s.store!.receiverKeyRing(contactID: pair.aliceID, cipher: s.keys!.cipher).openingKeys
        }
        #expect(try CarriedSeal.isForwardSecret(#require(packet), receiverKeys: bobKeys))
    }

    /// A key of ours minted at the commit (the contact's first announcement heard while the
    /// batch sealed to its long-term key, no key of ours for it yet) is announced by the
    /// copy, which may be offered at once on a meeting in progress: that batch syncs, or a
    /// power loss would forget a key announced, and the next one minted would reuse its ID.
    @Test func aKeyMintedAtTheCommitIsDurableBeforeTheCopyLeaves() throws {
        let m = try Meeting(["Alice"], callerRunsTimers: true)
        defer { m.finish() }
        let alice = m["Alice"]
        let carol = try Identity(name: "Carol")
        let carolID = try alice.addContact(card: carol.card.text).id  // no prekey: the long-term key
        // Two copies in the batch: the key is minted for the first, and the ring saved once
        // after the second must still sync.
        _ = try alice.send(to: carolID, text: "Copied after her first key")
        _ = try alice.send(to: carolID, text: "And a second")
        var carolRing = ReceiverKeyRing()
        let announcement = try carolRing.announcement(nowMs: m.clock.now)
        let syncsBeforeCommit = Locked(-1), mintedBefore = Locked<UInt32>(99)
        let finished = whileSealing(alice) {
            try? alice.state.withLock { s in
                var ring = try s.store!.receiverKeyRing(contactID: carolID, cipher: s.keys!.cipher)
                mintedBefore.withLock { $0 = ring.lastID }
                try ring.acknowledged([], announced: announcement, nowMs: s.delivery.now)
                try s.store!.saveReceiverKeyRing(ring, contactID: carolID, cipher: s.keys!.cipher)
                syncsBeforeCommit.withLock { $0 = s.store!.db.commitSyncs }
            }
        }
        #expect(try alice.makeOwnCopyBatch() == 2)
        #expect(finished.withLock { $0 })
        let (lastID, syncs) = try alice.withUnlocked { store, keys, _ in
            (try store.receiverKeyRing(contactID: carolID, cipher: keys.cipher).lastID, store.db.commitSyncs)
        }
        #expect(mintedBefore.withLock { $0 } == 0)
        #expect(lastID == 1)
        #expect(syncs == syncsBeforeCommit.withLock { $0 } + 1)
    }

    /// A batch of copies is loss-tolerant: it syncs nothing (the flags come back with a
    /// power loss that takes it, and the copies are made again).
    @Test func aBatchOfCopiesSyncsNothing() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        _ = try alice.send([(carolAtAlice, "one"), (carolAtAlice, "two")])
        let before = try alice.withDatabase { ($0.commitSyncs, $0.writingCommits) }
        #expect(try alice.makeOwnCopyBatch() == 2)
        let after = try alice.withDatabase { ($0.commitSyncs, $0.writingCommits) }
        #expect(alice.carriedBudgets == [8, 8])
        #expect(after.1 == before.1 + 1)
        #expect(after.0 == before.0)
    }

    /// A copy that cannot be sealed for itself is none (its flag is taken, or it would fail
    /// every batch); a failure of the node's (memory) fails the whole batch, nothing taken.
    @Test func onlyAFailureOfTheNodesFailsTheBatch() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        _ = try alice.send([(carolAtAlice, "one"), (carolAtAlice, "two")])
        let batch = try #require(try alice.withUnlockedEngine { engine, store, keys in try engine.planOwnCopies(store, keys) })
        #expect(batch.planned.count == 2)
        let first = batch.planned[0].content.id
        let refusedOne = try batch.seal { plan, identity in
            guard plan.content.id != first else { throw YaOKError(.invalidArgument, "this message only") }
            return try DeliveryEngine.sealCarried(plan.content, as: plan.choice, to: plan.peer, by: identity)
        }
        #expect(refusedOne.map { $0 == nil } == [true, false])
        #expect(throws: YaOKError.self) {
            try batch.seal { _, _ in throw YaOKError(.outOfMemory, "sodium_malloc failed") }
        }
    }
}

/// A batch's copies to one contact record themselves in the contact's key ring read once and
/// saved once at the batch's end, not read, opened, sealed and written again per copy (which
/// held the node's lock ~8 ms for a batch of 256).
@Suite struct OwnCopyRingSaveTests {
    @Test func aBatchSavesEachContactsRingOnce() throws {
        let pair = try Pair()
        defer { pair.close() }
        let alice = pair.alice
        for i in 0..<5 { _ = try alice.send(to: pair.bobID, text: "Copied \(i)") }
        try alice.withDatabase { $0.statementLog = [] }
        #expect(try alice.makeOwnCopyBatch() == 5)
        let statements = try alice.withDatabase { db in
            defer { db.statementLog = nil }
            return db.statementLog ?? []
        }
        // No savepoint: the ring's save had one (a save per copy made it 5 more), and each
        // copy's take one of its own (`Store.takeOwnCarried` has none).
        #expect(statements.filter { $0.hasPrefix("SAVEPOINT") }.count == 0)
        #expect(statements.filter { $0.hasPrefix("INSERT OR REPLACE INTO carried_own") }.count == 5)
    }

    /// A timer's batch makes at most `OwnCopyQueue.batchLimit` (32) copies, the rest at the
    /// next turn, due at once: the node's lock is held for 32 copies' plan and commit at a
    /// time (~1 ms), not 256's (~8 ms, every sender waiting).
    @Test func aTimersBatchMakesAtMost32CopiesAndTheRestNext() throws {
        let m = try Meeting(["Alice", "Carol"], callerRunsTimers: true)
        defer { m.finish() }
        let (carolAtAlice, _) = try m.befriend("Alice", "Carol")
        let alice = m["Alice"]
        _ = try alice.send((0..<40).map { (carolAtAlice, "Backlog \($0)") })
        m.clock.advance(seconds: 1)
        alice.runOwnCopyTimer()
        #expect(try alice.ownCopyRecordCount() == 32)
        let due = try alice.withEngine { engine, _, _ in engine.carry.ownCopies.timerDue }
        #expect(try #require(due) <= m.clock.now)
        alice.runOwnCopyTimer()
        #expect(try alice.ownCopyRecordCount() == 40)
    }
}
