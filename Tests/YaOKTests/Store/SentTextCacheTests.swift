import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// A sent message's row is read back as it moves to `sent` and `delivered` and for its own
/// carried copy; its text comes from what was sealed (SentTextCache), not from opening its
/// body again, when the stored body and its row's AD are exactly what was sealed. Anything
/// else in the file is opened, and refused, as before; no text outlives the unlock.
@Suite struct SentTextCacheTests {
    private func bodiesOpened(_ node: Node) throws -> Int {
        try node.withStore { store, _ in store.bodiesOpened }
    }

    private func keptTexts(_ node: Node) throws -> Int {
        try node.withStore { store, _ in store.sentTexts.count }
    }

    @Test func aSentMessageDeliveredAndCopiedOpensNoBody() throws {
        let pair = try Pair()
        defer { pair.close() }
        let events = EventRecorder()
        let pipe = try pair.memoryLink(recording: events)
        defer { pipe.close() }
        let before = try bodiesOpened(pair.alice)
        let text = String(repeating: "k", count: 10_000)
        let id = try pair.alice.send(to: pair.bobID, text: text).messageID
        _ = try pair.alice.makeOwnCopyBatch()
        #expect(eventually {
            events.all.contains { if case .messageStatusChanged(let m) = $0 { m.messageID == id && m.status == .delivered } else { false } }
        })
        let changed = events.all.compactMap { event -> Message? in
            if case .messageStatusChanged(let m) = event, m.messageID == id { return m }
            return nil
        }
        #expect(changed.map(\.status) == [.sent, .delivered])
        #expect(changed.allSatisfy { $0.text == text })
        // The move to `sent`, the ack's read and the copy's plan: three bodies opened before.
        #expect(try bodiesOpened(pair.alice) == before)
        #expect(try keptTexts(pair.alice) == 0)  // delivered: let go
    }

    @Test func aBodyAlteredOrMovedInTheFileIsStillRefused() throws {
        let pair = try Pair()
        defer { pair.close() }
        let first = try pair.alice.send(to: pair.bobID, text: "first").messageID
        let second = try pair.alice.send(to: pair.bobID, text: "second").messageID
        #expect(try pair.alice.outgoingMessage(first).text == "first")
        // The second's body in the first's row: bytes that were sealed, to another row's AD.
        try pair.alice.withDatabase { db in
            try db.query("UPDATE messages SET body = (SELECT body FROM messages WHERE message_id = ?) WHERE message_id = ?",
                         [.blob(second.bytes), .blob(first.bytes)])
        }
        #expect { try pair.alice.outgoingMessage(first) } throws: { ($0 as? YaOKError)?.code == .corruptStore }
        // One byte of the second's own body changed.
        try pair.alice.withDatabase { db in
            try db.query("UPDATE messages SET body = CAST(substr(body, 1, 30) || X'00' || substr(body, 32) AS BLOB) WHERE message_id = ?",
                         [.blob(second.bytes)])
        }
        #expect { try pair.alice.outgoingMessage(second) } throws: { ($0 as? YaOKError)?.code == .corruptStore }
    }

    @Test func lockingForgetsTheTexts() throws {
        let pair = try Pair()
        defer { pair.close() }
        try pair.alice.setCarry(mode: .off)  // no carried copy's plan opening the body meanwhile
        let id = try pair.alice.send(to: pair.bobID, text: "kept until the lock").messageID
        #expect(try keptTexts(pair.alice) == 1)
        try pair.alice.lock()
        try pair.alice.unlock(pin: testPIN)
        // The unlock's work on the event thread (what was held opened, statuses checked
        // against the outbox: it opens the body too) done first: under load it came between
        // the two counts.
        for _ in 0..<2 { try DrainSyncOutsideLockTests.waitForEventThread(pair.alice) }
        #expect(try keptTexts(pair.alice) == 0)
        let before = try bodiesOpened(pair.alice)
        #expect(try pair.alice.outgoingMessage(id).text == "kept until the lock")
        #expect(try bodiesOpened(pair.alice) == before + 1)
    }

    @Test func aRollbackForgetsTheTexts() throws {
        let pair = try Pair()
        defer { pair.close() }
        struct Abort: Error {}
        try pair.alice.withStore { store, s in
            guard let keys = s.keys else { throw YaOKError(.locked) }
            _ = try? store.db.transaction {
                _ = try store.insertMessage(conversation: pair.bobID, messageID: MessageID.random().bytes, direction: .outgoing,
                                            status: .pending, text: "rolled back", senderTimestamp: 1, createdAt: 1,
                                            receivedAt: nil, unread: false, cipher: keys.cipher)
                #expect(store.sentTexts.count == 1)
                throw Abort()
            }
            #expect(store.sentTexts.count == 0)
        }
    }

    @Test func deletingAConversationForgetsItsTexts() throws {
        let pair = try Pair()
        defer { pair.close() }
        _ = try pair.alice.send(to: pair.bobID, text: "deleted with its conversation")
        #expect(try keptTexts(pair.alice) == 1)
        try pair.alice.deleteContact(pair.bobID, deleteMessages: true)
        #expect(try keptTexts(pair.alice) == 0)
    }
}
