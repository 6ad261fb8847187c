import YaOKSupport
import YaOKWire
import YaOKCrypto

/// A sealed packet waiting to be carried: a message we sent, or an acknowledgement we owe.
package struct OutboxRow: Sendable, Equatable {
    package enum Kind: Int, Sendable { case message = 1, ack = 2 }
    /// `queued`: not yet taken by any link (or the last attempt failed); `sent`: a link
    /// confirmed receipt (a message then waits for its end-to-end acknowledgement).
    package enum State: Int, Sendable { case queued = 0, sent = 1 }

    package let seq: Int64
    package let packetID: MessageID
    package let kind: Kind
    package let contactID: Int64
    package let packet: [UInt8]
    package let state: State
    package let attempts: Int
    package let nextAttemptAt: Int64
    package let expiresAt: Int64
}

/// An outbox row's scheduling: what changes as links take and fail its packet.
package struct OutboxSchedule: Sendable, Equatable {
    package let state: OutboxRow.State
    package let attempts: Int
    package let nextAttemptAt: Int64

    package init(state: OutboxRow.State, attempts: Int, nextAttemptAt: Int64) {
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
    }
}

/// The outbox: one row per packet, ordered by `seq` (the order the user sent them).
/// `carried` holds two flags: bit 1, a relay stored the message (sent, waiting for its ack:
/// `markCarried`); bit 2, its own carried copy is still to be made (`enqueue`,
/// Store+CarryOwn.swift).
extension Store {
    private static let outboxColumns = "seq, packet_id, kind, contact_id, packet, state, attempts, next_attempt_ms, expires_ms, mac"

    /// Needs the store attached (unlocked): the row's identity, recipient, expiry and packet
    /// are MACed (not its scheduling, which changes while locked). `owesCarriedCopy`: the
    /// message's own carried copy is still to be made (Store+CarryOwn.swift, bit 2 of
    /// `carried`; written with the row, so marking it costs no page of its own).
    package func enqueue(_ kind: OutboxRow.Kind, packetID: MessageID, contactID: Int64, packet: [UInt8],
                         now: Int64, expiresAt: Int64, owesCarriedCopy: Bool = false) throws {
        try enqueue(SealedOutboxRow(kind, packetID: packetID, contactID: contactID, packet: packet, expiresAt: expiresAt,
                                    cipher: requireAttached()), now: now, owesCarriedCopy: owesCarriedCopy)
    }

    /// `enqueue` of a row MACed ahead (outside the node's lock), under the attached cipher.
    package func enqueue(_ row: SealedOutboxRow, now: Int64, owesCarriedCopy: Bool = false) throws {
        _ = try requireAttached()
        try db.query("""
            INSERT OR IGNORE INTO outbox (packet_id, kind, contact_id, packet, state, attempts, next_attempt_ms, expires_ms, mac, carried)
            VALUES (?, ?, ?, ?, 0, 0, ?, ?, ?, ?)
            """, [.blob(row.packetID.bytes), .int(Int64(row.kind.rawValue)), .int(row.contactID), .blob(row.packet), .int(now),
                  .int(row.expiresAt), .blob(row.mac), .int(owesCarriedCopy ? Store.outboxOwesCarriedCopy : 0)])
    }

    /// Replaces a row's packet with the same message sealed again (same ID, kind, recipient
    /// and expiry), MACed anew. Needs the store attached (unlocked).
    package func replaceOutboxPacket(_ packetID: MessageID, packet: [UInt8]) throws {
        guard let row = try outboxRow(packetID) else { return }
        let mac = try requireAttached().mac(.outbox(packetID: packetID.bytes, kind: row.kind.rawValue, contactID: row.contactID,
                                                    expiresAt: row.expiresAt, packet: packet))
        try db.query("UPDATE outbox SET packet = ?, mac = ? WHERE packet_id = ?",
                     [.blob(packet), .blob(mac), .blob(packetID.bytes)])
    }

    /// The IDs of queued rows that are due at `now`, for `contactID` (nil: any contact but
    /// those in `excluding`, for a relay: contacts a direct link serves), in sending order.
    /// Without their packets: the caller skips those in flight and loads (and checks) only
    /// what it sends, with `outboxRow(_:)`.
    package func dueOutboxIDs(contactID: Int64?, excluding: Set<Int64> = [], now: Int64, limit: Int) throws -> [MessageID] {
        var filter = ""
        var values: [SQLValue] = []
        if let contactID {
            filter = "contact_id = ? AND "
            values.append(.int(contactID))
        } else if !excluding.isEmpty {
            filter = "contact_id NOT IN (\(Array(repeating: "?", count: excluding.count).joined(separator: ", "))) AND "
            values += excluding.sorted().map { .int($0) }
        }
        return try db.rows("""
            SELECT packet_id FROM outbox
            WHERE \(filter)state = 0 AND next_attempt_ms <= ? AND expires_ms > ? ORDER BY seq LIMIT ?
            """, values + [.int(now), .int(now), .int(Int64(limit))]) {
            try MessageID(bytes: $0.blob(0))
        }
    }

