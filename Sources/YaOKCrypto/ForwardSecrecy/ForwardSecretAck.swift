import YaOKSupport
import YaOKWire

/// The ack of a forward-secret pair (docs/PROTOCOL.md §13.3): §6.2's ack, same key, header
/// and AEAD, whose plaintext also carries the acker's announcement, so that one message and
/// its ack renew the keys in both directions; with no IDs it is the release-only ack.
///
///     plaintext = count (0..255) || count × message ID (16) || announcement (40)
///
/// Its length, 1 + 16 × count + 40, is never a §6.2 plaintext's (1 + 16 × count): 40 is
/// not a multiple of 16, so a reader tells the two apart by length alone.
public enum ForwardSecretAck {
    public static func seal(_ ids: [MessageID], announcement: Announcement, key: SecureBytes, route: RoutePair,
                            createdMs: Int64,
                            lifetimeMinutes: UInt16 = SealedMessage.defaultLifetimeMinutes) throws -> (header: RoutedHeader, packet: [UInt8]) {
        let header = try RoutedHeader.new(type: .ack, route: route, createdMs: createdMs,
                                          messageID: .random(), lifetimeMinutes: lifetimeMinutes)
        return (header, try seal(ids, announcement: announcement, key: key, header: header,
                                 nonce: Sodium.randomBytes(Sodium.aeadNonceLength)))
    }

    /// With a given nonce: the one definition of the layout, driven by the vectors.
    static func seal(_ ids: [MessageID], announcement: Announcement, key: SecureBytes, header: RoutedHeader,
                     nonce: [UInt8]) throws -> [UInt8] {
        guard ids.count <= DeliveryAck.maxIDs else { throw YaOKError(.invalidArgument, "An ack carries at most \(DeliveryAck.maxIDs) message IDs") }
        guard header.type == .ack, nonce.count == Sodium.aeadNonceLength else {
            throw YaOKError(.invalidArgument, "An ack needs an ack header and a \(Sodium.aeadNonceLength)-byte nonce")
        }
        var body: [UInt8] = [UInt8(ids.count)]
        for id in ids { body += id.bytes }
        body += announcement.encoded
        let payloadLength = Sodium.aeadNonceLength + body.count + Sodium.aeadTagLength
        let sealed = try key.withUnsafeBytes {
            try Sodium.aeadSeal(body, ad: header.authenticatedBytes(payloadLength: payloadLength), nonce: nonce, key: $0)
        }
        return try Packet.routed(header, payload: nonce + sealed).encode()
    }

    /// The acknowledged IDs (possibly none) and the acker's announcement, or nil: not sealed
    /// under `key`, not this layout (a §6.2 ack is opened by `DeliveryAck.open`), or an
    /// announced key ID of 0.
    public static func open(_ header: RoutedHeader, payload: [UInt8], key: SecureBytes) -> (ids: [MessageID], announcement: Announcement)? {
        guard header.type == .ack, payload.count > Sodium.aeadNonceLength + Sodium.aeadTagLength else { return nil }
        let nonce = Array(payload[0..<Sodium.aeadNonceLength])
        guard let body = key.withUnsafeBytes({
            Sodium.aeadOpen(payload[Sodium.aeadNonceLength...], ad: header.authenticatedBytes(payloadLength: payload.count),
                            nonce: nonce, key: $0)
        }), let count = body.first, body.count == 1 + Int(count) * MessageID.length + Announcement.encodedLength,
              let announcement = try? Announcement(encoded: body.suffix(Announcement.encodedLength)) else { return nil }
        let ids = (0..<Int(count)).compactMap { i in try? MessageID(bytes: body[(1 + i * 16)..<(17 + i * 16)]) }
        return (ids, announcement)
    }
}
