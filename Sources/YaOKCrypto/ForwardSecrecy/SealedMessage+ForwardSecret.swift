import YaOKSupport
import YaOKWire

/// A message packet (docs/PROTOCOL.md §4.2) carrying the forward-secret envelope (§13.2)
/// instead of §3.1's: same header, same binding of its authenticated bytes.
extension SealedMessage {
    public static func sealForwardSecret(_ body: [UInt8], from sender: Identity, receiverKey: ReceiverKey,
                                         announce: Announcement, createdMs: Int64, messageID: MessageID = .random(),
                                         lifetimeMinutes: UInt16 = defaultLifetimeMinutes,
                                         route: RoutePair) throws -> (header: RoutedHeader, packet: [UInt8]) {
        guard route.ownKey == sender.publicIdentity.encryptionKey else {
            throw YaOKError(.invalidArgument, "The route is not this sender's")
        }
        let header = try RoutedHeader.new(type: .message, route: route, createdMs: createdMs,
                                          messageID: messageID, lifetimeMinutes: lifetimeMinutes)
        let payloadLength = try ForwardSecretEnvelope.sealedLength(bodyLength: body.count)
        let sealed = try ForwardSecretEnvelope.seal(body, from: sender, to: route.peerKey, receiverKey: receiverKey,
                                                    announce: announce, messageID: header.messageID.bytes,
                                                    timestamp: createdMs,
                                                    associatedData: header.authenticatedBytes(payloadLength: payloadLength))
        return (header, try Packet.routed(header, payload: sealed).encode())
    }

    /// Whether `payload` names one of `receiverKeys` by its selector (§13.5): then it is
    /// opened as §13.2, else as §3.1.
    public static func isForwardSecret(_ payload: [UInt8], receiverKeys: [ReceiverKeyPair]) -> Bool {
        guard payload.count >= ForwardSecretEnvelope.minLength else { return false }
        let wanted = Array(payload[0..<ForwardSecretEnvelope.selectorLength])
        let ephemeral = Array(payload[ForwardSecretEnvelope.selectorLength..<(ForwardSecretEnvelope.selectorLength + 32)])
        return receiverKeys.contains {
            ForwardSecretEnvelope.selector(receiverKey: $0.key.publicKey, ephemeral: ephemeral) == wanted
        }
    }

    public static func openForwardSecret(_ header: RoutedHeader, payload: [UInt8], by recipient: Identity,
                                         matchedSender senderKey: [UInt8],
                                         receiverKeys: [ReceiverKeyPair]) throws -> ForwardSecretEnvelope.Opened {
        guard header.type == .message else { throw YaOKError(.invalidArgument, "Only message packets carry an envelope") }
        return try ForwardSecretEnvelope.open(payload, by: recipient, senderKey: senderKey, receiverKeys: receiverKeys,
                                              messageID: header.messageID.bytes, timestamp: header.createdMs,
                                              associatedData: header.authenticatedBytes(payloadLength: payload.count))
    }
}

extension ForwardSecretEnvelope.Opened {
    /// The body as the node's one inbound path takes it (the sender known from the tag).
    public func envelope(senderKey: [UInt8]) -> Envelope.Opened { Envelope.Opened(senderKey: senderKey, body: body) }
}
