import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// Migration 19 (issue 20) rebuilds `outbox` (without AUTOINCREMENT, two indexes fewer, one
/// replaced) and `messages` (one unique index instead of two), and drops carried_own_expiry.
/// A node's real rows, written with the layout of schema 18, come through with their rowids
/// and MACs: the history, its cursors, the outbox and its sending order read as before, and
/// new sends go after.
@Suite struct Migration19Tests {
    /// The tables of schema 18 as its migrations left them (columns added by ALTER at the end).
    private static let schema18 = """
        CREATE TABLE outbox_18 (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            packet_id BLOB NOT NULL UNIQUE CHECK (length(packet_id) = 16),
            kind INTEGER NOT NULL,
            contact_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            packet BLOB NOT NULL,
            state INTEGER NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL,
            mac BLOB,
            carried INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO outbox_18 SELECT * FROM outbox;
        DROP TABLE outbox;
        ALTER TABLE outbox_18 RENAME TO outbox;
        CREATE INDEX outbox_by_contact ON outbox (contact_id, seq);
        CREATE INDEX outbox_due ON outbox (state, next_attempt_ms);
        CREATE INDEX outbox_expiry ON outbox (expires_ms);
        CREATE INDEX outbox_pump_by_contact ON outbox (contact_id, state, seq, next_attempt_ms, expires_ms, packet_id);
        CREATE INDEX outbox_pump ON outbox (state, seq, next_attempt_ms, expires_ms, packet_id);
        CREATE TABLE messages_18 (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            message_id BLOB NOT NULL,
            direction INTEGER NOT NULL,
            status INTEGER NOT NULL,
            sender_ts_ms INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            sent_ms INTEGER,
            received_ms INTEGER,
            unread INTEGER NOT NULL,
            body BLOB NOT NULL,
            mac BLOB,
            UNIQUE (conversation_id, message_id)
        );
        INSERT INTO messages_18 SELECT * FROM messages;
        DROP TABLE messages;
        ALTER TABLE messages_18 RENAME TO messages;
        CREATE INDEX messages_history ON messages (conversation_id, sender_ts_ms, id);
        CREATE INDEX messages_by_id ON messages (message_id);
        CREATE INDEX messages_unread ON messages (conversation_id) WHERE unread = 1;
        CREATE INDEX carried_own_expiry ON carried_own (expires_ms);
        PRAGMA user_version = 18;
        """

    private static func indexes(_ db: Database, _ table: String) throws -> [String] {
        try db.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? ORDER BY name", [.text(table)]) {
            $0.text(0)
        }
    }

    @Test func aNodesRowsComeThroughMigration19() throws {
        let dirA = TempDir(), dirB = TempDir()
        defer { dirA.remove(); dirB.remove() }
        var alice = try makeNode(dirA, name: "Alice")
        let bob = try makeNode(dirB, name: "Bob")
        defer { bob.close() }
        let bobID = try alice.addContact(card: bob.profile().text).id
        try alice.setCarry(mode: .off)
        var sent: [MessageID] = []
        for i in 0..<5 { sent.append(try alice.send(to: bobID, text: "message \(i)").messageID) }
        // The last row of the outbox goes: AUTOINCREMENT kept its seq from being used again.
        try alice.withStore { store, _ in try store.removeOutbox(sent[4]) }
        let outbox = try alice.outbox()
        let page = try alice.history(bobID, limit: 2)
        let older = try alice.history(bobID, before: page.olderCursor, limit: 10)
        let seqs = try alice.withStore { store, _ in try store.outboxRows().map(\.seq) }
        alice.close()

        let db = try Database(path: dirA.path + "/" + Store.fileName)
        try db.execute(Self.schema18)
        #expect(try db.rows("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") { $0.int(0) } == [4])
        db.close()

        alice = try Node(dataDirectory: dirA.path, options: fastOptions())
        defer { alice.close() }
        try alice.unlock(pin: testPIN)
        // Every row reads (its MAC checks), in the same order, the cursors still valid.
        #expect(try alice.outbox() == outbox)
        #expect(try alice.history(bobID, limit: 2) == page)
        #expect(try alice.history(bobID, before: page.olderCursor, limit: 10) == older)
        #expect(try alice.withStore { store, _ in try store.outboxRows().map(\.seq) } == seqs)
        #expect(try alice.status(of: sent[0]) == .pending)
        // A new send goes after the others (a seq freed at the end may be taken again: it
        // is an order, kept nowhere else).
        let next = try alice.send(to: bobID, text: "after").messageID
        #expect(try alice.outbox().map(\.messageID) == outbox.map(\.messageID) + [next])
        try alice.withDatabase { db in
            #expect(try db.userVersion == 19)
            #expect(try db.rows("SELECT count(*) FROM sqlite_sequence WHERE name = 'outbox'") { $0.int(0) } == [0])
            #expect(try Self.indexes(db, "outbox") == ["outbox_expiry", "outbox_pump", "outbox_pump_by_contact",
                                                      "outbox_timers", "sqlite_autoindex_outbox_1"])
            #expect(try Self.indexes(db, "messages") == ["messages_history", "messages_unread", "sqlite_autoindex_messages_1"])
            #expect(try !Self.indexes(db, "carried_own").contains("carried_own_expiry"))
            var integrity: [String] = []
            try db.query("PRAGMA integrity_check") { integrity.append($0.text(0)) }
            #expect(integrity == ["ok"])
        }
        // A retransmission is still refused by (message ID, conversation).
        try alice.withStore { store, s in
            let cipher = try #require(s.keys?.cipher)
            #expect(try store.insertMessage(conversation: bobID, messageID: sent[0].bytes, direction: .outgoing, status: .pending,
                                            text: "again", senderTimestamp: 0, createdAt: 0, receivedAt: nil, unread: false,
                                            cipher: cipher) == nil)
        }
    }
}
