import YaOKCrypto

/// Which peers are contacts, answerable while the node is locked: keyed BLAKE2b digests of
/// the contacts' public keys under a key drawn when the set is built, kept across a lock
/// (like the link key) so a transport can still give way to contacts over strangers
/// (PROTOCOL.md §9.2). Digests, not keys: the process's memory of a locked node does not
/// list the contacts.
struct ContactKeyDigests {
    private let key = Sodium.randomBytes(32)
    private var digests: Set<[UInt8]> = []

    init(_ identities: [PublicIdentity]) {
        digests = Set(identities.map(digest))
    }

    func contains(_ peer: PublicIdentity) -> Bool { digests.contains(digest(peer)) }

    private func digest(_ peer: PublicIdentity) -> [UInt8] {
        Sodium.blake2b([peer.encryptionKey[...], peer.signingKey[...]], key: key, outputLength: 32)
    }
}
