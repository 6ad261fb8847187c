import YaOKSupport
import YaOKWire

/// A contact card: the text a QR code carries (US-010). It holds a display name and both
/// public keys, signed by the owner's Ed25519 key so that nobody can alter a name or a key,
/// and a proof that the owner holds the X25519 key too, so that nobody can pass off someone
/// else's X25519 key as theirs.
///
/// Text form (version 1): `yaok:1:` followed by base64url (no padding) of
///   version (1 byte, = 1) || X25519 key (32) || Ed25519 key (32) ||
///   name length (u16, big-endian) || name (UTF-8, in normal form) ||
///   key proof (64) || Ed25519 signature (64)
/// where the key proof is an XEdDSA signature by the X25519 key over
/// "YaOK-card-key-v1" || X25519 key || Ed25519 key, and the Ed25519 signature covers
/// "YaOK-card-v1" || every byte before it. See docs/PROTOCOL.md §2.
///
/// Version 2 (`yaok:2:`, version byte 2) adds a **prekey** after the name: its `key_id`
/// (u32, top bit set, the UTC day it was made in the low 31 bits) and its X25519 public key,
/// so that a contact's first messages are sealed to a key erased within 23 days rather than
/// to the long-term key (§13.4); the signature then covers "YaOK-card-v2" || every byte
/// before it. A reader accepts both versions.
public struct ContactCard: Hashable, Sendable {
    public static let scheme = "yaok:1:"
    /// The text prefix of a version 2 card (with a prekey, §13.4).
    public static let schemeV2 = "yaok:2:"
    static let version: UInt8 = 1
    static let signatureContext = Array("YaOK-card-v1".utf8)
    static let signatureContextV2 = Array("YaOK-card-v2".utf8)
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
    /// The owner's prekey (a version 2 card), or nil (version 1: the first messages to the
    /// owner are sealed to its long-term key, stated and counted, §13.5).
    public let prekey: ReceiverKey?
    let keyProof: [UInt8]
    let signature: [UInt8]

    /// 1 or 2: 2 exactly when the card carries a prekey.
    public var version: UInt8 { prekey == nil ? 1 : 2 }

    public var fingerprint: Fingerprint { publicIdentity.fingerprint }
    public var userID: String { publicIdentity.userID }

    /// The owner's card: version 1 without `prekey`, version 2 with one (its ID must be a
    /// prekey ID, `ReceiverKey.prekeyID(day:)`).
    init(signedBy identity: Identity, prekey: ReceiverKey? = nil) {
        name = identity.name
        publicIdentity = identity.publicIdentity
        self.prekey = prekey
        keyProof = identity.keyProof
        signature = identity.sign(Self.context(prekey == nil ? 1 : 2)
                                  + Self.signedPart(name: name, keys: publicIdentity, prekey: prekey, keyProof: keyProof))
    }

    /// The signature's domain string: "YaOK-card-v1" or "YaOK-card-v2".
    static func context(_ version: UInt8) -> [UInt8] { version == 1 ? signatureContext : signatureContextV2 }

    /// What the key proof signs: "YaOK-card-key-v1" || X25519 key || Ed25519 key.
    static func keyProofMessage(_ keys: PublicIdentity) -> [UInt8] {
        keyProofContext + keys.encryptionKey + keys.signingKey
    }

    private static func signedPart(name: String, keys: PublicIdentity, prekey: ReceiverKey?, keyProof: [UInt8]) -> [UInt8] {
        let nameBytes = Array(name.utf8)
        var out: [UInt8] = [prekey == nil ? 1 : 2]
        out += keys.encryptionKey
        out += keys.signingKey
        out += [UInt8(nameBytes.count >> 8), UInt8(nameBytes.count & 0xff)]
        out += nameBytes
        if let prekey { out += prekey.encoded }
        out += keyProof
        return out
    }

    /// The binary payload (before base64url).
    public var payload: [UInt8] { Self.signedPart(name: name, keys: publicIdentity, prekey: prekey, keyProof: keyProof) + signature }

    /// The QR text.
    public var text: String { (prekey == nil ? Self.scheme : Self.schemeV2) + Base64URL.encode(payload) }

