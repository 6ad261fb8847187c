import CYaOK
import YaOK

/* ---- message envelope ---- */

@c @implementation
public func yaok_envelope_seal(_ sender: OpaquePointer?, _ recipient: OpaquePointer?,
                               _ body: UnsafePointer<UInt8>?, _ bodyLength: Int,
                               _ messageID: UnsafePointer<UInt8>?, _ timestampMs: Int64,
                               _ outSealed: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                               _ outSealedLength: UnsafeMutablePointer<Int>?) -> Int32 {
    giveBytes(outSealed, "out_sealed", outSealedLength, "out_sealed_len") {
        try seal(sender, recipient, body, bodyLength, messageID, timestampMs)
    }
}

/// yaok_envelope_seal's arguments, checked in order (sender, recipient, body, message ID),
/// sealed.
private func seal(_ sender: OpaquePointer?, _ recipient: OpaquePointer?, _ body: UnsafePointer<UInt8>?, _ bodyLength: Int,
                  _ messageID: UnsafePointer<UInt8>?, _ timestampMs: Int64) throws -> [UInt8] {
    let me = try Handles.borrow(sender, as: IdentityHandle.self, "sender").identity
    let them = try Handles.borrow(recipient, as: CardHandle.self, "recipient").card
    guard bodyLength >= 0, bodyLength <= Envelope.maxBodyLength else { throw YaOKError(.messageTooLarge) }
    return try Envelope.seal(try bytes(body, bodyLength, "body"), from: me, to: them.publicIdentity.encryptionKey,
                             messageID: try fixedBytes(messageID, Envelope.messageIDLength, "message_id"),
                             timestamp: timestampMs)
}

@c @implementation
public func yaok_envelope_open(_ recipient: OpaquePointer?,
                               _ senders: UnsafePointer<OpaquePointer?>?, _ senderCount: Int,
                               _ sealed: UnsafePointer<UInt8>?, _ sealedLength: Int,
                               _ messageID: UnsafePointer<UInt8>?, _ timestampMs: Int64,
                               _ outBody: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                               _ outBodyLength: UnsafeMutablePointer<Int>?,
                               _ outSenderIndex: UnsafeMutablePointer<Int>?) -> Int32 {
    fillEach({ () }, (outBody, "out_body"), (outBodyLength, "out_body_len"), (outSenderIndex, "out_sender_index")) {
        try open(recipient, senders, senderCount, sealed, sealedLength, messageID, timestampMs, into: $1, $2, $3)
    }
}

/// yaok_envelope_open's arguments, checked in order (recipient, senders, sealed, message
/// ID), opened; the body and the sender's index go to the caller's out-pointers.
private func open(_ recipient: OpaquePointer?, _ senders: UnsafePointer<OpaquePointer?>?, _ senderCount: Int,
                  _ sealed: UnsafePointer<UInt8>?, _ sealedLength: Int, _ messageID: UnsafePointer<UInt8>?, _ timestampMs: Int64,
                  into out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, _ outLength: UnsafeMutablePointer<Int>,
                  _ outIndex: UnsafeMutablePointer<Int>) throws {
    let me = try Handles.borrow(recipient, as: IdentityHandle.self, "recipient").identity
    let known = try senderCards(senders, senderCount)
    let opened = try Envelope.open(try bytes(sealed, sealedLength, "sealed"), by: me,
                                   messageID: try fixedBytes(messageID, Envelope.messageIDLength, "message_id"),
                                   timestamp: timestampMs, isKnownSender: { key in known.contains { $0.encryptionKey == key } })
    let matches = known.indices.filter { known[$0].encryptionKey == opened.senderKey }
    guard let index = matches.first else { throw YaOKError(.unknownSender) }
    // The same card twice names one sender; two identities sharing the key do not.
    if let other = matches.first(where: { known[$0] != known[index] }) {
        throw YaOKError(.invalidArgument, "senders[\(index)] and senders[\(other)] are different identities with the same encryption key: the sender is ambiguous")
    }
    try give(opened.body, to: out, length: outLength)
    outIndex.pointee = index
}

/// The `senders` array of card handles (NULL allowed when empty).
private func senderCards(_ senders: UnsafePointer<OpaquePointer?>?, _ count: Int) throws -> [PublicIdentity] {
    guard count >= 0 else { throw YaOKError(.invalidArgument, "senders_count is negative") }
    guard count > 0 else { return [] }
    let list = try required(senders, "senders")
    return try (0..<count).map { try Handles.borrow(list[$0], as: CardHandle.self, "senders[\($0)]").card.publicIdentity }
}
