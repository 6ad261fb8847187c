import YaOKCrypto

/// Whose share of the relay's storage a stored packet uses (docs/PROTOCOL.md §8.5,
/// "Stored-byte quotas"): a keyed hash of the poster's IPv4 address and one of its /24,
/// under the database's key (`relay_secret`) with labels of their own, never the address.
/// Each stored packet keeps both, and the store keeps each tag's byte total (`holders`),
/// so the quotas hold across restarts and across the relays of a cluster, and a DELETE,
/// an expiry or a revocation gives the bytes back.
///
/// What they do not hide: IPv4 has 2^32 addresses and 2^24 /24s, and the key is in the
/// same database, so whoever has a copy can try them all (§8.5 gives the cost).
enum HolderTag {
    static let addressLabel = Array("YaOK-relay-address-v1".utf8)
    static let prefixLabel = Array("YaOK-relay-prefix-v1".utf8)

    /// `address`: the IPv4 address's four bytes, in network order.
    static func address(_ address: [UInt8], key: [UInt8]) -> [UInt8] {
        Sodium.blake2b([addressLabel[...], address[...]], key: key, outputLength: DeletionNote.length)
    }

    /// The tag of the address's /24 (its first three bytes).
    static func prefix(_ address: [UInt8], key: [UInt8]) -> [UInt8] {
        Sodium.blake2b([prefixLabel[...], address.prefix(3)], key: key, outputLength: DeletionNote.length)
    }
}
