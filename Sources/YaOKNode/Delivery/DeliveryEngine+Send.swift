import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Sending in the engine (US-020, US-022): messages sealed and queued, retries asked for,
/// the outbox as the app sees it. Node+Send.swift is the API.
extension DeliveryEngine {
    /// Seals, stores and queues `batch` in one transaction (all or nothing), then pumps.
    mutating func send(_ batch: [(contactID: Int64, text: String)], _ store: Store, _ keys: UnlockedKeys) throws -> [Message] {
        let contacts = try directory(store, keys)
        let sealed = try batch.map { item -> (Int64, String, RoutedHeader, [UInt8], PeerDirectory.Peer) in
            guard let peer = contacts?.byContact[item.contactID] else {
                throw YaOKError(.notFound, try store.conversationExists(item.contactID)
                                ? "This contact was deleted and can no longer be messaged" : "No such contact")
            }
            // Strictly increasing sender times: the recipient orders by them, so
            // messages sent within one millisecond still show in the order written.
            let t = max(now, lastSentAt + 1)
            lastSentAt = t
            let (header, packet) = try sealMessage(Array(item.text.utf8), to: peer, createdMs: t, store, keys)
            return (item.contactID, item.text, header, packet, peer)
        }
        // Due now, every one: the sender times above run ahead of the clock by a millisecond
        // a message, and queued at those times a batch of n went out one a millisecond, the
        // delivery timer bringing the next (LAN batches capped at ~1,000 messages/s).
        let due = now
        let messages = try store.db.transaction {
            try sealed.map { contactID, text, header, packet, peer -> Message in
                let t = header.createdMs
                guard let m = try store.insertMessage(conversation: contactID, messageID: header.messageID.bytes,
                                                      direction: .outgoing, status: .pending, text: text,
                                                      senderTimestamp: t, createdAt: t, receivedAt: nil,
                                                      unread: false, cipher: keys.cipher) else {
                    throw YaOKError(.internal, "A fresh message ID collided")
                }
                try store.enqueue(.message, packetID: header.messageID, contactID: contactID, packet: packet,
                                  now: due, expiresAt: header.expiresAtMs)
                try sealOwnCarried(Array(text.utf8), messageID: header.messageID, createdMs: t, to: peer, store, keys)
                return m
            }
        }
        effects.events += messages.map { .messageStored($0) }
        try pump(store, keys)
        return messages
    }

    /// Makes an outgoing message due now (sealed afresh if its packet expired), `pending`.
    mutating func retry(_ messageID: MessageID, _ store: Store, _ keys: UnlockedKeys) throws -> Message {
        guard let message = try store.outgoingMessage(messageID: messageID.bytes, cipher: keys.cipher) else {
            throw YaOKError(.notFound, "No such outgoing message")
        }
        // `sent` too: a relay may have lost what it stored (the ack never came).
        guard message.status != .delivered else {
            throw YaOKError(.invalidArgument, "This message was already \(message.status.name)")
        }
        let t = now
        if let row = try store.outboxRow(messageID) {
            try store.setOutbox(messageID, state: .queued, attempts: row.attempts, nextAttemptAt: t)
        } else {
            guard let peer = try directory(store, keys)?.byContact[message.conversationID] else {
                throw YaOKError(.notFound, "This contact was deleted and can no longer be messaged")
            }
            let (header, packet) = try sealMessage(Array(message.text.utf8), to: peer, createdMs: t,
                                                   messageID: messageID, store, keys)
            try store.enqueue(.message, packetID: messageID, contactID: message.conversationID, packet: packet,
                              now: t, expiresAt: header.expiresAtMs)
        }
        let updated = try setStatus(messageID, .pending, store, keys) ?? message
        try pump(store, keys)
        return updated
    }

    /// Messages still on their way (pending or failed), in sending order.
    func outbox(_ store: Store, _ keys: UnlockedKeys) throws -> [OutboxEntry] {
        let linked = Set(links.values.filter(\.isOpen).compactMap(\.contactID))
        let carried = !carriers.isEmpty
        return try store.outboxRows(kind: .message).compactMap { row -> OutboxEntry? in
            guard row.state == .queued,
                  let m = try store.outgoingMessage(messageID: row.packetID.bytes, cipher: keys.cipher) else { return nil }
            return OutboxEntry(messageID: row.packetID, contactID: row.contactID, status: m.status,
                               attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, expiresAt: row.expiresAt,
                               waitingForTransport: !carried && !linked.contains(row.contactID))
        }
    }
}
