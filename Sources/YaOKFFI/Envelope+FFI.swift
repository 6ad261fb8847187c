import CYaOK
import YaOK

/* ---- message envelope ---- */

@c @implementation
public func yaok_envelope_seal(_ sender: OpaquePointer?, _ recipient: OpaquePointer?,
                               _ body: UnsafePointer<UInt8>?, _ bodyLength: Int,
                               _ messageID: UnsafePointer<UInt8>?, _ timestampMs: Int64,
                               _ outSealed: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                               _ outSealedLength: UnsafeMutablePointer<Int>?) -> Int32 {
    boundary {
        let out = try required(outSealed, "out_sealed")
        let outLength = try required(outSealedLength, "out_sealed_len")
        let me = try Handles.borrow(sender, as: IdentityHandle.self, "sender").identity
        let them = try Handles.borrow(recipient, as: CardHandle.self, "recipient").card
        guard bodyLength >= 0, bodyLength <= Envelope.maxBodyLength else { throw YaOKError(.messageTooLarge) }
        let sealed = try Envelope.seal(try bytes(body, bodyLength, "body"), from: me,
                                       to: them.publicIdentity.encryptionKey,
                                       messageID: try fixedBytes(messageID, Envelope.messageIDLength, "message_id"),
                                       timestamp: timestampMs)
        try give(sealed, to: out, length: outLength)
    }
}

@c @implementation
public func yaok_envelope_open(_ recipient: OpaquePointer?,
                               _ senders: UnsafePointer<OpaquePointer?>?, _ senderCount: Int,
                               _ sealed: UnsafePointer<UInt8>?, _ sealedLength: Int,
                               _ messageID: UnsafePointer<UInt8>?, _ timestampMs: Int64,
                               _ outBody: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                               _ outBodyLength: UnsafeMutablePointer<Int>?,
                               _ outSenderIndex: UnsafeMutablePointer<Int>?) -> Int32 {
    boundary {
        let out = try required(outBody, "out_body")
        let outLength = try required(outBodyLength, "out_body_len")
        let outIndex = try required(outSenderIndex, "out_sender_index")
        let me = try Handles.borrow(recipient, as: IdentityHandle.self, "recipient").identity
        guard senderCount >= 0 else { throw YaOKError(.invalidArgument, "senders_count is negative") }
        var known: [PublicIdentity] = []
        if senderCount > 0 {
            let list = try required(senders, "senders")
            for i in 0..<senderCount {
                known.append(try Handles.borrow(list[i], as: CardHandle.self, "senders[\(i)]").card.publicIdentity)
            }
        }
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
}
