internal import CSodium
import YaOKSupport
import YaOKWire

/// A person's own identity: an X25519 key pair for encryption, an Ed25519 key pair for
/// signatures, and a display name. Secret keys live only in guarded memory (SecureBytes).
/// Immutable after creation, so one instance may be shared across threads.
public final class Identity: Sendable {
    public let name: String
    public let publicIdentity: PublicIdentity
    /// X25519 secret scalar (32 bytes).
    let encryptionSecret: SecureBytes
    /// Ed25519 secret key in libsodium's layout: seed || public key (64 bytes).
    let signingSecret: SecureBytes
    /// The proof on this identity's contact card that it holds its X25519 key: an XEdDSA
    /// signature by that key of both public keys (docs/PROTOCOL.md §2). Public; it depends
    /// on the keys only, so it is made once.
    let keyProof: [UInt8]
    /// The static-static X25519 secrets with contacts' keys, made once each
    /// (Identity+StaticShared.swift): in memory only, wiped with the identity. Each in a slot
    /// of `staticSharedSlab` (127 a locked page), not a guarded region each.
    let staticSharedCache = Locked<[[UInt8]: SecretSlot]>([:])
    let staticSharedSlab = SecretSlab(slotSize: 32)

    /// Length of `exportSecrets()`: X25519 secret (32) || Ed25519 seed (32).
    public static let secretsLength = 64

    /// A fresh identity (US-001 AC-001-01). Throws `invalidName` for a bad display name.
    public convenience init(name: String) throws {
        let seed = try SecureBytes.random(count: Self.secretsLength)
        try self.init(name: name, secrets: seed)
    }

    /// Rebuilds an identity from `exportSecrets()` output, e.g. after unsealing the vault.
    public init(name: String, secrets: SecureBytes) throws {
        self.name = try DisplayName.validate(name)
        guard secrets.count == Self.secretsLength else {
            throw YaOKError(.invalidArgument, "Identity secrets are \(Self.secretsLength) bytes")
        }
        let encSecret = try SecureBytes(count: 32)
        let signSecret = try SecureBytes(count: Int(crypto_sign_SECRETKEYBYTES))
        var signPublic = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        let ok: Bool = secrets.withUnsafeBytes { src in
            encSecret.withUnsafeMutableBytes { enc in
                signSecret.withUnsafeMutableBytes { sign in
                    let s = src.bindMemory(to: UInt8.self).baseAddress!
                    enc.copyMemory(from: UnsafeRawBufferPointer(start: s, count: 32))
                    return crypto_sign_seed_keypair(&signPublic, sign.bindMemory(to: UInt8.self).baseAddress!, s + 32) == 0
                }
            }
        }
        guard ok else { throw YaOKError(.internal, "Key derivation failed") }
        let encPublic = try encSecret.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        encryptionSecret = encSecret
        signingSecret = signSecret
        publicIdentity = try PublicIdentity(encryptionKey: encPublic, signingKey: signPublic)
        let proved = ContactCard.keyProofMessage(publicIdentity)
        keyProof = try encSecret.withUnsafeBytes { try XEdDSA.sign(proved, x25519Secret: $0) }
    }

    /// The secret seed material, for sealing into the vault. The caller owns the copy.
    public func exportSecrets() throws -> SecureBytes {
        let out = try SecureBytes(count: Self.secretsLength)
        out.withUnsafeMutableBytes { dst in
            encryptionSecret.withUnsafeBytes { dst.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 32) }
            signingSecret.withUnsafeBytes { (dst.baseAddress! + 32).copyMemory(from: $0.baseAddress!, byteCount: 32) }
        }
        return out
    }

    /// Ed25519 signature over `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        Sodium.sign(message, secretKey: signingSecret)
    }

    /// This identity's signed contact card (the QR payload, US-001 AC-001-04).
    public var card: ContactCard { ContactCard(signedBy: self) }
    /// The version 2 card carrying `prekey` (an ID made by `ReceiverKey.prekeyID(day:)`, §13.4).
    public func card(prekey: ReceiverKey) -> ContactCard { ContactCard(signedBy: self, prekey: prekey) }
}
