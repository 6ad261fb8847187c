import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Sending in the engine (US-020, US-022): retries asked for, the outbox as the app sees
/// it (new messages: DeliveryEngine+SendPlan). Node+Send.swift is the API.
extension DeliveryEngine {
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
        // A damaged row is taken out (DeliveryEngine+DamagedOutbox): the text is sealed afresh.
        if let row = try checkedOutboxRow(messageID, store, keys) {
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
