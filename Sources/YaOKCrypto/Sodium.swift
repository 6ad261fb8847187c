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
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && sodium_memcmp(a, b, a.count) == 0
    }

    /// sodium_memzero on a Swift array's storage (best effort: copies may exist elsewhere).
    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
    }
}
