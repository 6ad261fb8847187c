internal import CSodium
import YaOKSupport

/// XChaCha20-Poly1305 (crypto_aead_xchacha20poly1305_ietf_*): the one AEAD of the store,
/// the vault, the envelope and delivery acknowledgements, wrapped once so that no caller
/// hand-writes pointer arithmetic around it.
///
/// Two forms: arrays, for ciphertext and ordinary plaintext; raw buffers, for plaintext
/// that lives in guarded memory (SecureBytes) and must not be copied into a Swift array.
extension Sodium {
    package static let aeadKeyLength = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    package static let aeadNonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    package static let aeadTagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// ciphertext || tag. `key` is 32 bytes, `nonce` 24.
    package static func aeadSeal(_ plaintext: [UInt8], ad: [UInt8], nonce: [UInt8], key: UnsafeRawBufferPointer) throws -> [UInt8] {
        try plaintext.withUnsafeBytes { try aeadSeal($0, ad: ad, nonce: nonce, key: key) }
    }

    /// ciphertext || tag of the bytes at `plaintext` (which may be guarded memory).
    package static func aeadSeal(_ plaintext: UnsafeRawBufferPointer, ad: [UInt8], nonce: [UInt8],
                                 key: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard key.count == aeadKeyLength, nonce.count == aeadNonceLength, let k = key.baseAddress else {
            throw YaOKError(.internal, "AEAD key must be \(aeadKeyLength) bytes and nonce \(aeadNonceLength)")
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + aeadTagLength)
        var written: UInt64 = 0
        let rc = out.withUnsafeMutableBufferPointer { o in
            crypto_aead_xchacha20poly1305_ietf_encrypt(
                o.baseAddress!, &written, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                ad, UInt64(ad.count), nil, nonce, k.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == 0, written == UInt64(out.count) else { throw YaOKError(.internal, "Encryption failed") }
        return out
    }

    /// The plaintext, or nil when the tag does not verify (altered, wrong key or wrong AD).
    package static func aeadOpen(_ ciphertext: ArraySlice<UInt8>, ad: [UInt8], nonce: [UInt8], key: UnsafeRawBufferPointer) -> [UInt8]? {
        guard ciphertext.count >= aeadTagLength else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - aeadTagLength)
        let ok = out.withUnsafeMutableBytes { aeadOpen(ciphertext, ad: ad, nonce: nonce, key: key, into: $0) }
        return ok ? out : nil
    }

    /// Opens `ciphertext` into `plaintext`, which must be exactly `ciphertext.count - aeadTagLength`
    /// bytes (guarded memory, typically). False, with `plaintext` zeroed, when the tag does not
    /// verify or a length is wrong.
    package static func aeadOpen(_ ciphertext: ArraySlice<UInt8>, ad: [UInt8], nonce: [UInt8], key: UnsafeRawBufferPointer,
                                 into plaintext: UnsafeMutableRawBufferPointer) -> Bool {
        guard key.count == aeadKeyLength, nonce.count == aeadNonceLength, ciphertext.count >= aeadTagLength,
              plaintext.count == ciphertext.count - aeadTagLength, let k = key.baseAddress else { return false }
        // libsodium wants a valid output pointer even for an empty plaintext.
        var empty: UInt8 = 0
        var written: UInt64 = 0
        let rc = ciphertext.withUnsafeBufferPointer { c -> Int32 in
            guard let base = c.baseAddress else { return -1 }
            return withUnsafeMutablePointer(to: &empty) { e in
                crypto_aead_xchacha20poly1305_ietf_decrypt(
                    plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? e, &written, nil, base, UInt64(c.count),
                    ad, UInt64(ad.count), nonce, k.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0, written == UInt64(plaintext.count) else {
            if let p = plaintext.baseAddress { sodium_memzero(p, plaintext.count) }
            return false
        }
        return true
    }
}
