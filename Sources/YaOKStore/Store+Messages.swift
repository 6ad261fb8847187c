import YaOKSupport
import YaOKWire
import YaOKCrypto

/// Messages: metadata in clear for ordering and status, the body an AEAD ciphertext bound
/// to (conversation, message ID, direction).
extension Store {
    private static let columns = """
        conversation_id, message_id, direction, status, sender_ts_ms, created_ms, sent_ms, received_ms, unread, body, id, mac
        """

    /// Inserts a message; nil if this conversation already has one with `messageID`
    /// (a retransmission), in which case nothing changes.
    package func insertMessage(conversation: Int64, messageID: [UInt8], direction: MessageDirection, status: MessageStatus,
                       text: String, senderTimestamp: Int64, createdAt: Int64, receivedAt: Int64?,
                       unread: Bool, repaired: Bool = false, cipher: FieldCipher) throws -> Message? {
        try insertMessage(SealedMessageRow(conversation: conversation, messageID: MessageID(bytes: messageID), direction: direction,
                                           status: status, text: text, senderTimestamp: senderTimestamp, createdAt: createdAt,
                                           receivedAt: receivedAt, unread: unread, repaired: repaired, cipher: cipher))
    }

    /// Inserts a message row sealed ahead (outside the node's lock); nil as above.
    package func insertMessage(_ row: SealedMessageRow) throws -> Message? {
        let m = row.message
        try db.query("""
            INSERT OR IGNORE INTO messages
            (conversation_id, message_id, direction, status, sender_ts_ms, created_ms, sent_ms, received_ms, unread, body, mac)
            VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)
            """, [.int(m.conversationID), .blob(m.messageID.bytes), .int(Int64(m.direction.rawValue)), .int(Int64(m.status.rawValue)),
                  .int(m.senderTimestamp), .int(m.createdAt), m.receivedAt.map { .int($0) } ?? .null,
                  .int(m.unread ? 1 : 0), .blob(row.body), .blob(row.mac)])
        guard db.changes > 0 else { return nil }
        // Read back as it moves to `sent` and `delivered` and for its own carried copy.
        if m.direction == .outgoing {
            sentTexts.keep(m.text, messageID: m.messageID.bytes, sealed: row.body, ad: row.ad, cipher: row.cipher)
        }
        return m
    }

    package func message(conversation: Int64, messageID: [UInt8], cipher: FieldCipher) throws -> Message? {
        try db.rows("SELECT \(Store.columns) FROM messages WHERE conversation_id = ? AND message_id = ?",
                    [.int(conversation), .blob(messageID)]) { try decode($0, cipher) }.first
    }

    /// The outgoing message with this ID (IDs are random, 16 bytes: at most one).
    package func outgoingMessage(messageID: [UInt8], cipher: FieldCipher) throws -> Message? {
        try db.rows("SELECT \(Store.columns) FROM messages WHERE message_id = ? AND direction = 0",
                    [.blob(messageID)]) { try decode($0, cipher) }.first
    }

    /// Message `id` and its recipient while its own carried copy is owed (nil: nothing owed,
    /// or no such outgoing message): `owedCarriedCopy` and `outgoingMessage` in one
    /// statement, for each copy a batch plans under the node's lock (DeliveryEngine+CarryOwnCopies).
    package func owedCarriedCopyMessage(_ id: MessageID, cipher: FieldCipher) throws -> (contactID: Int64, message: Message)? {
        try db.rows("""
            SELECT \(Store.joinedColumns), o.contact_id FROM outbox o
            JOIN messages m ON m.message_id = o.packet_id AND m.direction = 0
            WHERE o.packet_id = ? AND o.carried & 2 != 0
            """, [.blob(id.bytes)]) { (contactID: $0.int64(12), message: try decode($0, cipher)) }.first
    }

    /// `columns` of `messages` as `m` in a join.
    private static let joinedColumns = columns.split(separator: ",").map { "m." + $0.filter { !$0.isWhitespace } }
        .joined(separator: ", ")

