import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// Every earlier schema version, with rows of that version, migrates to the latest one
/// without losing them.
@Suite struct MigrationTests {
    /// Rows that a store at `version` could hold, written with that version's schema.
    private func fill(_ db: Database, version: Int) throws {
        if version >= 1 {
            try db.execute("""
                INSERT INTO security_events (time_ms, kind, detail) VALUES (1, 'wrong_pin', 'attempt 1 of 3');
                INSERT INTO settings VALUES ('auto_lock_ms', 60000);
                UPDATE lock_state SET failures = 2;
                """)
            if version < 7 {
                // A lockout in progress, as a wall-clock deadline 20 s from now (before 7).
                try db.execute("UPDATE lock_state SET locked_until_ms = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + 20000")
            } else {
                // From 7 on, as time left on the boot clock.
                try db.execute("UPDATE lock_state SET lockout_remaining_ms = 18000, lockout_boot_id = 'migrated'")
            }
        }
        if version >= 4 {
            try db.execute("INSERT INTO wire_seen_ids VALUES (x'000102030405060708090a0b0c0d0e0f', 42)")
        }
        if version >= 12 {
            try db.execute("INSERT INTO carried_packets VALUES (x'01010101010101010101010101010101', 1, 1, 0, 50, 0, x'01', zeroblob(16), x'00')")
        }
        if version >= 2 {
            try db.execute("""
                INSERT INTO conversations (id, peer_lookup, title) VALUES (7, x'01', x'02');
                INSERT INTO contacts (id, name, keys, verified, added_ms) VALUES (7, x'03', x'04', 1, 99);
                INSERT INTO messages (conversation_id, message_id, direction, status, sender_ts_ms, created_ms, unread, body)
                VALUES (7, x'05', 1, 3, 10, 11, 1, x'06');
                """)
        }
        if version >= 6 {
            // Two outbox rows, the first seq freed: the order (seq) comes through migration 19.
            try db.execute("""
                INSERT INTO outbox (seq, packet_id, kind, contact_id, packet, state, attempts, next_attempt_ms, expires_ms)
                VALUES (4, x'0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a', 1, 7, x'07', 0, 0, 5, 9),
                       (9, x'0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b', 2, 7, x'08', 1, 2, 6, 9);
                """)
        }
    }

    private func check(_ db: Database, from version: Int) throws {
        #expect(try db.userVersion == Schema.latestVersion)
        var integrity: [String] = []
        try db.query("PRAGMA integrity_check") { integrity.append($0.text(0)) }
        #expect(integrity == ["ok"])
        #expect(try db.rows("SELECT failures FROM lock_state") { $0.int(0) } == [version >= 1 ? 2 : 0])
        if version >= 1 {
            #expect(try db.rows("SELECT detail FROM security_events") { $0.text(0) } == ["attempt 1 of 3"])
        }
        if version >= 2 {
            #expect(try db.rows("SELECT verified, last_seen_ms IS NULL FROM contacts WHERE id = 7") { [$0.int(0), $0.int(1)] } == [[1, 1]])
            #expect(try db.rows("SELECT id, body FROM messages") { [$0.int(0)] + $0.blob(1).map(Int.init) } == [[1, 6]])
        }
        if version >= 6 {
            #expect(try db.rows("SELECT seq, kind, state, attempts, packet FROM outbox ORDER BY seq") {
                [$0.int(0), $0.int(1), $0.int(2), $0.int(3)] + $0.blob(4).map(Int.init)
            } == [[4, 1, 0, 0, 7], [9, 2, 1, 2, 8]])
            // 19: a new row goes after them.
            try db.execute("""
                INSERT INTO outbox (packet_id, kind, contact_id, packet, state, attempts, next_attempt_ms, expires_ms)
                VALUES (x'0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c', 1, 7, x'09', 0, 0, 5, 9)
                """)
            #expect(try db.rows("SELECT seq FROM outbox WHERE packet = x'09'") { $0.int(0) } == [10])
        }
        if version >= 4 {
            #expect(try db.rows("SELECT expires_at FROM wire_seen_ids") { $0.int(0) } == [42])
        }
        // 7: the lockout in progress carries over as time left, to count down in this boot.
        let lockout = try db.rows("SELECT lockout_remaining_ms, lockout_boot_id, locked_until_ms FROM lock_state") {
            [$0.int(0), $0.text(1) == "migrated" ? 1 : 0, $0.int(2)]
        }
        if version >= 1 {
            #expect(lockout.count == 1 && (15_000...20_000).contains(lockout[0][0]) && lockout[0][1] == 1 && lockout[0][2] == 0)
        } else {
            #expect(lockout == [[0, 1, 0]])
        }
        #expect(try db.rows("SELECT count(*) FROM vault WHERE device_check IS NOT NULL") { $0.int(0) } == [0])
        // The latest schema's columns and tables are usable.
        try db.execute("INSERT INTO wire_seen_ids VALUES (x'ffffffffffffffffffffffffffffffff', 1)")
        try db.execute("UPDATE contacts SET last_seen_ms = 5, last_transport = 'LAN'")
        try db.execute("""
            INSERT INTO carried_packets VALUES (zeroblob(16), 1, 1, 0, 34, 0, x'01', zeroblob(16), x'00');
            INSERT INTO carry_quota VALUES (x'01', 0, 1, 34);
            INSERT INTO carry_purges VALUES (zeroblob(16), zeroblob(16), 1, 0);
            """)
        // 17: the usage row counts the packets carried before it and follows the new one.
        #expect(try db.rows("SELECT packets, bytes FROM carry_usage") { [$0.int(0), $0.int(1)] }
                == [version >= 12 ? [2, 84] : [1, 34]])
        if version >= 2 {
            // 15: the long-term seal count, and it goes with its contact.
            try db.execute("INSERT INTO long_term_seals VALUES (7, x'01')")
            try db.execute("DELETE FROM contacts WHERE id = 7")
            #expect(try db.rows("SELECT count(*) FROM long_term_seals") { $0.int(0) } == [0])
        }
    }

    @Test(arguments: 0..<Schema.latestVersion)
    func migratesFrom(version: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)  // creates the directory, at the latest version
        store.close()
        try Store.deleteFiles(in: dir.path)

        let old = try Database(path: dir.path + "/" + Store.fileName)
        try Schema.migrate(old, to: version)
        #expect(try old.userVersion == version)
        try fill(old, version: version)
        old.close()

        let migrated = try Store(directory: dir.path)
        defer { migrated.close() }
        try check(migrated.db, from: version)
    }

    @Test func refusesANewerSchema() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        try store.db.setUserVersion(Schema.latestVersion + 1)
        store.close()
        #expect(throws: YaOKError(.corruptStore)) { try Store(directory: dir.path) }
    }

    @Test func aNodeOpensAMigratedStore() throws {
        // A v1 store (lock tables only, no identity) opens as an uninitialised node.
        let dir = TempDir()
        defer { dir.remove() }
        try Store(directory: dir.path).close()
        try Store.deleteFiles(in: dir.path)
        let old = try Database(path: dir.path + "/" + Store.fileName)
        try Schema.migrate(old, to: 1)
        old.close()
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        #expect(try node.status().initialized == false)
        _ = try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        _ = try node.addContact(card: try cardText("Bob"))
    }
}
