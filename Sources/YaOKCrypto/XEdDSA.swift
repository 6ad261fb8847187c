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
        var hashed = [0xFE] + [UInt8](repeating: 0xFF, count: 31) + a + message + [UInt8](repeating: 0, count: 64)
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
        let x = Field25519(u)
        let denominator = x + Field25519.one
        guard !denominator.isZero else { return nil }
        var y = ((x - Field25519.one) * denominator.inverse()).bytes
        y[31] &= 0x7F
        return y
    }
}

/// Arithmetic modulo p = 2^255 − 19 for public values only (not constant time): the
/// Montgomery-to-Edwards conversion libsodium lacks. Sixteen 16-bit limbs in Int64, as in
/// TweetNaCl.
struct Field25519 {
    private var limbs: [Int64]

    static let one = Field25519(limbs: [1] + [Int64](repeating: 0, count: 15))

    private init(limbs: [Int64]) { self.limbs = limbs }

    /// From 32 little-endian bytes; the top bit is ignored.
    init(_ bytes: [UInt8]) {
        var l = [Int64](repeating: 0, count: 16)
        for i in 0..<16 { l[i] = Int64(bytes[2 * i]) | Int64(bytes[2 * i + 1]) << 8 }
        l[15] &= 0x7FFF
        limbs = l
    }

    /// Whether 32 little-endian bytes encode a number below p (and so the top bit is clear).
    static func isCanonical(_ bytes: [UInt8]) -> Bool {
        guard bytes[31] & 0x80 == 0 else { return false }
        guard bytes[31] == 0x7F, bytes[1...30].allSatisfy({ $0 == 0xFF }) else { return true }
        return bytes[0] < 0xED
    }

    static func + (a: Field25519, b: Field25519) -> Field25519 {
        Field25519(limbs: (0..<16).map { a.limbs[$0] &+ b.limbs[$0] })
    }

    static func - (a: Field25519, b: Field25519) -> Field25519 {
        Field25519(limbs: (0..<16).map { a.limbs[$0] &- b.limbs[$0] })
    }

    static func * (a: Field25519, b: Field25519) -> Field25519 {
        var t = [Int64](repeating: 0, count: 31)
        for i in 0..<16 {
            for j in 0..<16 { t[i + j] = t[i + j] &+ a.limbs[i] &* b.limbs[j] }
        }
        for i in 0..<15 { t[i] = t[i] &+ 38 &* t[i + 16] }
        var out = Field25519(limbs: Array(t[0..<16]))
        out.carry()
        out.carry()
        return out
    }

    /// a^(p − 2) = 1/a (and 0 for 0).
    func inverse() -> Field25519 {
        var c = self
        for bit in stride(from: 253, through: 0, by: -1) {
            c = c * c
            if bit != 2 && bit != 4 { c = c * self }
        }
        return c
    }

    var isZero: Bool { bytes.allSatisfy { $0 == 0 } }

    /// The canonical 32 little-endian bytes (fully reduced below p).
    var bytes: [UInt8] {
        var t = self
        t.carry()
        t.carry()
        t.carry()
        for _ in 0..<2 {
            var m = [Int64](repeating: 0, count: 16)
            m[0] = t.limbs[0] &- 0xFFED
            for i in 1..<15 {
                m[i] = t.limbs[i] &- 0xFFFF &- ((m[i - 1] >> 16) & 1)
                m[i - 1] &= 0xFFFF
            }
            m[15] = t.limbs[15] &- 0x7FFF &- ((m[14] >> 16) & 1)
            let borrow = (m[15] >> 16) & 1
            m[14] &= 0xFFFF
            if borrow == 0 { t.limbs = m }  // t ≥ p: keep t − p
        }
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0..<16 {
            out[2 * i] = UInt8(truncatingIfNeeded: t.limbs[i])
            out[2 * i + 1] = UInt8(truncatingIfNeeded: t.limbs[i] >> 8)
        }
        return out
    }

    private mutating func carry() {
        for i in 0..<16 {
            limbs[i] = limbs[i] &+ (1 << 16)
            let c = limbs[i] >> 16
            if i < 15 {
                limbs[i + 1] = limbs[i + 1] &+ c &- 1
            } else {
                limbs[0] = limbs[0] &+ 38 &* (c &- 1)
            }
            limbs[i] = limbs[i] &- (c << 16)
        }
    }
}
