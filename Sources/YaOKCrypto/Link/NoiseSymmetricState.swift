import YaOKSupport

/// Noise's SymmetricState together with its CipherState (Noise Protocol Framework, revision
/// 34, §5.1–5.2), for the one suite Ya OK uses: 25519, ChaChaPoly, BLAKE2b (docs/PROTOCOL.md
/// §5.2). The chaining key and the cipher key sit in guarded memory and are overwritten in
/// place by each MixKey, so no stale copy of an earlier key outlives the step that replaced
/// it; both are wiped when the object goes. Intermediate HKDF outputs are wiped as soon as
/// they are copied in. Not thread-safe: a handshake belongs to one thread.
final class NoiseSymmetricState {
    static let hashLength = 64
    static let keyLength = 32

    /// `h`: what the handshake has committed to so far. Not secret (it is public data hashed
    /// together), but it is the AD of every handshake ciphertext.
    private(set) var handshakeHash: [UInt8]
    private let chainingKey: SecureBytes
    private let cipherKey: SecureBytes
    private var hasKey = false
    private var nonce: UInt64 = 0

    /// InitializeSymmetric(protocol_name).
    init(protocolName: [UInt8]) throws {
        if protocolName.count <= Self.hashLength {
            handshakeHash = protocolName + [UInt8](repeating: 0, count: Self.hashLength - protocolName.count)
        } else {
            handshakeHash = protocolName.withUnsafeBytes { Sodium.blake2b512([$0]) }
        }
        chainingKey = try SecureBytes(copying: handshakeHash)
        cipherKey = try SecureBytes(count: Self.keyLength)
    }

    /// The ChaChaPoly nonce for counter `n`: 32 zero bits, then `n` little-endian. Link
    /// packets use the same encoding for their explicit counter (§5.3).
    static func nonce(_ n: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 4)
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: n >> UInt64(shift))) }
        return out
    }

    func mixHash(_ data: [UInt8]) {
        handshakeHash = handshakeHash.withUnsafeBytes { h in data.withUnsafeBytes { Sodium.blake2b512([h, $0]) } }
    }

    func mixKey(_ inputKeyMaterial: [UInt8]) {
        var (newChainingKey, newKey) = hkdf(inputKeyMaterial)
        defer {
            Sodium.wipe(&newChainingKey)
            Sodium.wipe(&newKey)
        }
        Self.overwrite(chainingKey, with: newChainingKey)
        Self.overwrite(cipherKey, with: newKey)  // HASHLEN 64: the cipher key is its first 32 bytes
        hasKey = true
        nonce = 0
    }

    func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        let ciphertext: [UInt8]
        if hasKey {
            ciphertext = try cipherKey.withUnsafeBytes {
                try Sodium.chacha20Poly1305Encrypt(key: $0, nonce: try nextNonce(), ad: handshakeHash, plaintext: plaintext)
            }
        } else {
            ciphertext = plaintext
        }
        mixHash(ciphertext)
        return ciphertext
    }

    /// Throws `tampered` when the tag does not verify.
    func decryptAndHash(_ ciphertext: [UInt8]) throws -> [UInt8] {
        let plaintext: [UInt8]
        if hasKey {
            plaintext = try cipherKey.withUnsafeBytes {
                try Sodium.chacha20Poly1305Decrypt(key: $0, nonce: try nextNonce(), ad: handshakeHash, ciphertext: ciphertext)
            }
        } else {
            plaintext = ciphertext
        }
        mixHash(ciphertext)
        return plaintext
    }

    /// Split(): the initiator→responder key, then the responder→initiator key.
    func split() throws -> (SecureBytes, SecureBytes) {
        var (first, second) = hkdf([])
        defer {
            Sodium.wipe(&first)
            Sodium.wipe(&second)
        }
        let k1 = try SecureBytes(count: Self.keyLength)
        let k2 = try SecureBytes(count: Self.keyLength)
        Self.overwrite(k1, with: first)
        Self.overwrite(k2, with: second)
        return (k1, k2)
    }

    /// Noise's n never reaches 2^64 − 1 in a handshake (each key encrypts at most twice);
    /// the check keeps that an invariant rather than an assumption.
    private func nextNonce() throws -> [UInt8] {
        guard nonce < UInt64.max else { throw YaOKError(.internal, "Noise nonce exhausted") }
        defer { nonce += 1 }
        return Self.nonce(nonce)
    }

    /// HKDF(ck, ikm) with two outputs: HMAC-BLAKE2b as Noise §4.3 defines it. The caller
    /// owns (and wipes) both outputs.
    private func hkdf(_ inputKeyMaterial: [UInt8]) -> ([UInt8], [UInt8]) {
        var tempKey = chainingKey.withUnsafeBytes { ck in
            inputKeyMaterial.withUnsafeBytes { Sodium.hmacBLAKE2b512(key: ck, [$0]) }
        }
        defer { Sodium.wipe(&tempKey) }
        let one: [UInt8] = [0x01]
        let two: [UInt8] = [0x02]
        let out1 = tempKey.withUnsafeBytes { t in one.withUnsafeBytes { Sodium.hmacBLAKE2b512(key: t, [$0]) } }
        let out2 = tempKey.withUnsafeBytes { t in
            out1.withUnsafeBytes { o in two.withUnsafeBytes { Sodium.hmacBLAKE2b512(key: t, [o, $0]) } }
        }
        return (out1, out2)
    }

    /// Copies the first `destination.count` bytes of `source` into guarded memory.
    private static func overwrite(_ destination: SecureBytes, with source: [UInt8]) {
        destination.withUnsafeMutableBytes { d in
            source.withUnsafeBytes { s in d.copyMemory(from: UnsafeRawBufferPointer(rebasing: s.prefix(d.count))) }
        }
    }
}
