import Testing
@testable import YaOKSupport
@testable import YaOKStore
@testable import YaOKNode

/// A message's status change (`sent` at each link receipt, `delivered` at each ack) reads
/// and checks its row and writes it: two statements, no savepoint around one UPDATE
/// (issue 20: four before).
@Suite struct StatusUpdateStatementsTests {
    @Test func aStatusChangeIsOneReadAndOneWrite() throws {
        let pair = try Pair()
        defer { pair.close() }
        let id = try pair.alice.send(to: pair.bobID, text: "hello").messageID
        let statements = try pair.alice.withStore { store, s -> Int in
            let before = store.db.statementsRun
            try store.setStatus(messageID: id.bytes, .sent, now: s.delivery.now)
            return store.db.statementsRun - before
        }
        #expect(statements == 2)
        let message = try pair.alice.outgoingMessage(id)
        #expect(message.status == .sent && message.sentAt != nil)
    }

    /// The engine tells the app the message as the change left it from the row it read to
    /// change it (a receipt's `sent`): the row is not read and checked a second time.
    @Test func theEngineTellsTheNewStatusFromTheSameRead() throws {
        let pair = try Pair()
        defer { pair.close() }
        let id = try pair.alice.send(to: pair.bobID, text: "hello").messageID
        let (told, statements) = try pair.alice.withUnlockedEngine { engine, store, keys in
            let before = store.db.statementsRun
            let told = try engine.setStatus(id, .sent, store, keys)
            return (told, store.db.statementsRun - before)
        }
        #expect(statements == 2)
        let stored = try pair.alice.outgoingMessage(id)
        #expect(told == stored)
        #expect(told?.status == .sent && told?.sentAt != nil && told?.text == "hello")
    }
}