    package func outboxRow(_ packetID: MessageID) throws -> OutboxRow? {
        try db.rows("SELECT \(Store.outboxColumns) FROM outbox WHERE packet_id = ?", [.blob(packetID.bytes)],
                    map: outboxRow).first
    }

    /// A row's scheduling alone (not MACed: it changes while locked), without loading its
    /// packet: a receipt's bookkeeping, whose packet and kind were checked when sent.
    package func outboxSchedule(_ packetID: MessageID) throws -> OutboxSchedule? {
        try db.rows("SELECT state, attempts, next_attempt_ms FROM outbox WHERE packet_id = ?", [.blob(packetID.bytes)]) {
            guard let state = OutboxRow.State(rawValue: $0.int(0)) else {
                throw YaOKError(.corruptStore, "The data store is corrupt: an outbox row has an unknown state")
            }
            return OutboxSchedule(state: state, attempts: $0.int(1), nextAttemptAt: $0.int64(2))
        }.first
    }

    /// The IDs of every row of `kind`, in sending order: for the caller to read (and check)
    /// each, so that one that fails its check does not hide the others.
    package func outboxIDs(kind: OutboxRow.Kind) throws -> [MessageID] {
        try db.rows("SELECT packet_id FROM outbox WHERE kind = ? ORDER BY seq", [.int(Int64(kind.rawValue))]) {
            try MessageID(bytes: $0.blob(0))
        }
    }

    /// Every row, in sending order (diagnostics, the outbox listing).
    package func outboxRows(kind: OutboxRow.Kind? = nil) throws -> [OutboxRow] {
        let filter = kind.map { " WHERE kind = \($0.rawValue)" } ?? ""
        return try db.rows("SELECT \(Store.outboxColumns) FROM outbox\(filter) ORDER BY seq", map: outboxRow)
    }

    /// The earliest `next_attempt_ms` after `now` of a queued row, for the retry timer.
    /// Rows already due wait for a link, and a link that opens pumps them itself. Runs after
    /// every send: one seek of outbox_timers, whose WHERE is this query's (migration 19).
    package func nextOutboxAttempt(after now: Int64) throws -> Int64? {
        try db.rows("SELECT min(next_attempt_ms) FROM outbox WHERE (state = 0 OR carried & 1 = 1) AND next_attempt_ms > ?",
                    [.int(now)]) {
            $0.isNull(0) ? nil : $0.int64(0)
        }.first ?? nil
    }

    package func setOutbox(_ packetID: MessageID, state: OutboxRow.State, attempts: Int, nextAttemptAt: Int64) throws {
        // Queued again: no longer waiting at a relay (`markCarried` sets it when one takes it).
        try db.query("""
            UPDATE outbox SET state = ?, attempts = ?, next_attempt_ms = ?, carried = CASE WHEN ? = 0 THEN carried & ~1 ELSE carried END
            WHERE packet_id = ?
            """, [.int(Int64(state.rawValue)), .int(Int64(attempts)), .int(nextAttemptAt), .int(Int64(state.rawValue)),
                  .blob(packetID.bytes)])
    }

    /// A relay stored message `packetID`: sent, waiting for its acknowledgement until `until`.
    package func markCarried(_ packetID: MessageID, until: Int64) throws {
        try db.query("UPDATE outbox SET state = 1, carried = carried | 1, next_attempt_ms = ? WHERE packet_id = ?",
                     [.int(until), .blob(packetID.bytes)])
    }

    /// Relay-stored messages whose acknowledgement is overdue at `now` (or, with
    /// `contactID`, all of that contact's: a direct link came up) are queued again, due now.
    package func requeueCarried(now: Int64, contactID: Int64? = nil) throws {
        if let contactID {
            try db.query("UPDATE outbox SET state = 0, carried = carried & ~1, next_attempt_ms = ? WHERE carried & 1 = 1 AND contact_id = ?",
                         [.int(now), .int(contactID)])
        } else {
            try db.query("UPDATE outbox SET state = 0, carried = carried & ~1 WHERE carried & 1 = 1 AND next_attempt_ms <= ?", [.int(now)])
        }
    }

