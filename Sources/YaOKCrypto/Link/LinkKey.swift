import YaOKSupport

/// A node's link key (docs/PROTOCOL.md §5.1): the X25519 static key of its link handshakes.
/// It is not the identity's key, so that a locked node, whose identity secrets are wiped,
/// can still run links and relay. The secret lives only in guarded memory. Immutable, so one
/// instance may be shared across threads.
public final class LinkKey: Sendable {
    public static let length = 32

    let secret: SecureBytes
    public let publicKey: [UInt8]

    /// A fresh link key from the CSPRNG.
    public convenience init() throws {
        let (secret, _) = try Sodium.x25519KeyPair()
        try self.init(secret: secret)
    }

    /// A link key from its 32 secret bytes (as stored by the node). The bytes are copied, so
    /// the caller may release its own `SecureBytes`.
    public init(secret: SecureBytes) throws {
        guard secret.count == Self.length else {
            throw YaOKError(.invalidArgument, "A link key is \(Self.length) bytes")
        }
        let own = try SecureBytes(count: Self.length)
        own.withUnsafeMutableBytes { d in secret.withUnsafeBytes { d.copyMemory(from: $0) } }
        self.secret = own
        publicKey = try own.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
    }

    /// This key certified by `identity` (which must be unlocked to sign). Make it once and
    /// keep it: a locked node needs it for every handshake.
    public func certificate(signedBy identity: Identity) throws -> LinkCertificate {
        try LinkCertificate(linkPublicKey: publicKey, signedBy: identity)
    }
}
