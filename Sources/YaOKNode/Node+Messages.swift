import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Message storage and history (US-020, US-023). Delivery comes later; these are the
/// calls it will make. All need the node unlocked.
extension Node {
    /// Stores a message we are sending to contact `contactID`, status `pending`, with a
    /// fresh random message ID unless one is given (16 bytes). A deleted contact cannot be
    /// messaged (`notFound`). Text: 1 byte to 10 KiB of UTF-8, not only white space
    /// (`emptyMessage`, AC-020-05; `messageTooLarge`, AC-020-04).
    package func storeOutgoing(to contactID: Int64, text: String, messageID: [UInt8]? = nil) throws -> Message {
        try Node.validate(text)
        guard !text.trimmingWhitespace().isEmpty else { throw YaOKError(.emptyMessage, "Message is empty") }
        let id = try messageID.map(Node.validateMessageID) ?? Sodium.randomBytes(Envelope.messageIDLength)
        let message = try withUnlocked { store, keys, _ -> Message in
            guard try store.contactExists(contactID) else {
                throw YaOKError(.notFound, try store.conversationExists(contactID)
                                ? "This contact was deleted and can no longer be messaged" : "No such contact")
            }
            let t = now
            guard let m = try store.insertMessage(conversation: contactID, messageID: id, direction: .outgoing, status: .pending,
                                                  text: text, senderTimestamp: t, createdAt: t, receivedAt: nil,
                                                  unread: false, cipher: keys.cipher) else {
                throw YaOKError(.invalidArgument, "A message with this ID already exists")
            }
            return m
        }
        events.emit(.messageStored(message))
        return message
    }

    /// Stores a message received (and already decrypted) from contact `contactID`, unread,
    /// ordered by `sentAt`, the sender's timestamp. A retransmission (same message ID in
    /// the same conversation) stores nothing and returns the stored copy with
    /// `duplicate: true`.
    @discardableResult
    package func storeIncoming(from contactID: Int64, text: String, messageID: [UInt8],
                              sentAt: Int64) throws -> (message: Message, duplicate: Bool) {
        try Node.validate(text)
        let id = try Node.validateMessageID(messageID)
        let result = try withUnlocked { store, keys, _ -> (Message, Bool) in
            guard try store.contactExists(contactID) else { throw YaOKError(.notFound, "No such contact") }
            if let m = try store.insertMessage(conversation: contactID, messageID: id, direction: .incoming,
                                               status: .delivered, text: text, senderTimestamp: sentAt, createdAt: now,
                                               receivedAt: now, unread: true, cipher: keys.cipher) {
                return (m, false)
            }
            guard let stored = try store.message(conversation: contactID, messageID: id, cipher: keys.cipher) else {
                throw YaOKError(.internal, "A duplicate message vanished")
            }
            return (stored, true)
        }
        if !result.1 { events.emit(.messageStored(result.0)) }
        return (result.0, result.1)
    }

    /// Stores many received messages in one transaction (one disk sync instead of one per
    /// message), e.g. a relay's backlog after days offline. Same rules as `storeIncoming`;
    /// if any message is invalid or from an unknown contact, nothing is stored.
    @discardableResult
    package func storeIncoming(_ batch: [IncomingMessage]) throws -> [(message: Message, duplicate: Bool)] {
        for m in batch {
            try Node.validate(m.text)
            _ = try Node.validateMessageID(m.messageID)
        }
        let results = try withUnlocked { store, keys, _ -> [(Message, Bool)] in
            try store.db.transaction {
                var known: [Int64: Bool] = [:]
                return try batch.map { m -> (Message, Bool) in
                    if known[m.contactID] == nil { known[m.contactID] = try store.contactExists(m.contactID) }
                    guard known[m.contactID] == true else { throw YaOKError(.notFound, "No such contact") }
                    if let stored = try store.insertMessage(conversation: m.contactID, messageID: m.messageID,
                                                            direction: .incoming, status: .delivered, text: m.text,
                                                            senderTimestamp: m.sentAt, createdAt: now, receivedAt: now,
                                                            unread: true, cipher: keys.cipher) {
                        return (stored, false)
                    }
                    guard let stored = try store.message(conversation: m.contactID, messageID: m.messageID, cipher: keys.cipher) else {
                        throw YaOKError(.internal, "A duplicate message vanished")
                    }
                    return (stored, true)
                }
            }
        }
        for (message, duplicate) in results where !duplicate { events.emit(.messageStored(message)) }
        return results.map { (message: $0.0, duplicate: $0.1) }
    }

    /// Moves an outgoing message to `status`; the first `sent` records the sent time.
    @discardableResult
    package func updateMessageStatus(_ messageID: [UInt8], to status: MessageStatus) throws -> Message {
        let id = try Node.validateMessageID(messageID)
        let message = try withUnlocked { store, keys, _ -> Message in
            guard try store.outgoingMessage(messageID: id, cipher: keys.cipher) != nil else {
                throw YaOKError(.notFound, "No such outgoing message")
            }
            try store.setStatus(messageID: id, status, now: now)
            guard let m = try store.outgoingMessage(messageID: id, cipher: keys.cipher) else { throw YaOKError(.notFound) }
            return m
        }
        events.emit(.messageStatusChanged(message))
        return message
    }

    /// A page of conversation `conversationID` (a contact id, or a deleted contact's kept
    /// conversation), oldest first by the sender's timestamp. Pass nil for the newest page,
    /// then the page's `olderCursor` to go back. `limit`: 1 to 1000.
    public func history(_ conversationID: Int64, before cursor: String? = nil, limit: Int = 100) throws -> HistoryPage {
        guard (1...1000).contains(limit) else { throw YaOKError(.invalidArgument, "limit must be 1 to 1000") }
        let parsed = try cursor.map(HistoryCursor.init(text:))
        return try withUnlocked { store, keys, _ in
            guard try store.conversationExists(conversationID) else { throw YaOKError(.notFound, "No such conversation") }
            return try store.history(conversation: conversationID, before: parsed, limit: limit, cipher: keys.cipher)
        }
    }

    /// Marks every message of the conversation read; returns how many were unread.
    @discardableResult
    public func markRead(_ conversationID: Int64) throws -> Int {
        try withUnlocked { store, _, _ in
            guard try store.conversationExists(conversationID) else { throw YaOKError(.notFound, "No such conversation") }
            return try store.markRead(conversation: conversationID)
        }
    }

    static func validate(_ text: String) throws {
        guard !text.isEmpty else { throw YaOKError(.emptyMessage) }
        guard text.utf8.count <= MessageText.maxBytes else { throw YaOKError(.messageTooLarge) }
    }

    static func validateMessageID(_ id: [UInt8]) throws -> [UInt8] {
        guard id.count == Envelope.messageIDLength else {
            throw YaOKError(.invalidArgument, "A message ID is \(Envelope.messageIDLength) bytes")
        }
        return id
    }
}
