import YaOKSupport
import YaOKWire

/// The public half of an identity: what a contact card carries and a contact stores.
public struct PublicIdentity: Hashable, Sendable {
    /// X25519 key that messages are sealed to.
    public let encryptionKey: [UInt8]
    /// Ed25519 key that signs the owner's contact card.
    public let signingKey: [UInt8]

    public static let keyLength = 32

    public init(encryptionKey: [UInt8], signingKey: [UInt8]) throws {
        guard encryptionKey.count == Self.keyLength, signingKey.count == Self.keyLength else {
            throw YaOKError(.invalidArgument, "Public keys are 32 bytes each")
        }
        self.encryptionKey = encryptionKey
        self.signingKey = signingKey
    }

    /// Whether the X25519 key is of low order (one of the points whose X25519 output is all
    /// zero for every secret): nothing can be sealed to it, and a card carrying it is invalid.
    package var hasLowOrderEncryptionKey: Bool { Sodium.isLowOrderX25519(encryptionKey) }

    /// The bytes both the user ID and the fingerprint are computed over.
    package var keyBytes: [UInt8] { encryptionKey + signingKey }

    /// Stable user ID: 32 lower-case hex characters,
    /// BLAKE2b-128 keyed with "YaOK-user-id-v1" over encryptionKey || signingKey.
    public var userID: String {
        Hex.encode(Sodium.blake2b(keyBytes, key: Array("YaOK-user-id-v1".utf8), outputLength: 16))
    }

    /// SHA-256 over encryptionKey || signingKey.
    public var fingerprint: Fingerprint { Fingerprint(digest: Sodium.sha256(keyBytes)) }
}

/// The SHA-256 fingerprint people compare out of band (US-031).
public struct Fingerprint: Hashable, Sendable, CustomStringConvertible {
    public let digest: [UInt8]

    /// 64 upper-case hex characters.
    public var hex: String { Hex.encode(digest, uppercase: true) }

    /// 16 groups of 4 hex characters separated by spaces, for reading aloud.
    public var grouped: String {
        let h = Array(hex)
        return stride(from: 0, to: h.count, by: 4).map { String(h[$0..<$0 + 4]) }.joined(separator: " ")
    }

    /// The first 6 hex characters, shown next to a name.
    public var short: String { String(hex.prefix(6)) }

    public var description: String { grouped }
}
