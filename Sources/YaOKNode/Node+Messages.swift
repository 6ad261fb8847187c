import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Message history (US-023): pages of a conversation, read state. Sending is `send`
/// (Delivery/Node+Send.swift), receiving the engine's (DeliveryEngine+Inbound.swift). All
/// need the node unlocked.
extension Node {
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
}
