import YaOKSupport
import YaOKWire

/// End-to-end delivery acknowledgements (docs/PROTOCOL.md §6.2): an ack packet is a routed
/// packet of type `ack` with an ID of its own, addressed to the original sender by the
/// pair's routing tag in the acker → sender direction, whose payload only that sender can read and only the recipient could have made:
///
///     payload = nonce (24) || XChaCha20-Poly1305(ack_key, nonce, ad = header_ad,
///                                                count (1) || count × message ID (16))
///     ack_key = BLAKE2b-256(key = "YaOK-ack-v1"; X25519(own secret, peer public)
///                                                || acker public || ackee public)
///
/// The static-static secret is one both contacts already share, so an ack costs one AEAD,
/// not a whole envelope (64 bytes). The two public keys in order make the key differ per
/// direction: an ack cannot be reflected back to the one who sent it.
public enum DeliveryAck {
    public static let maxIDs = 255
    static let keyKey = Array("YaOK-ack-v1".utf8)

    /// The key for acks that `acker` sends to `ackee` (both X25519 public keys), computed
    /// by either side: `ownSecret` is the caller's X25519 secret, `peerKey` the other's.
    public static func key(own identity: Identity, peerKey: [UInt8], ownIsAcker: Bool) throws -> SecureBytes {
        let ownKey = identity.publicIdentity.encryptionKey
        var shared = try identity.encryptionSecret.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: peerKey) }
        defer { Sodium.wipe(&shared) }
        var input = shared + (ownIsAcker ? ownKey + peerKey : peerKey + ownKey)
        defer { Sodium.wipe(&input) }
        return try SecureBytes(copying: Sodium.blake2b(input, key: keyKey, outputLength: 32))
    }

    /// An ack packet for `ids` (1 to 255) from the route's own side to its peer (the
    /// original sender), sealed under `key`; its routing tag is the pair's for that
    /// direction and the creation day (docs/PROTOCOL.md §4.3), as a message's would be.
    public static func seal(_ ids: [MessageID], key: SecureBytes, route: RoutePair, createdMs: Int64,
                            lifetimeMinutes: UInt16 = SealedMessage.defaultLifetimeMinutes) throws -> (header: RoutedHeader, packet: [UInt8]) {
        let header = try RoutedHeader.new(type: .ack, route: route, createdMs: createdMs,
                                          messageID: .random(), lifetimeMinutes: lifetimeMinutes)
        return (header, try seal(ids, key: key, header: header, nonce: Sodium.randomBytes(Sodium.aeadNonceLength)))
    }

    /// The ack packet for `ids` under `header` (type ack, its own ID, the pair's tag) with
    /// the given 24-byte nonce: the one definition of the layout, which the test vector
    /// (docs/PROTOCOL.md §6.2, `ack-bob-to-alice`) drives with a fixed nonce. No padding:
    /// an ack's size says only how many IDs it carries.
    static func seal(_ ids: [MessageID], key: SecureBytes, header: RoutedHeader, nonce: [UInt8]) throws -> [UInt8] {
        guard (1...maxIDs).contains(ids.count) else { throw YaOKError(.invalidArgument, "An ack carries 1 to \(maxIDs) message IDs") }
        guard header.type == .ack, nonce.count == Sodium.aeadNonceLength else {
            throw YaOKError(.invalidArgument, "An ack needs an ack header and a \(Sodium.aeadNonceLength)-byte nonce")
        }
        var body: [UInt8] = [UInt8(ids.count)]
        for id in ids { body += id.bytes }
        let payloadLength = Sodium.aeadNonceLength + body.count + Sodium.aeadTagLength
        let sealed = try key.withUnsafeBytes {
            try Sodium.aeadSeal(body, ad: header.authenticatedBytes(payloadLength: payloadLength), nonce: nonce, key: $0)
        }
        return try Packet.routed(header, payload: nonce + sealed).encode()
    }

    /// The acknowledged IDs, or nil if `key` is not the one this ack was sealed under (the
    /// caller finds the contact by the ack's routing tag and tries that contact's key; an
    /// ack whose tag is no contact's, or that does not open, is dropped).
    public static func open(_ header: RoutedHeader, payload: [UInt8], key: SecureBytes) -> [MessageID]? {
        guard header.type == .ack, payload.count > Sodium.aeadNonceLength + Sodium.aeadTagLength else { return nil }
        let nonce = Array(payload[0..<Sodium.aeadNonceLength])
        guard let body = key.withUnsafeBytes({
            Sodium.aeadOpen(payload[Sodium.aeadNonceLength...], ad: header.authenticatedBytes(payloadLength: payload.count),
                            nonce: nonce, key: $0)
        }), let count = body.first, count >= 1, body.count == 1 + Int(count) * MessageID.length else { return nil }
        return (0..<Int(count)).compactMap { i in try? MessageID(bytes: body[(1 + i * 16)..<(17 + i * 16)]) }
    }
}
