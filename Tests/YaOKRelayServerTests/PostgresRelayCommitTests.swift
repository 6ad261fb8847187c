import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Schema 10 on PostgreSQL: a commit is one call of relay_commit, sent alone (its own
/// transaction), and a packet keeps its deletion note, which relay_commit writes when it
/// deletes the packet. The behaviour tests of `RelayStoreTests` run on it as on SQLite.
extension PostgresRelayStoreTests {
    /// A commit of POSTs and DELETEs is one exchange with the server (it was six: BEGIN,
    /// the pipeline, the notes, relay_account, pg_notify, COMMIT), and durable when it
    /// returns: a new connection sees it all.
    func testACommitIsOneRoundTrip() throws {
        let pg = try XCTUnwrap(store as? PostgresRelayStore)
        let boxes = try (0..<4).map { _ in mailbox(try SigningKey.random()) }
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20, addressBytes: 1 << 20, prefixBytes: 1 << 20)
        func posts() -> [RelayStoreWrite] {
            boxes.map { box in
                var p = RelayPost(mailbox: box, messageID: .random(), expiresAtMs: now + 60_000, packet: Sodium.randomBytes(100))
                p.address = [10, 0, 0, 1]
                return .post(p)
            }
        }
        func refs(_ writes: [RelayStoreWrite]) -> [StoredPacketRef] {
            writes.compactMap { if case .post(let p) = $0 { return StoredPacketRef(mailbox: p.mailbox, messageID: p.messageID) } else { return nil } }
        }
        // The first commit prepares the statement (once per connection).
        let first = posts()
        _ = try store.commit(first, nowMs: now, quota: quota)
        let second = posts()
        let before = try pg.pool.withConnection { $0.roundTrips }
        let outcomes = try store.commit(second + [.delete(refs(first))], nowMs: now, quota: quota)
        let after = try pg.pool.withConnection { $0.roundTrips }
        XCTAssertEqual(after - before, 1, "round trips for one commit")
        XCTAssertEqual(outcomes.last, .deleted(count: 4, bytes: 400))
        XCTAssertEqual(outcomes.prefix(4).filter { if case .stored = $0 { return true } else { return false } }.count, 4)
        let other = try PostgresRelayStore(conninfo: conninfo ?? "", poolSize: 1, directory: directory)
        defer { other.close() }
        XCTAssertEqual(try other.storedPacketCount(nowMs: now), 4)
        XCTAssertEqual(try other.storedBytes(), 400)
        // The notes relay_commit wrote from the packets' own: a re-post of a deleted
        // packet's bytes, through the other relay, is a duplicate.
        XCTAssertEqual(try other.commit(first, nowMs: now, quota: quota), Array(repeating: .duplicate, count: 4))
    }

    /// A database at schema 9 holding packets (stored by schema 9's relay_post, which kept
    /// no note) migrates to 10 with each packet's deletion note filled in, the column then
    /// NOT NULL; deleting such a packet writes its note, so its re-post is a duplicate; the
    /// mailbox and holder totals carry over.
    func testMigrationTenFillsTheNotesOfStoredPackets() throws {
        store.close()
        conninfo = try TestPostgres.freshDatabase()
        let c = try PostgresConnection(conninfo: conninfo ?? "")
        try c.execute("CREATE TABLE yaok_relay_schema (version INT NOT NULL); INSERT INTO yaok_relay_schema VALUES (9)")
        for migration in PostgresRelaySchema.migrations.prefix(9) { try c.execute(migration) }
        let t = PostgresType.self
        let boxes = try (0..<3).map { _ in mailbox(try SigningKey.random()) }
        var stored: [(MailboxID, MessageID, [UInt8])] = []
        for i in 0..<2_500 {  // more than one batch of the migration's fill
            let box = boxes[i % boxes.count], id = MessageID.random(), packet = Sodium.randomBytes(50 + i % 7)
            // Schema 9's relay_post, as a relay before schema 10 called it (with an address tag).
            let outcome = try c.query("old_post", """
                SELECT outcome FROM relay_post($1, $2, $3, $4, $5, 100000, 1000000000, ''::bytea, 0::smallint, 0, 0, $6, ''::bytea,
                                               '\\x0a'::bytea, '\\x0b'::bytea, 1000000000, 1000000000)
                """, types: [t.bytea, t.bytea, t.int8, t.int8, t.bytea, t.bytea],
                [.bytes(box.bytes), .bytes(id.bytes), .int(now + 60_000), .int(now), .bytes(packet), .bytes(Sodium.randomBytes(16))])
            XCTAssertEqual(outcome.int(0, 0), 0)
            stored.append((box, id, packet))
        }
        try c.query("old_account", "SELECT relay_account(ARRAY['\\x0a'::bytea, '\\x0b'::bytea], ARRAY[$1, $1]::bigint[])",
                    types: [t.int8], [.int(Int64(stored.reduce(0) { $0 + $1.2.count }))])
        store = try reopen()
        let key = try c.query("key", "SELECT key FROM relay_secret", types: [], []).bytes(0, 0)
        let rows = try c.query("notes", "SELECT mailbox, packet, note FROM packets", types: [], [])
        XCTAssertEqual(rows.count, stored.count)
        var wrong = 0
        for row in 0..<rows.count where rows.bytes(row, 2) != DeletionNote.of(mailbox: try MailboxID(bytes: rows.bytes(row, 0)),
                                                                               packet: rows.bytes(row, 1), key: key) {
            wrong += 1
        }
        XCTAssertEqual(wrong, 0, "packets whose note is missing or wrong")
        let notNull = try c.query("not_null", "SELECT attnotnull FROM pg_attribute WHERE attrelid = 'packets'::regclass AND attname = 'note'",
                                  types: [], [])
        XCTAssertEqual(notNull.bytes(0, 0), [1])
        let (box, id, packet) = stored[7]
        let quota = MailboxQuota(packets: 100_000, bytes: 1 << 30)
        XCTAssertEqual(try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: id)])], nowMs: now, quota: quota),
                       [.deleted(count: 1, bytes: packet.count)])
        let repost = RelayStoreWrite.post(RelayPost(mailbox: box, messageID: id, expiresAtMs: now + 60_000, packet: packet))
        XCTAssertEqual(try store.commit([repost], nowMs: now, quota: quota), [.duplicate])
        let total = stored.reduce(0) { $0 + $1.2.count } - packet.count
        XCTAssertEqual(try store.storedBytes(), total)
        XCTAssertEqual(try c.query("holders", "SELECT bytes FROM holders ORDER BY tag", types: [], []).int64(0, 0), Int64(total))
    }

    /// relay_commit decides a commit's POSTs in order against figures it read once: the
    /// POSTs before one in the same commit count toward its pseudonym's rate limit and its
    /// address's and /24's stored bytes, as separate commits would.
    func testOneCommitsPostsCountTowardTheLimitsOfTheNextOnes() throws {
        let pseudonym = Sodium.randomBytes(32)
        let boxes = try (0..<3).map { _ in mailbox(try SigningKey.random()) }
        func charged(_ box: MailboxID, address: [UInt8]? = nil, limit: Int = 2) -> RelayStoreWrite {
            var p = RelayPost(mailbox: box, messageID: .random(), expiresAtMs: now + 60_000, packet: Sodium.randomBytes(100),
                              charge: RelayRateCharge(pseudonym: pseudonym, isAck: false, limit: limit))
            p.address = address
            return .post(p)
        }
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20, addressBytes: 250, prefixBytes: 1 << 20)
        let outcomes = try store.commit([charged(boxes[2]), charged(boxes[0]), charged(boxes[1])], nowMs: now, quota: quota)
        XCTAssertEqual(outcomes.filter { if case .stored = $0 { return true } else { return false } }.count, 2, "\(outcomes)")
        // In mailbox order: the commit's first two in that order take the two slots.
        let order = boxes.indices.sorted { boxes[$0].bytes.lexicographicallyPrecedes(boxes[$1].bytes) }
        guard case .rateLimited = outcomes[[2, 0, 1].firstIndex(of: order[2]) ?? 0] else { return XCTFail("\(outcomes)") }
        let held = try store.commit([charged(boxes[0], address: [10, 0, 0, 1], limit: 0), charged(boxes[1], address: [10, 0, 0, 1], limit: 0),
                                     charged(boxes[2], address: [10, 0, 0, 1], limit: 0)], nowMs: now, quota: quota)
        XCTAssertEqual(held.filter { $0 == .overQuota(prefix: false) }.count, 1, "\(held)")
        XCTAssertEqual(try store.storedBytes(), 400)
    }

    /// A migration's statements are not cut off by the 15 s statement_timeout each
    /// connection sets (migration 10 on a large database rewrites every packet row and
    /// reads them all again: it was cancelled and rolled back at every start). Here a
    /// statement of 200 ms under a connection limit of 50 ms: it runs in the migration's
    /// transaction, and the connection's limit is back afterwards.
    func testMigrationStatementsOutliveTheConnectionsStatementTimeout() throws {
        let c = try PostgresConnection(conninfo: conninfo ?? "")
        try c.execute("SET statement_timeout = 50")
        XCTAssertThrowsError(try c.execute("SELECT pg_sleep(0.2)"), "the connection's limit holds outside a migration")
        try PostgresRelaySchema.migrationTransaction(c) { try c.execute("SELECT pg_sleep(0.2)") }
        XCTAssertEqual(try c.query("timeout", "SHOW statement_timeout", types: [], []).text(0, 0), "50ms")
    }


    /// A relay that starts while another migrates waits for the migration lock past its
    /// connection's statement_timeout (the server cancelled the wait at 15 s, and the relay
    /// failed to start). Here the lock is held for 300 ms under a limit of 50 ms.
    func testWaitingForAnotherRelaysMigrationOutlivesTheStatementTimeout() throws {
        let other = try PostgresConnection(conninfo: conninfo ?? "")
        try other.execute("SELECT pg_advisory_lock(\(PostgresRelaySchema.lockKey))")
        let c = try PostgresConnection(conninfo: conninfo ?? "")
        try c.execute("SET statement_timeout = 50")
        // Used by that thread alone from here on.
        struct Handed: @unchecked Sendable { let connection: PostgresConnection }
        let handed = Handed(connection: other)
        let release = Thread {
            usleep(300_000)
            try? handed.connection.execute("SELECT pg_advisory_unlock(\(PostgresRelaySchema.lockKey))")
        }
        release.start()
        try PostgresRelaySchema.migrate(c)
        XCTAssertEqual(try c.query("v", "SELECT version FROM yaok_relay_schema", types: [], []).int(0, 0),
                       PostgresRelaySchema.currentVersion)
    }

}
