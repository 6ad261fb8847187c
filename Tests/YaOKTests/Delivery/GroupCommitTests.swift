import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// `Node.send` seals outside the node's lock and commits in groups (SendCommitQueue,
/// DeliveryEngine+SendPlan): concurrent senders each get durable rows, exactly once, in the
/// order each sent them, while the inbound drain runs; a group whose commit fails tells
/// every caller so, and stores nothing. (The threads share results through `Locked`, not
/// `Mutex`, whose locking ThreadSanitizer cannot see: the TSan stage runs this suite.)
@Suite struct GroupCommitTests {
    struct Failure: Error {}

    @Test func concurrentSendersGetDurableRowsExactlyOnceInOrderWhileADrainRuns() throws {
        let pair = try Pair()
        defer { pair.close() }
        let pipe = try MemoryPipe(pair.alice, pair.bob)
        defer { pipe.close() }
        #expect(eventually { pipe.initiator.isAuthenticated && pipe.responder.isAuthenticated })
        let threads = 4, each = 30
        let returned = Locked<[[Message]]>(Array(repeating: [], count: threads))
        let failures = Locked<[String]>([])
        // Bob keeps Alice's inbound drain busy meanwhile.
        let incoming = Thread {
            for i in 0..<60 { _ = try? pair.bob.send(to: pair.aliceID, text: "from Bob \(i)") }
        }
        let senders = (0..<threads).map { t in
            Thread {
                var i = 0
                while i < each {
                    do {
                        // Thread 3 sends batches of 3 (a batch is one send: one ticket).
                        let batch = t == 3 ? (i..<i + 3).map { (pair.bobID, "t\(t) m\($0)") } : [(pair.bobID, "t\(t) m\(i)")]
                        let messages = try pair.alice.send(batch)
                        returned.withLock { $0[t] += messages }
                        i += batch.count
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                        return
                    }
                }
            }
        }
        incoming.start()
        senders.forEach { $0.start() }
        #expect(eventually { senders.allSatisfy(\.isFinished) && incoming.isFinished })
        #expect(failures.withLock { $0 } == [])
        let perThread = returned.withLock { $0 }
        for (t, messages) in perThread.enumerated() {
            // Each thread's messages came back in the order sent, with rising sender times.
            #expect(messages.map(\.text) == (0..<each).map { "t\(t) m\($0)" })
            #expect(zip(messages, messages.dropFirst()).allSatisfy { $0.senderTimestamp < $1.senderTimestamp })
        }
        // Stored in ticket order: row order and outbox order follow the sender times.
        let (rowTimes, outboxIDs) = try pair.alice.withStore { store, _ in
            (try store.db.rows("SELECT sender_ts_ms FROM messages WHERE direction = ? ORDER BY id",
                               [.int(Int64(MessageDirection.outgoing.rawValue))]) { $0.int64(0) },
             try store.db.rows("SELECT packet_id FROM outbox WHERE kind = ? ORDER BY seq",
                               [.int(Int64(OutboxRow.Kind.message.rawValue))]) { $0.blob(0) })
        }
        #expect(rowTimes == rowTimes.sorted() && Set(rowTimes).count == rowTimes.count)
        let byTime = perThread.joined().sorted { $0.senderTimestamp < $1.senderTimestamp }.map(\.messageID.bytes)
        #expect(outboxIDs.isEmpty || byTime.filter(Set(outboxIDs).contains) == outboxIDs)
        // Exactly once on both sides, and Alice got all of Bob's.
        let sentTexts = perThread.joined().map(\.text)
        let received = { (try? pair.bob.history(pair.aliceID, limit: 1000).messages.filter { $0.direction == .incoming }.map(\.text)) ?? [] }
        #expect(eventually { received().count == sentTexts.count })
        #expect(received().sorted() == sentTexts.sorted())
        #expect(eventually { ((try? pair.alice.texts(pair.bobID)) ?? []).count == sentTexts.count + 60 })
        // Durable: what the calls returned is in the store after a reopen.
        pipe.close()
        pair.alice.close()
        let reopened = try Node(dataDirectory: pair.dirA.path, options: fastOptions())
        defer { reopened.close() }
        try reopened.unlock(pin: testPIN)
        let outgoing = try reopened.history(pair.bobID, limit: 1000).messages.filter { $0.direction == .outgoing }
        #expect(outgoing.count == threads * each)
        #expect(Set(outgoing.map(\.messageID)) == Set(perThread.joined().map(\.messageID)))
    }

