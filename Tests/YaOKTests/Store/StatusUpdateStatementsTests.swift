import Testing
@testable import YaOKSupport
@testable import YaOKStore
@testable import YaOKNode

/// A message's status change (`sent` at each link receipt, `delivered` at each ack) reads
/// and checks its row and writes it: two statements, no savepoint around one UPDATE
/// (issue 20: four before).
@Suite struct StatusUpdateStatementsTests {
    /// Statements but a `PRAGMA synchronous`: the send's group left the connection at NORMAL
    /// (Database.unsynced), and the first write outside a transaction puts FULL back.
    static func counted(_ log: [String]) -> Int { log.count { !$0.hasPrefix("PRAGMA synchronous") } }

    @Test func aStatusChangeIsOneReadAndOneWrite() throws {
        let pair = try Pair()
        defer { pair.close() }
        let id = try pair.alice.send(to: pair.bobID, text: "hello").messageID
        let statements = try pair.alice.withStore { store, s -> Int in
            store.db.statementLog = []
            defer { store.db.statementLog = nil }
            try store.setStatus(messageID: id.bytes, .sent, now: s.delivery.now)
            return Self.counted(store.db.statementLog ?? [])
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
            store.db.statementLog = []
            defer { store.db.statementLog = nil }
            let told = try engine.setStatus(id, .sent, store, keys)
            return (told, Self.counted(store.db.statementLog ?? []))
        }
        #expect(statements == 2)
        let stored = try pair.alice.outgoingMessage(id)
        #expect(told == stored)
        #expect(told?.status == .sent && told?.sentAt != nil && told?.text == "hello")
    }
}
