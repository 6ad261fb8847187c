import YaOKSupport
import YaOKWire

/// A message packet end to end (docs/PROTOCOL.md §4.2, "Authenticated bytes"): a routed
/// header whose routing tag only the two contacts can compute (§4.3), and whose
/// authenticated bytes — everything but the hop limit — are bound into the packet envelope
/// it carries (§3.1), so a forwarder that alters the type, ID, times or length makes the
/// recipient's open fail as `tampered`.
public enum SealedMessage {
    /// Seven days: how long relays and forwarding peers keep a message for an absent recipient.
    public static let defaultLifetimeMinutes: UInt16 = 7 * 24 * 60

    /// Seals `body` from `sender` to the holder of `recipientKey`: the message's ID (the one
    /// stored in the outbox; a fresh random one by default), a random first hop limit, the
    /// routing tag of the pair and the creation day. `route` is the sender's `RoutePair`
    /// with the recipient when the caller keeps one (a node does: it saves a key exchange);
    /// otherwise it is computed. Returns the header (ID, expiry) and the encoded packet.
    public static func seal(_ body: [UInt8], from sender: Identity, to recipientKey: [UInt8], createdMs: Int64,
                            messageID: MessageID = .random(), lifetimeMinutes: UInt16 = defaultLifetimeMinutes,
                            route: RoutePair? = nil) throws -> (header: RoutedHeader, packet: [UInt8]) {
        let route = try route ?? RoutePair(own: sender, peerKey: recipientKey)
        guard route.ownKey == sender.publicIdentity.encryptionKey, route.peerKey == recipientKey else {
            throw YaOKError(.invalidArgument, "The route is not the one from this sender to this recipient")
        }
        let header = try RoutedHeader.new(type: .message, route: route, createdMs: createdMs,
                                          messageID: messageID, lifetimeMinutes: lifetimeMinutes)
        let payloadLength = try PacketEnvelope.sealedLength(bodyLength: body.count)
        let sealed = try PacketEnvelope.seal(body, from: sender, to: recipientKey, messageID: header.messageID.bytes,
                                             timestamp: createdMs,
                                             associatedData: header.authenticatedBytes(payloadLength: payloadLength))
        return (header, try Packet.routed(header, payload: sealed).encode())
    }

    /// Opens a message packet that `senderKey` sent to `recipient`, whose routing tag the
    /// caller has already matched to that sender (a node looks tags up in its per-day
    /// table, docs/PROTOCOL.md §6.2). The envelope's failures: `tampered`,
    /// `senderAuthFailed`, `malformedEnvelope`.
    public static func open(_ header: RoutedHeader, payload: [UInt8], by recipient: Identity,
                            matchedSender senderKey: [UInt8]) throws -> Envelope.Opened {
        guard header.type == .message else {
            throw YaOKError(.invalidArgument, "Only message packets carry an envelope")
        }
        return try PacketEnvelope.open(payload, by: recipient, senderKey: senderKey, messageID: header.messageID.bytes,
                                       timestamp: header.createdMs,
                                       associatedData: header.authenticatedBytes(payloadLength: payload.count))
    }

    /// Opens a message packet for `recipient`, from one of `contacts` (their X25519 keys):
    /// the sender is the contact whose tag the packet carries for its creation day.
    /// `notForMe` when it carries none of them (someone else's packet, or a stranger's:
    /// the two cannot be told apart); then the envelope's own failures.
    public static func open(_ header: RoutedHeader, payload: [UInt8], by recipient: Identity,
                            contacts: [[UInt8]]) throws -> Envelope.Opened {
        guard header.type == .message else {
            throw YaOKError(.invalidArgument, "Only message packets carry an envelope")
        }
        for key in contacts {
            guard let route = try? RoutePair(own: recipient, peerKey: key), route.isIncoming(header) else { continue }
            return try open(header, payload: payload, by: recipient, matchedSender: key)
        }
        throw YaOKError(.notForMe)
    }
}
