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

    /// Carried packets held, in the order (expiry, id), from `after` on (exclusive), at most
    /// `limit`: the scan for one's own mail after an unlock.
    package func carriedPackets(after: CarryKey?, nowMs: Int64, limit: Int) throws -> [CarriedPacket] {
        var lower = after
        if let a = after { lower = CarryKey(expiresAtMs: a.expiresAtMs, id: a.id + [0]) }
        return try carriedKeys(from: lower, nowMs: nowMs, limit: limit).compactMap { try carriedPacket($0.id) }
    }
}
