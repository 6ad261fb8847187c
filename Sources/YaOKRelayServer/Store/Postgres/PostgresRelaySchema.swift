import YaOKSupport
import YaOKWire

/// The PostgreSQL store's schema as migrations, recorded in `yaok_relay_schema` (one row),
/// as `RelaySchema` does for SQLite. They run at open under an advisory lock, so relays
/// starting together migrate once. Never edit a released migration: append one.
enum PostgresRelaySchema {
    /// The advisory lock key that serializes migrations ("yaokrlay").
    static let lockKey: Int64 = 0x79616f6b726c6179

    static let migrations: [String] = [
        // 1: the SQLite schema's tables, plus the rate-limit log (cluster-wide limits) and
        // counters per relay process; the write paths as functions, so that one POST or
        // DELETE is one round trip, and the locking order lives in one place.
        //
        // Ordering (docs/RELAY.md, "PostgreSQL"): every write to a mailbox first locks its
        // `mailboxes` row, and only then takes a sequence number. So one mailbox's packets
        // commit in sequence order, and a reader that saw packet N has seen every packet of
        // that mailbox below N: a session's cursor never skips one committed late.
        """
        CREATE TABLE packets (
            seq BIGSERIAL PRIMARY KEY,
            mailbox BYTEA NOT NULL,
            message_id BYTEA NOT NULL,
            expires_ms BIGINT NOT NULL,
            received_ms BIGINT NOT NULL,
            packet BYTEA NOT NULL,
            UNIQUE (mailbox, message_id)
        );
        -- Sealed packets do not compress: skip the attempt.
        ALTER TABLE packets ALTER COLUMN packet SET STORAGE EXTERNAL;
        CREATE INDEX packets_by_mailbox ON packets (mailbox, seq);
        CREATE INDEX packets_by_expiry ON packets (expires_ms);
        CREATE TABLE mailboxes (
            mailbox BYTEA PRIMARY KEY,
            packets BIGINT NOT NULL,
            bytes BIGINT NOT NULL
        );
        CREATE TABLE revoked (
            pseudonym BYTEA PRIMARY KEY,
            revoked_ms BIGINT NOT NULL
        );
        CREATE TABLE counters (
            relay TEXT NOT NULL,
            name TEXT NOT NULL,
            value BIGINT NOT NULL,
            PRIMARY KEY (relay, name)
        );
        CREATE TABLE rate_log (
            pseudonym BYTEA NOT NULL,
            kind SMALLINT NOT NULL,
            at_ms BIGINT NOT NULL
        );
        CREATE INDEX rate_log_by_key ON rate_log (pseudonym, kind, at_ms);

        -- outcome: 0 stored (value = sequence), 1 duplicate, 2 mailbox full,
        -- 3 rate-limited (value = seconds until a slot frees).
        CREATE FUNCTION relay_post(p_mailbox BYTEA, p_message_id BYTEA, p_expires BIGINT, p_now BIGINT,
                                   p_packet BYTEA, p_max_packets BIGINT, p_max_bytes BIGINT,
                                   p_pseudonym BYTEA, p_kind SMALLINT, p_rate_limit BIGINT, p_window BIGINT,
                                   OUT outcome INT, OUT value BIGINT)
        LANGUAGE plpgsql AS $$
        DECLARE
            n BIGINT; b BIGINT; used BIGINT; oldest BIGINT;
        BEGIN
            INSERT INTO mailboxes AS m (mailbox, packets, bytes) VALUES (p_mailbox, 0, 0)
                ON CONFLICT (mailbox) DO UPDATE SET packets = m.packets
                RETURNING m.packets, m.bytes INTO n, b;
            IF EXISTS (SELECT 1 FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id) THEN
                outcome := 1; value := 0; RETURN;
            END IF;
            IF p_rate_limit > 0 THEN
                SELECT count(*), min(at_ms) INTO used, oldest FROM rate_log
                    WHERE pseudonym = p_pseudonym AND kind = p_kind AND at_ms > p_now - p_window;
                IF used >= p_rate_limit THEN
                    outcome := 3; value := GREATEST(1, (oldest + p_window - p_now + 999) / 1000); RETURN;
                END IF;
            END IF;
            IF n >= p_max_packets OR b + length(p_packet) > p_max_bytes THEN
                outcome := 2; value := 0; RETURN;
            END IF;
            INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet)
                VALUES (p_mailbox, p_message_id, p_expires, p_now, p_packet) RETURNING seq INTO value;
            UPDATE mailboxes SET packets = packets + 1, bytes = bytes + length(p_packet) WHERE mailbox = p_mailbox;
            IF p_rate_limit > 0 THEN
                INSERT INTO rate_log (pseudonym, kind, at_ms) VALUES (p_pseudonym, p_kind, p_now);
            END IF;
            -- Sent at commit, once per mailbox per transaction: live push in other relays.
            PERFORM pg_notify('yaok_relay_mailbox', encode(p_mailbox, 'hex'));
            outcome := 0;
        END $$;

        CREATE FUNCTION relay_delete(p_mailbox BYTEA, p_message_id BYTEA) RETURNS INT
        LANGUAGE plpgsql AS $$
        DECLARE
            len INT;
        BEGIN
            PERFORM 1 FROM mailboxes WHERE mailbox = p_mailbox FOR UPDATE;
            DELETE FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id
                RETURNING length(packet) INTO len;
            IF len IS NULL THEN RETURN 0; END IF;
            UPDATE mailboxes SET packets = packets - 1, bytes = bytes - len WHERE mailbox = p_mailbox;
            RETURN 1;
        END $$;

        -- Expired packets, a mailbox at a time in key order (the same lock order as writes).
        CREATE FUNCTION relay_sweep(p_now BIGINT, p_window BIGINT) RETURNS BIGINT
        LANGUAGE plpgsql AS $$
        DECLARE
            r RECORD; n BIGINT; b BIGINT; total BIGINT := 0;
        BEGIN
            FOR r IN SELECT DISTINCT mailbox FROM packets WHERE expires_ms <= p_now ORDER BY mailbox LOOP
                PERFORM 1 FROM mailboxes WHERE mailbox = r.mailbox FOR UPDATE;
                WITH d AS (DELETE FROM packets WHERE mailbox = r.mailbox AND expires_ms <= p_now
                           RETURNING length(packet) AS len)
                    SELECT count(*), COALESCE(sum(len), 0) INTO n, b FROM d;
                UPDATE mailboxes SET packets = packets - n, bytes = bytes - b WHERE mailbox = r.mailbox;
                total := total + n;
            END LOOP;
            DELETE FROM rate_log WHERE at_ms <= p_now - p_window;
            RETURN total;
        END $$;
        """,
        // 2: as SQLite's migration 3, deletions are remembered until the packet would have
        // expired, so a re-post that crosses the DELETE is a duplicate, not a second copy;
        // the top posters saved with each relay's counters (for stats --top).
        """
        CREATE TABLE deleted (
            mailbox BYTEA NOT NULL,
            message_id BYTEA NOT NULL,
            expires_ms BIGINT NOT NULL,
            PRIMARY KEY (mailbox, message_id)
        );
        CREATE INDEX deleted_by_expiry ON deleted (expires_ms);
        CREATE TABLE top_posters (
            relay TEXT NOT NULL,
            rank BIGINT NOT NULL,
            pseudonym BYTEA NOT NULL,
            posts BIGINT NOT NULL,
            PRIMARY KEY (relay, rank)
        );
        CREATE OR REPLACE FUNCTION relay_delete(p_mailbox BYTEA, p_message_id BYTEA) RETURNS INT
        LANGUAGE plpgsql AS $$
        DECLARE
            len INT; expires BIGINT;
        BEGIN
            PERFORM 1 FROM mailboxes WHERE mailbox = p_mailbox FOR UPDATE;
            DELETE FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id
                RETURNING length(packet), expires_ms INTO len, expires;
            IF len IS NULL THEN RETURN -1; END IF;
            UPDATE mailboxes SET packets = packets - 1, bytes = bytes - len WHERE mailbox = p_mailbox;
            INSERT INTO deleted (mailbox, message_id, expires_ms) VALUES (p_mailbox, p_message_id, expires)
                ON CONFLICT DO NOTHING;
            RETURN len;
        END $$;
        CREATE OR REPLACE FUNCTION relay_tombstoned(p_mailbox BYTEA, p_message_id BYTEA) RETURNS BOOLEAN
        LANGUAGE sql AS $$ SELECT EXISTS (SELECT 1 FROM deleted WHERE mailbox = p_mailbox AND message_id = p_message_id) $$;
        """,
        // 3: relay_post checks the deletion note itself, once it holds the mailbox's row lock
        // (relay_delete writes the note under the same lock): a DELETE committed by another
        // relay between a separate check and the lock can no longer let a re-post in.
        """
        CREATE OR REPLACE FUNCTION relay_post(p_mailbox BYTEA, p_message_id BYTEA, p_expires BIGINT, p_now BIGINT,
                                              p_packet BYTEA, p_max_packets BIGINT, p_max_bytes BIGINT,
                                              p_pseudonym BYTEA, p_kind SMALLINT, p_rate_limit BIGINT, p_window BIGINT,
                                              OUT outcome INT, OUT value BIGINT)
        LANGUAGE plpgsql AS $$
        DECLARE
            n BIGINT; b BIGINT; used BIGINT; oldest BIGINT;
        BEGIN
            INSERT INTO mailboxes AS m (mailbox, packets, bytes) VALUES (p_mailbox, 0, 0)
                ON CONFLICT (mailbox) DO UPDATE SET packets = m.packets
                RETURNING m.packets, m.bytes INTO n, b;
            -- Under the lock, each statement sees what committed before it was taken.
            IF EXISTS (SELECT 1 FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id)
               OR EXISTS (SELECT 1 FROM deleted WHERE mailbox = p_mailbox AND message_id = p_message_id) THEN
                outcome := 1; value := 0; RETURN;
            END IF;
            IF p_rate_limit > 0 THEN
                SELECT count(*), min(at_ms) INTO used, oldest FROM rate_log
                    WHERE pseudonym = p_pseudonym AND kind = p_kind AND at_ms > p_now - p_window;
                IF used >= p_rate_limit THEN
                    outcome := 3; value := GREATEST(1, (oldest + p_window - p_now + 999) / 1000); RETURN;
                END IF;
            END IF;
            IF n >= p_max_packets OR b + length(p_packet) > p_max_bytes THEN
                outcome := 2; value := 0; RETURN;
            END IF;
            INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet)
                VALUES (p_mailbox, p_message_id, p_expires, p_now, p_packet) RETURNING seq INTO value;
            UPDATE mailboxes SET packets = packets + 1, bytes = bytes + length(p_packet) WHERE mailbox = p_mailbox;
            IF p_rate_limit > 0 THEN
                INSERT INTO rate_log (pseudonym, kind, at_ms) VALUES (p_pseudonym, p_kind, p_now);
            END IF;
            PERFORM pg_notify('yaok_relay_mailbox', encode(p_mailbox, 'hex'));
            outcome := 0;
        END $$;
        """,
        // 4: deletion notes as keyed hashes of (mailbox, packet bytes) (`DeletionNote`, as
        // SQLite's migration 4): no IDs of what was deleted are kept, and a re-sealed re-post
        // is stored again. relay_delete returns the packet (the note is made by the relay,
        // which holds the key, in the same transaction, under the mailbox's lock);
        // relay_post takes the note to check. The key: random, one per database.
        """
        DROP TABLE deleted;
        CREATE TABLE deleted (
            digest BYTEA PRIMARY KEY,
            expires_ms BIGINT NOT NULL
        );
        CREATE INDEX deleted_by_expiry ON deleted (expires_ms);
        CREATE TABLE relay_secret (key BYTEA NOT NULL);
        INSERT INTO relay_secret
            VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
        DROP FUNCTION relay_tombstoned(BYTEA, BYTEA);
        DROP FUNCTION relay_delete(BYTEA, BYTEA);
        CREATE FUNCTION relay_delete(p_mailbox BYTEA, p_message_id BYTEA, OUT p_packet BYTEA, OUT p_expires BIGINT)
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM 1 FROM mailboxes WHERE mailbox = p_mailbox FOR UPDATE;
            DELETE FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id
                RETURNING packet, expires_ms INTO p_packet, p_expires;
            IF p_packet IS NULL THEN RETURN; END IF;
            UPDATE mailboxes SET packets = packets - 1, bytes = bytes - length(p_packet) WHERE mailbox = p_mailbox;
        END $$;
        DROP FUNCTION relay_post(BYTEA, BYTEA, BIGINT, BIGINT, BYTEA, BIGINT, BIGINT, BYTEA, SMALLINT, BIGINT, BIGINT);
        CREATE FUNCTION relay_post(p_mailbox BYTEA, p_message_id BYTEA, p_expires BIGINT, p_now BIGINT,
                                              p_packet BYTEA, p_max_packets BIGINT, p_max_bytes BIGINT,
                                              p_pseudonym BYTEA, p_kind SMALLINT, p_rate_limit BIGINT, p_window BIGINT, p_note BYTEA,
                                              OUT outcome INT, OUT value BIGINT)
        LANGUAGE plpgsql AS $$
        DECLARE
            n BIGINT; b BIGINT; used BIGINT; oldest BIGINT;
        BEGIN
            INSERT INTO mailboxes AS m (mailbox, packets, bytes) VALUES (p_mailbox, 0, 0)
                ON CONFLICT (mailbox) DO UPDATE SET packets = m.packets
                RETURNING m.packets, m.bytes INTO n, b;
            -- Under the lock, each statement sees what committed before it was taken.
            IF EXISTS (SELECT 1 FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id)
               OR EXISTS (SELECT 1 FROM deleted WHERE digest = p_note) THEN
                outcome := 1; value := 0; RETURN;
            END IF;
            IF p_rate_limit > 0 THEN
                SELECT count(*), min(at_ms) INTO used, oldest FROM rate_log
                    WHERE pseudonym = p_pseudonym AND kind = p_kind AND at_ms > p_now - p_window;
                IF used >= p_rate_limit THEN
                    outcome := 3; value := GREATEST(1, (oldest + p_window - p_now + 999) / 1000); RETURN;
                END IF;
            END IF;
            IF n >= p_max_packets OR b + length(p_packet) > p_max_bytes THEN
                outcome := 2; value := 0; RETURN;
            END IF;
            INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet)
                VALUES (p_mailbox, p_message_id, p_expires, p_now, p_packet) RETURNING seq INTO value;
            UPDATE mailboxes SET packets = packets + 1, bytes = bytes + length(p_packet) WHERE mailbox = p_mailbox;
            IF p_rate_limit > 0 THEN
                INSERT INTO rate_log (pseudonym, kind, at_ms) VALUES (p_pseudonym, p_kind, p_now);
            END IF;
            PERFORM pg_notify('yaok_relay_mailbox', encode(p_mailbox, 'hex'));
            outcome := 0;
        END $$;
        """,
        // 5: each packet's poster as a keyed hash (`PosterTag`, as SQLite's migration 5), so
        // that a revocation deletes what the pseudonym stored: relay_post takes it, and
        // relay_purge deletes by it a mailbox at a time in key order (the writes' lock order).
        """
        ALTER TABLE packets ADD COLUMN poster BYTEA;
        CREATE INDEX packets_by_poster ON packets (poster) WHERE poster IS NOT NULL;
        DROP FUNCTION relay_post(BYTEA, BYTEA, BIGINT, BIGINT, BYTEA, BIGINT, BIGINT, BYTEA, SMALLINT, BIGINT, BIGINT, BYTEA);
        CREATE FUNCTION relay_post(p_mailbox BYTEA, p_message_id BYTEA, p_expires BIGINT, p_now BIGINT,
                                              p_packet BYTEA, p_max_packets BIGINT, p_max_bytes BIGINT,
                                              p_pseudonym BYTEA, p_kind SMALLINT, p_rate_limit BIGINT, p_window BIGINT, p_note BYTEA, p_poster BYTEA,
                                              OUT outcome INT, OUT value BIGINT)
        LANGUAGE plpgsql AS $$
        DECLARE
            n BIGINT; b BIGINT; used BIGINT; oldest BIGINT;
        BEGIN
            INSERT INTO mailboxes AS m (mailbox, packets, bytes) VALUES (p_mailbox, 0, 0)
                ON CONFLICT (mailbox) DO UPDATE SET packets = m.packets
                RETURNING m.packets, m.bytes INTO n, b;
            -- Under the lock, each statement sees what committed before it was taken.
            IF EXISTS (SELECT 1 FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id)
               OR EXISTS (SELECT 1 FROM deleted WHERE digest = p_note) THEN
                outcome := 1; value := 0; RETURN;
            END IF;
            IF p_rate_limit > 0 THEN
                SELECT count(*), min(at_ms) INTO used, oldest FROM rate_log
                    WHERE pseudonym = p_pseudonym AND kind = p_kind AND at_ms > p_now - p_window;
                IF used >= p_rate_limit THEN
                    outcome := 3; value := GREATEST(1, (oldest + p_window - p_now + 999) / 1000); RETURN;
                END IF;
            END IF;
            IF n >= p_max_packets OR b + length(p_packet) > p_max_bytes THEN
                outcome := 2; value := 0; RETURN;
            END IF;
            INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet, poster)
                VALUES (p_mailbox, p_message_id, p_expires, p_now, p_packet, NULLIF(p_poster, ''::bytea)) RETURNING seq INTO value;
            UPDATE mailboxes SET packets = packets + 1, bytes = bytes + length(p_packet) WHERE mailbox = p_mailbox;
            IF p_rate_limit > 0 THEN
                INSERT INTO rate_log (pseudonym, kind, at_ms) VALUES (p_pseudonym, p_kind, p_now);
            END IF;
            PERFORM pg_notify('yaok_relay_mailbox', encode(p_mailbox, 'hex'));
            outcome := 0;
        END $$;
        CREATE FUNCTION relay_purge(p_poster BYTEA) RETURNS BIGINT
        LANGUAGE plpgsql AS $$
        DECLARE
            r RECORD; n BIGINT; b BIGINT; total BIGINT := 0;
        BEGIN
            FOR r IN SELECT DISTINCT mailbox FROM packets WHERE poster = p_poster ORDER BY mailbox LOOP
                PERFORM 1 FROM mailboxes WHERE mailbox = r.mailbox FOR UPDATE;
                WITH d AS (DELETE FROM packets WHERE mailbox = r.mailbox AND poster = p_poster
                           RETURNING length(packet) AS len)
                    SELECT count(*), COALESCE(sum(len), 0) INTO n, b FROM d;
                UPDATE mailboxes SET packets = packets - n, bytes = bytes - b WHERE mailbox = r.mailbox;
                total := total + n;
            END LOOP;
            RETURN total;
        END $$;
        """,
        // 6: stored-byte quotas per IPv4 address and per /24 (as SQLite's migration 6): each
        // packet keeps keyed hashes of its poster's address and /24 (`HolderTag`), `holders`
        // each tag's bytes. relay_post checks the totals without locking them (outcome 4:
        // value 0 the address, 1 the /24) and stores the tags; the bytes are added and given
        // back by relay_account, which a transaction calls once, after every mailbox lock
        // it takes, and which locks holder rows in tag order: so holder locks never wait in
        // a cycle with each other or with mailbox locks. Two relays committing at once may
        // both pass a check: the quota may be overshot by what one round of each relay
        // stores (docs/RELAY.md). Packets stored before have no tags and count against
        // nobody.
        """
        ALTER TABLE packets ADD COLUMN address_tag BYTEA;
        ALTER TABLE packets ADD COLUMN prefix_tag BYTEA;
        CREATE TABLE holders (
            tag BYTEA PRIMARY KEY,
            bytes BIGINT NOT NULL
        );
        CREATE FUNCTION relay_account(p_tags BYTEA[], p_deltas BIGINT[]) RETURNS VOID
        LANGUAGE plpgsql AS $$
        DECLARE
            r RECORD;
        BEGIN
            FOR r IN SELECT t.tag, sum(t.delta)::bigint AS delta FROM unnest(p_tags, p_deltas) AS t(tag, delta)
                     WHERE t.tag IS NOT NULL GROUP BY t.tag ORDER BY t.tag LOOP
                INSERT INTO holders AS h (tag, bytes) VALUES (r.tag, r.delta)
                    ON CONFLICT (tag) DO UPDATE SET bytes = h.bytes + excluded.bytes;
                DELETE FROM holders WHERE tag = r.tag AND bytes <= 0;
            END LOOP;
        END $$;
        DROP FUNCTION relay_post(BYTEA, BYTEA, BIGINT, BIGINT, BYTEA, BIGINT, BIGINT, BYTEA, SMALLINT, BIGINT, BIGINT, BYTEA, BYTEA);
        CREATE FUNCTION relay_post(p_mailbox BYTEA, p_message_id BYTEA, p_expires BIGINT, p_now BIGINT,
                                   p_packet BYTEA, p_max_packets BIGINT, p_max_bytes BIGINT,
                                   p_pseudonym BYTEA, p_kind SMALLINT, p_rate_limit BIGINT, p_window BIGINT, p_note BYTEA, p_poster BYTEA,
                                   p_address_tag BYTEA, p_prefix_tag BYTEA, p_address_room BIGINT, p_prefix_room BIGINT,
                                   OUT outcome INT, OUT value BIGINT)
        LANGUAGE plpgsql AS $$
        DECLARE
            n BIGINT; b BIGINT; used BIGINT; oldest BIGINT;
        BEGIN
            INSERT INTO mailboxes AS m (mailbox, packets, bytes) VALUES (p_mailbox, 0, 0)
                ON CONFLICT (mailbox) DO UPDATE SET packets = m.packets
                RETURNING m.packets, m.bytes INTO n, b;
            -- Under the lock, each statement sees what committed before it was taken.
            IF EXISTS (SELECT 1 FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id)
               OR EXISTS (SELECT 1 FROM deleted WHERE digest = p_note) THEN
                outcome := 1; value := 0; RETURN;
            END IF;
            IF p_rate_limit > 0 THEN
                SELECT count(*), min(at_ms) INTO used, oldest FROM rate_log
                    WHERE pseudonym = p_pseudonym AND kind = p_kind AND at_ms > p_now - p_window;
                IF used >= p_rate_limit THEN
                    outcome := 3; value := GREATEST(1, (oldest + p_window - p_now + 999) / 1000); RETURN;
                END IF;
            END IF;
            IF n >= p_max_packets OR b + length(p_packet) > p_max_bytes THEN
                outcome := 2; value := 0; RETURN;
            END IF;
            IF p_address_tag <> ''::bytea THEN
                IF COALESCE((SELECT bytes FROM holders WHERE tag = p_address_tag), 0) + length(p_packet) > p_address_room THEN
                    outcome := 4; value := 0; RETURN;
                END IF;
                IF COALESCE((SELECT bytes FROM holders WHERE tag = p_prefix_tag), 0) + length(p_packet) > p_prefix_room THEN
                    outcome := 4; value := 1; RETURN;
                END IF;
            END IF;
            INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet, poster, address_tag, prefix_tag)
                VALUES (p_mailbox, p_message_id, p_expires, p_now, p_packet, NULLIF(p_poster, ''::bytea),
                        NULLIF(p_address_tag, ''::bytea), NULLIF(p_prefix_tag, ''::bytea)) RETURNING seq INTO value;
            UPDATE mailboxes SET packets = packets + 1, bytes = bytes + length(p_packet) WHERE mailbox = p_mailbox;
            IF p_rate_limit > 0 THEN
                INSERT INTO rate_log (pseudonym, kind, at_ms) VALUES (p_pseudonym, p_kind, p_now);
            END IF;
            PERFORM pg_notify('yaok_relay_mailbox', encode(p_mailbox, 'hex'));
            outcome := 0;
        END $$;
        DROP FUNCTION relay_delete(BYTEA, BYTEA);
        CREATE FUNCTION relay_delete(p_mailbox BYTEA, p_message_id BYTEA, OUT p_packet BYTEA, OUT p_expires BIGINT,
                                     OUT p_address_tag BYTEA, OUT p_prefix_tag BYTEA)
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM 1 FROM mailboxes WHERE mailbox = p_mailbox FOR UPDATE;
            DELETE FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id
                RETURNING packet, expires_ms, address_tag, prefix_tag INTO p_packet, p_expires, p_address_tag, p_prefix_tag;
            IF p_packet IS NULL THEN RETURN; END IF;
            UPDATE mailboxes SET packets = packets - 1, bytes = bytes - length(p_packet) WHERE mailbox = p_mailbox;
        END $$;
        -- What a sweep or a purge deleted from one mailbox: its count and bytes, and each
        -- holder tag's bytes (negative, for relay_account).
        CREATE FUNCTION relay_drop(p_mailbox BYTEA, p_now BIGINT, p_poster BYTEA,
                                   OUT n BIGINT, OUT b BIGINT, OUT tags BYTEA[], OUT deltas BIGINT[])
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM 1 FROM mailboxes WHERE mailbox = p_mailbox FOR UPDATE;
            WITH d AS (DELETE FROM packets WHERE mailbox = p_mailbox
                           AND (CASE WHEN p_poster IS NULL THEN expires_ms <= p_now ELSE poster = p_poster END)
                       RETURNING length(packet)::bigint AS len, address_tag, prefix_tag),
                 h AS (SELECT address_tag AS tag, sum(len) AS len FROM d GROUP BY address_tag
                       UNION ALL SELECT prefix_tag, sum(len) FROM d GROUP BY prefix_tag)
                SELECT (SELECT count(*) FROM d), (SELECT COALESCE(sum(len), 0)::bigint FROM d),
                       (SELECT array_agg(tag) FROM h), (SELECT array_agg((-len)::bigint) FROM h)
                INTO n, b, tags, deltas;
            UPDATE mailboxes SET packets = packets - n, bytes = bytes - b WHERE mailbox = p_mailbox;
        END $$;
        CREATE OR REPLACE FUNCTION relay_sweep(p_now BIGINT, p_window BIGINT) RETURNS BIGINT
        LANGUAGE plpgsql AS $$
        DECLARE
            r RECORD; x RECORD; total BIGINT := 0; tags BYTEA[] := '{}'; deltas BIGINT[] := '{}';
        BEGIN
            FOR r IN SELECT DISTINCT mailbox FROM packets WHERE expires_ms <= p_now ORDER BY mailbox LOOP
                SELECT * INTO x FROM relay_drop(r.mailbox, p_now, NULL);
                tags := tags || x.tags; deltas := deltas || x.deltas;
                total := total + x.n;
            END LOOP;
            PERFORM relay_account(tags, deltas);
            DELETE FROM rate_log WHERE at_ms <= p_now - p_window;
            RETURN total;
        END $$;
        CREATE OR REPLACE FUNCTION relay_purge(p_poster BYTEA) RETURNS BIGINT
        LANGUAGE plpgsql AS $$
        DECLARE
            r RECORD; x RECORD; total BIGINT := 0; tags BYTEA[] := '{}'; deltas BIGINT[] := '{}';
        BEGIN
            FOR r IN SELECT DISTINCT mailbox FROM packets WHERE poster = p_poster ORDER BY mailbox LOOP
                SELECT * INTO x FROM relay_drop(r.mailbox, 0, p_poster);
                tags := tags || x.tags; deltas := deltas || x.deltas;
                total := total + x.n;
            END LOOP;
            PERFORM relay_account(tags, deltas);
            RETURN total;
        END $$;
        """,
        // 7: the relay as a carrier (docs/PROTOCOL.md §12.9): the node's carry tables (§10.9),
        // shared by the cluster. Writes take `PostgresRelayCarryStore.writeLock` (one at a
        // time across the cluster: the eviction reads the whole store's ranking).
        """
        CREATE TABLE relay_carried (
            id BYTEA PRIMARY KEY CHECK (length(id) = 16),
            expires_ms BIGINT NOT NULL,
            copy_budget INT NOT NULL CHECK (copy_budget BETWEEN 1 AND 255),
            hop_limit INT NOT NULL CHECK (hop_limit BETWEEN 0 AND 255),
            size INT NOT NULL,
            taken_ms BIGINT NOT NULL,
            depositor BYTEA NOT NULL,
            claim_hash BYTEA NOT NULL CHECK (length(claim_hash) = 16),
            packet BYTEA NOT NULL
        );
        CREATE INDEX relay_carried_order ON relay_carried (expires_ms, id);
        CREATE INDEX relay_carried_eviction ON relay_carried (copy_budget, taken_ms, id);
        CREATE INDEX relay_carried_by_claim ON relay_carried (claim_hash);
        CREATE TABLE relay_carry_quota (
            depositor BYTEA NOT NULL,
            hour BIGINT NOT NULL,
            packets BIGINT NOT NULL,
            bytes BIGINT NOT NULL,
            PRIMARY KEY (depositor, hour)
        );
        CREATE TABLE relay_carry_purges (
            claim_hash BYTEA PRIMARY KEY CHECK (length(claim_hash) = 16),
            claim BYTEA NOT NULL CHECK (length(claim) = 16),
            expires_ms BIGINT NOT NULL,
            held INT NOT NULL
        );
        CREATE INDEX relay_carry_purges_eviction ON relay_carry_purges (held, expires_ms);
        """,
        // 8: relay_post no longer notifies: the relay sends one notification per commit
        // naming every mailbox the commit stored into (`PostgresRelayStore.notify`), not
        // one per POST (PostgreSQL queues each distinct payload of a transaction and every
        // listener wakes for each). And fewer pages written per message, as SQLite's
        // migrations 7 and 8: no index of packets by poster (a random page of a third tree
        // for every POST and DELETE, kept only for relay_purge, which now scans), and the
        // deletion notes keyed by (expiry, note), so that a commit's notes land on the pages
        // at the end of one tree instead of each on a random page of the note's key plus
        // one of the expiry index. A note's expiry is the packet's (its header is in the
        // hashed bytes), so relay_post looks a re-post's note up by both.
        """
        DROP INDEX packets_by_poster;
        ALTER TABLE deleted DROP CONSTRAINT deleted_pkey;
        ALTER TABLE deleted ADD PRIMARY KEY (expires_ms, digest);
        DROP INDEX deleted_by_expiry;
        CREATE OR REPLACE FUNCTION relay_post(p_mailbox BYTEA, p_message_id BYTEA, p_expires BIGINT, p_now BIGINT,
                                   p_packet BYTEA, p_max_packets BIGINT, p_max_bytes BIGINT,
                                   p_pseudonym BYTEA, p_kind SMALLINT, p_rate_limit BIGINT, p_window BIGINT, p_note BYTEA, p_poster BYTEA,
                                   p_address_tag BYTEA, p_prefix_tag BYTEA, p_address_room BIGINT, p_prefix_room BIGINT,
                                   OUT outcome INT, OUT value BIGINT)
        LANGUAGE plpgsql AS $$
        DECLARE
            n BIGINT; b BIGINT; used BIGINT; oldest BIGINT;
        BEGIN
            INSERT INTO mailboxes AS m (mailbox, packets, bytes) VALUES (p_mailbox, 0, 0)
                ON CONFLICT (mailbox) DO UPDATE SET packets = m.packets
                RETURNING m.packets, m.bytes INTO n, b;
            -- Under the lock, each statement sees what committed before it was taken.
            IF EXISTS (SELECT 1 FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id)
               OR EXISTS (SELECT 1 FROM deleted WHERE expires_ms = p_expires AND digest = p_note) THEN
                outcome := 1; value := 0; RETURN;
            END IF;
            IF p_rate_limit > 0 THEN
                SELECT count(*), min(at_ms) INTO used, oldest FROM rate_log
                    WHERE pseudonym = p_pseudonym AND kind = p_kind AND at_ms > p_now - p_window;
                IF used >= p_rate_limit THEN
                    outcome := 3; value := GREATEST(1, (oldest + p_window - p_now + 999) / 1000); RETURN;
                END IF;
            END IF;
            IF n >= p_max_packets OR b + length(p_packet) > p_max_bytes THEN
                outcome := 2; value := 0; RETURN;
            END IF;
            IF p_address_tag <> ''::bytea THEN
                IF COALESCE((SELECT bytes FROM holders WHERE tag = p_address_tag), 0) + length(p_packet) > p_address_room THEN
                    outcome := 4; value := 0; RETURN;
                END IF;
                IF COALESCE((SELECT bytes FROM holders WHERE tag = p_prefix_tag), 0) + length(p_packet) > p_prefix_room THEN
                    outcome := 4; value := 1; RETURN;
                END IF;
            END IF;
            INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet, poster, address_tag, prefix_tag)
                VALUES (p_mailbox, p_message_id, p_expires, p_now, p_packet, NULLIF(p_poster, ''::bytea),
                        NULLIF(p_address_tag, ''::bytea), NULLIF(p_prefix_tag, ''::bytea)) RETURNING seq INTO value;
            UPDATE mailboxes SET packets = packets + 1, bytes = bytes + length(p_packet) WHERE mailbox = p_mailbox;
            IF p_rate_limit > 0 THEN
                INSERT INTO rate_log (pseudonym, kind, at_ms) VALUES (p_pseudonym, p_kind, p_now);
            END IF;
            outcome := 0;
        END $$;
        """,
        // 9: the carry store's eviction (`PostgresCarryEviction`, docs/PROTOCOL.md §10.9)
        // reads through indexes instead of every row, as the node's migration 17: the
        // depositors present in a budget and each one's oldest packet there, and the packets
        // each depositor holds. The usage (packets, bytes) every take checks against the caps
        // is one row kept by a trigger, not a sum over the store; writes to relay_carried
        // all take the carry write lock, so the row is no point of contention. A DELETE
        // fires the trigger; TRUNCATE would not (the sweep recounts, so the row heals).
        """
        CREATE INDEX relay_carried_by_class ON relay_carried (copy_budget, depositor, taken_ms, id);
        CREATE INDEX relay_carried_by_depositor ON relay_carried (depositor, expires_ms);
        CREATE TABLE relay_carry_usage (
            singleton BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
            packets BIGINT NOT NULL,
            bytes BIGINT NOT NULL
        );
        INSERT INTO relay_carry_usage (packets, bytes) SELECT count(*), coalesce(sum(size), 0) FROM relay_carried;
        CREATE FUNCTION relay_carry_count() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                UPDATE relay_carry_usage SET packets = packets + 1, bytes = bytes + NEW.size;
            ELSIF TG_OP = 'DELETE' THEN
                UPDATE relay_carry_usage SET packets = packets - 1, bytes = bytes - OLD.size;
            ELSE
                UPDATE relay_carry_usage SET bytes = bytes - OLD.size + NEW.size;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER relay_carry_count AFTER INSERT OR DELETE OR UPDATE OF size ON relay_carried
            FOR EACH ROW EXECUTE FUNCTION relay_carry_count();
        """,
        // 10: a commit is one server call, `relay_commit` (`PostgresRelayStore.commit`): its
        // POSTs and DELETEs in arrays, each step one statement for the whole commit (the
        // locks on its mailboxes' rows, in key order; the DELETEs with their notes; the
        // duplicate, quota and rate checks read at once; the packets; each mailbox's totals
        // once; the holder totals and the one notification at the end). Before, a commit was
        // BEGIN, a pipeline of relay_post and relay_delete calls (about six statements per
        // message), the notes, relay_account, pg_notify and COMMIT: six round trips, each a
        // wake-up of the server and of the relay (the server's CPU a message in a whole-relay
        // run: 78-92 µs before, 46-56 after; docs/RELAY.md). Sent alone (no BEGIN), the call is its own
        // transaction, committed (durably) before its answer. A DELETE writes its deletion
        // note from the note each packet now keeps (made by the relay at POST, which holds
        // the key; the same bytes as relay_post's p_note); the notes of packets stored before
        // are filled in by the relay as it migrates (`PostgresRelaySchema.fillNotes`), which
        // then makes the column NOT NULL; relay_post keeps the note too (relays not yet
        // upgraded call it). The rate-limit count stops at the limit (it read every post of
        // the pseudonym's hour).
        """
        ALTER TABLE packets ADD COLUMN note BYTEA;
        CREATE OR REPLACE FUNCTION relay_post(p_mailbox BYTEA, p_message_id BYTEA, p_expires BIGINT, p_now BIGINT,
                                   p_packet BYTEA, p_max_packets BIGINT, p_max_bytes BIGINT,
                                   p_pseudonym BYTEA, p_kind SMALLINT, p_rate_limit BIGINT, p_window BIGINT, p_note BYTEA, p_poster BYTEA,
                                   p_address_tag BYTEA, p_prefix_tag BYTEA, p_address_room BIGINT, p_prefix_room BIGINT,
                                   OUT outcome INT, OUT value BIGINT)
        LANGUAGE plpgsql AS $$
        DECLARE
            n BIGINT; b BIGINT; used BIGINT; oldest BIGINT;
        BEGIN
            INSERT INTO mailboxes AS m (mailbox, packets, bytes) VALUES (p_mailbox, 0, 0)
                ON CONFLICT (mailbox) DO UPDATE SET packets = m.packets
                RETURNING m.packets, m.bytes INTO n, b;
            IF EXISTS (SELECT 1 FROM packets WHERE mailbox = p_mailbox AND message_id = p_message_id)
               OR EXISTS (SELECT 1 FROM deleted WHERE expires_ms = p_expires AND digest = p_note) THEN
                outcome := 1; value := 0; RETURN;
            END IF;
            IF p_rate_limit > 0 THEN
                SELECT count(*), min(at_ms) INTO used, oldest FROM rate_log
                    WHERE pseudonym = p_pseudonym AND kind = p_kind AND at_ms > p_now - p_window;
                IF used >= p_rate_limit THEN
                    outcome := 3; value := GREATEST(1, (oldest + p_window - p_now + 999) / 1000); RETURN;
                END IF;
            END IF;
            IF n >= p_max_packets OR b + length(p_packet) > p_max_bytes THEN
                outcome := 2; value := 0; RETURN;
            END IF;
            IF p_address_tag <> ''::bytea THEN
                IF COALESCE((SELECT bytes FROM holders WHERE tag = p_address_tag), 0) + length(p_packet) > p_address_room THEN
                    outcome := 4; value := 0; RETURN;
                END IF;
                IF COALESCE((SELECT bytes FROM holders WHERE tag = p_prefix_tag), 0) + length(p_packet) > p_prefix_room THEN
                    outcome := 4; value := 1; RETURN;
                END IF;
            END IF;
            INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet, poster, address_tag, prefix_tag, note)
                VALUES (p_mailbox, p_message_id, p_expires, p_now, p_packet, NULLIF(p_poster, ''::bytea),
                        NULLIF(p_address_tag, ''::bytea), NULLIF(p_prefix_tag, ''::bytea), p_note) RETURNING seq INTO value;
            UPDATE mailboxes SET packets = packets + 1, bytes = bytes + length(p_packet) WHERE mailbox = p_mailbox;
            IF p_rate_limit > 0 THEN
                INSERT INTO rate_log (pseudonym, kind, at_ms) VALUES (p_pseudonym, p_kind, p_now);
            END IF;
            outcome := 0;
        END $$;

        -- One commit: its mailboxes (p_boxes: distinct, the lock order being PostgreSQL's),
        -- its POSTs (p_mailbox ... p_prefix_index, one element each) and the packets its
        -- DELETEs name (p_delete_*), each in mailbox key order, a mailbox's in the order they
        -- came. The relay numbers what the loop below looks up (a write's mailbox in
        -- p_boxes, a POST's poster tag in p_rate_keys and address and /24 tags in p_tags,
        -- 1-based, 0 for none), so that no step searches an array: a commit holds hundreds
        -- of writes (searching was quadratic). A statement per step for the whole commit, not
        -- several per write. Rows out: one per
        -- POST in order (r_outcome as relay_post's: 0 stored, r_value its sequence;
        -- 1 duplicate; 2 mailbox full; 3 rate-limited, r_value seconds; 4 over the address's
        -- (r_value 0) or the /24's (1) quota), then one per DELETE in order (5 deleted,
        -- r_value its bytes; 6 not there).
        CREATE FUNCTION relay_commit(p_boxes BYTEA[],
                                     p_mailbox BYTEA[], p_post_box BIGINT[], p_message_id BYTEA[], p_expires BIGINT[],
                                     p_packet BYTEA[], p_length BIGINT[], p_note BYTEA[], p_poster BYTEA[],
                                     p_rate_index BIGINT[], p_address_index BIGINT[], p_prefix_index BIGINT[],
                                     p_delete_mailbox BYTEA[], p_delete_box BIGINT[], p_delete_id BYTEA[],
                                     p_rate_keys BYTEA[], p_rate_kinds BIGINT[], p_rate_limits BIGINT[], p_tags BYTEA[],
                                     p_now BIGINT, p_max_packets BIGINT, p_max_bytes BIGINT, p_window BIGINT,
                                     p_address_room BIGINT, p_prefix_room BIGINT, p_payload_bytes INT)
        RETURNS TABLE (r_outcome INT, r_value BIGINT)
        LANGUAGE plpgsql AS $$
        DECLARE
            posts INT := COALESCE(cardinality(p_mailbox), 0);
            dels INT := COALESCE(cardinality(p_delete_mailbox), 0);
            counts BIGINT[]; sizes BIGINT[];
            d_index INT[]; d_box INT[]; d_len BIGINT[]; d_address BYTEA[]; d_prefix BYTEA[]; deleted_len BIGINT[];
            dup BOOLEAN[]; h_bytes BIGINT[]; net BIGINT[]; r_used BIGINT[]; r_oldest BIGINT[];
            outcome INT[]; val BIGINT[]; keep BOOLEAN[]; seqs BIGINT[];
            -- Holder tags and their net bytes, for the totals at the end.
            tags BYTEA[] := '{}'; deltas BIGINT[] := '{}';
            i INT; j INT; k INT := 0; rj INT; a INT; pf INT; len BIGINT; group_ids BYTEA[] := '{}';
            payload TEXT := ''; hex TEXT;
        BEGIN
            -- Every mailbox's row, locked in key order (created where missing) before any
            -- sequence number is taken, as every write does (docs/RELAY.md, "Order").
            WITH l AS (
                INSERT INTO mailboxes AS m (mailbox, packets, bytes)
                    SELECT u.b, 0, 0 FROM unnest(p_boxes) AS u(b) ORDER BY u.b
                    ON CONFLICT (mailbox) DO UPDATE SET packets = m.packets
                    RETURNING m.mailbox, m.packets, m.bytes)
            SELECT array_agg(l.packets ORDER BY u.i), array_agg(l.bytes ORDER BY u.i) INTO counts, sizes
                FROM unnest(p_boxes) WITH ORDINALITY AS u(b, i) JOIN l ON l.mailbox = u.b;
            -- The DELETEs first: a commit's writes came at the same time (a DELETE and the
            -- re-post of its bytes: the re-post sees the note), and no DELETE can name a
            -- packet its own commit stores (nobody has received it). Each writes its note,
            -- kept with the packet since its POST, under the mailbox's lock.
            IF dels > 0 THEN
                WITH d AS (
                    DELETE FROM packets p USING unnest(p_delete_mailbox, p_delete_id, p_delete_box) WITH ORDINALITY AS x(mb, mid, bi, i)
                        WHERE p.mailbox = x.mb AND p.message_id = x.mid
                        RETURNING x.i::int AS i, x.bi::int AS bi, length(p.packet)::bigint AS len, p.expires_ms, p.note,
                                  p.address_tag, p.prefix_tag),
                     n AS (INSERT INTO deleted (expires_ms, digest) SELECT d.expires_ms, d.note FROM d ON CONFLICT DO NOTHING)
                SELECT array_agg(d.i), array_agg(d.bi), array_agg(d.len), array_agg(d.address_tag), array_agg(d.prefix_tag)
                    INTO d_index, d_box, d_len, d_address, d_prefix FROM d;
                deleted_len := array_fill(-1::bigint, ARRAY[dels]);
                FOR j IN 1..COALESCE(cardinality(d_index), 0) LOOP
                    deleted_len[d_index[j]] := d_len[j];
                    counts[d_box[j]] := counts[d_box[j]] - 1; sizes[d_box[j]] := sizes[d_box[j]] - d_len[j];
                    IF d_address[j] IS NOT NULL THEN tags := tags || d_address[j]; deltas := deltas || -d_len[j]; END IF;
                    IF d_prefix[j] IS NOT NULL THEN tags := tags || d_prefix[j]; deltas := deltas || -d_len[j]; END IF;
                END LOOP;
            END IF;
            IF posts > 0 THEN
                -- What the POSTs are checked against, read once under the locks: a packet
                -- with the ID or a note of the bytes (duplicates), the holders' totals, each
                -- poster tag's posts of the last hour (up to its limit).
                SELECT array_agg(EXISTS (SELECT 1 FROM packets q WHERE q.mailbox = x.mb AND q.message_id = x.mid)
                                 OR EXISTS (SELECT 1 FROM deleted e WHERE e.expires_ms = x.exp AND e.digest = x.nt) ORDER BY x.i)
                    INTO dup FROM unnest(p_mailbox, p_message_id, p_expires, p_note) WITH ORDINALITY AS x(mb, mid, exp, nt, i);
                IF cardinality(p_tags) > 0 THEN
                    SELECT array_agg(COALESCE(h.bytes, 0) ORDER BY u.i) INTO h_bytes
                        FROM unnest(p_tags) WITH ORDINALITY AS u(t, i) LEFT JOIN holders h ON h.tag = u.t;
                    net := array_fill(0::bigint, ARRAY[cardinality(p_tags)]);
                END IF;
                IF cardinality(p_rate_keys) > 0 THEN
                    SELECT array_agg(c.used ORDER BY q.i), array_agg(c.oldest ORDER BY q.i) INTO r_used, r_oldest
                        FROM unnest(p_rate_keys, p_rate_kinds, p_rate_limits) WITH ORDINALITY AS q(rkey, rkind, rlim, i)
                        CROSS JOIN LATERAL (SELECT count(*) AS used, min(s.at_ms) AS oldest FROM (
                            SELECT r.at_ms FROM rate_log r WHERE r.pseudonym = q.rkey AND r.kind = q.rkind AND r.at_ms > p_now - p_window
                            ORDER BY r.at_ms LIMIT q.rlim) s) c;
                END IF;
                outcome := array_fill(0, ARRAY[posts]); val := array_fill(0::bigint, ARRAY[posts]); keep := array_fill(false, ARRAY[posts]);
                -- Each POST in order, against those figures and what the POSTs before it stored.
                FOR i IN 1..posts LOOP
                    IF p_post_box[i] <> k THEN k := p_post_box[i]; group_ids := '{}'; END IF;
                    IF dup[i] OR p_message_id[i] = ANY (group_ids) THEN outcome[i] := 1; CONTINUE; END IF;
                    rj := p_rate_index[i];
                    IF rj > 0 AND r_used[rj] >= p_rate_limits[rj] THEN
                        outcome[i] := 3; val[i] := GREATEST(1, (COALESCE(r_oldest[rj], p_now) + p_window - p_now + 999) / 1000); CONTINUE;
                    END IF;
                    len := p_length[i];
                    IF counts[k] >= p_max_packets OR sizes[k] + len > p_max_bytes THEN outcome[i] := 2; CONTINUE; END IF;
                    a := p_address_index[i]; pf := p_prefix_index[i];
                    IF a > 0 THEN
                        -- The totals as read, plus what this commit stored (not less what it
                        -- deleted: the safe side).
                        IF h_bytes[a] + len > p_address_room THEN outcome[i] := 4; val[i] := 0; CONTINUE; END IF;
                        IF h_bytes[pf] + len > p_prefix_room THEN outcome[i] := 4; val[i] := 1; CONTINUE; END IF;
                        h_bytes[a] := h_bytes[a] + len; h_bytes[pf] := h_bytes[pf] + len;
                        net[a] := net[a] + len; net[pf] := net[pf] + len;
                    END IF;
                    IF rj > 0 THEN r_used[rj] := r_used[rj] + 1; r_oldest[rj] := COALESCE(r_oldest[rj], p_now); END IF;
                    keep[i] := true; counts[k] := counts[k] + 1; sizes[k] := sizes[k] + len; group_ids := group_ids || p_message_id[i];
                    -- The live push of other relays: the mailboxes stored into, in hex,
                    -- joined by commas, in notifications under p_payload_bytes.
                    IF cardinality(group_ids) = 1 THEN
                        hex := encode(p_mailbox[i], 'hex');
                        IF payload <> '' AND octet_length(payload) + 1 + octet_length(hex) > p_payload_bytes THEN
                            PERFORM pg_notify('yaok_relay_mailbox', payload); payload := '';
                        END IF;
                        payload := CASE WHEN payload = '' THEN hex ELSE payload || ',' || hex END;
                    END IF;
                END LOOP;
                WITH ins AS (
                    INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet, poster, address_tag, prefix_tag, note)
                        SELECT x.mb, x.mid, x.exp, p_now, x.pkt, NULLIF(x.pst, ''::bytea), p_tags[NULLIF(x.ai, 0)],
                               p_tags[NULLIF(x.pfi, 0)], x.nt
                        FROM unnest(p_mailbox, p_message_id, p_expires, p_packet, p_poster, p_address_index, p_prefix_index, p_note, keep)
                            WITH ORDINALITY AS x(mb, mid, exp, pkt, pst, ai, pfi, nt, kp, i)
                        WHERE x.kp ORDER BY x.i
                        RETURNING mailbox, message_id, seq)
                SELECT array_agg(ins.seq ORDER BY x.i) INTO seqs
                    FROM ins JOIN unnest(p_mailbox, p_message_id, keep) WITH ORDINALITY AS x(mb, mid, kp, i)
                        ON x.kp AND ins.mailbox = x.mb AND ins.message_id = x.mid;
                j := 1;
                FOR i IN 1..posts LOOP
                    IF keep[i] THEN val[i] := seqs[j]; j := j + 1; END IF;
                END LOOP;
                IF cardinality(p_rate_keys) > 0 THEN
                    INSERT INTO rate_log (pseudonym, kind, at_ms)
                        SELECT p_rate_keys[x.ri], p_rate_kinds[x.ri], p_now FROM unnest(p_rate_index, keep) AS x(ri, kp)
                        WHERE x.kp AND x.ri > 0;
                END IF;
                IF net IS NOT NULL THEN tags := tags || p_tags; deltas := deltas || net; END IF;
            END IF;
            -- Each mailbox's totals, once.
            UPDATE mailboxes m SET packets = x.n, bytes = x.b FROM unnest(p_boxes, counts, sizes) AS x(mb, n, b) WHERE m.mailbox = x.mb;
            -- Last, after every mailbox lock: holder rows are locked in tag order (as
            -- relay_account does, in two statements, not two per tag).
            IF cardinality(tags) > 0 THEN
                INSERT INTO holders AS h (tag, bytes)
                    SELECT t.tag, sum(t.delta)::bigint FROM unnest(tags, deltas) AS t(tag, delta)
                    GROUP BY t.tag HAVING sum(t.delta) <> 0 ORDER BY t.tag
                    ON CONFLICT (tag) DO UPDATE SET bytes = h.bytes + excluded.bytes;
                DELETE FROM holders h WHERE h.tag = ANY (tags) AND h.bytes <= 0;
            END IF;
            IF payload <> '' THEN PERFORM pg_notify('yaok_relay_mailbox', payload); END IF;
            IF posts > 0 THEN RETURN QUERY SELECT o, v FROM unnest(outcome, val) AS t(o, v); END IF;
            IF dels > 0 THEN
                RETURN QUERY SELECT CASE WHEN l >= 0 THEN 5 ELSE 6 END, GREATEST(l, 0) FROM unnest(deleted_len) AS t(l);
            END IF;
        END $$;
        """,
    ]

