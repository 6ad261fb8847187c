import YaOKSupport
import YaOKWire
import YaOKCrypto

/// A message row's encrypted body and MAC, made before its insert from values fixed by
/// then: a sender makes them on its own thread, outside the node's lock, and the insert
/// (`Store.insertMessage(_:)`) only binds them (docs/ARCHITECTURE.md, "Sending"). Every
/// message row is sealed here, made ahead or at its insert, so both store the same bytes
/// (the body's nonce aside, random either way).
package struct SealedMessageRow: Sendable {
    let message: Message
    let body: [UInt8]
    let mac: [UInt8]
    /// What `body` was sealed to and under (SentTextCache).
    let ad: [UInt8]
    let cipher: FieldCipher

    /// The row of a message not sent yet (`sentAt` nil), under `cipher`, the store's.
    package init(conversation: Int64, messageID: MessageID, direction: MessageDirection, status: MessageStatus,
                 text: String, senderTimestamp: Int64, createdAt: Int64, receivedAt: Int64?, unread: Bool,
                 repaired: Bool = false, cipher: FieldCipher) throws {
        message = Message(messageID: messageID, conversationID: conversation, direction: direction, status: status,
                          text: text, senderTimestamp: senderTimestamp, createdAt: createdAt, sentAt: nil,
                          receivedAt: receivedAt, unread: unread, repaired: repaired)
        ad = RowAD.messageBody(conversation: conversation, messageID: messageID.bytes, direction: direction.rawValue,
                               repaired: repaired)
        self.cipher = cipher
        body = try cipher.sealPadded(Array(text.utf8), ad: ad)
        mac = cipher.mac(.message(conversation: conversation, messageID: messageID.bytes, direction: direction.rawValue,
                                  status: status.rawValue, senderTimestamp: senderTimestamp, createdAt: createdAt,
                                  sentAt: nil, receivedAt: receivedAt, unread: unread))
    }
}

/// An outbox row's MAC (its identity, recipient, expiry and packet), made before its insert
/// (`Store.enqueue(_:now:owesCarriedCopy:)`), as `SealedMessageRow` for the message row.
package struct SealedOutboxRow: Sendable {
    let kind: OutboxRow.Kind
    let packetID: MessageID
    let contactID: Int64
    let packet: [UInt8]
    let expiresAt: Int64
    let mac: [UInt8]

    package init(_ kind: OutboxRow.Kind, packetID: MessageID, contactID: Int64, packet: [UInt8], expiresAt: Int64,
                 cipher: FieldCipher) {
        self.kind = kind
        self.packetID = packetID
        self.contactID = contactID
        self.packet = packet
        self.expiresAt = expiresAt
        mac = cipher.mac(.outbox(packetID: packetID.bytes, kind: kind.rawValue, contactID: contactID,
                                 expiresAt: expiresAt, packet: packet))
    }
}