    /// Sets the status; the first move to `sent` also records the sent time. Needs the
    /// store attached (unlocked): each row's MAC is checked before it is rewritten, so a
    /// row altered in the file is refused (`corruptStore`), never re-authenticated.
    /// Every row is checked before any is written; one row (IDs are random: nearly always)
    /// is one UPDATE, which needs no savepoint around it to be all or nothing.
    /// `returning`: the message as it now is (the row `outgoingMessage` reads), from the
    /// same read, so that a caller telling the app does not read and check the row again.
    @discardableResult
    package func setStatus(messageID: [UInt8], _ status: MessageStatus, now: Int64, returning: Bool = false) throws -> Message? {
        let cipher = try requireAttached()
        var updated: Message?
        let rows = try db.rows("SELECT \(Store.columns) FROM messages WHERE message_id = ? AND direction = 0",
                               [.blob(messageID)]) { row -> (Int64, RowMAC) in
            let stored = try Store.verifiedMetadata(row, cipher)
            if returning, updated == nil {
                updated = try decode(row, stored, cipher).with(status: status, now: now)
            }
            let sentAt = status == .sent && stored.sentAt == nil ? now : stored.sentAt
            return (row.int64(10), .message(conversation: stored.conversation, messageID: messageID,
                                            direction: stored.direction, status: status.rawValue,
                                            senderTimestamp: stored.senderTimestamp, createdAt: stored.createdAt,
                                            sentAt: sentAt, receivedAt: stored.receivedAt, unread: stored.unread))
        }
        func update(_ id: Int64, _ input: RowMAC) throws {
            try db.query("""
                UPDATE messages SET status = ?, sent_ms = CASE WHEN ? = \(MessageStatus.sent.rawValue) AND sent_ms IS NULL THEN ? ELSE sent_ms END,
                    mac = ? WHERE id = ?
                """, [.int(Int64(status.rawValue)), .int(Int64(status.rawValue)), .int(now), .blob(cipher.mac(input)), .int(id)])
        }
        if status == .delivered { sentTexts.remove(messageID) }  // never read back for delivery again
        if rows.count == 1 {
            try update(rows[0].0, rows[0].1)
        } else if !rows.isEmpty {
            try db.transaction { for (id, input) in rows { try update(id, input) } }
        }
        return updated
    }

