import Testing
@testable import YaOKSupport
@testable import YaOKWire
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
