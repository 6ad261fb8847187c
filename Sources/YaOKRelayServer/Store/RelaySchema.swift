import YaOKSupport
import YaOKStore

/// The relay database's schema as migrations, recorded in a `schema_version` table (one
/// row). Migration N takes version N-1 to N; they run in order, each in its own
/// transaction, whenever the store opens. Never edit a released migration: append one.
enum RelaySchema {
    static let migrations: [String] = [
        // 1: packets by (mailbox, message ID) with a sequence number that is never reused
        // (AUTOINCREMENT: a session's delivery cursor must not meet a recycled number);
        // per-mailbox totals for quotas; revoked pseudonyms; the stats counters.
        """
        CREATE TABLE packets (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            mailbox BLOB NOT NULL,
            message_id BLOB NOT NULL,
            expires_ms INTEGER NOT NULL,
            received_ms INTEGER NOT NULL,
            packet BLOB NOT NULL,
            UNIQUE (mailbox, message_id)
        );
        CREATE INDEX packets_by_mailbox ON packets (mailbox, seq);
        CREATE INDEX packets_by_expiry ON packets (expires_ms);
        CREATE TABLE mailboxes (
            mailbox BLOB PRIMARY KEY,
            packets INTEGER NOT NULL,
            bytes INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE revoked (
            pseudonym BLOB PRIMARY KEY,
            revoked_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE counters (
            name TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 2: the pseudonyms with the most posts in the last hour, saved with the counters.
        """
        CREATE TABLE top_posters (
            rank INTEGER PRIMARY KEY,
            pseudonym BLOB NOT NULL,
            posts INTEGER NOT NULL
        );
        """,
        // 3: what the recipient deleted, until the packet would have expired: a sender that
        // posts it again (its ACCEPTED was lost) gets ACCEPTED without a second copy, which
        // the recipient would otherwise be delivered again.
        """
        CREATE TABLE deleted (
            mailbox BLOB NOT NULL,
            message_id BLOB NOT NULL,
            expires_ms INTEGER NOT NULL,
            PRIMARY KEY (mailbox, message_id)
        ) WITHOUT ROWID;
        CREATE INDEX deleted_by_expiry ON deleted (expires_ms);
        """,
        // 4: deletion notes keyed on a keyed hash of (mailbox, packet bytes) (`DeletionNote`)
        // instead of the mailbox and message ID in clear: the relay keeps no IDs of what was
        // deleted, and a re-sealed re-post (other bytes) is stored again. The key: random,
        // one per database.
        """
        DROP TABLE deleted;
        CREATE TABLE deleted (
            digest BLOB PRIMARY KEY,
            expires_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX deleted_by_expiry ON deleted (expires_ms);
        CREATE TABLE relay_secret (key BLOB NOT NULL);
        INSERT INTO relay_secret VALUES (randomblob(32));
        """,
        // 5: each packet's poster as a keyed hash (`PosterTag`), so that revoking a
        // pseudonym deletes what it stored; packets stored before have none.
        """
        ALTER TABLE packets ADD COLUMN poster BLOB;
        CREATE INDEX packets_by_poster ON packets (poster) WHERE poster IS NOT NULL;
        """,
        // 6: stored-byte quotas per IPv4 address and per /24: each packet keeps keyed hashes
        // of its poster's address and /24 (`HolderTag`), and `holders` each tag's bytes
        // stored (a row per tag while it holds any). Packets stored before have none and
        // count against nobody until they expire.
        """
        ALTER TABLE packets ADD COLUMN address_tag BLOB;
        ALTER TABLE packets ADD COLUMN prefix_tag BLOB;
        CREATE TABLE holders (
            tag BLOB PRIMARY KEY,
            bytes INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 7: deletion notes keyed by (expiry, digest) instead of the digest alone. A note's
        // expiry is the deleted packet's, read from its header, so a re-post of the same
        // bytes looks its note up by both. Keyed by the digest (random), each note went to
        // a random page of a tree that grows by every DELETE until the notes expire: past
        // 50,000 notes nearly every note of a commit dirtied a page of its own, written
        // once to the WAL and again by the checkpoint (4-8 KiB per DELETE, rising with the
        // table), and a second tree (deleted_by_expiry) the same. In expiry order the notes
        // of a commit land on the few pages at each lifetime's end, and the key serves the
        // sweep too.
        """
        CREATE TABLE deleted_by_expiry_v7 (
            digest BLOB NOT NULL,
            expires_ms INTEGER NOT NULL,
            PRIMARY KEY (expires_ms, digest)
        ) WITHOUT ROWID;
        INSERT INTO deleted_by_expiry_v7 (digest, expires_ms) SELECT digest, expires_ms FROM deleted;
        DROP TABLE deleted;
        ALTER TABLE deleted_by_expiry_v7 RENAME TO deleted;
        """,
        // 8: no index of packets by poster. Each packet's entry in it went to a random page
        // (the key is a keyed hash) at its POST and came out at its DELETE: a third tree
        // keyed at random touched for every message, on the busiest path, to serve `revoke`,
        // which an operator runs rarely. `revoke` now reads the packets table once instead
        // (one scan, in its own transaction).
        """
        DROP INDEX packets_by_poster;
        """,
        // 9: no index of packets by (mailbox, seq). The unique (mailbox, message ID) index
        // already holds each packet's seq (the rowid of every index entry), so a read after a
        // cursor takes the seqs from it and sorts them (`SQLiteRelayStore.packets`). Both
        // trees are keyed at random by mailbox: each POST and DELETE dirtied a page of each,
        // written to the WAL at every commit and again by the checkpoint (with 8,000 packets
        // stored, 6.8 of the 20 KiB written per message went to this one).
        """
        DROP INDEX packets_by_mailbox;
        """,
    ]

    static var currentVersion: Int { migrations.count }

    static func migrate(_ db: Database) throws {
        try db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        try db.transaction {
            var rows = 0
            try db.query("SELECT COUNT(*) FROM schema_version") { rows = $0.int(0) }
            if rows == 0 { try db.execute("INSERT INTO schema_version VALUES (0)") }
        }
        while true {
            let done = try db.transaction { () throws -> Bool in
                var version = 0
                try db.query("SELECT version FROM schema_version") { version = $0.int(0) }
                guard version <= migrations.count else {
                    throw YaOKError(.storage, "The relay database has schema version \(version); this relay knows up to \(migrations.count): run a newer yaok-relay")
                }
                guard version < migrations.count else { return true }
                try db.execute(migrations[version])
                try db.query("UPDATE schema_version SET version = ?", [.int(Int64(version + 1))])
                return false
            }
            if done { return }
        }
    }
}