    /// Moves `message` (outgoing), as `outgoingMessage` read it in the caller's transaction
    /// (its MAC checked there), to `status`: its row is rewritten from what was read, not
    /// read and checked a second time. Only this conversation's row: the one an ack from
    /// its recipient settles. Needs the store attached (unlocked).
    package func setStatus(of message: Message, _ status: MessageStatus, now: Int64) throws {
        let cipher = try requireAttached()
        if status == .delivered { sentTexts.remove(message.messageID.bytes) }  // never read back for delivery again
        let changed = message.with(status: status, now: now)
        let mac = cipher.mac(.message(conversation: message.conversationID, messageID: message.messageID.bytes,
                                      direction: MessageDirection.outgoing.rawValue, status: status.rawValue,
                                      senderTimestamp: message.senderTimestamp, createdAt: message.createdAt,
                                      sentAt: changed.sentAt, receivedAt: message.receivedAt, unread: message.unread))
        try db.query("""
            UPDATE messages SET status = ?, sent_ms = ?, mac = ?
            WHERE message_id = ? AND conversation_id = ? AND direction = 0
            """, [.int(Int64(status.rawValue)), changed.sentAt.map { .int($0) } ?? .null, .blob(mac),
                  .blob(message.messageID.bytes), .int(message.conversationID)])
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
            newestFirst.append((try decode(row, cipher), HistoryCursor(timestamp: row.int64(4), rowID: row.int64(10))))
        }
        let hasMore = newestFirst.count > limit
        let page = newestFirst.prefix(limit)
        return HistoryPage(messages: page.reversed().map(\.0), olderCursor: hasMore ? page.last?.1.text : nil)
    }

    /// Marks every incoming message of the conversation read; returns how many changed.
    /// Needs the store attached (unlocked); each row's MAC is checked, then rewritten.
    package func markRead(conversation: Int64) throws -> Int {
        let cipher = try requireAttached()
        return try db.transaction {
            let rows = try db.rows("SELECT \(Store.columns) FROM messages WHERE conversation_id = ? AND unread = 1",
                                   [.int(conversation)]) { row -> (Int64, RowMAC) in
                let m = try Store.verifiedMetadata(row, cipher)
                return (row.int64(10), .message(conversation: m.conversation, messageID: m.messageID, direction: m.direction,
                                                status: m.status, senderTimestamp: m.senderTimestamp, createdAt: m.createdAt,
                                                sentAt: m.sentAt, receivedAt: m.receivedAt, unread: false))
            }
            for (id, input) in rows {
                try db.query("UPDATE messages SET unread = 0, mac = ? WHERE id = ?", [.blob(cipher.mac(input)), .int(id)])
            }
            return rows.count
        }
    }

    /// A row's clear columns, after its MAC was checked.
    private struct Metadata {
        let conversation: Int64
        let messageID: [UInt8]
        let direction: Int
        let status: Int
        let senderTimestamp: Int64
        let createdAt: Int64
        let sentAt: Int64?
        let receivedAt: Int64?
        let unread: Bool
    }

    private static func verifiedMetadata(_ row: Row, _ cipher: FieldCipher) throws -> Metadata {
        let m = Metadata(conversation: row.int64(0), messageID: row.blob(1), direction: row.int(2), status: row.int(3),
                         senderTimestamp: row.int64(4), createdAt: row.int64(5),
                         sentAt: row.isNull(6) ? nil : row.int64(6), receivedAt: row.isNull(7) ? nil : row.int64(7),
                         unread: row.int(8) != 0)
        guard cipher.verify(row.isNull(11) ? nil : row.blob(11),
                            .message(conversation: m.conversation, messageID: m.messageID, direction: m.direction,
                                     status: m.status, senderTimestamp: m.senderTimestamp, createdAt: m.createdAt,
                                     sentAt: m.sentAt, receivedAt: m.receivedAt, unread: m.unread)) else {
            throw Store.messageAltered
        }
        return m
    }

    static let messageAltered = YaOKError(.corruptStore,
        "The data store is corrupt: a message's status, times or read state were changed outside Ya OK")

    private func decode(_ row: Row, _ cipher: FieldCipher) throws -> Message {
        try decode(row, Store.verifiedMetadata(row, cipher), cipher)
    }

    /// The message of `row`, whose clear columns `m` were checked.
    private func decode(_ row: Row, _ m: Metadata, _ cipher: FieldCipher) throws -> Message {
        guard let direction = MessageDirection(rawValue: m.direction),
              let status = MessageStatus(rawValue: m.status) else { throw FieldCipher.failure }
        func ad(repaired: Bool) -> [UInt8] {
            RowAD.messageBody(conversation: m.conversation, messageID: m.messageID, direction: direction.rawValue,
                              repaired: repaired)
        }
        func open(repaired: Bool) throws -> String {
            bodiesOpened += 1
            return try cipher.openPaddedString(row.blob(9), ad: ad(repaired: repaired))
        }
        // Nearly every text opens under the first label; a repaired one under the second.
        // An outgoing one sealed by this store since the unlock is usually kept (SentTextCache).
        let kept = direction == .outgoing
            ? row.withBlob(9) { sentTexts.text(m.messageID, stored: $0, ad: ad(repaired: false), cipher: cipher) } : nil
        let text: String
        var repaired = false
        if let kept {
            text = kept
        } else {
            do { text = try open(repaired: false) } catch {
                guard direction == .incoming else { throw error }
                text = try open(repaired: true)
                repaired = true
            }
        }
        return Message(messageID: try MessageID(bytes: m.messageID), conversationID: m.conversation, direction: direction,
                       status: status, text: text, senderTimestamp: m.senderTimestamp, createdAt: m.createdAt,
                       sentAt: m.sentAt, receivedAt: m.receivedAt, unread: m.unread, repaired: repaired)
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
