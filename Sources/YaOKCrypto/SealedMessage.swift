import YaOKSupport
import YaOKWire

/// A message packet end to end (docs/PROTOCOL.md §4.2, "Authenticated bytes"): a routed
/// header whose authenticated bytes — everything but the hop limit — are bound into the
/// envelope it carries, so a forwarder that alters the type, ID, times, routing tag or
/// length makes the recipient's open fail as `tampered`.
public enum SealedMessage {
    /// Seven days: how long relays and forwarding peers keep a message for an absent recipient.
    public static let defaultLifetimeMinutes: UInt16 = 7 * 24 * 60

    /// Seals `body` from `sender` to the holder of `recipientKey`: the message's ID (the one
    /// stored in the outbox; a fresh random one by default), a random first hop limit, the
    /// routing tag of the creation day. Returns the header (ID, expiry) and the encoded packet.
    public static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8], createdMs: Int64,
                            messageID: MessageID = .random(),
                            lifetimeMinutes: UInt16 = defaultLifetimeMinutes) throws -> (header: RoutedHeader, packet: [UInt8]) {
        let header = try RoutedHeader.new(type: .message, recipientKey: recipientKey, createdMs: createdMs,
                                          messageID: messageID, lifetimeMinutes: lifetimeMinutes)
        let payloadLength = try Envelope.sealedLength(bodyLength: body.count)
        let sealed = try Envelope.seal(body, from: sender, to: recipientKey, messageID: header.messageID.bytes,
                                       timestamp: createdMs,
                                       associatedData: header.authenticatedBytes(payloadLength: payloadLength))
        return (header, try Packet.routed(header, payload: sealed).encode())
    }

    /// Opens a message packet for `recipient`. `notForMe` when the routing tag is not the
    /// recipient's for the packet's day (checked first: it costs one hash, not a key
    /// exchange); then the envelope's own failures (`tampered`, `senderAuthFailed`,
    /// `unknownSender`, …). Expiry and duplicates are the caller's checks (`checkTime`,
    /// `DuplicateFilter`), made before this.
    public static func open(_ header: RoutedHeader, payload: [UInt8], by recipient: Identity,
                            isKnownSender: ([UInt8]) -> Bool = { _ in true }) throws -> Envelope.Opened {
        guard header.type == .message else {
            throw YaOKError(.invalidArgument, "Only message packets carry an envelope")
        }
        guard RoutingTag.matches(header, recipientKey: recipient.publicIdentity.encryptionKey) else {
            throw YaOKError(.notForMe)
        }
        return try Envelope.open(payload, by: recipient, messageID: header.messageID.bytes, timestamp: header.createdMs,
                                 associatedData: header.authenticatedBytes(payloadLength: payload.count),
                                 isKnownSender: isKnownSender)
    }
}
