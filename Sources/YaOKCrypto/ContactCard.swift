import YaOKSupport
import YaOKWire

/// A contact card: the text a QR code carries (US-010). It holds a display name and both
/// public keys, signed by the owner's Ed25519 key so that nobody can alter a name or a key,
/// and a proof that the owner holds the X25519 key too, so that nobody can pass off someone
/// else's X25519 key as theirs.
///
/// Text form: `yaok:1:` followed by base64url (no padding) of
///   version (1 byte, = 1) || X25519 key (32) || Ed25519 key (32) ||
///   name length (u16, big-endian) || name (UTF-8, in normal form) ||
///   key proof (64) || Ed25519 signature (64)
/// where the key proof is an XEdDSA signature by the X25519 key over
/// "YaOK-card-key-v1" || X25519 key || Ed25519 key, and the Ed25519 signature covers
/// "YaOK-card-v1" || every byte before it. See docs/PROTOCOL.md §2.
public struct ContactCard: Hashable, Sendable {
    public static let scheme = "yaok:1:"
    static let version: UInt8 = 1
    static let signatureContext = Array("YaOK-card-v1".utf8)
    static let keyProofContext = Array("YaOK-card-key-v1".utf8)
    static let signatureLength = 64
    static let keyProofLength = XEdDSA.signatureLength
    /// Fifty characters can take at most 50 × (the longest grapheme people type) bytes;
    /// bound it so that a hostile card cannot make us allocate much (DisplayName.maxBytes).
    static let maxNameBytes = DisplayName.maxBytes
    /// The longest text a card can be: prefix, base64url of the largest payload, and some
    /// white space around it. Longer text is refused before it is decoded.
    public static let maxTextBytes = 4096

    public let name: String
    public let publicIdentity: PublicIdentity
    let keyProof: [UInt8]
    let signature: [UInt8]

    public var fingerprint: Fingerprint { publicIdentity.fingerprint }
    public var userID: String { publicIdentity.userID }

    init(signedBy identity: Identity) {
        name = identity.name
        publicIdentity = identity.publicIdentity
        keyProof = identity.keyProof
        signature = identity.sign(Self.signatureContext + Self.signedPart(name: name, keys: publicIdentity, keyProof: keyProof))
    }

    /// What the key proof signs: "YaOK-card-key-v1" || X25519 key || Ed25519 key.
    static func keyProofMessage(_ keys: PublicIdentity) -> [UInt8] {
        keyProofContext + keys.encryptionKey + keys.signingKey
    }

    private static func signedPart(name: String, keys: PublicIdentity, keyProof: [UInt8]) -> [UInt8] {
        let nameBytes = Array(name.utf8)
        var out: [UInt8] = [version]
        out += keys.encryptionKey
        out += keys.signingKey
        out += [UInt8(nameBytes.count >> 8), UInt8(nameBytes.count & 0xff)]
        out += nameBytes
        out += keyProof
        return out
    }

    /// The binary payload (before base64url).
    public var payload: [UInt8] { Self.signedPart(name: name, keys: publicIdentity, keyProof: keyProof) + signature }

    /// The QR text.
    public var text: String { Self.scheme + Base64URL.encode(payload) }

    /// Parses and verifies QR text. Every defect (another app's text, a version we do not
    /// know, corruption, a bad signature or key proof, an invalid name, a low-order key,
    /// text over `maxTextBytes`) is `invalidCard`, "Invalid Ya OK QR code: <which>" (the
    /// person learns whether to rescan, or to update the app that made the card); nothing
    /// is stored by decoding.
    public init(text raw: String) throws {
        guard raw.utf8.count <= Self.maxTextBytes else { throw Self.invalid("longer than \(Self.maxTextBytes) bytes") }
        let text = raw.trimmingWhitespace()
        guard text.hasPrefix(Self.scheme) else {
            // "yaok:2:…": a card of a later version, not another app's text.
            let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            if parts.count == 3, parts[0] == "yaok", !parts[1].isEmpty, parts[1].allSatisfy(\.isASCII),
               parts[1].allSatisfy(\.isNumber) {
                throw Self.invalid("unsupported card version \(parts[1].prefix(4)) (this app reads version \(Self.version) cards: update it, or ask for a version \(Self.version) card)")
            }
            throw Self.invalid("not a Ya OK card (Ya OK card text starts with \(Self.scheme))")
        }
        guard let bytes = Base64URL.decode(String(text.dropFirst(Self.scheme.count))) else {
            throw Self.invalid("damaged (a character was changed, added or cut off): scan it again")
        }
        try self.init(payload: bytes)
    }

    /// `invalidCard` with the reason after the person's text.
    static func invalid(_ reason: String) -> YaOKError {
        YaOKError(.invalidCard, "\(YaOKError(.invalidCard).message): \(reason)")
    }

    /// Checks, in this order: version, lengths, the Ed25519 signature, the name, the
    /// X25519 key (not of low order), the key proof. Any failure is `invalidCard`, its
    /// message saying which.
    public init(payload bytes: [UInt8]) throws {
        let damaged = Self.invalid("damaged (cut short or extended): scan it again")
        let fixed = 1 + 32 + 32 + 2
        let trailer = Self.keyProofLength + Self.signatureLength
        // The text said version 1 ("yaok:1:"): another first byte is damage, not a version.
        guard bytes.count >= fixed + trailer, bytes[0] == Self.version else { throw damaged }
        let nameLength = Int(bytes[65]) << 8 | Int(bytes[66])
        guard nameLength <= Self.maxNameBytes, bytes.count == fixed + nameLength + trailer else { throw damaged }
        let proofStart = fixed + nameLength
        let signatureStart = proofStart + Self.keyProofLength
        let signed = Array(bytes[0..<signatureStart])
        let sig = Array(bytes[signatureStart...])
        let encryptionKey = Array(bytes[1..<33])
        let signingKey = Array(bytes[33..<65])
        let proof = Array(bytes[proofStart..<signatureStart])
        guard Sodium.verify(signature: sig, message: Self.signatureContext + signed, publicKey: signingKey) else {
            throw Self.invalid("bad signature (the card was altered or damaged): scan it again")
        }
        guard let name = String(validating: bytes[fixed..<proofStart], as: UTF8.self),
              DisplayName.isNormalForm(name) else { throw Self.invalid("its name is not a valid display name") }
        let keys: PublicIdentity
        do {
            keys = try PublicIdentity(encryptionKey: encryptionKey, signingKey: signingKey)
        } catch {
            throw Self.invalid("its keys are not valid")
        }
        guard !keys.hasLowOrderEncryptionKey,
              XEdDSA.verify(proof, message: Self.keyProofMessage(keys), x25519Public: encryptionKey) else {
            throw Self.invalid("bad key proof (the card does not prove that its owner holds its encryption key)")
        }
        self.name = name
        self.publicIdentity = keys
        self.keyProof = proof
        self.signature = sig
    }
}
