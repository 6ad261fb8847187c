import Glibc
internal import COpenSSL
import YaOKSupport

/// The settings TLS connections share: TLS 1.3 only, the relay's ALPN, and either the
/// server's certificate and key or how a client checks the server (PROTOCOL.md §8.1).
///
/// Immutable after creation, so one context may serve connections on any number of
/// threads (OpenSSL 3 initialises itself and locks what contexts share).
public final class TLSContext: @unchecked Sendable {
    /// How a client checks the server's certificate.
    enum Verification {
        /// The server itself: it does not ask clients for certificates.
        case none
        /// SHA-256 of the leaf's DER SubjectPublicKeyInfo.
        case pin([UInt8])
        /// A chain to the CA file's certificates, and the dialled name in the certificate.
        case certificateAuthority(file: String)
    }

    let context: OpaquePointer  // SSL_CTX
    let isServer: Bool
    let verification: Verification

    /// The pin (SHA-256 of DER SubjectPublicKeyInfo, 32 bytes) of this context's own
    /// certificate, for printing `pin: <hex>`; nil for clients.
    public let certificatePin: [UInt8]?

    private init(context: OpaquePointer, isServer: Bool, verification: Verification, certificatePin: [UInt8]?) {
        self.context = context
        self.isServer = isServer
        self.verification = verification
        self.certificatePin = certificatePin
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// Server: the certificate chain (leaf first) and its private key, from PEM files.
    public static func server(certificateFile: String, keyFile: String) throws -> TLSContext {
        try requireReadable(certificateFile, "TLS certificate")
        try requireReadable(keyFile, "TLS private key")
        let context = try makeContext(server: true)
        do {
            guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
                throw OpenSSLError.error(.tlsFailed, "Cannot load the TLS certificate from \(certificateFile)")
            }
            // Loading the key also checks it against the certificate: "key values mismatch".
            let keyLoaded = SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1
            let last = ERR_peek_last_error()
            let mismatch = ERR_GET_LIB(last) == ERR_LIB_X509 && ERR_GET_REASON(last) == X509_R_KEY_VALUES_MISMATCH
            guard keyLoaded, !mismatch, SSL_CTX_check_private_key(context) == 1 else {
                if keyLoaded || mismatch {
                    throw OpenSSLError.error(.tlsFailed, "The private key in \(keyFile) does not belong to the certificate in \(certificateFile)")
                }
                throw OpenSSLError.error(.tlsFailed, "Cannot load the TLS private key from \(keyFile)")
            }
            guard let certificate = SSL_CTX_get0_certificate(context), let pin = CertificatePin.of(certificate) else {
                throw OpenSSLError.error(.tlsFailed, "Cannot read the public key of the certificate in \(certificateFile)")
            }
            OpenSSLError.clear()
            return TLSContext(context: context, isServer: true, verification: .none, certificatePin: pin)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
    }

    /// Client: checks the server by `pin` (32 bytes: SHA-256 of the leaf certificate's DER
    /// SubjectPublicKeyInfo) or by `caFile` (PEM CA certificates: the chain must verify, and
    /// the name given to `TLSConnection(client:fd:serverName:)` must match the certificate).
    /// Exactly one of the two; otherwise `.invalidArgument`.
    public static func client(pin: [UInt8]?, caFile: String?) throws -> TLSContext {
        let verification: Verification
        switch (pin, caFile) {
        case (nil, nil):
            throw YaOKError(.invalidArgument, "A relay needs a certificate pin or a CA file to check it against")
        case (.some, .some):
            throw YaOKError(.invalidArgument, "Give the relay's certificate pin or a CA file, not both")
        case (let pin?, nil):
            guard pin.count == CertificatePin.length else {
                throw YaOKError(.invalidArgument, "A relay pin is \(CertificatePin.length) bytes (64 hex digits), not \(pin.count)")
            }
            verification = .pin(pin)
        case (nil, let file?):
            try requireReadable(file, "CA certificate")
            verification = .certificateAuthority(file: file)
        }
        let context = try makeContext(server: false)
        switch verification {
        case .pin:
            // The pin replaces chain verification; SSL_VERIFY_PEER makes its "no" end the handshake.
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            SSL_CTX_set_cert_verify_callback(context, { store, _ in PeerVerification.checkPin(store) }, nil)
        case .certificateAuthority(let file):
            guard SSL_CTX_load_verify_file(context, file) == 1 else {
                let error = OpenSSLError.error(.tlsFailed, "Cannot load CA certificates from \(file)")
                SSL_CTX_free(context)
                throw error
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        case .none:
            break
        }
        OpenSSLError.clear()
        return TLSContext(context: context, isServer: false, verification: verification, certificatePin: nil)
    }

    /// The pin of the first certificate in a PEM file.
    public static func pin(ofCertificateFile path: String) throws -> [UInt8] {
        try requireReadable(path, "certificate")
        OpenSSLError.clear()
        defer { OpenSSLError.clear() }
        guard let file = BIO_new_file(path, "r") else {
            throw OpenSSLError.error(.tlsFailed, "Cannot open the certificate file \(path)")
        }
        defer { BIO_free(file) }
        guard let certificate = PEM_read_bio_X509(file, nil, nil, nil) else {
            throw OpenSSLError.error(.tlsFailed, "No PEM certificate in \(path)")
        }
        defer { X509_free(certificate) }
        guard let pin = CertificatePin.of(certificate) else {
            throw OpenSSLError.error(.tlsFailed, "Cannot read the public key of the certificate in \(path)")
        }
        return pin
    }

    /// An SSL_CTX with what every relay connection shares.
    private static func makeContext(server: Bool) throws -> OpaquePointer {
        OpenSSLError.clear()
        guard let context = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw OpenSSLError.error(.tlsFailed, "Cannot create a TLS context")
        }
        guard yaok_SSL_CTX_set_min_proto_version(context, TLS1_3_VERSION) == 1,
              yaok_SSL_CTX_set_max_proto_version(context, TLS1_3_VERSION) == 1 else {
            let error = OpenSSLError.error(.tlsFailed, "Cannot restrict TLS to version 1.3")
            SSL_CTX_free(context)
            throw error
        }
        // Session tickets and the session cache would keep per-client state on the server
        // and buy nothing: relay connections are long-lived, so resumption is rare.
        _ = SSL_CTX_set_options(context, YAOK_SSL_OP_NO_TICKET | YAOK_SSL_OP_NO_COMPRESSION
            | YAOK_SSL_OP_NO_RENEGOTIATION
            // A TCP close without close_notify reads as the end of the stream (`.closed`):
            // frames are length-prefixed, so a cut inside one is still noticed above.
            | YAOK_SSL_OP_IGNORE_UNEXPECTED_EOF)
        _ = SSL_CTX_set_num_tickets(context, 0)
        _ = yaok_SSL_CTX_set_session_cache_mode(context, Int(SSL_SESS_CACHE_OFF))
        var mode = Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)
        // An idle connection then holds no 16 KiB read and write buffers (a server has many).
        if server { mode |= Int(SSL_MODE_RELEASE_BUFFERS) }
        _ = yaok_SSL_CTX_set_mode(context, mode)
        if server {
            ALPN.require(on: context)
        } else if SSL_CTX_set_alpn_protos(context, ALPN.wire, UInt32(ALPN.wire.count)) != 0 {  // 0 is success here
            let error = OpenSSLError.error(.tlsFailed, "Cannot set ALPN \(ALPN.name)")
            SSL_CTX_free(context)
            throw error
        }
        return context
    }

    /// Names the file in the message, which OpenSSL's "system lib" would not.
    static func requireReadable(_ path: String, _ what: String) throws {
        guard access(path, R_OK) != 0 else { return }
        let reason = String(cString: strerror(errno))
        throw YaOKError(.tlsFailed, "Cannot read the \(what) file \(path): \(reason)")
    }
}
