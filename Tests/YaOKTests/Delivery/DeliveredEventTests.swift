import Testing
@testable import YaOKSupport
@testable import YaOKStore
@testable import YaOKNode

/// The recipient's ack makes a message `delivered`: the engine tells the app with the
/// message it read to check the ack, its status changed, instead of reading the row back
/// and opening its body a second time (for a 10 KB message, 16 KiB decrypted and checked
/// once more, for the event alone).
@Suite struct DeliveredEventTests {
    static let byID = "FROM messages WHERE message_id = ? AND direction = 0"

    @Test func anAckReadsTheMessageOnceAndTheEventIsWhatTheStoreHolds() throws {
        let pair = try Pair()
        defer { pair.close() }
        let events = EventRecorder()
        let pipe = try pair.memoryLink(recording: events)
        defer { pipe.close() }
        try pair.alice.withDatabase { $0.statementLog = [] }
        func delivered() -> [Message] {
            events.all.compactMap { event -> Message? in
                if case .messageStatusChanged(let m) = event, m.status == .delivered { return m }
                return nil
            }
        }
        let id = try pair.alice.send(to: pair.bobID, text: String(repeating: "d", count: 10_000)).messageID
        // Waiting on the event, not polling the status (each poll reads the row).
        #expect(eventually { delivered().count == 1 })
        let reads = try pair.alice.withDatabase { db -> Int in
            defer { db.statementLog = nil }
            return (db.statementLog ?? []).filter { $0.contains(Self.byID) }.count
        }
        // `sent`: the status update's check, which also gives the event its message (2
        // before: the event's read again); `delivered`: the ack's check, from which the
        // status update rewrites the row (2 before: the update read it again; 3 before
        // that: the event's read).
        #expect(reads == 2)
        #expect(delivered().count == 1)
        let stored = try pair.alice.withStore { store, s -> Message? in
            guard let keys = s.keys else { return nil }
            return try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher)
        }
        #expect(stored != nil)
        #expect(delivered().first == stored)
    }

    /// A link's receipt for a message reads only the row's scheduling: its packet was loaded
    /// and checked against the row's MAC when the pump sent it (loading it again meant 16 KiB
    /// read and MACed once more per 10 KB message).
    @Test func aReceiptDoesNotLoadThePacketAgain() throws {
        let pair = try Pair()
        defer { pair.close() }
        let events = EventRecorder()
        let pipe = try pair.memoryLink(recording: events)
        defer { pipe.close() }
        try pair.alice.withDatabase { $0.statementLog = [] }
        let id = try pair.alice.send(to: pair.bobID, text: String(repeating: "r", count: 10_000)).messageID
        #expect(eventually {
            events.all.contains { if case .messageStatusChanged(let m) = $0 { m.messageID == id && m.status == .delivered } else { false } }
        })
        let loads = try pair.alice.withDatabase { db -> Int in
            defer { db.statementLog = nil }
            return (db.statementLog ?? []).filter { $0.contains("packet, state, attempts") && $0.contains("FROM outbox WHERE packet_id") }.count
        }
        #expect(loads == 1)  // the pump's; 2 before (the receipt's too)
    }
}
