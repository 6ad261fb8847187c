internal import COpenSSL
import YaOKSupport

/// A pin is the SHA-256 of the certificate's DER SubjectPublicKeyInfo (PROTOCOL.md §8.1),
/// the same value as `openssl x509 -pubkey | openssl pkey -pubin -outform der | sha256sum`.
/// It names the key, not the certificate, so a re-issued certificate keeps its pin.
/// (X509_pubkey_digest is not it: that hashes the key's bit string without the algorithm.)
enum CertificatePin {
    static let length = 32

    /// nil only if OpenSSL cannot encode the key (it has just parsed it, so in practice never).
    static func of(_ certificate: OpaquePointer) -> [UInt8]? {
        guard let publicKey = X509_get_X509_PUBKEY(certificate) else { return nil }
        let size = i2d_X509_PUBKEY(publicKey, nil)
        guard size > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(size))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509_PUBKEY(publicKey, &cursor)
        }
        guard written == size else { return nil }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        let ok = EVP_Digest(der, der.count, &digest, &digestLength, EVP_sha256(), nil)
        guard ok == 1, digestLength == UInt32(length) else { return nil }
        return Array(digest.prefix(length))
    }

    /// The first 8 bytes in hex and an ellipsis: enough to tell two keys apart in a message.
    static func abbreviated(_ pin: [UInt8]) -> String {
        Hex.encode(pin.prefix(8)) + "…"
    }
}
