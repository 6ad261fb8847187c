import YaOKWire
import YaOKSupport

/// What a node keeps per contact to recognise it on an anonymous link (docs/PROTOCOL.md
/// §5.9): the contact's identity and
///
///     contact_link_key = BLAKE2b-256(key "YaOK-contact-link-v1"; X25519(own secret, peer public))
///
/// the same on both sides, computable only by the two of them (a card is public keys only).
/// Its own domain: it is never the routing pair key (§4.3), so a value seen on a link says
/// nothing about tags, and the other way round. Made while unlocked; a node may keep it while
/// locked, like its link key, so that a locked node still recognises its contacts.
public struct ContactLinkKey: Sendable {
    static let domain = Array("YaOK-contact-link-v1".utf8)
    public let peer: PublicIdentity
    let key: SecureBytes

    /// `invalidArgument` for a low-order peer key (no card carries one).
    public init(own identity: Identity, peer: PublicIdentity) throws {
        try Sodium.ensureInitialized()
        guard var shared = try? identity.encryptionSecret.withUnsafeBytes({ try Sodium.x25519(secret: $0, publicKey: peer.encryptionKey) }) else {
            throw YaOKError(.invalidArgument, "The contact's key is of low order")
        }
        defer { Sodium.wipe(&shared) }
        var derived = Sodium.blake2b([shared[...]], key: Self.domain, outputLength: 32)
        defer { Sodium.wipe(&derived) }
        try self.init(peer: peer, keyBytes: derived)
    }

    /// From the derived bytes: for the vectors and for a node that kept the key while locked.
    init(peer: PublicIdentity, keyBytes: [UInt8]) throws {
        guard keyBytes.count == 32 else { throw YaOKError(.invalidArgument, "A contact link key is 32 bytes") }
        self.peer = peer
        key = try SecureBytes(copying: keyBytes)
    }

    /// BLAKE2b-256(key = contact link key; context || role || h): the building block of
    /// probes and proofs. `role` is 0x01 for the link's initiator, 0x02 for its responder.
    func mac(_ context: [UInt8], role: LinkRole, handshakeHash: [UInt8]) -> [UInt8] {
        let input = context + [role == .initiator ? 0x01 : 0x02] + handshakeHash
        return key.withUnsafeBytes { k in
            input.withUnsafeBytes { Sodium.blake2b(parts: [$0], key: k, outputLength: 32) }
        }
    }
}
