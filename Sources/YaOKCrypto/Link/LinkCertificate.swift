import YaOKSupport

/// Binds a link key to an identity (docs/PROTOCOL.md §5.1): the identity's X25519 and
/// Ed25519 public keys, then an Ed25519 signature by that identity over
/// `"YaOK-link-cert-v1" || link public key || identity X25519 key`. 128 bytes, public data.
///
/// A certificate names an identity by both keys: anybody can sign one that pairs a
/// stranger's X25519 key with their own Ed25519 key, so match the remote node against
/// contacts by the whole `identity` (or its user ID), never by the X25519 key alone.
public struct LinkCertificate: Hashable, Sendable {
    public static let length = 128
    static let signatureLength = 64
    static let context = Array("YaOK-link-cert-v1".utf8)

    /// The identity this certificate speaks for. A certificate out of a `LinkHandshake`
    /// has been verified for the link key the handshake authenticated; one from
    /// `init(decoding:)` has not, until `verify(linkPublicKey:)` says so.
    public let identity: PublicIdentity
    public let signature: [UInt8]

    /// Signs `linkPublicKey` as a link key of `identity`.
    public init(linkPublicKey: [UInt8], signedBy identity: Identity) throws {
        guard linkPublicKey.count == LinkKey.length else {
            throw YaOKError(.invalidArgument, "A link key is \(LinkKey.length) bytes")
        }
        self.identity = identity.publicIdentity
        signature = identity.sign(Self.signedBytes(linkPublicKey: linkPublicKey, identityKey: identity.publicIdentity.encryptionKey))
    }

    /// Splits the 128 bytes into their fields; nothing is verified yet (that needs the link
    /// key). Another length → `malformedPacket`.
    public init(decoding bytes: [UInt8]) throws {
        guard bytes.count == Self.length else {
            throw YaOKError(.malformedPacket, "A link certificate is \(Self.length) bytes, got \(bytes.count)")
        }
        identity = try PublicIdentity(encryptionKey: Array(bytes[0..<32]), signingKey: Array(bytes[32..<64]))
        signature = Array(bytes[64..<128])
    }

    public var bytes: [UInt8] { identity.encryptionKey + identity.signingKey + signature }

    /// Whether the signature verifies and certifies exactly `linkPublicKey`.
    public func certifies(linkPublicKey: [UInt8]) -> Bool {
        linkPublicKey.count == LinkKey.length
            && Sodium.verify(signature: signature,
                             message: Self.signedBytes(linkPublicKey: linkPublicKey, identityKey: identity.encryptionKey),
                             publicKey: identity.signingKey)
    }

    /// Throws `senderAuthFailed` unless `certifies(linkPublicKey:)`.
    public func verify(linkPublicKey: [UInt8]) throws {
        guard certifies(linkPublicKey: linkPublicKey) else {
            throw YaOKError(.senderAuthFailed, "The link certificate (claiming to be \(identity.fingerprint.short)) does not certify this link key")
        }
    }

    static func signedBytes(linkPublicKey: [UInt8], identityKey: [UInt8]) -> [UInt8] {
        context + linkPublicKey + identityKey
    }
}
