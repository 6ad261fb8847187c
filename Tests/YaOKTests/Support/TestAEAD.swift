import CSodium
import YaOK

/// Raw XChaCha20-Poly1305 for tests that build envelopes by hand.
enum TestAEAD {
    static func encrypt(_ message: [UInt8], ad: [UInt8], nonce: [UInt8], key: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: message.count + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        var length: UInt64 = 0
        let rc = crypto_aead_xchacha20poly1305_ietf_encrypt(&out, &length, message, UInt64(message.count),
                                                             ad, UInt64(ad.count), nil, nonce, key)
        guard rc == 0 else { throw YaOKError(.internal) }
        return out
    }
}
