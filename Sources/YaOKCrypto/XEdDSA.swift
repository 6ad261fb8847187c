internal import CSodium
import YaOKSupport
import YaOKWire

/// XEdDSA (Signal's "The XEdDSA and VXEdDSA Signature Schemes", revision 1): Ed25519
/// signatures made and checked with an X25519 key pair. A contact card carries one, by its
/// owner's X25519 key, as proof of possession of that key (docs/PROTOCOL.md §2), so that
/// nobody can sign a card that pairs someone else's X25519 key with their own Ed25519 key.
///
/// The signature is an ordinary Ed25519 signature under `A`, the Edwards form of the X25519
/// public key `u` with sign bit 0; libsodium checks it (`crypto_sign_verify_detached`).
/// The nonce uses XEdDSA's `hash1` with `Z` = 64 zero bytes, so that a card, like an Ed25519
/// signature, is deterministic (the nonce is still secret: it hashes the secret scalar).
enum XEdDSA {
    static let signatureLength = 64

    /// Signs `message` with the X25519 secret key `secret` (32 bytes, clamped here as X25519
    /// clamps it).
    static func sign(_ message: [UInt8], x25519Secret secret: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard secret.count == 32 else { throw YaOKError(.invalidArgument, "X25519 secret keys are 32 bytes") }
        try Sodium.ensureInitialized()
        var k = [UInt8](secret)
        var wide = [UInt8](repeating: 0, count: 64)
        var a = [UInt8](repeating: 0, count: 32)
        var nonceHash = [UInt8](repeating: 0, count: 64)
        var r = [UInt8](repeating: 0, count: 32)
        var ha = [UInt8](repeating: 0, count: 32)
        defer {
            Sodium.wipe(&k)
            Sodium.wipe(&wide)
            Sodium.wipe(&a)
            Sodium.wipe(&nonceHash)
            Sodium.wipe(&r)
            Sodium.wipe(&ha)
        }
        // calculate_key_pair: E = kB; A = E with sign bit 0; a = ±k (mod q) so that aB = A.
        k[0] &= 248
        k[31] &= 127
        k[31] |= 64
        var edwards = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult_ed25519_base_noclamp(&edwards, k) == 0 else {
            throw YaOKError(.internal, "XEdDSA key conversion failed")
        }
        wide.replaceSubrange(0..<32, with: k)
        crypto_core_ed25519_scalar_reduce(&a, wide)
        if edwards[31] & 0x80 != 0 {
            var negated = [UInt8](repeating: 0, count: 32)
            crypto_core_ed25519_scalar_negate(&negated, a)
            a.replaceSubrange(0..<32, with: negated)
            Sodium.wipe(&negated)
        }
        var publicKey = edwards
        publicKey[31] &= 0x7F

        // r = hash1(a || M || Z) mod q, with hash1(X) = SHA-512(0xFE || 0xFF × 31 || X).
        // Built in one buffer, wiped after: a `+` chain leaves intermediate arrays holding `a`.
        var hashed: [UInt8] = []
        hashed.reserveCapacity(32 + a.count + message.count + 64)
        hashed.append(0xFE)
        hashed.append(contentsOf: repeatElement(0xFF, count: 31))
        hashed.append(contentsOf: a)
        hashed.append(contentsOf: message)
        hashed.append(contentsOf: repeatElement(0, count: 64))
        defer { Sodium.wipe(&hashed) }
        _ = crypto_hash_sha512(&nonceHash, hashed, UInt64(hashed.count))
        crypto_core_ed25519_scalar_reduce(&r, nonceHash)
        var commitment = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult_ed25519_base_noclamp(&commitment, r) == 0 else {
            throw YaOKError(.internal, "XEdDSA nonce was zero")
        }
        // h = SHA-512(R || A || M) mod q; s = r + h·a mod q.
        var challengeHash = [UInt8](repeating: 0, count: 64)
        let challengeInput = commitment + publicKey + message
        _ = crypto_hash_sha512(&challengeHash, challengeInput, UInt64(challengeInput.count))
        var h = [UInt8](repeating: 0, count: 32)
        crypto_core_ed25519_scalar_reduce(&h, challengeHash)
        crypto_core_ed25519_scalar_mul(&ha, h, a)
        var s = [UInt8](repeating: 0, count: 32)
        crypto_core_ed25519_scalar_add(&s, r, ha)
        return commitment + s
    }

    /// Whether `signature` is a valid XEdDSA signature of `message` by the X25519 public key
    /// `x25519Public`. A key that is not canonical (`u` ≥ p) or has no Edwards form is not.
    static func verify(_ signature: [UInt8], message: [UInt8], x25519Public: [UInt8]) -> Bool {
        guard signature.count == signatureLength, let edwards = edwardsKey(x25519Public: x25519Public) else {
            return false
        }
        return Sodium.verify(signature: signature, message: message, publicKey: edwards)
    }

    /// XEdDSA's convert_mont: the Edwards point with y = (u − 1) / (u + 1) and sign bit 0;
    /// nil for a non-canonical `u` (≥ p = 2^255 − 19) or u = −1 (no Edwards point).
    static func edwardsKey(x25519Public u: [UInt8]) -> [UInt8]? {
        guard u.count == 32, Field25519.isCanonical(u) else { return nil }
        let x = Field25519(littleEndian: u)
        let denominator = x + Field25519.one
        guard !denominator.isZero else { return nil }
        var y = ((x - Field25519.one) * denominator.inverse).littleEndianBytes
        y[31] &= 0x7F
        return y
    }
}