    /// Makes every queued row of `contactID` due now (a link to the contact came up).
    package func makeOutboxDue(contactID: Int64, now: Int64) throws {
        try db.query("UPDATE outbox SET next_attempt_ms = ? WHERE contact_id = ? AND state = 0 AND next_attempt_ms > ?",
                     [.int(now), .int(contactID), .int(now)])
    }

    package func removeOutbox(_ packetID: MessageID) throws {
        try db.query("DELETE FROM outbox WHERE packet_id = ?", [.blob(packetID.bytes)])
    }

    /// The IDs of rows whose packets expired before `now`, in sending order. Sorted here,
    /// not by the query: with ORDER BY seq SQLite would read every row in seq order rather
    /// than seek the few expired ones by outbox_expiry. IDs only: the caller reads (and
    /// checks) each row, so that one that fails its check does not keep the others from
    /// expiring (DeliveryEngine+DamagedOutbox).
    package func expiredOutboxIDs(now: Int64) throws -> [MessageID] {
        try db.rows("SELECT seq, packet_id FROM outbox WHERE expires_ms <= ?", [.int(now)]) {
            ($0.int64(0), try MessageID(bytes: $0.blob(1)))
        }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Checked against its MAC whenever the store is attached (unlocked). While locked the
    /// delivery engine reads rows it cannot check: see Store+Integrity.swift.
    private func outboxRow(_ row: Row) throws -> OutboxRow {
        guard let kind = OutboxRow.Kind(rawValue: row.int(2)), let state = OutboxRow.State(rawValue: row.int(5)) else {
            throw YaOKError(.corruptStore, "The data store is corrupt: an outbox row has an unknown kind or state")
        }
        if let cipher = attached {
            guard cipher.verify(row.isNull(9) ? nil : row.blob(9),
                                .outbox(packetID: row.blob(1), kind: kind.rawValue, contactID: row.int64(3),
                                        expiresAt: row.int64(8), packet: row.blob(4))) else {
                throw YaOKError(.corruptStore, "The data store is corrupt: an outbox entry was changed outside Ya OK")
            }
        }
        return OutboxRow(seq: row.int64(0), packetID: try MessageID(bytes: row.blob(1)), kind: kind, contactID: row.int64(3),
                         packet: row.blob(4), state: state, attempts: row.int(6), nextAttemptAt: row.int64(7),
                         expiresAt: row.int64(8))
    }
}

/// Packets that arrived while the node was locked, in arrival order.
extension Store {
    /// Holds a packet; false if the same packet (by digest) is already held.
    package func hold(_ packet: [UInt8], digest: [UInt8], now: Int64) throws -> Bool {
        try db.query("INSERT OR IGNORE INTO held_packets (digest, packet, received_ms) VALUES (?, ?, ?)",
                     [.blob(digest), .blob(packet), .int(now)])
        return db.changes > 0
    }

    package func heldPackets(limit: Int) throws -> [(id: Int64, packet: [UInt8])] {
        try db.rows("SELECT id, packet FROM held_packets ORDER BY id LIMIT ?", [.int(Int64(limit))]) { ($0.int64(0), $0.blob(1)) }
    }

    /// Packets held and their total size.
    package func heldTotals() throws -> (count: Int, bytes: Int) {
        try db.rows("SELECT count(*), coalesce(sum(length(packet)), 0) FROM held_packets") { ($0.int(0), $0.int(1)) }.first ?? (0, 0)
    }

    package func heldCount() throws -> Int {
        try db.rows("SELECT count(*) FROM held_packets") { $0.int(0) }.first ?? 0
    }

    package func removeHeld(_ id: Int64) throws {
        try db.query("DELETE FROM held_packets WHERE id = ?", [.int(id)])
    }
}

/// The link static key and its certificate, both sealed under the database key (the
/// certificate is public, but it names the identity, which the files must not reveal).
extension Store {
    package func linkKey(cipher: FieldCipher) throws -> (secret: [UInt8], certificate: [UInt8])? {
        try db.rows("SELECT sealed_secret, certificate FROM link_key WHERE id = 1") {
            (try cipher.open($0.blob(0), ad: RowAD.linkKey), try cipher.open($0.blob(1), ad: RowAD.linkCertificate))
        }.first
    }

    package func saveLinkKey(secret: [UInt8], certificate: [UInt8], cipher: FieldCipher) throws {
        try db.query("INSERT OR REPLACE INTO link_key (id, sealed_secret, certificate) VALUES (1, ?, ?)",
                     [.blob(try cipher.seal(secret, ad: RowAD.linkKey)), .blob(try cipher.seal(certificate, ad: RowAD.linkCertificate))])
    }
}
