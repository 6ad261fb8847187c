import YaOKSupport
import YaOKWire

/// This node's own carried copies (docs/PROTOCOL.md §12.6; migration 13): for a message
/// sent to a contact, the carried copy sealed with it (its identity in the carry store) and
/// the claim inside it. When the message is acknowledged, by whatever path, the copy is
/// deleted and the claim published, so the copies that strangers carry stop too.
///
/// The claim is kept in clear, like the carry store: a file reader who learns it can only
/// purge copies of a message that was sent (what the recipient does anyway on delivery).
extension Store {
    package struct OwnCarried: Equatable, Sendable {
        package let messageID: [UInt8]
        package let contactID: Int64
        package let packetID: [UInt8]
        package let claim: [UInt8]
        package let expiresAtMs: Int64

        package init(messageID: [UInt8], contactID: Int64, packetID: [UInt8], claim: [UInt8], expiresAtMs: Int64) {
            self.messageID = messageID
            self.contactID = contactID
            self.packetID = packetID
            self.claim = claim
            self.expiresAtMs = expiresAtMs
        }
    }

    package func rememberOwnCarried(_ own: OwnCarried) throws {
        try db.query("""
            INSERT OR REPLACE INTO carried_own (message_id, contact_id, packet_id, claim, expires_ms) VALUES (?, ?, ?, ?, ?)
            """, [.blob(own.messageID), .int(own.contactID), .blob(own.packetID), .blob(own.claim), .int(own.expiresAtMs)])
    }

    package func ownCarried(messageID: [UInt8]) throws -> OwnCarried? {
        try db.rows("SELECT message_id, contact_id, packet_id, claim, expires_ms FROM carried_own WHERE message_id = ?",
                    [.blob(messageID)]) {
            OwnCarried(messageID: $0.blob(0), contactID: $0.int64(1), packetID: $0.blob(2), claim: $0.blob(3),
                       expiresAtMs: $0.int64(4))
        }.first
    }

    /// The contact an own carried copy is for, or nil (not ours, or the contact is gone).
    package func ownCarriedRecipient(packetID: [UInt8]) throws -> Int64? {
        try db.rows("SELECT contact_id FROM carried_own WHERE packet_id = ?", [.blob(packetID)]) { $0.int64(0) }.first
    }

    package func forgetOwnCarried(messageID: [UInt8]) throws {
        try db.query("DELETE FROM carried_own WHERE message_id = ?", [.blob(messageID)])
    }

    /// Forgets own copies past their expiry (the carry sweep, at most hourly); returns how
    /// many. Reads every row: no index on the expiry (migration 19), which would cost a page
    /// at every send and ack to spare this hourly read of small rows.
    @discardableResult
    package func forgetExpiredOwnCarried(nowMs: Int64) throws -> Int {
        try db.query("DELETE FROM carried_own WHERE expires_ms <= ?", [.int(nowMs)])
        return db.changes
    }

    /// Bit 2 of an outbox row's `carried`: the message's own carried copy is still to be made
    /// (docs/PROTOCOL.md §12.6). `Node.send` writes it with the row; the engine makes the
    /// copies later, many in one transaction, clearing it in the same transaction. A row
    /// gone (delivered, expired, the conversation deleted) owes nothing any more.
    package static let outboxOwesCarriedCopy: Int64 = 2
    /// Bit 4: the copy was taken (made). Set as bit 2 is cleared so that the column keeps
    /// its stored size (SQLite stores 0 and 1 in no bytes, 2 to 127 in one): an UPDATE that
    /// keeps a row's size is written over it in place, one that changes it rewrites the
    /// whole row, its packet's overflow pages included (for a 10 KB message ten pages of
    /// the log instead of two: `yaok-bench bulk`). Nothing reads it.
    package static let outboxCarriedCopyTaken: Int64 = 4

    /// The messages whose own carried copy is still to be made, in sending order: what a
    /// process that ended before making them left (read once, after the first unlock). A
    /// scan of the outbox (the flag is a column behind the packet: fine once per process).
    package func messagesOwingCarriedCopy() throws -> [(id: MessageID, contactID: Int64)] {
        try db.rows("SELECT packet_id, contact_id FROM outbox WHERE kind = 1 AND carried & 2 != 0 ORDER BY seq") {
            (try MessageID(bytes: $0.blob(0)), $0.int64(1))
        }
    }

    /// Takes message `id`'s owed carried copy: clears the flag (marking it taken, which
    /// keeps the row's size) and returns the recipient, or
    /// nil when nothing is owed (already made, delivered, expired). Run in the transaction
    /// that stores the copy, so a copy is made exactly once: the batch plans the copy under
    /// the lock (reading the flag: `owedCarriedCopyMessage`), seals it outside, and takes
    /// the flag here.
    package func takeOwedCarriedCopy(_ id: MessageID) throws -> Int64? {
        try db.rows("""
            UPDATE outbox SET carried = (carried & ~\(Store.outboxOwesCarriedCopy)) | \(Store.outboxCarriedCopyTaken)
            WHERE packet_id = ? AND carried & \(Store.outboxOwesCarriedCopy) != 0 RETURNING contact_id
            """, [.blob(id.bytes)]) { $0.int64(0) }.first
    }

    /// Carried packets held, in the order (expiry, id), from `after` on (exclusive), at most
    /// `limit`: the scan for one's own mail after an unlock.
    package func carriedPackets(after: CarryKey?, nowMs: Int64, limit: Int) throws -> [CarriedPacket] {
        var lower = after
        if let a = after { lower = CarryKey(expiresAtMs: a.expiresAtMs, id: a.id + [0]) }
        return try carriedKeys(from: lower, nowMs: nowMs, limit: limit).compactMap { try carriedPacket($0.id) }
    }
}