    static var currentVersion: Int { migrations.count }

    /// Throws unless the database has this relay's schema at the current version (without
    /// changing anything: for stats and revoke).
    static func check(_ c: PostgresConnection) throws {
        let table = try c.query("schema_exists", "SELECT to_regclass('yaok_relay_schema') IS NOT NULL", types: [], [])
        let version = table.bytes(0, 0) == [1]
            ? try c.query("schema_version", "SELECT version FROM yaok_relay_schema", types: [], []).int(0, 0) : 0
        guard version > 0 else {
            throw YaOKError(.notFound, "This database has no Ya OK relay schema (version \(migrations.count) expected): start yaok-relay serve --postgres on it first")
        }
        guard version == migrations.count else {
            throw YaOKError(.storage, "This database has Ya OK relay schema version \(version), version \(migrations.count) expected: "
                            + (version < migrations.count ? "start this yaok-relay serve on it to migrate" : "run a newer yaok-relay"))
        }
    }

    /// Migration 10's second half, in its transaction: the deletion note of every packet
    /// stored before (`DeletionNote`: a keyed BLAKE2b the server cannot compute), a
    /// thousand at a time in sequence order, then the column NOT NULL, so relay_commit
    /// always finds a packet's note when it deletes it.
    static func fillNotes(_ c: PostgresConnection) throws {
        let keys = try c.query("migrate_note_key", "SELECT key FROM relay_secret LIMIT 1", types: [], [])
        guard keys.count == 1, keys.bytes(0, 0).count == 32 else { throw YaOKError(.storage, "The relay database has no deletion-note key") }
        let key = keys.bytes(0, 0)
        var after: Int64 = -1
        while true {
            let rows = try c.query("migrate_note_read", "SELECT seq, mailbox, packet FROM packets WHERE seq > $1 ORDER BY seq LIMIT 1000",
                                   types: [PostgresType.int8], [.int(after)], timeout: migrationTimeoutSeconds)
            guard rows.count > 0 else { break }
            var seqs: [Int64] = [], notes: [[UInt8]] = []
            for row in 0..<rows.count {
                seqs.append(rows.int64(row, 0))
                notes.append(DeletionNote.of(mailbox: try MailboxID(bytes: rows.bytes(row, 1)), packet: rows.bytes(row, 2), key: key))
            }
            try c.query("migrate_note_write", """
                UPDATE packets p SET note = u.note FROM unnest($1::int8[], $2::bytea[]) AS u(seq, note) WHERE p.seq = u.seq
                """, types: [PostgresType.int8Array, PostgresType.byteaArray], [.int8Array(seqs), .byteaArray(notes)], timeout: migrationTimeoutSeconds)
            after = seqs[seqs.count - 1]
        }
        try c.execute("ALTER TABLE packets ALTER COLUMN note SET NOT NULL", timeout: migrationTimeoutSeconds)
    }

