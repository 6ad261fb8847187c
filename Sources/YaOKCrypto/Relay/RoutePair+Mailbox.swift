import YaOKSupport
import YaOKWire

/// Relay mailboxes (docs/PROTOCOL.md §8.2): each direction of a pair of contacts has one per
/// relay, whose Ed25519 key only the two can derive. The relay is named by the identifier it
/// states in its CHALLENGE (the same for every relay of a cluster), not by the address each
/// contact configured: so both contacts meet in the same mailbox whatever name they dialled,
/// and one relay's mailbox IDs say nothing about (and give no power over) another's.
extension RoutePair {
    static let mailboxLabel = Array("YaOK-mailbox-v1".utf8)

    /// mailbox_seed = BLAKE2b-256(key = pair_key; "YaOK-mailbox-v1" || relay identifier ||
    /// sender X25519 public || recipient X25519 public), and the Ed25519 key pair of that seed.
    static func mailboxKey(route: RoutePair, relay: [UInt8], senderKey: [UInt8], recipientKey: [UInt8]) throws -> SigningKey {
        guard relay.count == RelayFrame.relayIdentifierLength else {
            throw YaOKError(.invalidArgument, "A relay identifier is \(RelayFrame.relayIdentifierLength) bytes, got \(relay.count)")
        }
        var input = mailboxLabel + relay + senderKey + recipientKey
        defer { Sodium.wipe(&input) }
        var seed = route.pairKey.withUnsafeBytes { key in
            input.withUnsafeBytes { Sodium.blake2b(parts: [$0], key: key, outputLength: 32) }
        }
        defer { Sodium.wipe(&seed) }
        return try SigningKey(seed: SecureBytes(copying: seed))
    }

    /// The mailbox we post to for the peer at `relay` (our messages and acks to them): we
    /// sign each POST with it, which is the relay's proof that we may post there.
    public func outgoingMailbox(relay: [UInt8]) throws -> SigningKey {
        try Self.mailboxKey(route: self, relay: relay, senderKey: ownKey, recipientKey: peerKey)
    }

    /// The mailbox the peer posts to for us at `relay`: we subscribe to it, proving we hold its key.
    public func incomingMailbox(relay: [UInt8]) throws -> SigningKey {
        try Self.mailboxKey(route: self, relay: relay, senderKey: peerKey, recipientKey: ownKey)
    }
}
