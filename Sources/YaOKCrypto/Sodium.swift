internal import CSodium
import YaOKSupport
import YaOKWire

/// The one place that initialises libsodium and wraps the primitives the core uses.
/// Every function here names its libsodium counterpart; the rest of the core never
/// calls libsodium directly except through SecureBytes.
package enum Sodium {
    /// sodium_init() is idempotent and thread-safe; this runs it once per process.
    private static let initResult: Int32 = sodium_init()

    package static func ensureInitialized() throws {
        guard initResult >= 0 else { throw YaOKError(.cryptoInit) }
    }

    package static func randomBytes(_ count: Int) -> [UInt8] {
        _ = initResult  // randombytes needs an initialised library to be thread-safe
        guard count > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return out
    }

    /// crypto_hash_sha256
    static func sha256(_ input: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = crypto_hash_sha256(&out, input, UInt64(input.count))
        return out
    }

    /// crypto_generichash (BLAKE2b) with an optional key of up to 64 bytes.
    static func blake2b(_ input: [UInt8], key: [UInt8] = [], outputLength: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outputLength)
        _ = key.withUnsafeBufferPointer { k in
            crypto_generichash(&out, outputLength, input, UInt64(input.count),
                               k.isEmpty ? nil : k.baseAddress, k.count)
        }
        return out
    }

    /// crypto_scalarmult (X25519). Throws when the result is all zero (a low-order point).
    static func x25519(secret: UnsafeRawBufferPointer, publicKey: [UInt8]) throws -> [UInt8] {
        guard publicKey.count == 32, secret.count == 32 else { throw YaOKError(.invalidArgument, "X25519 keys are 32 bytes") }
        var out = [UInt8](repeating: 0, count: 32)
        let rc = crypto_scalarmult(&out, secret.baseAddress!.assumingMemoryBound(to: UInt8.self), publicKey)
        guard rc == 0 else { throw YaOKError(.malformedEnvelope, "Invalid public key") }
        return out
    }

    /// Whether `publicKey` is of low order (X25519 with any secret gives all zeros): nothing
    /// can be sealed to it, so a card carrying one (as its key or its prekey) is invalid.
    static func isLowOrderX25519(_ publicKey: [UInt8]) -> Bool {
        let probe = [UInt8](repeating: 0x5A, count: 32)  // any secret: clamping makes it a multiple of 8
        return (try? probe.withUnsafeBytes { try x25519(secret: $0, publicKey: publicKey) }) == nil
    }

    /// crypto_generichash_init/update/final: unkeyed BLAKE2b-512 over the concatenation of
    /// `parts`, without first copying them into one buffer (some of them are secrets).
    static func blake2b512(_ parts: [UnsafeRawBufferPointer]) -> [UInt8] {
        blake2b(parts: parts, key: nil, outputLength: 64)
    }

    /// Keyed BLAKE2b (crypto_generichash_init/update/final) over the concatenation of
    /// `parts`, which are hashed where they are: a secret never gets copied into a joined
    /// buffer that nobody wipes. Same output as `blake2b(parts.joined(), key:, …)`.
    package static func blake2b(_ parts: [ArraySlice<UInt8>], key: [UInt8] = [], outputLength: Int) -> [UInt8] {
        var pending = parts[...]
        func hash(_ done: [UnsafeRawBufferPointer]) -> [UInt8] {
            guard let next = pending.popFirst() else {
                return key.withUnsafeBytes { blake2b(parts: done, key: key.isEmpty ? nil : $0, outputLength: outputLength) }
            }
            return next.withUnsafeBytes { hash(done + [$0]) }
        }
        return hash([])
    }

    package static func blake2b(parts: [UnsafeRawBufferPointer], key: UnsafeRawBufferPointer?, outputLength: Int) -> [UInt8] {
        // The state type is over-aligned in C (CRYPTO_ALIGN(64)), so Swift sees it as opaque:
        // allocate its bytes by hand, aligned as the header asks.
        let stateSize = crypto_generichash_statebytes()
        let state = UnsafeMutableRawPointer.allocate(byteCount: stateSize, alignment: 64)
        defer {
            sodium_memzero(state, stateSize)  // it held the hashed secrets' internal state
            state.deallocate()
        }
        var out = [UInt8](repeating: 0, count: outputLength)
        _ = crypto_generichash_init(OpaquePointer(state), key?.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                    key?.count ?? 0, outputLength)
        for part in parts where part.count > 0 {
            _ = crypto_generichash_update(OpaquePointer(state), part.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                          UInt64(part.count))
        }
        _ = crypto_generichash_final(OpaquePointer(state), &out, outputLength)
        return out
    }

    /// HMAC (RFC 2104) over BLAKE2b-512 with its 128-byte block, the HMAC-HASH of the Noise
    /// spec. libsodium has none: its keyed BLAKE2b is a different function, so this is
    /// built by hand. The result is secret key material; the caller wipes it.
    static func hmacBLAKE2b512(key: UnsafeRawBufferPointer, _ data: [UnsafeRawBufferPointer]) -> [UInt8] {
        let blockLength = 128
        var innerPad = [UInt8](repeating: 0x36, count: blockLength)
        var outerPad = [UInt8](repeating: 0x5c, count: blockLength)
        var longKeyHash = key.count > blockLength ? blake2b512([key]) : []  // RFC 2104: a long key is hashed first
        var inner: [UInt8] = []
        defer {
            wipe(&innerPad)
            wipe(&outerPad)
            wipe(&longKeyHash)
            wipe(&inner)
        }
        func xorIntoPads(_ k: UnsafeRawBufferPointer) {
            for (i, byte) in k.enumerated() {
                innerPad[i] ^= byte
                outerPad[i] ^= byte
            }
        }
        if longKeyHash.isEmpty { xorIntoPads(key) } else { longKeyHash.withUnsafeBytes(xorIntoPads) }
        inner = innerPad.withUnsafeBytes { blake2b512([$0] + data) }
        return outerPad.withUnsafeBytes { o in inner.withUnsafeBytes { blake2b512([o, $0]) } }
    }

    /// The X25519 public key of a 32-byte secret: the same bytes as crypto_scalarmult_base,
    /// made the way libsodium's ref10 code makes them, faster on x86_64 (see Field25519;
    /// `yaok-bench crypto` times both): the secret clamped as X25519 clamps it (bit 255 is
    /// cleared again by libsodium, which takes 255-bit scalars), times the Ed25519 base point
    /// (crypto_scalarmult_ed25519_base_noclamp, constant-time, precomputed tables), the
    /// resulting public point mapped to Montgomery form.
    package static func x25519PublicKey(secret: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard secret.count == 32, let s = secret.baseAddress else {
            throw YaOKError(.invalidArgument, "X25519 secret keys are 32 bytes")
        }
        var edwards = [UInt8](repeating: 0, count: 32)
        // The temporary is the output too: libsodium copies the scalar into its output before
        // multiplying, so an output on the heap would hold the secret meanwhile.
        let rc = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { scalar in
            defer { sodium_memzero(scalar.baseAddress, 32) }
            _ = scalar.initialize(from: UnsafeRawBufferPointer(start: s, count: 32))
            scalar[0] &= 248
            scalar[31] = scalar[31] & 127 | 64
            let rc = crypto_scalarmult_ed25519_base_noclamp(scalar.baseAddress!, scalar.baseAddress!)
            for i in 0..<32 { edwards[i] = scalar[i] }
            return rc
        }
        // libsodium refuses a scalar that is 0 modulo the group order ℓ; no clamped one is (a
        // multiple of 8 from 2^254 to 2^255, where the multiples of ℓ are 4ℓ … 7ℓ, none a
        // multiple of 8, ℓ being odd): checked all the same.
        guard rc == 0 else { throw YaOKError(.internal, "X25519 public key derivation failed") }
        return Field25519.montgomeryU(edwardsY: edwards)
    }

    /// A fresh X25519 key pair: the secret from randombytes_buf straight into guarded
    /// memory, the public key `x25519PublicKey` of it.
    static func x25519KeyPair() throws -> (secret: SecureBytes, publicKey: [UInt8]) {
        let secret = try SecureBytes.random(count: 32)
        return (secret, try secret.withUnsafeBytes { try x25519PublicKey(secret: $0) })
    }

    static let chacha20Poly1305TagLength = Int(crypto_aead_chacha20poly1305_ietf_ABYTES)
    static let chacha20Poly1305NonceLength = Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES)

    /// crypto_aead_chacha20poly1305_ietf_encrypt (RFC 8439): ciphertext followed by the tag.
    static func chacha20Poly1305Encrypt(key: UnsafeRawBufferPointer, nonce: [UInt8], ad: [UInt8],
                                        plaintext: [UInt8]) throws -> [UInt8] {
        guard key.count == Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES), let k = key.baseAddress,
              nonce.count == chacha20Poly1305NonceLength else {
            throw YaOKError(.invalidArgument, "ChaCha20-Poly1305 takes a 32-byte key and a 12-byte nonce")
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + chacha20Poly1305TagLength)
        var written: UInt64 = 0
        let rc = crypto_aead_chacha20poly1305_ietf_encrypt(
            &out, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce,
            k.assumingMemoryBound(to: UInt8.self))
        guard rc == 0, written == UInt64(out.count) else { throw YaOKError(.internal, "Encryption failed") }
        return out
    }

    /// crypto_aead_chacha20poly1305_ietf_decrypt. A tag that does not verify → `tampered`.
    static func chacha20Poly1305Decrypt(key: UnsafeRawBufferPointer, nonce: [UInt8], ad: [UInt8],
                                        ciphertext: [UInt8]) throws -> [UInt8] {
        guard key.count == Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES), let k = key.baseAddress,
              nonce.count == chacha20Poly1305NonceLength else {
            throw YaOKError(.invalidArgument, "ChaCha20-Poly1305 takes a 32-byte key and a 12-byte nonce")
        }
        guard ciphertext.count >= chacha20Poly1305TagLength else {
            throw YaOKError(.malformedPacket, "Ciphertext shorter than its tag")
        }
        var out = [UInt8](repeating: 0, count: ciphertext.count - chacha20Poly1305TagLength)
        var written: UInt64 = 0
        let rc = crypto_aead_chacha20poly1305_ietf_decrypt(
            &out, &written, nil, ciphertext, UInt64(ciphertext.count), ad, UInt64(ad.count), nonce,
            k.assumingMemoryBound(to: UInt8.self))
        guard rc == 0, written == UInt64(out.count) else {
            wipe(&out)
            throw YaOKError(.tampered, "Authentication tag does not verify (tampered or corrupted)")
        }
        return out
    }

    /// crypto_sign_detached (Ed25519)
    static func sign(_ message: [UInt8], secretKey: SecureBytes) -> [UInt8] {
        var sig = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        secretKey.withUnsafeBytes { sk in
            _ = crypto_sign_detached(&sig, nil, message, UInt64(message.count),
                                     sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return sig
    }

    /// crypto_sign_verify_detached (Ed25519)
    static func verify(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == Int(crypto_sign_BYTES), publicKey.count == Int(crypto_sign_PUBLICKEYBYTES) else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }

    /// sodium_memcmp: constant-time comparison.
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && sodium_memcmp(a, b, a.count) == 0
    }

    /// sodium_memzero on a Swift array's storage (best effort: copies may exist elsewhere).
    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
    }
}