    /// Parses and verifies QR text. Every defect (another app's text, a version we do not
    /// know, corruption, a bad signature or key proof, an invalid name, a low-order key,
    /// text over `maxTextBytes`) is `invalidCard`, "Invalid Ya OK QR code: <which>" (the
    /// person learns whether to rescan, or to update the app that made the card); nothing
    /// is stored by decoding.
    public init(text raw: String) throws {
        guard raw.utf8.count <= Self.maxTextBytes else { throw Self.invalid("longer than \(Self.maxTextBytes) bytes") }
        let text = raw.trimmingWhitespace()
        let version: UInt8
        if text.hasPrefix(Self.scheme) { version = 1 } else if text.hasPrefix(Self.schemeV2) { version = 2 } else {
            // "yaok:3:…": a card of a later version, not another app's text.
            let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            if parts.count == 3, parts[0] == "yaok", !parts[1].isEmpty, parts[1].allSatisfy(\.isASCII),
               parts[1].allSatisfy(\.isNumber) {
                throw Self.invalid("unsupported card version \(parts[1].prefix(4)) (this app reads version 1 and 2 cards: update it, or ask for a version 2 card)")
            }
            throw Self.invalid("not a Ya OK card (Ya OK card text starts with \(Self.scheme) or \(Self.schemeV2))")
        }
        guard let bytes = Base64URL.decode(String(text.dropFirst(Self.scheme.count))) else {
            throw Self.invalid("damaged (a character was changed, added or cut off): scan it again")
        }
        // The text named the version: a payload whose first byte says otherwise is damage.
        guard bytes.first == version else { throw Self.invalid("damaged (cut short or extended): scan it again") }
        try self.init(payload: bytes)
    }

    /// `invalidCard` with the reason after the person's text.
    static func invalid(_ reason: String) -> YaOKError {
        YaOKError(.invalidCard, "\(YaOKError(.invalidCard).message): \(reason)")
    }

    /// Checks, in this order: version, lengths, the Ed25519 signature, the name, the
    /// prekey (version 2: a prekey ID, a key not of low order), the X25519 key (not of low
    /// order), the key proof. Any failure is `invalidCard`, its message saying which.
    public init(payload bytes: [UInt8]) throws {
        let damaged = Self.invalid("damaged (cut short or extended): scan it again")
        let fixed = 1 + 32 + 32 + 2
        let trailer = Self.keyProofLength + Self.signatureLength
        // Only versions 1 and 2 exist (the text prefix named one of them, and it matched).
        guard bytes.count >= fixed + trailer, bytes[0] == 1 || bytes[0] == 2 else { throw damaged }
        let version = bytes[0]
        let prekeyLength = version == 2 ? ReceiverKey.encodedLength : 0
        let nameLength = Int(bytes[65]) << 8 | Int(bytes[66])
        guard nameLength <= Self.maxNameBytes, bytes.count == fixed + nameLength + prekeyLength + trailer else { throw damaged }
        let prekeyStart = fixed + nameLength
        let proofStart = prekeyStart + prekeyLength
        let signatureStart = proofStart + Self.keyProofLength
        let signed = Array(bytes[0..<signatureStart])
        let sig = Array(bytes[signatureStart...])
        let encryptionKey = Array(bytes[1..<33])
        let signingKey = Array(bytes[33..<65])
        let proof = Array(bytes[proofStart..<signatureStart])
        guard Sodium.verify(signature: sig, message: Self.context(version) + signed, publicKey: signingKey) else {
            throw Self.invalid("bad signature (the card was altered or damaged): scan it again")
        }
        guard let name = String(validating: bytes[fixed..<prekeyStart], as: UTF8.self),
              DisplayName.isNormalForm(name) else { throw Self.invalid("its name is not a valid display name") }
        var prekey: ReceiverKey?
        if version == 2 {
            let key = try? ReceiverKey(encoded: bytes[prekeyStart..<proofStart])
            guard let key, key.isPrekey, !Sodium.isLowOrderX25519(key.publicKey) else {
                throw Self.invalid("its prekey is not valid")
            }
            prekey = key
        }
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
        self.prekey = prekey
        self.keyProof = proof
        self.signature = sig
    }
}
