import YaOKSupport
import YaOKWire

/// Relay mailboxes (docs/PROTOCOL.md §8.2): each direction of a pair of contacts has one,
/// whose Ed25519 key only the two can derive.
extension RoutePair {
    static let mailboxLabel = Array("YaOK-mailbox-v1".utf8)

    /// mailbox_seed = BLAKE2b-256(key = pair_key; "YaOK-mailbox-v1" || sender X25519 public ||
    /// recipient X25519 public), and the Ed25519 key pair of that seed.
    static func mailboxKey(route: RoutePair, senderKey: [UInt8], recipientKey: [UInt8]) throws -> SigningKey {
        var input = mailboxLabel + senderKey + recipientKey
        defer { Sodium.wipe(&input) }
        var seed = route.pairKey.withUnsafeBytes { key in
            input.withUnsafeBytes { Sodium.blake2b(parts: [$0], key: key, outputLength: 32) }
        }
        defer { Sodium.wipe(&seed) }
        return try SigningKey(seed: SecureBytes(copying: seed))
    }

    /// The mailbox we post to for the peer (our messages and acks to them).
    public func outgoingMailbox() throws -> SigningKey {
        try Self.mailboxKey(route: self, senderKey: ownKey, recipientKey: peerKey)
    }

    /// The mailbox the peer posts to for us: we subscribe to it, proving we hold its key.
    public func incomingMailbox() throws -> SigningKey {
        try Self.mailboxKey(route: self, senderKey: peerKey, recipientKey: ownKey)
    }
}
