import Glibc
internal import COpenSSL
import YaOKSupport

/// How a client decides whether the server's certificate is the relay it meant to reach
/// (PROTOCOL.md §8.1). Both ways end the handshake on a "no" before the client's Finished,
/// so no application data is ever sent to the wrong server; there is no unchecked mode.
enum PeerVerification {
    /// Pin mode's SSL_CTX_set_cert_verify_callback: replaces chain building (a pinned
    /// certificate is usually self-signed) with one comparison of the leaf's pin.
    static func checkPin(_ store: OpaquePointer?) -> Int32 {
        guard let store,
              let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
              let connection = TLSConnection.from(OpaquePointer(ssl)),
              case .pin(let expected) = connection.context.verification
        else { return 0 }
        guard let leaf = X509_STORE_CTX_get0_cert(store), let got = CertificatePin.of(leaf) else {
            connection.rejectCertificate("The relay's certificate has no readable public key")
            X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
            return 0
        }
        guard got == expected else {
            connection.rejectCertificate("The relay's certificate does not match the pinned key (expected "
                + "\(CertificatePin.abbreviated(expected)), got \(CertificatePin.abbreviated(got)))")
            // Sent to the server as a bad_certificate alert, so its log says why too.
            X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
            return 0
        }
        return 1
    }

    /// CA mode: the name the client dialled must be in the certificate, as an IP address
    /// (set1_ip_asc) if it parses as one, else as a DNS name (no partial wildcards such as
    /// `r*.example.com`). Pin mode ignores names: the key is the identity.
    static func expect(name serverName: String, on ssl: OpaquePointer) throws {
        guard let parameters = SSL_get0_param(ssl) else {
            throw OpenSSLError.error(.tlsFailed, "Cannot set up certificate verification")
        }
        if let address = ipAddress(serverName) {
            guard X509_VERIFY_PARAM_set1_ip_asc(parameters, address) == 1 else {
                throw OpenSSLError.error(.invalidArgument, "Cannot check the relay's certificate for \(serverName)")
            }
        } else {
            // Names in subjectAltName only, as browsers do: a CN is not looked at.
            X509_VERIFY_PARAM_set_hostflags(parameters,
                UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT))
            guard X509_VERIFY_PARAM_set1_host(parameters, serverName, 0) == 1 else {
                throw OpenSSLError.error(.invalidArgument, "Cannot check the relay's certificate for \(serverName)")
            }
        }
    }

    /// The message for a failed chain or name check (SSL_get_verify_result).
    static func caRejection(_ result: Int, serverName: String, caFile: String) -> String {
        let reason = String(cString: X509_verify_cert_error_string(result))
        switch Int32(result) {
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            return "The relay's certificate is not for \(serverName) (\(reason))"
        default:
            return "The relay's certificate does not verify against the CA file \(caFile) (\(reason))"
        }
    }

    /// The address in `name` if it is an IPv4 or IPv6 literal (brackets allowed), else nil.
    static func ipAddress(_ name: String) -> String? {
        var text = name
        if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var buffer = in6_addr()
        if inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1 {
            return text
        }
        return nil
    }
}