    static func migrate(_ c: PostgresConnection) throws {
        // Another relay may be migrating (the lock waits for it), and a migration may rewrite
        // a large table: up to the migrations' limit, on the server too (its 15 s cancelled
        // the wait). The lock is the session's: it outlives the transaction it was taken in.
        try migrationTransaction(c) { try c.execute("SELECT pg_advisory_lock(\(lockKey))", timeout: migrationTimeoutSeconds) }
        defer { try? c.execute("SELECT pg_advisory_unlock(\(lockKey))") }
        try c.execute("CREATE TABLE IF NOT EXISTS yaok_relay_schema (version INT NOT NULL)")
        try c.execute("INSERT INTO yaok_relay_schema SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM yaok_relay_schema)")
        while true {
            let version = try c.query("schema_version", "SELECT version FROM yaok_relay_schema", types: [], []).int(0, 0)
            guard version <= migrations.count else {
                throw YaOKError(.storage, "The relay database has schema version \(version); this relay knows up to \(migrations.count): run a newer yaok-relay")
            }
            guard version < migrations.count else { return }
            try migrationTransaction(c) {
                try c.execute(migrations[version], timeout: migrationTimeoutSeconds)
                if version + 1 == 10 { try fillNotes(c) }
                try c.execute("UPDATE yaok_relay_schema SET version = \(version + 1)")
            }
        }
    }

    /// The longest a migration's statement may run, on the client (its deadline) and on the
    /// server: migration 10 rewrites every packet row and its SET NOT NULL reads them all,
    /// far past the 15 s `statement_timeout` each connection sets for the relay's own
    /// statements (a large database's migration was cancelled, rolled back and tried again
    /// at every start).
    static let migrationTimeoutSeconds = 600.0

    /// Runs `body` in one transaction whose statements the server lets run for up to
    /// `migrationTimeoutSeconds` (SET LOCAL: the connection's own limit is back at its end);
    /// rolled back if `body` throws.
    static func migrationTransaction(_ c: PostgresConnection, _ body: () throws -> Void) throws {
        try c.execute("BEGIN")
        do {
            try c.execute("SET LOCAL statement_timeout = \(Int(migrationTimeoutSeconds * 1000))")
            try body()
            try c.execute("COMMIT")
        } catch {
            try? c.execute("ROLLBACK")
            throw error
        }
    }
}
