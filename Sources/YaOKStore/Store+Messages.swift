import YaOKSupport
import YaOKWire
import YaOKCrypto

/// Messages: metadata in clear for ordering and status, the body an AEAD ciphertext bound
/// to (conversation, message ID, direction).
extension Store {
    private static let columns = """
        conversation_id, message_id, direction, status, sender_ts_ms, created_ms, sent_ms, received_ms, unread, body, id
        """

    /// Inserts a message; nil if this conversation already has one with `messageID`
    /// (a retransmission), in which case nothing changes.
    package func insertMessage(conversation: Int64, messageID: [UInt8], direction: MessageDirection, status: MessageStatus,
                       text: String, senderTimestamp: Int64, createdAt: Int64, receivedAt: Int64?,
                       unread: Bool, cipher: FieldCipher) throws -> Message? {
        let body = try cipher.sealPadded(Array(text.utf8), ad: RowAD.messageBody(conversation: conversation, messageID: messageID,
                                                                       direction: direction.rawValue))
        try db.query("""
            INSERT OR IGNORE INTO messages
            (conversation_id, message_id, direction, status, sender_ts_ms, created_ms, sent_ms, received_ms, unread, body)
            VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)
            """, [.int(conversation), .blob(messageID), .int(Int64(direction.rawValue)), .int(Int64(status.rawValue)),
                  .int(senderTimestamp), .int(createdAt), receivedAt.map { .int($0) } ?? .null,
                  .int(unread ? 1 : 0), .blob(body)])
        guard db.changes > 0 else { return nil }
        return Message(messageID: try MessageID(bytes: messageID), conversationID: conversation, direction: direction, status: status,
                       text: text, senderTimestamp: senderTimestamp, createdAt: createdAt, sentAt: nil,
                       receivedAt: receivedAt, unread: unread)
    }

    package func message(conversation: Int64, messageID: [UInt8], cipher: FieldCipher) throws -> Message? {
        try db.rows("SELECT \(Store.columns) FROM messages WHERE conversation_id = ? AND message_id = ?",
                    [.int(conversation), .blob(messageID)]) { try Store.decode($0, cipher) }.first
    }

    /// The outgoing message with this ID (IDs are random, 16 bytes: at most one).
    package func outgoingMessage(messageID: [UInt8], cipher: FieldCipher) throws -> Message? {
        try db.rows("SELECT \(Store.columns) FROM messages WHERE message_id = ? AND direction = 0",
                    [.blob(messageID)]) { try Store.decode($0, cipher) }.first
    }

    /// Sets the status; the first move to `sent` also records the sent time.
    package func setStatus(messageID: [UInt8], _ status: MessageStatus, now: Int64) throws {
        try db.query("""
            UPDATE messages SET status = ?,
                sent_ms = CASE WHEN ? = 2 AND sent_ms IS NULL THEN ? ELSE sent_ms END
            WHERE message_id = ? AND direction = 0
            """, [.int(Int64(status.rawValue)), .int(Int64(status.rawValue)), .int(now), .blob(messageID)])
    }

    /// The `limit` messages before `cursor` (or the newest), oldest first, by the sender's
    /// timestamp with the row id breaking ties. Walks the (conversation, time, id) index
    /// backwards, so a page costs the same at any depth.
    package func history(conversation: Int64, before cursor: HistoryCursor?, limit: Int, cipher: FieldCipher) throws -> HistoryPage {
        var newestFirst: [(Message, HistoryCursor)] = []
        try db.query("""
            SELECT \(Store.columns) FROM messages
            WHERE conversation_id = ? AND (sender_ts_ms, id) < (?, ?)
            ORDER BY sender_ts_ms DESC, id DESC LIMIT ?
            """, [.int(conversation), .int(cursor?.timestamp ?? Int64.max), .int(cursor?.rowID ?? Int64.max),
                  .int(Int64(limit) + 1)]) { row in
            newestFirst.append((try Store.decode(row, cipher), HistoryCursor(timestamp: row.int64(4), rowID: row.int64(10))))
        }
        let hasMore = newestFirst.count > limit
        let page = newestFirst.prefix(limit)
        return HistoryPage(messages: page.reversed().map(\.0), olderCursor: hasMore ? page.last?.1.text : nil)
    }

    /// Marks every incoming message of the conversation read; returns how many changed.
    package func markRead(conversation: Int64) throws -> Int {
        try db.query("UPDATE messages SET unread = 0 WHERE conversation_id = ? AND unread = 1", [.int(conversation)])
        return db.changes
    }

    private static func decode(_ row: Row, _ cipher: FieldCipher) throws -> Message {
        let conversation = row.int64(0)
        let messageID = row.blob(1)
        guard let direction = MessageDirection(rawValue: row.int(2)),
              let status = MessageStatus(rawValue: row.int(3)) else { throw FieldCipher.failure }
        let text = try cipher.openPaddedString(row.blob(9), ad: RowAD.messageBody(conversation: conversation, messageID: messageID,
                                                                             direction: direction.rawValue))
        return Message(messageID: try MessageID(bytes: messageID), conversationID: conversation, direction: direction, status: status,
                       text: text, senderTimestamp: row.int64(4), createdAt: row.int64(5),
                       sentAt: row.isNull(6) ? nil : row.int64(6), receivedAt: row.isNull(7) ? nil : row.int64(7),
                       unread: row.int(8) != 0)
    }
}

/// Where a history page ends: the sender timestamp and row id of its oldest message.
/// Crosses the API as text "<timestamp>.<row id>"; callers treat it as opaque.
package struct HistoryCursor: Equatable {
    let timestamp: Int64
    let rowID: Int64

    var text: String { "\(timestamp).\(rowID)" }

    init(timestamp: Int64, rowID: Int64) {
        self.timestamp = timestamp
        self.rowID = rowID
    }

    package init(text: String) throws {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let t = Int64(parts[0]), let r = Int64(parts[1]) else {
            throw YaOKError(.invalidArgument, "Invalid history cursor")
        }
        timestamp = t
        rowID = r
    }
}
