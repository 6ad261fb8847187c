internal import CSodium
import YaOKSupport

/// An Ed25519 key pair for the relay protocol (docs/PROTOCOL.md §8.2): a client's relay-only
/// pseudonym, or a mailbox key. Never an identity key: the relay must not learn those.
/// The secret lives in guarded memory (SecureBytes).
public final class SigningKey: Sendable {
    public let publicKey: [UInt8]
    let secretKey: SecureBytes  // libsodium's 64-byte form (seed || public key)

    /// A fresh random key (a pseudonym).
    public static func random() throws -> SigningKey {
        try SigningKey(seed: SecureBytes.random(count: Int(crypto_sign_SEEDBYTES)))
    }

    /// The key pair of a 32-byte seed (crypto_sign_seed_keypair): the same seed, the same key.
    public init(seed: SecureBytes) throws {
        guard seed.count == Int(crypto_sign_SEEDBYTES) else {
            throw YaOKError(.invalidArgument, "An Ed25519 seed is \(crypto_sign_SEEDBYTES) bytes")
        }
        try Sodium.ensureInitialized()
        var pk = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        let sk = try SecureBytes(count: Int(crypto_sign_SECRETKEYBYTES))
        seed.withUnsafeBytes { s in
            sk.withUnsafeMutableBytes { k in
                _ = crypto_sign_seed_keypair(&pk, k.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                             s.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        publicKey = pk
        secretKey = sk
    }

    /// The seed (to store the key sealed, and load it again with `init(seed:)`).
    public func seed() throws -> SecureBytes {
        try secretKey.withUnsafeBytes { try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<Int(crypto_sign_SEEDBYTES)])) }
    }

    public func sign(_ message: [UInt8]) -> [UInt8] {
        Sodium.sign(message, secretKey: secretKey)
    }

    /// Whether `signature` is `publicKey`'s Ed25519 signature of `message`. False for keys or
    /// signatures of the wrong length, and for small-order or non-canonical keys (libsodium).
    public static func verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        Sodium.verify(signature: signature, message: message, publicKey: publicKey)
    }
}
