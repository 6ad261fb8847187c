internal import COpenSSL
import YaOKSupport

/// The relay's development certificate (`yaok-relay --self-signed`): a P-256 key and a
/// certificate it signs itself, for clients that pin the key (PROTOCOL.md §8.1). Valid for
/// about ten years, since a pin does not look at dates; named for loopback so a local CA
/// test can use it too.
enum SelfSignedCertificate {
    static let validityDays = 3650
    static let subjectAltName = "IP:127.0.0.1,DNS:localhost"

    /// A new P-256 key (EVP_PKEY, the caller frees it).
    static func makeKey() throws -> OpaquePointer {
        OpenSSLError.clear()
        guard let parameters = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw OpenSSLError.error(.tlsFailed, "Cannot make a P-256 key")
        }
        defer { EVP_PKEY_CTX_free(parameters) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(parameters) == 1,
              EVP_PKEY_CTX_set_group_name(parameters, "P-256") == 1,
              EVP_PKEY_generate(parameters, &key) == 1,
              let key
        else { throw OpenSSLError.error(.tlsFailed, "Cannot make a P-256 key") }
        return key
    }

    /// A certificate for `key`, signed by it (X509, the caller frees it).
    static func make(key: OpaquePointer, commonName: String) throws -> OpaquePointer {
        OpenSSLError.clear()
        guard let certificate = X509_new() else { throw OpenSSLError.error(.tlsFailed, "Cannot make a certificate") }
        do {
            try fill(certificate, key: key, commonName: commonName)
            return certificate
        } catch {
            X509_free(certificate)
            throw error
        }
    }

    private static func fill(_ certificate: OpaquePointer, key: OpaquePointer, commonName: String) throws {
        func check(_ ok: Bool, _ what: String) throws {
            if !ok { throw OpenSSLError.error(.tlsFailed, "Cannot make the relay's certificate (\(what))") }
        }
        try check(X509_set_version(certificate, Int(X509_VERSION_3)) == 1, "version")

        // A random positive 127-bit serial, as RFC 5280 §4.1.2.2 asks of a CA (and browsers
        // of anyone): two certificates of one name never share a serial.
        var serial = [UInt8](repeating: 0, count: 16)
        try check(RAND_bytes(&serial, Int32(serial.count)) == 1, "serial number")
        serial[0] &= 0x7f
        let number = BN_bin2bn(serial, Int32(serial.count), nil)
        defer { BN_free(number) }
        try check(number != nil && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil, "serial number")

        // An hour back, for clocks a little behind this one.
        try check(X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil, "validity")
        try check(X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(validityDays), 0, nil) != nil, "validity")

        let name = X509_get_subject_name(certificate)
        try check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1, "common name")
        try check(X509_set_issuer_name(certificate, name) == 1, "issuer")
        try check(X509_set_pubkey(certificate, key) == 1, "public key")

        var extensionContext = X509V3_CTX()
        X509V3_set_ctx(&extensionContext, certificate, certificate, nil, nil, 0)
        let extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_subject_alt_name, subjectAltName),
        ]
        for (nid, value) in extensions {
            guard let x509Extension = X509V3_EXT_conf_nid(nil, &extensionContext, nid, value) else {
                try check(false, "extension \(value)")
                return
            }
            defer { X509_EXTENSION_free(x509Extension) }
            try check(X509_add_ext(certificate, x509Extension, -1) == 1, "extension \(value)")
        }
        try check(X509_sign(certificate, key, EVP_sha256()) > 0, "signature")
    }
}
