import Foundation
import Glibc
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// The store's behaviour: idempotence, quotas, deletion, expiry, paging, revocations,
/// counters; on SQLite here (with its schema and file modes), and every test again on
/// PostgreSQL in `PostgresRelayStoreTests`.
class RelayStoreTests: XCTestCase {
    var directory = ""
    var conninfo: String?
    var store: RelayStore!
    let quota = MailboxQuota(packets: 3, bytes: 1000)
    let now = Clock.milliseconds()
    var backend: StoreBackend { .sqlite }

    override func setUpWithError() throws {
        directory = try makeTempDirectory("relay-store") + "/data"
        if backend == .postgres { conninfo = try TestPostgres.freshDatabase() }
        store = try reopen()
    }

    func reopen() throws -> RelayStore { try openStore(backend, directory: directory, conninfo: conninfo) }

    override func tearDown() {
        store.close()
        try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
    }

    func post(_ box: MailboxID, length: Int = 100, expires: Int64? = nil, id: MessageID = .random()) -> RelayStoreWrite {
        .post(RelayPost(mailbox: box, messageID: id, expiresAtMs: expires ?? now + 60_000, packet: Sodium.randomBytes(length)))
    }

    func testIdempotentPostsQuotasAndDeletes() throws {
        let box = mailbox(try SigningKey.random())
        let id = MessageID.random()
        let outcomes = try store.commit([post(box, id: id), post(box, id: id), post(box), post(box), post(box)], nowMs: now, quota: quota)
        guard case .stored(let s1) = outcomes[0], case .stored(let s3) = outcomes[3] else { return XCTFail("\(outcomes)") }
        XCTAssertLessThan(s1, s3)
        XCTAssertEqual(outcomes[1], .duplicate)
        XCTAssertEqual(outcomes[4], .mailboxFull, "three packets at most")
        XCTAssertEqual(try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: id)])], nowMs: now, quota: quota), [.deleted(count: 1, bytes: 100)])
        guard case .stored(let s4) = try store.commit([post(box)], nowMs: now, quota: quota)[0] else { return XCTFail() }
        XCTAssertGreaterThan(s4, s3, "sequence numbers are never reused")
        // Bytes: 1000 at most.
        let other = mailbox(try SigningKey.random())
        XCTAssertEqual(try store.commit([post(other, length: 900), post(other, length: 200)], nowMs: now, quota: quota).last, .mailboxFull)
    }

    /// A packet the recipient deleted and its sender posts again, the same bytes (the
    /// ACCEPTED was lost, or crossed the DELETE), is accepted without a second copy, until
    /// it would have expired; the note kept is a keyed hash, with no mailbox or message ID.
    func testARePostAfterTheDeleteIsNotStoredAgain() throws {
        let box = mailbox(try SigningKey.random())
        let id = MessageID.random()
        let write = post(box, expires: now + 50, id: id)
        _ = try store.commit([write], nowMs: now, quota: quota)
        _ = try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: id)])], nowMs: now, quota: quota)
        XCTAssertEqual(try store.commit([write], nowMs: now, quota: quota), [.duplicate])
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 0)
        if backend == .sqlite {
            var columns: [[UInt8]] = []
            try Database(path: directory + "/" + SQLiteRelayStore.fileName).query("SELECT * FROM deleted") {
                columns.append($0.blob(0))
            }
            XCTAssertEqual(columns.count, 1)
            XCTAssertEqual(columns.first?.count, 16, "a 16-byte keyed hash")
            XCTAssertFalse(columns.first.map { Hex.encode($0).contains(Hex.encode(id.bytes)) } ?? true)
        }
        // Once the packet would have expired, the note of its deletion goes too.
        _ = try store.deleteExpired(nowMs: now + 60)
        XCTAssertEqual(try store.commit([post(box, expires: now + 500, id: id)], nowMs: now + 60, quota: quota).count, 1)
        guard backend == .sqlite else { return }
        var notes = -1
        try Database(path: directory + "/" + SQLiteRelayStore.fileName).query("SELECT COUNT(*) FROM deleted") { notes = $0.int(0) }
        XCTAssertEqual(notes, 0)
    }

    /// A DELETE and a re-post of the same bytes in one batch (one transaction): the re-post
    /// sees the note the DELETE made (PostgreSQL writes a batch's notes in one statement, and
    /// must write them before a POST into the same mailbox).
    func testARePostInTheBatchOfItsDeleteIsNotStoredAgain() throws {
        let box = mailbox(try SigningKey.random())
        let id = MessageID.random()
        let write = post(box, id: id)
        _ = try store.commit([write], nowMs: now, quota: quota)
        let other = mailbox(try SigningKey.random())
        let outcomes = try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: id)]), write, post(other)],
                                        nowMs: now, quota: quota)
        XCTAssertEqual(Array(outcomes.prefix(2)), [.deleted(count: 1, bytes: 100), .duplicate])
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 1, "only the other mailbox's packet")
        XCTAssertEqual(try store.commit([write], nowMs: now, quota: quota), [.duplicate], "the note was written")
    }

    /// The same message ID re-sealed (other bytes: a sender whose ack never came seals it
    /// again) after the DELETE is stored and delivered again, so that the recipient can
    /// acknowledge it again (§4.8, §8.3).
    func testAResealedRePostAfterTheDeleteIsStored() throws {
        let box = mailbox(try SigningKey.random())
        let id = MessageID.random()
        _ = try store.commit([post(box, id: id)], nowMs: now, quota: quota)
        _ = try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: id)])], nowMs: now, quota: quota)
        guard case .stored = try store.commit([post(box, id: id)], nowMs: now, quota: quota)[0] else {
            return XCTFail("a re-sealed packet was swallowed")
        }
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 1)
    }

    /// A revocation deletes what the pseudonym posted (found by its keyed hash; the
    /// pseudonym itself is not stored with the packets), and the mailbox totals follow.
    func testRevokeDeletesWhatThePseudonymPosted() throws {
        let box = mailbox(try SigningKey.random())
        let mallory = try SigningKey.random().publicKey, alice = try SigningKey.random().publicKey
        func posted(by poster: [UInt8]) -> RelayStoreWrite {
            .post(RelayPost(mailbox: box, messageID: .random(), expiresAtMs: now + 60_000, packet: Sodium.randomBytes(100)).with(poster: poster))
        }
        _ = try store.commit([posted(by: mallory), posted(by: mallory), posted(by: alice)], nowMs: now, quota: quota)
        XCTAssertEqual(try store.commit([posted(by: alice)], nowMs: now, quota: quota), [.mailboxFull])
        try store.revoke(pseudonym: mallory, nowMs: now)
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 1)
        XCTAssertEqual(try store.storedBytes(), 100)
        guard case .stored = try store.commit([posted(by: alice)], nowMs: now, quota: quota)[0] else {
            return XCTFail("the mailbox's totals did not follow the purge")
        }
        guard backend == .sqlite else { return }
        var posters: [[UInt8]] = []
        try Database(path: directory + "/" + SQLiteRelayStore.fileName).query("SELECT poster FROM packets") { posters.append($0.blob(0)) }
        XCTAssertEqual(posters.count, 2)
        XCTAssertFalse(posters.contains(alice), "a keyed hash, not the pseudonym")
        XCTAssertEqual(posters.first?.count, 16)
    }

    /// Stored-byte quotas per IPv4 address and per /24 (§8.5): an address holds at most
    /// its quota over all its pseudonyms and mailboxes (in one commit as across commits),
    /// the addresses of a /24 together at most the /24's; a DELETE, an expiry and a
    /// revocation give the bytes back; the account outlives a restart; the store keeps
    /// keyed tags, never the address.
    func testStoredByteQuotasPerAddressAndPrefix() throws {
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20, addressBytes: 300, prefixBytes: 500)
        let a: [UInt8] = [10, 0, 0, 1], b: [UInt8] = [10, 0, 0, 2], elsewhere: [UInt8] = [10, 0, 1, 1]
        let mallory = Sodium.randomBytes(32)
        let box = mailbox(try SigningKey.random())
        func from(_ address: [UInt8], expires: Int64? = nil, id: MessageID = .random(), to: MailboxID? = nil) -> RelayStoreWrite {
            var p = RelayPost(mailbox: to ?? box, messageID: id, expiresAtMs: expires ?? now + 60_000,
                              packet: Sodium.randomBytes(100))
            p.address = address
            p.poster = address == b ? mallory : nil
            return .post(p)
        }
        func stored(_ outcomes: [RelayStoreOutcome]) -> [Bool] { outcomes.map { if case .stored = $0 { true } else { false } } }
        // Three fit the address's 300 bytes, in one commit; the fourth is refused. (All to
        // one mailbox: PostgreSQL commits a batch in mailbox order, this keeps it.)
        let id = MessageID.random()
        let first = from(a, id: id, to: box)
        let outcomes = try store.commit([first, from(a, to: box), from(a, expires: now + 10, to: box), from(a, to: box)],
                                        nowMs: now, quota: quota)
        XCTAssertEqual(stored(outcomes), [true, true, true, false])
        XCTAssertEqual(outcomes[3], .overQuota(prefix: false))
        // Another address of the /24 has room until the /24 holds 500.
        XCTAssertEqual(stored(try store.commit([from(b), from(b)], nowMs: now, quota: quota)), [true, true])
        XCTAssertEqual(try store.commit([from(b)], nowMs: now, quota: quota), [.overQuota(prefix: true)])
        // Another /24 is not affected.
        XCTAssertEqual(stored(try store.commit([from(elsewhere)], nowMs: now, quota: quota)), [true])
        // Kept across a restart (and by another relay over the same database).
        store.close()
        store = try reopen()
        XCTAssertEqual(try store.commit([from(a)], nowMs: now, quota: quota), [.overQuota(prefix: false)])
        // A DELETE gives the address (and its /24) room again.
        guard case .post(let p) = first else { return XCTFail() }
        XCTAssertEqual(try store.commit([.delete([StoredPacketRef(mailbox: p.mailbox, messageID: id)])], nowMs: now, quota: quota),
                       [.deleted(count: 1, bytes: 100)])
        XCTAssertEqual(stored(try store.commit([from(a), from(a)], nowMs: now, quota: quota)), [true, false])
        // So does expiry: one of a's packets expires at now + 10.
        XCTAssertEqual(try store.deleteExpired(nowMs: now + 20).packets, 1)
        XCTAssertEqual(stored(try store.commit([from(a), from(a)], nowMs: now + 20, quota: quota)), [true, false])
        // And a revocation: b's two packets were mallory's; the /24 had 500 (a 300, b 200).
        XCTAssertEqual(try store.commit([from(b)], nowMs: now + 20, quota: quota), [.overQuota(prefix: true)])
        try store.revoke(pseudonym: mallory, nowMs: now + 20)
        XCTAssertEqual(stored(try store.commit([from(b), from(b), from(b)], nowMs: now + 20, quota: quota)), [true, true, false])
        guard backend == .sqlite else { return }
        // Only 16-byte keyed tags are kept: no address, no /24.
        let db = try Database(path: directory + "/" + SQLiteRelayStore.fileName)
        defer { db.close() }
        var tags: [[UInt8]] = []
        try db.query("SELECT tag FROM holders") { tags.append($0.blob(0)) }
        try db.query("SELECT address_tag, prefix_tag FROM packets") { tags += [$0.blob(0), $0.blob(1)] }
        XCTAssertEqual(Set(tags.map(\.count)), [16])
        for tag in tags { XCTAssertFalse(Hex.encode(tag).contains("0a0000") || Hex.encode(tag).contains("0a0001")) }
        // One row per tag that holds anything: a, b, a's /24, elsewhere, its /24.
        var rows = 0
        try db.query("SELECT COUNT(*) FROM holders") { rows = $0.int(0) }
        XCTAssertEqual(rows, 5)
    }

    /// A copy of the database alone does not name the posters: the address and /24 tags
    /// are keyed by the data directory's `relay-address.key` (0600), not by anything in the
    /// database, so trying every IPv4 address with the database's `relay_secret` (or with
    /// no key) finds none of them.
    func testACopyOfTheDatabaseCannotReverseTheAddressTags() throws {
        let address: [UInt8] = [192, 0, 2, 7]
        var p = RelayPost(mailbox: mailbox(try SigningKey.random()), messageID: .random(), expiresAtMs: now + 60_000,
                          packet: Sodium.randomBytes(100))
        p.address = address
        guard case .stored = try store.commit([.post(p)], nowMs: now, quota: quota)[0] else { return XCTFail("not stored") }
        var secret: [UInt8] = [], tags: Set<[UInt8]> = []
        if backend == .sqlite {
            let db = try Database(path: directory + "/" + SQLiteRelayStore.fileName)
            defer { db.close() }
            try db.query("SELECT key FROM relay_secret") { secret = $0.blob(0) }
            try db.query("SELECT address_tag, prefix_tag FROM packets") { tags.formUnion([$0.blob(0), $0.blob(1)]) }
            try db.query("SELECT tag FROM holders") { tags.insert($0.blob(0)) }
        } else {
            let pg = try XCTUnwrap(store as? PostgresRelayStore)
            try pg.pool.withConnection { c in
                secret = try c.query("secret", "SELECT key FROM relay_secret", types: [], []).bytes(0, 0)
                let rows = try c.query("tags", "SELECT address_tag, prefix_tag FROM packets", types: [], [])
                tags.formUnion([rows.bytes(0, 0), rows.bytes(0, 1)])
                let held = try c.query("held", "SELECT tag FROM holders", types: [], [])
                for row in 0..<held.count { tags.insert(held.bytes(row, 0)) }
            }
        }
        XCTAssertEqual(secret.count, 32)
        for key in [secret, []] {
            XCTAssertFalse(tags.contains(HolderTag.address(address, key: key)), "the address's tag follows from the database")
            XCTAssertFalse(tags.contains(HolderTag.prefix(address, key: key)), "the /24's tag follows from the database")
        }
        // The key file's tags are the ones kept (and only these two).
        let path = directory + "/" + AddressKey.fileName
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        let key = try AddressKey.load(directory: directory)
        XCTAssertEqual(tags, [HolderTag.address(address, key: key), HolderTag.prefix(address, key: key)])
        // The same key after a restart, so the quotas hold across it.
        store.close()
        store = try reopen()
        XCTAssertEqual(try AddressKey.load(directory: directory), key)
    }

    /// `yaok-relay stats` (and `revoke`) on a relay's directory make no key file: run as
    /// another user (root), they would leave one the relay cannot read at its next start.
    func testStatsMakeNoAddressKey() throws {
        guard backend == .sqlite else { return }
        store.close()
        let path = directory + "/" + AddressKey.fileName
        XCTAssertEqual(unlink(path), 0)
        _ = try RelayStatistics.read(directory: directory)
        XCTAssertNotEqual(access(path, F_OK), 0, "stats made \(path)")
        store = try reopen()
        XCTAssertEqual(access(path, F_OK), 0, "the relay makes it")
    }

    /// A damaged key file is refused with a readable error, not used.
    func testADamagedAddressKeyIsRefused() throws {
        store.close()
        let path = directory + "/" + AddressKey.fileName
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])))
        XCTAssertThrowsError(try reopen()) { XCTAssertTrue("\($0)".contains("is damaged"), "\($0)") }
        unlink(path)
        store = try reopen()
    }
    /// A database of schema 5 (packets without holder tags) migrates: its packets count
    /// against nobody, and deleting, sweeping and purging them still works.
    func testMigrationFromSchemaWithoutHolderTags() throws {
        store.close()
        let box = mailbox(try SigningKey.random())
        let old = MessageID.random(), expiring = MessageID.random(), purged = MessageID.random()
        let poster = Sodium.randomBytes(32)
        let packets: [(MessageID, Int64, Bool)] = [(old, now + 60_000, false), (expiring, now + 10, false), (purged, now + 60_000, true)]
        if backend == .sqlite {
            try? FileManager.default.removeItem(atPath: directory)
            try Store.makeDirectory(directory)
            let db = try Database(path: directory + "/" + SQLiteRelayStore.fileName)
            defer { db.close() }
            try db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (5)")
            for migration in RelaySchema.migrations.prefix(5) { try db.execute(migration) }
            var key: [UInt8] = []
            try db.query("SELECT key FROM relay_secret") { key = $0.blob(0) }
            for (id, expires, posted) in packets {
                try db.query("INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet, poster) VALUES (?, ?, ?, ?, ?, ?)",
                             [.blob(box.bytes), .blob(id.bytes), .int(expires), .int(now), .blob(Sodium.randomBytes(100)),
                              posted ? .blob(PosterTag.of(poster, key: key)) : .null])
            }
            try db.execute("INSERT INTO mailboxes VALUES (x'\(Hex.encode(box.bytes))', 3, 300)")
        } else {
            conninfo = try TestPostgres.freshDatabase()
            let c = try PostgresConnection(conninfo: conninfo ?? "")
            try c.execute("CREATE TABLE yaok_relay_schema (version INT NOT NULL); INSERT INTO yaok_relay_schema VALUES (5)")
            for migration in PostgresRelaySchema.migrations.prefix(5) { try c.execute(migration) }
            let key = try c.query("key", "SELECT key FROM relay_secret", types: [], []).bytes(0, 0)
            let t = PostgresType.self
            for (id, expires, posted) in packets {
                // Schema 5's relay_post: no holder tags.
                _ = try c.query("old_post", """
                    SELECT outcome FROM relay_post($1, $2, $3, $4, $5, 100, 1000000, ''::bytea, 0::smallint, 0, 0, $6, $7)
                    """, types: [t.bytea, t.bytea, t.int8, t.int8, t.bytea, t.bytea, t.bytea],
                    [.bytes(box.bytes), .bytes(id.bytes), .int(expires), .int(now), .bytes(Sodium.randomBytes(100)),
                     .bytes(Sodium.randomBytes(16)), .bytes(posted ? PosterTag.of(poster, key: key) : [])])
            }
        }
        store = try reopen()
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20, addressBytes: 100, prefixBytes: 100)
        func fromA() -> RelayStoreWrite {
            var p = RelayPost(mailbox: box, messageID: .random(), expiresAtMs: now + 60_000, packet: Sodium.randomBytes(100))
            p.address = [10, 0, 0, 1]
            return .post(p)
        }
        guard case .stored = try store.commit([fromA()], nowMs: now, quota: quota)[0] else { return XCTFail("old packets counted") }
        XCTAssertEqual(try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: old)])], nowMs: now, quota: quota),
                       [.deleted(count: 1, bytes: 100)])
        XCTAssertEqual(try store.deleteExpired(nowMs: now + 20).packets, 1)
        try store.revoke(pseudonym: poster, nowMs: now + 20)
        XCTAssertEqual(try store.storedPacketCount(nowMs: now + 20), 1)
        XCTAssertEqual(try store.storedBytes(), 100)
        XCTAssertEqual(try store.commit([fromA()], nowMs: now + 20, quota: quota), [.overQuota(prefix: false)], "the new packet counts")
    }

    /// Schema 7 keys the deletion notes by (expiry, digest): the notes of a commit land on
    /// the pages at the end of the tree, not each on a random page of a tree that grows with
    /// every DELETE (the write amplification of a long run). A note made under schema 6
    /// still answers a re-post of the same bytes, and the sweep still removes it.
    func testMigrationKeysDeletionNotesByExpiry() throws {
        guard backend == .sqlite else { return }
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
        try Store.makeDirectory(directory)
        let box = mailbox(try SigningKey.random())
        let id = MessageID.random()
        let packet = Sodium.randomBytes(100)
        let expires = now + 50
        do {
            let db = try Database(path: directory + "/" + SQLiteRelayStore.fileName)
            defer { db.close() }
            try db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (6)")
            for migration in RelaySchema.migrations.prefix(6) { try db.execute(migration) }
            var key: [UInt8] = []
            try db.query("SELECT key FROM relay_secret") { key = $0.blob(0) }
            try db.query("INSERT INTO deleted (digest, expires_ms) VALUES (?, ?)",
                         [.blob(DeletionNote.of(mailbox: box, packet: packet, key: key)), .int(expires)])
        }
        store = try reopen()
        var key: [String] = []
        try Database(path: directory + "/" + SQLiteRelayStore.fileName).query(
            "SELECT name FROM pragma_table_info('deleted') WHERE pk > 0 ORDER BY pk") { key.append($0.text(0)) }
        XCTAssertEqual(key, ["expires_ms", "digest"])
        let write = RelayStoreWrite.post(RelayPost(mailbox: box, messageID: id, expiresAtMs: expires, packet: packet))
        XCTAssertEqual(try store.commit([write], nowMs: now, quota: quota), [.duplicate], "the old note still holds")
        _ = try store.deleteExpired(nowMs: expires)
        guard case .stored = try store.commit([write], nowMs: now, quota: quota)[0] else { return XCTFail("the note was not swept") }
        // A note made under schema 7 holds the same way.
        _ = try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: id)])], nowMs: now, quota: quota)
        XCTAssertEqual(try store.commit([write], nowMs: now, quota: quota), [.duplicate])
    }

    /// Schema 8 drops the index of packets by poster (a random page of a third tree for
    /// every POST and DELETE, kept only for `revoke`). On a database of schema 7, `revoke`
    /// still deletes exactly what the pseudonym posted, before the migration and after, and
    /// gives the mailboxes' and the address's totals back.
    func testMigrationDropsThePosterIndexAndRevokeStillPurges() throws {
        guard backend == .sqlite else { return }
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
        try Store.makeDirectory(directory)
        let box = mailbox(try SigningKey.random()), other = mailbox(try SigningKey.random())
        let mallory = Sodium.randomBytes(32), alice = Sodium.randomBytes(32)
        // A packet of mallory's stored under schema 7 (with its poster tag, no holder tags).
        do {
            let db = try Database(path: directory + "/" + SQLiteRelayStore.fileName)
            defer { db.close() }
            try db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (7)")
            for migration in RelaySchema.migrations.prefix(7) { try db.execute(migration) }
            var key: [UInt8] = []
            try db.query("SELECT key FROM relay_secret") { key = $0.blob(0) }
            try db.query("INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet, poster) VALUES (?, ?, ?, ?, ?, ?)",
                         [.blob(box.bytes), .blob(MessageID.random().bytes), .int(now + 60_000), .int(now),
                          .blob(Sodium.randomBytes(100)), .blob(PosterTag.of(mallory, key: key))])
            try db.execute("INSERT INTO mailboxes VALUES (x'\(Hex.encode(box.bytes))', 1, 100)")
        }
        store = try reopen()
        var indexes: [String] = []
        try Database(path: directory + "/" + SQLiteRelayStore.fileName).query(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'packets' AND sql IS NOT NULL ORDER BY name") {
            indexes.append($0.text(0))
        }
        XCTAssertEqual(indexes, ["packets_by_expiry"], "no packets_by_poster (nor, since schema 9, packets_by_mailbox)")
        let quota = MailboxQuota(packets: 3, bytes: 1000, addressBytes: 400, prefixBytes: 1000)
        func posted(by poster: [UInt8], to mailbox: MailboxID) -> RelayStoreWrite {
            var p = RelayPost(mailbox: mailbox, messageID: .random(), expiresAtMs: now + 60_000, packet: Sodium.randomBytes(100))
            p.poster = poster
            p.address = [10, 0, 0, 1]
            return .post(p)
        }
        func stored(_ outcomes: [RelayStoreOutcome]) -> [Bool] { outcomes.map { if case .stored = $0 { true } else { false } } }
        // box: mallory's old one and two more; other: two. The address holds 400, its quota.
        XCTAssertEqual(stored(try store.commit([posted(by: mallory, to: box), posted(by: alice, to: box),
                                                posted(by: mallory, to: other), posted(by: alice, to: other)], nowMs: now, quota: quota)),
                       [true, true, true, true])
        XCTAssertEqual(try store.commit([posted(by: alice, to: box)], nowMs: now, quota: quota), [.mailboxFull])
        XCTAssertEqual(try store.commit([posted(by: alice, to: other)], nowMs: now, quota: quota), [.overQuota(prefix: false)])
        try store.revoke(pseudonym: mallory, nowMs: now)
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 2, "alice's two are left; the old packet went too")
        XCTAssertEqual(try store.storedBytes(), 200)
        // The mailboxes' totals and the address's followed the purge.
        XCTAssertEqual(stored(try store.commit([posted(by: alice, to: box), posted(by: alice, to: box)], nowMs: now, quota: quota)),
                       [true, true], "box: 1 left, room for 2")
        XCTAssertEqual(try store.commit([posted(by: alice, to: other)], nowMs: now, quota: quota), [.overQuota(prefix: false)],
                       "the address holds 400 again")
    }

    /// Schema 9 drops the index of packets by (mailbox, seq): reads take the seqs from the
    /// unique (mailbox, message ID) index, which orders them by message ID, and sort them.
    /// A database of schema 8 migrates, and its packets are read in seq order, a page at a
    /// time, expired ones skipped (here two at the head of the first chunk the read sorts),
    /// with the same pages and `complete` as before.
    func testMigrationDropsTheMailboxIndexAndReadsKeepSeqOrder() throws {
        guard backend == .sqlite else { return }
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
        try Store.makeDirectory(directory)
        let box = mailbox(try SigningKey.random()), other = mailbox(try SigningKey.random())
        // Message IDs falling as seqs rise, so the index's order is the reverse of seq order;
        // the first two packets of box have expired.
        let ids = (0..<8).map { i in try! MessageID(bytes: [UInt8](repeating: UInt8(200 - i), count: 16)) }
        do {
            let db = try Database(path: directory + "/" + SQLiteRelayStore.fileName)
            defer { db.close() }
            try db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (8)")
            for migration in RelaySchema.migrations.prefix(8) { try db.execute(migration) }
            for (i, id) in ids.enumerated() {
                for target in i == 3 ? [box, other] : [box] {
                    try db.query("INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet) VALUES (?, ?, ?, ?, ?)",
                                 [.blob(target.bytes), .blob(id.bytes), .int(i < 2 ? now - 1 : now + 60_000), .int(now),
                                  .blob([UInt8](repeating: UInt8(i), count: 100))])
                }
            }
            try db.execute("INSERT INTO mailboxes VALUES (x'\(Hex.encode(box.bytes))', 8, 800), (x'\(Hex.encode(other.bytes))', 1, 100)")
        }
        store = try reopen()
        let db = try Database(path: directory + "/" + SQLiteRelayStore.fileName)
        defer { db.close() }
        var indexes: [String] = []
        try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'packets' AND sql IS NOT NULL ORDER BY name") {
            indexes.append($0.text(0))
        }
        XCTAssertEqual(indexes, ["packets_by_expiry"], "no packets_by_mailbox")
        var version = 0
        try db.query("SELECT version FROM schema_version") { version = $0.int(0) }
        XCTAssertEqual(version, 9)
        // box holds seqs 1, 2 (expired), 3, 4, 6, 7, 8, 9; other holds 5 (the same ID as box's 4).
        let first = try store.packets([RelayPageRequest(mailbox: box, after: 0)], maxPackets: 2, maxBytes: 1 << 20, nowMs: now)[0]
        XCTAssertEqual(first.packets.map(\.sequence), [3, 4])
        XCTAssertEqual(first.packets.map { $0.packet.first }, [2, 3])
        XCTAssertFalse(first.complete)
        let rest = try store.packets([RelayPageRequest(mailbox: box, after: 4)], maxPackets: 64, maxBytes: 1 << 20, nowMs: now)[0]
        XCTAssertEqual(rest.packets.map(\.sequence), [6, 7, 8, 9])
        XCTAssertTrue(rest.complete)
        let exact = try store.packets([RelayPageRequest(mailbox: box, after: 4)], maxPackets: 4, maxBytes: 1 << 20, nowMs: now)[0]
        XCTAssertEqual(exact.packets.map(\.sequence), [6, 7, 8, 9])
        XCTAssertTrue(exact.complete, "nothing after the page's last")
        let bytes = try store.packets([RelayPageRequest(mailbox: box, after: 0)], maxPackets: 64, maxBytes: 250, nowMs: now)[0]
        XCTAssertEqual(bytes.packets.map(\.sequence), [3, 4])
        XCTAssertFalse(bytes.complete)
        XCTAssertEqual(try store.packets([RelayPageRequest(mailbox: other, after: 0)], maxPackets: 64, maxBytes: 1 << 20,
                                         nowMs: now)[0].packets.map(\.sequence), [5])
        // The unique index still answers a re-post and a DELETE by (mailbox, message ID).
        XCTAssertEqual(try store.commit([.post(RelayPost(mailbox: box, messageID: ids[5], expiresAtMs: now + 60_000,
                                                         packet: [1]))], nowMs: now, quota: MailboxQuota(packets: 100, bytes: 1 << 20)),
                       [.duplicate])
        XCTAssertEqual(try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: ids[5])])], nowMs: now, quota: quota),
                       [.deleted(count: 1, bytes: 100)])
        var cache = 0
        try (store as? SQLiteRelayStore)?.db.query("PRAGMA cache_size") { cache = $0.int(0) }
        XCTAssertEqual(cache, -SQLiteRelayStore.cacheKiB, "the page cache's bound (RELAY.md)")
    }

    /// SQLite: the WAL is checkpointed when the disk thread asks (`checkpointIfDue`, after
    /// it handed a round's results back), never inside the COMMIT that passes the threshold
    /// (SQLite's automatic checkpoint did, holding that round's ACCEPTEDs); once it ran,
    /// the next commit restarts the log from its start.
    func testTheCheckpointRunsWhenTheDiskThreadAsks() throws {
        guard let sqlite = store as? SQLiteRelayStore else { return }
        sqlite.checkpointPages = 8
        let box = mailbox(try SigningKey.random())
        let quota = MailboxQuota(packets: 1000, bytes: 1 << 30)
        for _ in 0..<5 { _ = try store.commit((0..<4).map { _ in post(box, length: 3000) }, nowMs: now, quota: quota) }
        XCTAssertGreaterThanOrEqual(sqlite.db.walFrames, 20, "no checkpoint inside the commits")
        try sqlite.checkpointIfDue()
        _ = try store.commit([post(box)], nowMs: now, quota: quota)
        XCTAssertLessThan(sqlite.db.walFrames, 8, "the log restarted after the checkpoint")
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 21)
    }

    /// A commit's changes to the totals are written once at its end (SQLite): within the
    /// commit, a DELETE makes room in a full mailbox for a POST after it, and the holder
    /// row of an address whose packets all went is dropped.
    func testADeleteMakesRoomForAPostInTheSameCommit() throws {
        let box = mailbox(try SigningKey.random())
        // The address quota stays out of it: PostgreSQL counts a transaction's DELETEs
        // toward it only at the end (on the safe side).
        let quota = MailboxQuota(packets: 2, bytes: 1000)
        func from(_ address: [UInt8], id: MessageID = .random()) -> RelayStoreWrite {
            var p = RelayPost(mailbox: box, messageID: id, expiresAtMs: now + 60_000, packet: Sodium.randomBytes(100))
            p.address = address
            return .post(p)
        }
        let first = MessageID.random(), second = MessageID.random()
        XCTAssertEqual(try store.commit([from([10, 0, 0, 1], id: first), from([10, 0, 0, 1], id: second)], nowMs: now, quota: quota).count, 2)
        XCTAssertEqual(try store.commit([from([10, 0, 0, 2])], nowMs: now, quota: quota), [.mailboxFull])
        let outcomes = try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: first)]), from([10, 0, 0, 1]),
                                         from([10, 0, 0, 2])], nowMs: now, quota: quota)
        XCTAssertEqual(outcomes.first, .deleted(count: 1, bytes: 100))
        guard case .stored = outcomes[1] else { return XCTFail("the DELETE's room was not seen: \(outcomes)") }
        XCTAssertEqual(outcomes[2], .mailboxFull)
        XCTAssertEqual(try store.storedBytes(), 200)
        _ = try store.commit([.delete([StoredPacketRef(mailbox: box, messageID: second)])], nowMs: now, quota: quota)
        XCTAssertEqual(try store.storedBytes(), 100)
        guard backend == .sqlite else { return }
        var rows = -1
        try Database(path: directory + "/" + SQLiteRelayStore.fileName).query("SELECT COUNT(*) FROM holders WHERE bytes <= 0") { rows = $0.int(0) }
        XCTAssertEqual(rows, 0, "no holder row at zero")
    }

    /// One commit has the same outcomes on SQLite and PostgreSQL (`RelayCommitOrder`): its
    /// DELETEs are decided first, wherever they came (a POST before a DELETE in a full
    /// mailbox takes the DELETE's room); an address's quota counts what the commit stored,
    /// not less what it deleted; and the POSTs are decided by mailbox in key order (of an
    /// address's two POSTs into two mailboxes with room for one, the lower mailbox's is
    /// stored). SQLite decided them in arrival order before (stored, stored, mailbox-full).
    func testACommitIsDecidedInTheSameOrderOnEitherStore() throws {
        let quota = MailboxQuota(packets: 2, bytes: 10_000, addressBytes: 200, prefixBytes: 10_000)
        let boxes = try (0..<4).map { _ in mailbox(try SigningKey.random()) }
            .sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        func from(_ address: [UInt8]?, into box: MailboxID, id: MessageID = .random()) -> RelayStoreWrite {
            var p = RelayPost(mailbox: box, messageID: id, expiresAtMs: now + 60_000, packet: Sodium.randomBytes(100))
            p.address = address
            return .post(p)
        }
        func stored(_ outcome: RelayStoreOutcome) -> Bool { if case .stored = outcome { return true } else { return false } }
        let a: [UInt8] = [10, 0, 1, 1], b: [UInt8] = [10, 0, 2, 1]  // other /24s: only the address quota binds
        let first = MessageID.random(), ofA = MessageID.random()
        let setUp = try store.commit([from(nil, into: boxes[0], id: first), from(nil, into: boxes[0]),
                                      from(a, into: boxes[1], id: ofA), from(a, into: boxes[1]), from(b, into: boxes[2])],
                                     nowMs: now, quota: quota)
        XCTAssertTrue(setUp.allSatisfy(stored), "\(setUp)")
        // boxes[0] and boxes[1] full, a at its quota (200), b with room for one more packet.
        let outcomes = try store.commit([
            from(nil, into: boxes[0]),
            .delete([StoredPacketRef(mailbox: boxes[0], messageID: first)]),
            .delete([StoredPacketRef(mailbox: boxes[1], messageID: ofA)]),
            from(a, into: boxes[2]),
            from(b, into: boxes[3]),
            from(b, into: boxes[2]),
        ], nowMs: now, quota: quota)
        XCTAssertTrue(stored(outcomes[0]), "the DELETE after it made room: \(outcomes)")
        XCTAssertEqual(outcomes[1], .deleted(count: 1, bytes: 100))
        XCTAssertEqual(outcomes[2], .deleted(count: 1, bytes: 100))
        XCTAssertEqual(outcomes[3], .overQuota(prefix: false), "a's room counts its DELETE only once committed")
        XCTAssertEqual(outcomes[4], .overQuota(prefix: false), "b's last room went to the lower mailbox")
        XCTAssertTrue(stored(outcomes[5]), "\(outcomes)")
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 5)
        XCTAssertEqual(try store.storedBytes(), 500)
        // Committed, a's DELETE gives its room back.
        XCTAssertTrue(stored(try store.commit([from(a, into: boxes[3])], nowMs: now, quota: quota)[0]))
    }

    func testPagesFollowTheCursorAndBudget() throws {
        let box = mailbox(try SigningKey.random())
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20)
        let outcomes = try store.commit((0..<10).map { _ in post(box) }, nowMs: now, quota: quota)
        let sequences = outcomes.compactMap { if case .stored(let s) = $0 { return s } else { return nil } }
        let page = try store.packets([RelayPageRequest(mailbox: box, after: 0)], maxPackets: 4, maxBytes: 1 << 20, nowMs: now)
        XCTAssertEqual(page[0].packets.map(\.sequence), Array(sequences[0..<4]))
        XCTAssertFalse(page[0].complete)
        let rest = try store.packets([RelayPageRequest(mailbox: box, after: sequences[3])], maxPackets: 100, maxBytes: 1 << 20, nowMs: now)
        XCTAssertEqual(rest[0].packets.map(\.sequence), Array(sequences[4...]))
        XCTAssertTrue(rest[0].complete)
        let small = try store.packets([RelayPageRequest(mailbox: box, after: 0)], maxPackets: 100, maxBytes: 250, nowMs: now)
        XCTAssertEqual(small[0].packets.count, 2)
        XCTAssertFalse(small[0].complete)
    }

    /// Several reads served at once (the disk thread's round; PostgreSQL in one statement)
    /// keep each read's budget and, read on after each page's last packet until complete,
    /// give every packet of every mailbox once, in order.
    func testBatchedReadsFollowTheCursorsAndBudgets() throws {
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20)
        let a = mailbox(try SigningKey.random()), b = mailbox(try SigningKey.random()), empty = mailbox(try SigningKey.random())
        func sequences(_ outcomes: [RelayStoreOutcome]) -> [Int64] {
            outcomes.compactMap { if case .stored(let s) = $0 { return s } else { return nil } }
        }
        let inA = sequences(try store.commit((0..<40).map { _ in post(a, length: 50) }, nowMs: now, quota: quota))
        let inB = sequences(try store.commit((0..<3).map { _ in post(b, length: 50) }, nowMs: now, quota: quota))
        // A budget of 5 packets: a's first five, then b not reached (not complete).
        let small = try store.packets(reads: [[RelayPageRequest(mailbox: a, after: 0), RelayPageRequest(mailbox: b, after: 0)]],
                                      maxPackets: 5, maxBytes: 1 << 20, nowMs: now)
        XCTAssertEqual(small[0][0].packets.map(\.sequence), Array(inA.prefix(5)))
        XCTAssertFalse(small[0][0].complete)
        XCTAssertEqual(small[0][1].packets, [])
        XCTAssertFalse(small[0][1].complete)
        // Two reads (two sessions) at once, each read on until complete.
        var cursors: [[MailboxID: Int64]] = [[a: 0, b: 0, empty: 0], [b: inB[0]]]
        var seen: [[MailboxID: [Int64]]] = [[:], [:]]
        var open = [[a, b, empty], [b]]
        var rounds = 0
        while open.contains(where: { !$0.isEmpty }) && rounds < 50 {
            rounds += 1
            let reads = open.enumerated().map { i, boxes in boxes.map { RelayPageRequest(mailbox: $0, after: cursors[i][$0] ?? 0) } }
            let pages = try store.packets(reads: reads, maxPackets: 64, maxBytes: 1 << 20, nowMs: now)
            XCTAssertEqual(pages.map(\.count), reads.map(\.count))
            for (i, read) in pages.enumerated() {
                var again: [MailboxID] = []
                for page in read {
                    seen[i][page.mailbox, default: []] += page.packets.map(\.sequence)
                    if let last = page.packets.last { cursors[i][page.mailbox] = last.sequence }
                    if !page.complete { again.append(page.mailbox) }
                }
                open[i] = again
            }
        }
        XCTAssertEqual(seen[0][a], inA)
        XCTAssertEqual(seen[0][b], inB)
        XCTAssertEqual(seen[0][empty] ?? [], [])
        XCTAssertEqual(seen[1][b], Array(inB.dropFirst()))
    }

    func testExpiredPacketsAreNotServedAndAreSwept() throws {
        let box = mailbox(try SigningKey.random())
        _ = try store.commit([post(box, expires: now + 10), post(box, expires: now + 10), post(box)], nowMs: now, quota: quota)
        XCTAssertEqual(try store.storedPacketCount(nowMs: now + 20), 1)
        XCTAssertEqual(try store.packets([RelayPageRequest(mailbox: box, after: 0)], maxPackets: 10, maxBytes: 1 << 20, nowMs: now + 20)[0].packets.count, 1)
        XCTAssertEqual(try store.storedBytes(), 300)
        let swept = try store.deleteExpired(nowMs: now + 20)
        XCTAssertEqual(swept.packets, 2)
        XCTAssertEqual(swept.bytes, 200)
        XCTAssertEqual(try store.storedBytes(), 100)
        // The quota counts again from what is left.
        XCTAssertEqual(try store.commit([post(box), post(box)], nowMs: now, quota: quota).map { if case .stored = $0 { return true } else { return false } }, [true, true])
    }

    func testRevocationsAndCountersPersist() throws {
        let key = Sodium.randomBytes(32)
        try store.revoke(pseudonym: key, nowMs: now)
        try store.revoke(pseudonym: key, nowMs: now)
        var counters = RelayCounters()
        counters.accepted = 7
        counters.rateLimited = 2
        try store.saveCounters(counters, nowMs: now)
        store.close()
        store = try reopen()
        XCTAssertEqual(try store.revokedPseudonyms(), [key])
        if let postgres = store as? PostgresRelayStore {
            // Each process has its own row; the cluster's figures add them up.
            XCTAssertEqual(try postgres.loadCounters(), RelayCounters(), "a new process starts from zero")
            XCTAssertEqual(try postgres.clusterCounters(nowMs: now).counters.accepted, 7)
        } else {
            XCTAssertEqual(try store.loadCounters(), counters)
        }
    }

    func testSchemaVersionAndPrivateFiles() throws {
        guard backend == .sqlite else {
            let c = try PostgresConnection(conninfo: conninfo ?? "")
            XCTAssertEqual(try c.query("v", "SELECT version FROM yaok_relay_schema", types: [], []).int(0, 0), PostgresRelaySchema.currentVersion)
            // Migrating again (a second relay starting) changes nothing.
            try PostgresRelaySchema.migrate(c)
            return
        }
        let db = try Database(path: directory + "/" + SQLiteRelayStore.fileName)
        var version = 0
        try db.query("SELECT version FROM schema_version") { version = $0.int(0) }
        XCTAssertEqual(version, RelaySchema.currentVersion)
        db.close()
        var info = stat()
        XCTAssertEqual(stat(directory, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
        XCTAssertEqual(stat(directory + "/" + SQLiteRelayStore.fileName, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        var mode = ""
        try Database(path: directory + "/" + SQLiteRelayStore.fileName).query("PRAGMA journal_mode") { mode = $0.text(0) }
        XCTAssertEqual(mode, "wal")
    }
}

/// Every store test on PostgreSQL, plus what only a shared store does.
final class PostgresRelayStoreTests: RelayStoreTests {
    override var backend: StoreBackend { .postgres }

    func testRateLimitIsCountedInTheStore() throws {
        let pseudonym = Sodium.randomBytes(32)
        let box = mailbox(try SigningKey.random())
        func charged(_ isAck: Bool = false, id: MessageID = .random()) -> RelayStoreWrite {
            .post(RelayPost(mailbox: box, messageID: id, expiresAtMs: now + 60_000, packet: Sodium.randomBytes(10),
                            charge: RelayRateCharge(pseudonym: pseudonym, isAck: isAck, limit: 2)))
        }
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20)
        let id = MessageID.random()
        let first = try store.commit([charged(id: id), charged(id: id), charged()], nowMs: now, quota: quota)
        XCTAssertEqual(first[1], .duplicate, "a duplicate takes no slot")
        // A second relay (another store over the same database) sees the same count.
        let other = try reopen()
        defer { other.close() }
        guard case .rateLimited(let seconds) = try other.commit([charged()], nowMs: now, quota: quota)[0] else { return XCTFail() }
        XCTAssertTrue((3590...3600).contains(seconds), "\(seconds)")
        guard case .stored = try other.commit([charged(true)], nowMs: now, quota: quota)[0] else { return XCTFail("acks have their own limit") }
        // An hour later the slots are free again.
        guard case .stored = try other.commit([charged()], nowMs: now + 3_600_001, quota: quota)[0] else { return XCTFail() }
        // The shared count names no pseudonym: a copy of the database cannot tie the last
        // hour's packets (their received_ms) to who posted them (PROTOCOL.md §8.5).
        guard let pg = store as? PostgresRelayStore else { return XCTFail() }
        let keys = try pg.pool.withConnection { c in
            let rows = try c.query("rate_log_keys_test", "SELECT DISTINCT pseudonym FROM rate_log", types: [], [])
            return (0..<rows.count).map { rows.bytes($0, 0) }
        }
        XCTAssertFalse(keys.isEmpty)
        XCTAssertFalse(keys.contains(pseudonym), "rate_log holds the pseudonym in clear")
    }

    /// One notification per commit for the other relays' live push, naming every mailbox
    /// the commit stored into (before schema 8, relay_post sent one per POST). Read up to
    /// a second commit's notification: PostgreSQL delivers them in commit order.
    func testOneNotificationPerCommitNamesItsMailboxes() throws {
        let listener = try PostgresConnection(conninfo: conninfo ?? "")
        try listener.execute("LISTEN \(PostgresListener.mailboxChannel)")
        let boxes = try (0..<3).map { _ in mailbox(try SigningKey.random()) }
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20)
        _ = try store.commit([post(boxes[0]), post(boxes[1]), post(boxes[0]), post(boxes[2])], nowMs: now, quota: quota)
        let sentinel = mailbox(try SigningKey.random())
        _ = try store.commit([post(sentinel)], nowMs: now, quota: quota)
        var payloads: [String] = []
        var poller = pollfd(fd: listener.socket, events: Int16(POLLIN), revents: 0)
        var waits = 0
        while !payloads.contains(Hex.encode(sentinel.bytes)) && waits < 100 {
            _ = poll(&poller, 1, 100)
            payloads += try listener.notifications().map(\.payload)
            waits += 1
        }
        XCTAssertEqual(payloads.last, Hex.encode(sentinel.bytes))
        XCTAssertEqual(payloads.count, 2, "one notification per commit: \(payloads)")
        XCTAssertEqual(Set(payloads.first?.split(separator: ",").map(String.init) ?? []), Set(boxes.map { Hex.encode($0.bytes) }))
    }

    /// Schema 8 on PostgreSQL: no index by poster, the notes keyed by (expiry, note); a note
    /// made under schema 7 still answers a re-post of the same bytes, and revoke still purges.
    func testMigrationToSchema8KeepsNotesAndPurges() throws {
        store.close()
        conninfo = try TestPostgres.freshDatabase()
        let c = try PostgresConnection(conninfo: conninfo ?? "")
        try c.execute("CREATE TABLE yaok_relay_schema (version INT NOT NULL); INSERT INTO yaok_relay_schema VALUES (7)")
        for migration in PostgresRelaySchema.migrations.prefix(7) { try c.execute(migration) }
        let key = try c.query("key", "SELECT key FROM relay_secret", types: [], []).bytes(0, 0)
        let box = mailbox(try SigningKey.random())
        let packet = Sodium.randomBytes(100), expires = now + 60_000
        try c.query("old_note", "INSERT INTO deleted (digest, expires_ms) VALUES ($1, $2)", types: [PostgresType.bytea, PostgresType.int8],
                    [.bytes(DeletionNote.of(mailbox: box, packet: packet, key: key)), .int(expires)])
        store = try reopen()
        let indexes = try c.query("indexes", "SELECT indexname FROM pg_indexes WHERE tablename IN ('packets', 'deleted') ORDER BY indexname",
                                  types: [], [])
        let names = (0..<indexes.count).map { indexes.text($0, 0) }
        XCTAssertFalse(names.contains("packets_by_poster"), "\(names)")
        XCTAssertFalse(names.contains("deleted_by_expiry"), "\(names)")
        let key2 = try c.query("pk", """
            SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
            WHERE i.indrelid = 'deleted'::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)
            """, types: [], [])
        XCTAssertEqual((0..<key2.count).map { key2.text($0, 0) }, ["expires_ms", "digest"])
        let quota = MailboxQuota(packets: 100, bytes: 1 << 20)
        let write = RelayStoreWrite.post(RelayPost(mailbox: box, messageID: .random(), expiresAtMs: expires, packet: packet))
        XCTAssertEqual(try store.commit([write], nowMs: now, quota: quota), [.duplicate], "the old note still holds")
        let mallory = Sodium.randomBytes(32)
        var p = RelayPost(mailbox: box, messageID: .random(), expiresAtMs: expires, packet: Sodium.randomBytes(100))
        p.poster = mallory
        XCTAssertEqual(try store.commit([.post(p), post(box)], nowMs: now, quota: quota).count, 2)
        try store.revoke(pseudonym: mallory, nowMs: now)
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 1)
    }

    func testConcurrentBatchesFromTwoRelaysKeepEachMailboxInOrder() throws {
        // Two stores committing batches over the same mailboxes at once, in opposite
        // orders: no deadlock surfaces (key-ordered locking), and every mailbox's sequence
        // numbers rise in commit order, so a reader never sees a gap filled later.
        let boxes = try (0..<8).map { _ in mailbox(try SigningKey.random()) }
        let quota = MailboxQuota(packets: 10_000, bytes: 1 << 30)
        let now = self.now
        let stores = try (0..<3).map { _ in try XCTUnwrap(try reopen() as? PostgresRelayStore) }
        defer { stores.forEach { $0.close() } }
        let reader = stores[2]
        let failures = Locked(0)
        let gaps = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            if worker == 2 {
                // A reader: each page's sequences must extend what it saw before, never slot in below it.
                var seen: [MailboxID: Set<Int64>] = [:]
                for _ in 0..<100 {
                    for box in boxes {
                        guard let page = try? reader.packets([RelayPageRequest(mailbox: box, after: 0)], maxPackets: 10_000, maxBytes: 1 << 30, nowMs: now)[0] else { continue }
                        let before = seen[box] ?? []
                        let highest = before.max() ?? 0
                        // Anything at or below what was seen must have been seen: nothing slots in later.
                        if page.packets.contains(where: { $0.sequence <= highest && !before.contains($0.sequence) }) {
                            gaps.withLock { $0 += 1 }
                        }
                        seen[box] = Set(page.packets.map(\.sequence))
                    }
                }
                return
            }
            let s = stores[worker]
            for round in 0..<20 {
                let order = worker == 0 ? boxes : boxes.reversed()
                let writes = order.map { box in RelayStoreWrite.post(RelayPost(mailbox: box, messageID: .random(), expiresAtMs: now + 60_000, packet: [UInt8(round)])) }
                if (try? s.commit(writes, nowMs: now, quota: quota)) == nil { failures.withLock { $0 += 1 } }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
        XCTAssertEqual(gaps.withLock { $0 }, 0)
        for box in boxes {
            let page = try store.packets([RelayPageRequest(mailbox: box, after: 0)], maxPackets: 10_000, maxBytes: 1 << 30, nowMs: now)[0]
            XCTAssertEqual(page.packets.count, 40)
        }
    }

    /// Two relays committing posts and deletes from the same addresses over the same
    /// mailboxes, in opposite orders, while a third sweeps: no transaction fails (holder
    /// rows are locked last and in tag order, never in a cycle with mailbox locks), and
    /// every holder total equals the bytes its tag's packets hold.
    func testHolderTotalsStayExactUnderConcurrentRelays() throws {
        let boxes = try (0..<6).map { _ in mailbox(try SigningKey.random()) }
        let quota = MailboxQuota(packets: 10_000, bytes: 1 << 30, addressBytes: 1 << 30, prefixBytes: 1 << 30)
        let now = self.now
        let stores = try (0..<3).map { _ in try XCTUnwrap(try reopen() as? PostgresRelayStore) }
        defer { stores.forEach { $0.close() } }
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            let s = stores[worker]
            if worker == 2 {
                for round in 0..<20 { if (try? s.deleteExpired(nowMs: now + Int64(round) * 5)) == nil { failures.withLock { $0 += 1 } } }
                return
            }
            var previous: [StoredPacketRef] = []
            for round in 0..<20 {
                let order = worker == 0 ? boxes : boxes.reversed()
                var refs: [StoredPacketRef] = []
                let writes = order.enumerated().map { i, box -> RelayStoreWrite in
                    let id = MessageID.random()
                    refs.append(StoredPacketRef(mailbox: box, messageID: id))
                    var p = RelayPost(mailbox: box, messageID: id, expiresAtMs: now + Int64((i + round) % 4) * 60,
                                      packet: Sodium.randomBytes(50 + i))
                    p.address = [10, 0, 0, UInt8(1 + (i + worker) % 3)]
                    return .post(p)
                }
                let deletes = RelayStoreWrite.delete(previous.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
                if (try? s.commit(writes + [deletes], nowMs: now, quota: quota)) == nil { failures.withLock { $0 += 1 } }
                previous = refs
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
        let pg = try XCTUnwrap(store as? PostgresRelayStore)
        let mismatches = try pg.pool.withConnection { c in
            try c.query("holders_check", """
                SELECT count(*) FROM (
                    SELECT tag, sum(len) AS bytes FROM (
                        SELECT address_tag AS tag, length(packet) AS len FROM packets WHERE address_tag IS NOT NULL
                        UNION ALL SELECT prefix_tag, length(packet) FROM packets WHERE prefix_tag IS NOT NULL) t
                    GROUP BY tag) p
                FULL JOIN holders h USING (tag) WHERE p.bytes IS DISTINCT FROM h.bytes
                """, types: [], []).int(0, 0)
        }
        XCTAssertEqual(mismatches, 0)
        let holders = try pg.pool.withConnection { c in try c.query("holders_count", "SELECT count(*) FROM holders", types: [], []).int(0, 0) }
        XCTAssertEqual(holders, 4, "three addresses and their /24")
    }

    /// Another relay's DELETE that commits while this relay's re-post waits for the
    /// mailbox's lock: the re-post sees the deletion (checked under the lock), no copy.
    func testARePostWaitingOnAnotherRelaysDeleteIsNotStoredAgain() throws {
        let box = mailbox(try SigningKey.random())
        let id = MessageID.random()
        let write = post(box, id: id)
        guard case .stored = try store.commit([write], nowMs: now, quota: quota)[0] else { return XCTFail() }
        // Relay B's DELETE, in a transaction left open: it holds the mailbox's lock.
        let b = try PostgresConnection(conninfo: conninfo ?? "")
        let key = try b.query("k", "SELECT key FROM relay_secret", types: [], []).bytes(0, 0)
        try b.execute("BEGIN")
        let deleted = try b.query("d", "SELECT p_packet, p_expires FROM relay_delete($1, $2)",
                                  types: [PostgresType.bytea, PostgresType.bytea], [.bytes(box.bytes), .bytes(id.bytes)])
        XCTAssertFalse(deleted.isNull(0, 0))
        try b.query("n", "INSERT INTO deleted (digest, expires_ms) VALUES ($1, $2)", types: [PostgresType.bytea, PostgresType.int8],
                    [.bytes(DeletionNote.of(mailbox: box, packet: deleted.bytes(0, 0), key: key)), .int(deleted.int64(0, 1))])
        let outcome = Locked<[RelayStoreOutcome]?>(nil)
        let store = try XCTUnwrap(self.store as? PostgresRelayStore), quota = self.quota, now = self.now
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            outcome.withLock { $0 = try? store.commit([write], nowMs: now, quota: quota) }
            done.signal()
        }
        usleep(300_000)  // the re-post is now waiting for the lock
        try b.execute("COMMIT")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(outcome.withLock { $0 }, [.duplicate])
        XCTAssertEqual(try store.storedPacketCount(nowMs: now), 0)
    }

    /// stats and revoke never migrate: on a database without the schema they say so and
    /// leave it as it was.
    func testStatsAndRevokeDoNotMigrate() throws {
        let empty = try TestPostgres.freshDatabase()
        XCTAssertThrowsError(try RelayStatistics.read(postgres: empty)) { error in
            XCTAssertTrue("\(error)".contains("no Ya OK relay schema (version \(PostgresRelaySchema.currentVersion) expected)"), "\(error)")
        }
        XCTAssertThrowsError(try PostgresRelayStore(conninfo: empty, poolSize: 1, migrate: false))
        let c = try PostgresConnection(conninfo: empty)
        XCTAssertEqual(try c.query("t", "SELECT to_regclass('yaok_relay_schema') IS NULL", types: [], []).bytes(0, 0), [1])
        // On a migrated database they work.
        XCTAssertEqual(try RelayStatistics.read(postgres: conninfo ?? "").storedPackets, 0)
    }

    func testPasswordsAreRedactedFromConnectionStrings() {
        XCTAssertEqual(PostgresConnection.redacted("postgresql://yaok:s3cret@db.example/yaok?sslmode=require"),
                       "postgresql://yaok:***@db.example/yaok?sslmode=require")
        XCTAssertEqual(PostgresConnection.redacted("host=db user=yaok password=s3cret dbname=yaok"),
                       "host=db user=yaok password=*** dbname=yaok")
        XCTAssertEqual(PostgresConnection.redacted("host=db password = 'a b\\'c' dbname=yaok"), "host=db password = *** dbname=yaok")
        XCTAssertEqual(PostgresConnection.redacted("postgresql://db/yaok?password=s3cret&user=x"), "postgresql://db/yaok?password=***&user=x")
        XCTAssertEqual(PostgresConnection.redacted("missing \"=\" after \"s3cret\"", conninfo: "password=s3cret host=db"),
                       "missing \"=\" after \"***\"")
        XCTAssertEqual(PostgresConnection.redacted("host=/run/pg dbname=yaok"), "host=/run/pg dbname=yaok")
        // A bad connection string's error never carries the password.
        XCTAssertThrowsError(try PostgresConnection(conninfo: "host=/nonexistent password=s3cret user=x")) { error in
            XCTAssertFalse("\(error)".contains("s3cret"), "\(error)")
        }
    }
}

extension RelayPost {
    func with(poster: [UInt8]) -> RelayPost {
        var copy = self
        copy.poster = poster
        return copy
    }
}