    /// Lines up a group of four sends behind a ticket held back, then fails its commit:
    /// every caller gets the error, none a message, and nothing is stored.
    @Test func aFailedGroupCommitFailsEveryCallerAndStoresNothing() throws {
        let pair = try Pair()
        defer { pair.close() }
        let outcomes = try lineUpGroup(pair, fault: Failure())
        #expect(outcomes.count == 4)
        #expect(outcomes.allSatisfy { $0 == "failed" })
        #expect(try pair.alice.texts(pair.bobID) == [])
        #expect(try pair.alice.outbox().isEmpty)
        // The next group commits normally.
        let later = try lineUpGroup(pair, fault: nil)
        #expect(later.allSatisfy { $0 == "sent" })
        #expect(try pair.alice.texts(pair.bobID).count == 4)
        #expect(try pair.alice.outbox().count == 4)
    }

    /// Takes a ticket by planning a send by hand, lets three threads send behind it (they
    /// wait: tickets commit in order), then hands it in: this thread commits all four in one
    /// group. Returns each send's outcome, "sent" or "failed".
    private func lineUpGroup(_ pair: Pair, fault: (any Error)?) throws -> [String] {
        let node = pair.alice
        try node.withStore { _, s in s.delivery.sendCommitFault = fault }
        defer { _ = try? node.withStore { _, s in s.delivery.sendCommitFault = nil } }
        let (ticket, planned, keys) = try node.withUnlockedEngine { engine, store, keys in
            let (ticket, planned) = try engine.planSend([(pair.bobID, "held back")], store, keys)
            return (ticket, planned, keys)
        }
        let outcomes = Locked<[String]>([])
        let threads = (0..<3).map { t in
            Thread {
                let outcome = (try? pair.alice.send(to: pair.bobID, text: "behind \(t)")) == nil ? "failed" : "sent"
                outcomes.withLock { $0.append(outcome) }
            }
        }
        threads.forEach { $0.start() }
        #expect(eventually { node.sendCommits.waiting == 3 })
        let sealed = Result { try SealedSend(keys: keys, planned: planned) }
        let mine = node.sendCommits.commit(ticket: ticket, sealed) { group in
            #expect(group.count == 4)
            return try node.writeSendGroup(group)
        }
        #expect(eventually { threads.allSatisfy(\.isFinished) })
        return outcomes.withLock { $0 } + [(try? mine.get()) == nil ? "failed" : "sent"]
    }
}

/// The key choice made when a send is planned is checked again at its commit: a receiver
/// key announced in between (§13.5) wins, as it would have had the send run at once.
@Suite struct GroupCommitKeyChoiceTests {
    @Test func aKeyAnnouncedBetweenPlanAndCommitIsTheOneSealedTo() throws {
        let pair = try Pair()
        defer { pair.close() }
        let alice = pair.alice
        // Planned while Alice knows no receiver key Bob announced: his card's prekey
        // (§13.4: a key id with the top bit set), or the long-term key for a card without one.
        let (ticket, planned, keys) = try alice.withUnlocked { store, keys, s in
            let (ticket, planned) = try s.delivery.planSend([(pair.bobID, "planned before the key")], store, keys)
            return (ticket, planned, keys)
        }
        #expect(planned.count == 1)
        var plannedKey: ReceiverKey?
        if case .receiver(let key, _) = planned.first?.choice { plannedKey = key }
        #expect(plannedKey?.isPrekey ?? true)
        let sealed = Result { try SealedSend(keys: keys, planned: planned) }
        // Meanwhile Bob writes twice (a contact's prekey is not an announced key): Alice's ack of the first tells him her key, so his
        // second is sealed to it and announces his.
        let pipe = try MemoryPipe(alice, pair.bob)
        defer { pipe.close() }
        _ = try pair.bob.send(to: pair.aliceID, text: "one")
        #expect(eventually { (try? pair.bob.state.withLock { s in try s.store!.receiverKeyRing(contactID: pair.aliceID, cipher: s.keys!.cipher).peerKey }).map { !$0.isPrekey } == true })
        _ = try pair.bob.send(to: pair.aliceID, text: "two")
        let bobKey = { try? alice.state.withLock { s in try s.store!.receiverKeyRing(contactID: pair.bobID, cipher: s.keys!.cipher).peerKey }.flatMap { $0.isPrekey ? nil : $0 } }
        #expect(eventually { bobKey() != nil })
        // The commit finds the choice stale and seals to Bob's key instead.
        let plannedID = try #require(planned.first?.messageID)
        let stored = Locked<OutboxRow?>(nil)
        let messages = try alice.sendCommits.commit(ticket: ticket, sealed) { group in
            let written = try alice.writeSendGroup(group)
            // Before the group's sync and events (its packet out, then acked): the outbox row
            // as written, its MAC checked on the way.
            stored.withLock { $0 = try? alice.withStore { store, _ in try store.outboxRow(plannedID) } }
            return written
        }.get()
        let id = try #require(messages.first?.messageID)
        #expect(alice.lockStatistics.reseals == 1)
        // The packet sealed again is the one stored, under a MAC of its own.
        let packet = try #require(stored.withLock { $0 }?.packet)
        #expect(packet != (try sealed.get().messages.first?.packet))
        let (longTerm, pendingKey) = try alice.state.withLock { s in
            (try s.store!.longTermSeals(contactID: pair.bobID, cipher: s.keys!.cipher),
             try s.store!.receiverKeyRing(contactID: pair.bobID, cipher: s.keys!.cipher).pending[id.bytes]?.keyID)
        }
        #expect(longTerm == 0)
        #expect(bobKey() != nil && bobKey()?.id != plannedKey?.id)
        let delivered = try alice.status(of: id) == .delivered
        #expect(pendingKey == bobKey()?.id || (pendingKey == nil && delivered))
        #expect(eventually { ((try? pair.bob.texts(pair.aliceID)) ?? []).contains("planned before the key") })
    }
}

