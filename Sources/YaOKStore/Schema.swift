import YaOKSupport
import YaOKWire
import YaOKCrypto

/// The database schema as a list of migrations. Migration N (1-based) takes a database at
/// `PRAGMA user_version` N-1 to N; they run in order, each in its own transaction, every
/// time a store opens. Never edit a released migration: append a new one.
enum Schema {
    static let migrations: [String] = [
        // 1: the lock. The vault holds the sealed keys; lock_state the persisted PIN
        // failures and lockout deadline; settings small integers (auto-lock); the security
        // log has no message content and no keys.
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
        CREATE TABLE vault (
            kind TEXT PRIMARY KEY,
            salt BLOB NOT NULL,
            ops_limit INTEGER NOT NULL,
            mem_limit INTEGER NOT NULL,
            nonce BLOB NOT NULL,
            ciphertext BLOB NOT NULL
        );
        CREATE TABLE lock_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            failures INTEGER NOT NULL,
            locked_until_ms INTEGER NOT NULL
        );
        INSERT INTO lock_state VALUES (1, 0, 0);
        CREATE TABLE settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        CREATE TABLE security_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            time_ms INTEGER NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT NOT NULL
        );
        """,
        // 2: contacts and messages. A conversation outlives its contact when the contact is
        // deleted but the messages are kept (US-012); a contact shares its conversation's id.
        // peer_lookup is a keyed hash of the peer's public keys; names, keys, titles and
        // bodies are AEAD ciphertexts (FieldCipher).
        """
        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            peer_lookup BLOB NOT NULL UNIQUE,
            title BLOB NOT NULL
        );
        CREATE TABLE contacts (
            id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
            name BLOB NOT NULL,
            keys BLOB NOT NULL,
            verified INTEGER NOT NULL DEFAULT 0,
            added_ms INTEGER NOT NULL
        );
        CREATE TABLE messages (
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
            UNIQUE (conversation_id, message_id)
        );
        CREATE INDEX messages_history ON messages (conversation_id, sender_ts_ms, id);
        CREATE INDEX messages_by_id ON messages (message_id);
        """,
        // 3: connection status (US-011) and a small index for unread counts.
        """
        ALTER TABLE contacts ADD COLUMN last_seen_ms INTEGER;
        ALTER TABLE contacts ADD COLUMN last_transport TEXT;
        CREATE INDEX messages_unread ON messages (conversation_id) WHERE unread = 1;
        """,
        // 4: message IDs seen on the wire, for duplicate detection across restarts
        // (docs/PROTOCOL.md §4.8).
        DuplicateFilter.tableSQL,
        // 5: consecutive lockouts, so that each lockout after the first lasts longer.
        "ALTER TABLE lock_state ADD COLUMN lockouts INTEGER NOT NULL DEFAULT 0;",
        // 6: the delivery engine. The outbox holds sealed packets (messages and the acks we
        // owe) until they are confirmed: end-to-end ciphertext, so nothing here is readable
        // without the recipient's key. held_packets keeps what arrives while the node is
        // locked, to open on unlock. link_key is the node's link static key, sealed under the
        // database key, with its certificate (docs/PROTOCOL.md §5). contacts.card keeps the
        // contact's signed card, sealed, so apps never keep cards outside the encrypted store.
        """
        CREATE TABLE outbox (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            packet_id BLOB NOT NULL UNIQUE CHECK (length(packet_id) = 16),
            kind INTEGER NOT NULL,
            contact_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            packet BLOB NOT NULL,
            state INTEGER NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL
        );
        CREATE INDEX outbox_by_contact ON outbox (contact_id, seq);
        CREATE INDEX outbox_due ON outbox (state, next_attempt_ms);
        CREATE INDEX outbox_expiry ON outbox (expires_ms);
        ALTER TABLE contacts ADD COLUMN card BLOB;
        CREATE TABLE held_packets (
            id INTEGER PRIMARY KEY,
            digest BLOB NOT NULL UNIQUE,
            packet BLOB NOT NULL,
            received_ms INTEGER NOT NULL
        );
        CREATE TABLE link_key (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            sealed_secret BLOB NOT NULL,
            certificate BLOB NOT NULL
        );
        """,
        // 7: lock hardening (issue 8). The lockout is kept as the time it has left on the
        // boot clock (CLOCK_BOOTTIME) with the boot it was measured in, not as a wall-clock
        // deadline; locked_until_ms is retired (written 0). A lockout in progress carries
        // over what it has left (at most the longest lockout) and restarts its count in
        // this boot. device_check marks a PIN vault bound to a device secret: a keyed hash
        // of the salt under that secret (NULL: not bound).
        """
        ALTER TABLE lock_state ADD COLUMN lockout_remaining_ms INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE lock_state ADD COLUMN lockout_boot_id TEXT NOT NULL DEFAULT '';
        ALTER TABLE lock_state ADD COLUMN lockout_boot_ms INTEGER NOT NULL DEFAULT 0;
        UPDATE lock_state SET
            lockout_remaining_ms = max(0, min(locked_until_ms
                - CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), 3600000)),
            lockout_boot_id = 'migrated',
            locked_until_ms = 0;
        ALTER TABLE vault ADD COLUMN device_check BLOB;
        """,
        // 8: integrity of what stays in clear (issue 8 §5; Store+Integrity.swift). `mac`:
        // a keyed MAC under the database key over each row's identity and clear columns
        // (NULL in rows written before this migration until the first unlock adopts them).
        // The security log is a hash chain (`chain`) whose values are MACed once the key is
        // at hand (`mac`); `tampered` marks events found altered, or preceded by a removed
        // one. The log's seal (its last MACed event) is the meta row 'security_log_seal'.
        """
        ALTER TABLE contacts ADD COLUMN mac BLOB;
        ALTER TABLE messages ADD COLUMN mac BLOB;
        ALTER TABLE outbox ADD COLUMN mac BLOB;
        ALTER TABLE security_events ADD COLUMN chain BLOB;
        ALTER TABLE security_events ADD COLUMN mac BLOB;
        ALTER TABLE security_events ADD COLUMN tampered INTEGER NOT NULL DEFAULT 0;
        """,
        // 9: relay pseudonyms (docs/PROTOCOL.md §8.2): one random Ed25519 seed per relay
        // address, sealed under the database key with the address in its associated data.
        """
        CREATE TABLE relay_accounts (
            relay TEXT PRIMARY KEY,
            sealed_seed BLOB NOT NULL
        );
        """,
        // 10: `carried` marks a message a relay stored (sent), which waits for its end-to-end
        // ack until next_attempt_ms and is posted again (or sent over a direct link) without
        // it: a relay that loses or drops it must not lose the message (PROTOCOL.md §6.1).
        """
        ALTER TABLE outbox ADD COLUMN carried INTEGER NOT NULL DEFAULT 0;
        """,
        // 11: covering indexes for the pump's due query (Store.dueOutboxIDs). A row's
        // columns after `packet` sit behind its overflow pages, so without them every due
        // check of a 10 KB packet read the packet from disk.
        """
        CREATE INDEX outbox_pump_by_contact ON outbox (contact_id, state, seq, next_attempt_ms, expires_ms, packet_id);
        CREATE INDEX outbox_pump ON outbox (state, seq, next_attempt_ms, expires_ms, packet_id);
        """,
        // 12: the carry store (docs/PROTOCOL.md §10.9; Store+Carry.swift): packets this node
        // carries for others. They are sealed end to end by their sender and stored as they
        // came, NOT under the database key and without a row MAC: a locked node (no keys)
        // must take and hand them on, and sealing them again would hide nothing a carrier
        // does not already see. The rows keep the packet's outside fields as columns (the
        // copy budget and hop limit here are authoritative: bytes 2 and 3 of `packet` are as
        // taken), the ordering (expiry, id) that reconciliation pages through, and the
        // eviction order (budget, time taken, id) with the size, so that neither the usage
        // nor a page of keys reads a packet. carry_quota counts what each depositor gave per
        // clock hour; carry_purges remembers published claims until the packet's expiry.
        """
        CREATE TABLE carried_packets (
            id BLOB PRIMARY KEY NOT NULL CHECK (length(id) = 16),
            expires_ms INTEGER NOT NULL,
            copy_budget INTEGER NOT NULL CHECK (copy_budget BETWEEN 1 AND 255),
            hop_limit INTEGER NOT NULL CHECK (hop_limit BETWEEN 0 AND 255),
            size INTEGER NOT NULL,
            taken_ms INTEGER NOT NULL,
            depositor BLOB NOT NULL,
            claim_hash BLOB NOT NULL CHECK (length(claim_hash) = 16),
            packet BLOB NOT NULL
        );
        CREATE INDEX carried_order ON carried_packets (expires_ms, id);
        CREATE INDEX carried_eviction ON carried_packets (copy_budget, taken_ms, id, size);
        CREATE INDEX carried_by_claim ON carried_packets (claim_hash);
        CREATE TABLE carry_quota (
            depositor BLOB NOT NULL,
            hour INTEGER NOT NULL,
            packets INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            PRIMARY KEY (depositor, hour)
        ) WITHOUT ROWID;
        CREATE TABLE carry_purges (
            claim_hash BLOB PRIMARY KEY NOT NULL CHECK (length(claim_hash) = 16),
            claim BLOB NOT NULL CHECK (length(claim) = 16),
            expires_ms INTEGER NOT NULL,
            held INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX carry_purges_eviction ON carry_purges (held, expires_ms);
        """,
        // 13: this node's own carried copies (docs/PROTOCOL.md §12.6): for each message sent
        // to a contact, the identity of the carried copy sealed with it and the claim inside,
        // so that an acknowledgement by any path deletes the copy and publishes the claim.
        // Deleted with the contact (the copy is then left to spread and expire on its own).
        """
        CREATE TABLE carried_own (
            message_id BLOB PRIMARY KEY NOT NULL CHECK (length(message_id) = 16),
            contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
            packet_id BLOB NOT NULL CHECK (length(packet_id) = 16),
            claim BLOB NOT NULL CHECK (length(claim) = 16),
            expires_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX carried_own_expiry ON carried_own (expires_ms);
        CREATE INDEX carried_own_packet ON carried_own (packet_id);
        """,
        // 14: forward-secrecy key state (docs/PROTOCOL.md §13.3), per contact and deleted with
        // it. Each own receiver key is its own row, sealed (its secret, created and superseded
        // times, then its public key so that loading a ring needs no X25519; rows written
        // before the public key was kept still read), so erasing one deletes the row and
        // secure_delete zeroes it in the file;
        // the rest of the ring (the contact's newest key, counters, unsettled sends) is one
        // sealed blob.
        """
        CREATE TABLE receiver_keys (
            contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
            key_id INTEGER NOT NULL CHECK (key_id BETWEEN 1 AND 4294967295),
            sealed BLOB NOT NULL,
            PRIMARY KEY (contact_id, key_id)
        ) WITHOUT ROWID;
        CREATE TABLE receiver_key_state (
            contact_id INTEGER PRIMARY KEY NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
            sealed BLOB NOT NULL
        );
        """,
        // 15: per contact, how many messages were sealed to its long-term key for want of a
        // receiver key (docs/PROTOCOL.md §13.5), sealed; kept so that the fallback is still
        // shown after a restart. Deleted with the contact.
        """
        CREATE TABLE long_term_seals (
            contact_id INTEGER PRIMARY KEY NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
            sealed BLOB NOT NULL
        );
        """,
        // 16: the node's prekeys (docs/PROTOCOL.md §13.4), one per UTC day at most, published
        // in its version 2 card. Not per contact (every contact seals to the same prekey), so
        // nothing cascades from a contact; each is its own sealed row (secret || public key),
        // deleted (and zeroed by secure_delete) 23 days after its day, also while locked (the
        // key_id, in clear, is the day), and by a reset with the rest.
        """
        CREATE TABLE prekeys (
            key_id INTEGER PRIMARY KEY NOT NULL CHECK (key_id BETWEEN 2147483648 AND 4294967295),
            sealed BLOB NOT NULL
        ) WITHOUT ROWID;
        """,
        // 17: the carry store's eviction reads (Store+CarryEviction, docs/PROTOCOL.md §10.9)
        // through indexes instead of every row: the depositors present in a budget and each one's oldest packet there, and the
        // packets each depositor holds. The usage (packets, bytes) that every take checks
        // against the caps is kept by triggers in one row instead of summed over the store
        // (the sweep recounts it, so a file edited by hand cannot skew it for long). DELETE
        // without WHERE still fires the triggers (SQLite skips its truncation when a table
        // has triggers); nothing writes carried_packets with REPLACE, whose deletes would not.
        """
        CREATE INDEX carried_by_class ON carried_packets (copy_budget, depositor, taken_ms, id);
        CREATE INDEX carried_by_depositor ON carried_packets (depositor, expires_ms);
        CREATE TABLE carry_usage (
            only INTEGER PRIMARY KEY NOT NULL CHECK (only = 0),
            packets INTEGER NOT NULL,
            bytes INTEGER NOT NULL
        );
        INSERT INTO carry_usage SELECT 0, count(*), coalesce(sum(size), 0) FROM carried_packets;
        CREATE TRIGGER carry_usage_insert AFTER INSERT ON carried_packets BEGIN
            UPDATE carry_usage SET packets = packets + 1, bytes = bytes + NEW.size;
        END;
        CREATE TRIGGER carry_usage_delete AFTER DELETE ON carried_packets BEGIN
            UPDATE carry_usage SET packets = packets - 1, bytes = bytes - OLD.size;
        END;
        CREATE TRIGGER carry_usage_resize AFTER UPDATE OF size ON carried_packets BEGIN
            UPDATE carry_usage SET bytes = bytes - OLD.size + NEW.size;
        END;
        """,
        // 18: a forward-secrecy ring's unsettled sends (docs/PROTOCOL.md §13.3), one row per
        // message instead of inside the sealed state row, so that a send or an ack writes one
        // row and not the up to 4,096 a sender holds (about 115 KB written per send). The
        // message ID is in clear as in `messages`; the contact's key it was sealed to and the
        // expiry are sealed, bound to the contact and message ID. A state row written before
        // still holds its sends: they move into rows at the first read with the key
        // (Store.receiverKeyRing), which cannot happen here while the store is locked.
        """
        CREATE TABLE receiver_key_pending (
            contact_id INTEGER NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
            message_id BLOB NOT NULL CHECK (length(message_id) = 16),
            sealed BLOB NOT NULL,
            PRIMARY KEY (contact_id, message_id)
        ) WITHOUT ROWID;
        """,
        // 19: fewer pages written per send, receipt and ack (issue 20): every index a row is
        // in is one more page written to the log and synced at each insert, delete, and
        // update of an indexed column. The outbox loses AUTOINCREMENT (its sqlite_sequence
        // row was a page per send: `seq` is only an order, never shown or kept elsewhere,
        // and a new row still gets the largest seq there is plus one, so sending order
        // holds), outbox_by_contact (the pump's (contact_id, ...) index serves every
        // per-contact query) and outbox_due, replaced by outbox_timers: the rows the retry
        // timer waits for (queued, or waiting at a relay), in next_attempt_ms order, so the
        // timer's query after each send is one seek instead of a read of every row and its
        // packet; outbox_pump also holds contact_id, for the relay's pump. `messages` keeps
        // one unique index (message_id, conversation_id) instead of two: the lookup by
        // message ID alone and the duplicate check by (conversation, ID) both seek it. Both
        // tables are rebuilt (SQLite cannot drop AUTOINCREMENT or a UNIQUE constraint in
        // place) with every row, its rowid and its MAC as they were: the rowid is in history
        // cursors, no MAC covers it. carried_own_expiry goes: a page on every send and ack
        // so that the carry sweep, at most hourly, would not read the table's small rows
        // (about 70 bytes, no packet) once. Tests pin the query plans (StoreQueryPlanTests).
        """
        CREATE TABLE outbox_19 (
            seq INTEGER PRIMARY KEY,
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
        INSERT INTO outbox_19 (seq, packet_id, kind, contact_id, packet, state, attempts, next_attempt_ms, expires_ms, mac, carried)
            SELECT seq, packet_id, kind, contact_id, packet, state, attempts, next_attempt_ms, expires_ms, mac, carried FROM outbox;
        DROP TABLE outbox;
        ALTER TABLE outbox_19 RENAME TO outbox;
        CREATE INDEX outbox_pump_by_contact ON outbox (contact_id, state, seq, next_attempt_ms, expires_ms, packet_id);
        CREATE INDEX outbox_pump ON outbox (state, seq, next_attempt_ms, expires_ms, packet_id, contact_id);
        CREATE INDEX outbox_timers ON outbox (next_attempt_ms, carried, state) WHERE state = 0 OR carried & 1 = 1;
        CREATE INDEX outbox_expiry ON outbox (expires_ms);
        CREATE TABLE messages_19 (
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
            UNIQUE (message_id, conversation_id)
        );
        INSERT INTO messages_19 (id, conversation_id, message_id, direction, status, sender_ts_ms, created_ms, sent_ms,
                                 received_ms, unread, body, mac)
            SELECT id, conversation_id, message_id, direction, status, sender_ts_ms, created_ms, sent_ms,
                   received_ms, unread, body, mac FROM messages;
        DROP TABLE messages;
        ALTER TABLE messages_19 RENAME TO messages;
        CREATE INDEX messages_history ON messages (conversation_id, sender_ts_ms, id);
        CREATE INDEX messages_unread ON messages (conversation_id) WHERE unread = 1;
        DROP INDEX IF EXISTS carried_own_expiry;
        """,
    ]

    static var latestVersion: Int { migrations.count }

    /// Brings `db` up to `target` (default: the latest). A database newer than this code is
    /// refused rather than misread.
    static func migrate(_ db: Database, to target: Int = latestVersion) throws {
        let current = try db.userVersion
        guard current <= latestVersion else {
            throw YaOKError(.corruptStore, "The data store was written by a newer version of Ya OK (schema \(current))")
        }
        guard current < target else { return }
        for version in (current + 1)...target {
            try db.transaction {
                try db.execute(migrations[version - 1])
                try db.setUserVersion(version)
            }
        }
    }
}
