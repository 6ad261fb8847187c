import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A send alone in its group commit (one sender at a time) has no savepoint of its own:
/// refused for itself, it rolls the group's whole transaction back instead, which holds
/// nothing else, so it stays all or nothing (issue 20: the savepoint made SQLite copy every
/// page the send changed).
@Suite struct LoneSendTests {
    @Test func aLoneSendOpensNoSavepointOfItsOwn() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.alice.send(to: pair.bobID, text: "warm-up")
        try pair.alice.withDatabase { $0.statementLog = [] }
        try pair.alice.send(to: pair.bobID, text: "hello")
        let savepoints = try pair.alice.withDatabase { db in
            defer { db.statementLog = nil }
            return (db.statementLog ?? []).count { $0.hasPrefix("SAVEPOINT") }
        }
        #expect(savepoints == 0)  // 1 with the ring's own (Store.saveReceiverKeyRing), 2 before that
    }

    /// A batch of two, alone in its group, whose second message cannot be stored (its ID is
    /// taken in the conversation): the call fails and the first message is not stored either.
    @Test func aLoneBatchRefusedForItselfStoresNothing() throws {
        let pair = try Pair()
        defer { pair.close() }
        let node = pair.alice
        try node.send(to: pair.bobID, text: "before")
        let (ticket, planned, keys) = try node.withUnlockedEngine { engine, store, keys in
            let (ticket, planned) = try engine.planSend([(pair.bobID, "first"), (pair.bobID, "second")], store, keys)
            _ = try store.insertMessage(conversation: pair.bobID, messageID: planned[1].messageID.bytes, direction: .outgoing,
                                        status: .pending, text: "in the way", senderTimestamp: 1, createdAt: 1,
                                        receivedAt: nil, unread: false, cipher: keys.cipher)
            return (ticket, planned, keys)
        }
        let sealed = Result { try SealedSend(keys: keys, planned: planned) }
        let outcome = node.sendCommits.commit(ticket: ticket, sealed) { try node.writeSendGroup($0) }
        #expect(throws: YaOKError.self) { try outcome.get() }
        #expect(throws: YaOKError.self) { try node.outgoingMessage(planned[0].messageID) }
        #expect(try node.outbox().allSatisfy { $0.messageID != planned[0].messageID })
        // The rings and caches the rollback dropped are read again: the next send goes on.
        let next = try node.send(to: pair.bobID, text: "after")
        #expect(try node.outgoingMessage(next.messageID).text == "after")
        #expect(try node.texts(pair.bobID) == ["in the way", "before", "after"])  // by sender time
    }
}

/// A send refused for itself inside a larger group leaves the forward-secrecy ring as the
/// others left it (DeliveryEngine+SendPlan: the rings roll back from a checkpoint that
/// copies none of the unsettled sends, where a copy of every one per send was half of a
/// group's time under the node's lock).
@Suite struct GroupRefusalRingTests {
    @Test func aSendRefusedInAGroupLeavesTheRingAsTheOthersLeftIt() throws {
        let pair = try Pair()
        defer { pair.close() }
        let node = pair.alice
        try node.send(to: pair.bobID, text: "before")
        let plans = try node.withUnlockedEngine { engine, store, keys in
            let first = try engine.planSend([(pair.bobID, "first")], store, keys)
            let refused = try engine.planSend([(pair.bobID, "refused a"), (pair.bobID, "refused b")], store, keys)
            let last = try engine.planSend([(pair.bobID, "last")], store, keys)
            // The refused batch's second ID is taken: it fails after its first was told to the ring.
            _ = try store.insertMessage(conversation: pair.bobID, messageID: refused.messages[1].messageID.bytes, direction: .outgoing,
                                        status: .pending, text: "in the way", senderTimestamp: 1, createdAt: 1,
                                        receivedAt: nil, unread: false, cipher: keys.cipher)
            return [first, refused, last].map { ($0.ticket, $0.messages, keys) }
        }
        let sealed = try plans.map { try SealedSend(keys: $0.2, planned: $0.1) }
        let written = try node.writeSendGroup(sealed)
        try written.sync()
        written.announce()
        // The tickets were taken by planning: hand them in so that later sends go on.
        for plan in plans { _ = node.sendCommits.commit(ticket: plan.0, .failure(YaOKError(.internal, "committed by hand"))) { _ in fatalError() } }
        #expect(written.results.map { (try? $0.get()) != nil } == [true, false, true])
        let ids = plans.map { plan in plan.1.map { $0.messageID.bytes } }
        let pending = try node.state.withLock { s in
            try s.store!.receiverKeyRing(contactID: pair.bobID, cipher: s.keys!.cipher).pending
        }
        #expect(pending[ids[0][0]] != nil && pending[ids[2][0]] != nil)
        #expect(pending[ids[1][0]] == nil && pending[ids[1][1]] == nil)
        #expect(try node.texts(pair.bobID) == ["in the way", "before", "first", "last"])
        let next = try node.send(to: pair.bobID, text: "after")
        #expect(try node.outgoingMessage(next.messageID).text == "after")
    }
}

extension GroupRefusalRingTests {
    /// Refused while its ring is out of the group's rings (its stale key choice sealed again
    /// at the commit, and that seal fails): the ring still goes back, with what the group's
    /// earlier sends told it. Put back only at the end of that step, it was lost there, and
    /// the next send read the ring from the rows, which lacked the first send's entry.
    @Test func aSendRefusedWhileItsRingIsOutLeavesTheEarlierSendsInIt() throws {
        let pair = try Pair()
        defer { pair.close() }
        let node = pair.alice
        try node.send(to: pair.bobID, text: "before")
        let plans = try node.withUnlockedEngine { engine, store, keys in
            try [[(pair.bobID, "first")], [(pair.bobID, "refused")], [(pair.bobID, "last")]]
                .map { try engine.planSend($0, store, keys) }
        }
        let keys = try node.withUnlockedEngine { _, _, keys in keys }
        var sealed = try plans.map { try SealedSend(keys: keys, planned: $0.messages) }
        // The refused one planned for the long-term key (gone stale: sealed again under the
        // lock) with a body too long to seal, its packet a valid one's.
        let good = sealed[1].messages[0], plan = good.plan
        let stale = PlannedMessage(text: String(repeating: "x", count: Envelope.maxBodyLength + 1), peer: plan.peer,
                                   messageID: plan.messageID, createdMs: plan.createdMs, choice: .longTerm)
        sealed[1] = SealedSend(keys: keys, messages: [SealedOutgoing(plan: stale, header: good.header, packet: good.packet)])
        let written = try node.writeSendGroup(sealed)
        try written.sync()
        written.announce()
        for plan in plans { _ = node.sendCommits.commit(ticket: plan.ticket, .failure(YaOKError(.internal, "committed by hand"))) { _ in fatalError() } }
        #expect(written.results.map { (try? $0.get()) != nil } == [true, false, true])
        let pending = try node.state.withLock { s in
            try s.store!.receiverKeyRing(contactID: pair.bobID, cipher: s.keys!.cipher).pending
        }
        #expect(pending[plans[0].messages[0].messageID.bytes] != nil)
        #expect(pending[plans[1].messages[0].messageID.bytes] == nil)
        #expect(pending[plans[2].messages[0].messageID.bytes] != nil)
    }
}
