import YaOKSupport
import YaOKWire

/// A contact card: the text a QR code carries (US-010). It holds a display name and both
/// public keys, signed by the owner's Ed25519 key so that nobody can alter a name or a key.
///
/// Text form: `yaok:1:` followed by base64url (no padding) of
///   version (1 byte, = 1) || X25519 key (32) || Ed25519 key (32) ||
///   name length (u16, big-endian) || name (UTF-8) || Ed25519 signature (64)
/// where the signature covers "YaOK-card-v1" || every byte before it. See docs/PROTOCOL.md.
public struct ContactCard: Hashable, Sendable {
    public static let scheme = "yaok:1:"
    static let version: UInt8 = 1
    static let signatureContext = Array("YaOK-card-v1".utf8)
    static let signatureLength = 64
    /// Fifty characters can take at most 50 × (the longest grapheme people type) bytes;
    /// bound it so that a hostile card cannot make us allocate much.
    static let maxNameBytes = 1024

    public let name: String
    public let publicIdentity: PublicIdentity
    let signature: [UInt8]

    public var fingerprint: Fingerprint { publicIdentity.fingerprint }
    public var userID: String { publicIdentity.userID }

    init(signedBy identity: Identity) {
        name = identity.name
        publicIdentity = identity.publicIdentity
        signature = identity.sign(Self.signatureContext + Self.signedPart(name: name, keys: publicIdentity))
    }

    private static func signedPart(name: String, keys: PublicIdentity) -> [UInt8] {
        let nameBytes = Array(name.utf8)
        var out: [UInt8] = [version]
        out += keys.encryptionKey
        out += keys.signingKey
        out += [UInt8(nameBytes.count >> 8), UInt8(nameBytes.count & 0xff)]
        out += nameBytes
        return out
    }

    /// The binary payload (before base64url).
    public var payload: [UInt8] { Self.signedPart(name: name, keys: publicIdentity) + signature }

    /// The QR text.
    public var text: String { Self.scheme + Base64URL.encode(payload) }

    /// Parses and verifies QR text. Every defect (another app's text, a version we do not
    /// know, corruption, a bad signature, an invalid name) is `invalidCard`,
    /// "Invalid Ya OK QR code"; nothing is stored by decoding.
    public init(text raw: String) throws {
        let invalid = YaOKError(.invalidCard)
        let text = raw.trimmingWhitespace()
        guard text.hasPrefix(Self.scheme),
              let bytes = Base64URL.decode(String(text.dropFirst(Self.scheme.count))) else { throw invalid }
        try self.init(payload: bytes)
    }

    public init(payload bytes: [UInt8]) throws {
        let invalid = YaOKError(.invalidCard)
        let fixed = 1 + 32 + 32 + 2
        guard bytes.count >= fixed + Self.signatureLength, bytes[0] == Self.version else { throw invalid }
        let nameLength = Int(bytes[65]) << 8 | Int(bytes[66])
        guard nameLength <= Self.maxNameBytes,
              bytes.count == fixed + nameLength + Self.signatureLength else { throw invalid }
        let signed = Array(bytes[0..<fixed + nameLength])
        let sig = Array(bytes[(fixed + nameLength)...])
        let signingKey = Array(bytes[33..<65])
        guard Sodium.verify(signature: sig, message: Self.signatureContext + signed, publicKey: signingKey),
              let name = String(validating: bytes[fixed..<fixed + nameLength], as: UTF8.self),
              DisplayName.isNormalForm(name) else { throw invalid }
        self.name = name
        self.publicIdentity = try PublicIdentity(encryptionKey: Array(bytes[1..<33]), signingKey: signingKey)
        self.signature = sig
    }
}