/// The static-static secret cache (Identity+StaticShared): the same MAC as without it, and
/// bounded whatever keys it is asked about.
@Suite struct StaticSharedCacheTests {
    @Test func cachedSecretsGiveTheSameAuthenticatorAndStayBounded() throws {
        let alice = try Identity(name: "Alice"), bob = try Identity(name: "Bob")
        let ad = [UInt8](repeating: 1, count: 40), body = [UInt8](repeating: 2, count: 100)
        let direct = try alice.encryptionSecret.withUnsafeBytes {
            try Envelope.authenticator(staticSecret: $0, peerKey: bob.publicIdentity.encryptionKey,
                                       senderKey: alice.publicIdentity.encryptionKey,
                                       recipientKey: bob.publicIdentity.encryptionKey, ad: ad, body: body[...])
        }
        for _ in 0..<2 {  // made, then from the cache
            #expect(try Envelope.authenticator(alice, peerKey: bob.publicIdentity.encryptionKey,
                                               senderKey: alice.publicIdentity.encryptionKey,
                                               recipientKey: bob.publicIdentity.encryptionKey, ad: ad, body: body[...]) == direct)
        }
        for _ in 0...Identity.staticSharedCap {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
            _ = try? alice.withStaticShared(key) { $0.count }
        }
        #expect(alice.staticSharedCache.withLock { $0.count } <= Identity.staticSharedCap)
    }
}

/// The group commit syncs the disk itself, after the node's lock is released
/// (`Database.unsynced`, LogSync): one sync per group, and every other commit syncs inside
/// its own COMMIT (`synchronous=FULL`, put back before it begins: the connection stays at
/// NORMAL between groups), whether the group committed or failed.
@Suite struct GroupCommitSyncTests {
    struct Failure: Error {}

    private func synchronous(_ node: Node) throws -> Int {
        try node.withDatabase { db in try db.rows("PRAGMA synchronous") { $0.int(0) }.first ?? -1 }
    }

    /// Whether a commit outside a group (a contact's settings, a receipt…) runs at FULL
    /// and syncs inside its COMMIT.
    private func anotherCommitSyncsInItsOwn(_ node: Node) throws -> Bool {
        try node.withDatabase { db in
            let syncs = db.commitSyncs
            try db.transaction {
                try db.execute("CREATE TABLE IF NOT EXISTS probe(x)")
                try db.query("INSERT INTO probe VALUES (1)")
            }
            return db.synchronousFull && db.commitSyncs >= syncs + 1
        }
    }

    @Test func eachGroupSyncsOnceAndEveryOtherCommitStillSyncs() throws {
        let pair = try Pair()
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: "first")
        let syncer = try pair.alice.withDatabase { try $0.logSync() }
        let before = syncer.syncs
        for i in 0..<5 { _ = try pair.alice.send(to: pair.bobID, text: "one at a time \(i)") }
        #expect(syncer.syncs - before == 5)
        // Another commit syncs inside its own COMMIT, not through the groups' LogSync.
        #expect(try anotherCommitSyncsInItsOwn(pair.alice))
        #expect(try synchronous(pair.alice) == 2)  // FULL
        #expect(syncer.syncs - before == 5)
    }

    @Test func aFailedGroupLeavesEveryOtherCommitSyncing() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.alice.withStore { _, s in s.delivery.sendCommitFault = Failure() }
        #expect((try? pair.alice.send(to: pair.bobID, text: "refused")) == nil)
        try pair.alice.withStore { _, s in s.delivery.sendCommitFault = nil }
        #expect(try anotherCommitSyncsInItsOwn(pair.alice))
        #expect(try pair.alice.texts(pair.bobID) == [])
    }

    @Test func unsyncedCommitsCannotBeginInsideATransaction() throws {
        let pair = try Pair()
        defer { pair.close() }
        let refused = try pair.alice.withDatabase { db in
            try db.transaction { (try? db.unsynced { 1 }) == nil }
        }
        #expect(refused)
        #expect(try synchronous(pair.alice) == 2)
    }
}
