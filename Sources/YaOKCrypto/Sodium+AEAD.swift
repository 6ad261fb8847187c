internal import CSodium
import YaOKSupport

/// XChaCha20-Poly1305 (crypto_aead_xchacha20poly1305_ietf_*): the one AEAD of the store,
/// the vault, the envelope and delivery acknowledgements, wrapped once so that no caller
/// hand-writes pointer arithmetic around it.
extension Sodium {
    package static let aeadKeyLength = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    package static let aeadNonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    package static let aeadTagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// ciphertext || tag. `key` is 32 bytes, `nonce` 24.
    package static func aeadSeal(_ plaintext: [UInt8], ad: [UInt8], nonce: [UInt8], key: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard key.count == aeadKeyLength, nonce.count == aeadNonceLength, let k = key.baseAddress else {
            throw YaOKError(.internal, "AEAD key must be \(aeadKeyLength) bytes and nonce \(aeadNonceLength)")
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + aeadTagLength)
        var written: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(&out, &written, plaintext, UInt64(plaintext.count),
                                                        ad, UInt64(ad.count), nil, nonce,
                                                        k.assumingMemoryBound(to: UInt8.self))
        return out
    }

    /// The plaintext, or nil when the tag does not verify (altered, wrong key or wrong AD).
    package static func aeadOpen(_ ciphertext: ArraySlice<UInt8>, ad: [UInt8], nonce: [UInt8], key: UnsafeRawBufferPointer) -> [UInt8]? {
        guard key.count == aeadKeyLength, nonce.count == aeadNonceLength, ciphertext.count >= aeadTagLength,
              let k = key.baseAddress else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - aeadTagLength)
        var written: UInt64 = 0
        let rc = ciphertext.withUnsafeBufferPointer { c -> Int32 in
            guard let base = c.baseAddress else { return -1 }
            return crypto_aead_xchacha20poly1305_ietf_decrypt(&out, &written, nil, base, UInt64(c.count),
                                                       ad, UInt64(ad.count), nonce, k.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == 0 else {
            wipe(&out)
            return nil
        }
        return out
    }
}
