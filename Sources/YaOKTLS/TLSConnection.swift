import Glibc
internal import COpenSSL
import YaOKSupport

/// One TLS connection on a non-blocking socket the caller owns: the caller registers it
/// with its event loop, calls `handshake()` until `.done`, then `read` and `write`, each
/// time waiting for what the last call asked for (`wantRead`: readable, `wantWrite`:
/// writable). After `close()` the caller closes the descriptor.
///
/// Once `handshake()` returns `.done`, call `read` before waiting for readability: the
/// peer's first data may have come with the handshake. And read until `.wantRead`: OpenSSL
/// may hold decrypted bytes that no readiness event will announce.
///
/// Not thread-safe: use one connection from one thread (the event loop's).
public final class TLSConnection {
    public enum Progress: Equatable { case done, wantRead, wantWrite }
    public enum ReadResult: Equatable { case data([UInt8]), wantRead, wantWrite, closed }
    public enum WriteResult: Equatable { case wrote(Int), wantRead, wantWrite }

    let context: TLSContext
    private var ssl: OpaquePointer?
    /// What the client dialled (for CA verification and messages); nil on the server.
    private let serverName: String?
    /// Set by the handshake callbacks (ALPN, pin), whose "no" OpenSSL reports only as
    /// "callback failed" or "certificate verify failed".
    var rejection: String?
    private var certificateRejected = false
    /// The first failure: OpenSSL must not be used again after a fatal error, so every
    /// later call throws this again.
    private var failure: YaOKError?

    public private(set) var isHandshakeComplete = false
    /// The peer certificate's pin (client side, after the handshake); nil on the server.
    public private(set) var peerPin: [UInt8]?

    public init(server context: TLSContext, fd: Int32) throws {
        guard context.isServer else {
            throw YaOKError(.invalidArgument, "A server TLS connection needs a server context")
        }
        self.context = context
        serverName = nil
        try start(fd: fd)
        SSL_set_accept_state(ssl)
    }

    /// `serverName`: the host name or IP address dialled. It is sent as SNI when it is a
    /// DNS name, and in CA mode the certificate must be for it.
    public init(client context: TLSContext, fd: Int32, serverName: String) throws {
        guard !context.isServer else {
            throw YaOKError(.invalidArgument, "A client TLS connection needs a client context")
        }
        // An empty name would turn CA mode's name check off (X509_VERIFY_PARAM_set1_host
        // clears the list); C would cut a name at a NUL.
        guard !serverName.isEmpty, !serverName.utf8.contains(0) else {
            throw YaOKError(.invalidArgument, "The relay's host name or address is empty or invalid")
        }
        self.context = context
        self.serverName = serverName
        try start(fd: fd)
        guard let ssl else { return }
        if PeerVerification.ipAddress(serverName) == nil,
           yaok_SSL_set_tlsext_host_name(ssl, serverName) != 1 {
            throw fail(OpenSSLError.error(.invalidArgument, "Cannot use \(serverName) as the relay's TLS server name"))
        }
        if case .certificateAuthority = context.verification {
            do { try PeerVerification.expect(name: serverName, on: ssl) } catch let error as YaOKError { throw fail(error) }
        }
        SSL_set_connect_state(ssl)
    }

    deinit {
        close()
    }

    private func start(fd: Int32) throws {
        OpenSSLError.clear()
        guard let ssl = SSL_new(context.context) else {
            throw OpenSSLError.error(.tlsFailed, "Cannot create a TLS connection")
        }
        self.ssl = ssl
        guard let bio = SocketBIO.make(fd: fd) else {
            throw fail(OpenSSLError.error(.tlsFailed, "Cannot create a TLS connection"))
        }
        SSL_set_bio(ssl, bio, bio)  // the SSL owns it now
        // Unretained: the SSL object never outlives this connection (close() frees it).
        _ = yaok_SSL_set_app_data(ssl, Unmanaged.passUnretained(self).toOpaque())
    }

    /// The connection an OpenSSL callback is about.
    static func from(_ ssl: OpaquePointer?) -> TLSConnection? {
        guard let ssl, let raw = yaok_SSL_get_app_data(ssl) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Called by pin verification: the handshake fails with `.certificateRejected`.
    func rejectCertificate(_ message: String) {
        certificateRejected = true
        rejection = message
    }

    // MARK: Handshake

    /// Drives the handshake. Throws `.certificateRejected` when the client does not accept
    /// the server's certificate (pin, CA or name; the message says which), `.tlsFailed`
    /// for everything else (not TLS, a version below 1.3, no common ALPN, the peer closed),
    /// with OpenSSL's reason in the message.
    public func handshake() throws -> Progress {
        let ssl = try usable()
        if isHandshakeComplete { return .done }
        OpenSSLError.clear()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            try finishHandshake(ssl)
            return .done
        }
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default: throw fail(handshakeError(ssl, code))
        }
    }

    private func handshakeError(_ ssl: OpaquePointer, _ code: Int32) -> YaOKError {
        let reasons = OpenSSLError.drain()
        if certificateRejected, let rejection {
            return YaOKError(.certificateRejected, rejection)
        }
        if let serverName, case .certificateAuthority(let file) = context.verification {
            let result = SSL_get_verify_result(ssl)
            if result != X509_V_OK {
                return YaOKError(.certificateRejected, PeerVerification.caRejection(result, serverName: serverName, caFile: file))
            }
        }
        let reason = rejection ?? reasons.map(explained) ?? systemReason(ssl, code)
        return YaOKError(.tlsFailed, "TLS handshake with \(peer) failed: \(reason)")
    }

    /// OpenSSL's words for "this is not TLS 1.3", with that said in plain words after them.
    private func explained(_ reasons: String) -> String {
        let notTLS13 = ["unsupported protocol", "tlsv1 alert protocol version", "wrong version number",
                        "http request", "https proxy request", "packet length too long"]
        guard notTLS13.contains(where: reasons.contains) else { return reasons }
        return reasons + " (\(peerNoun) does not speak TLS 1.3)"
    }

    /// Checks again, after OpenSSL says the handshake is done, what the callbacks already
    /// enforced: a second line, so that no change to the setup can ever let an unchecked
    /// server through to application data.
    private func finishHandshake(_ ssl: OpaquePointer) throws {
        OpenSSLError.clear()
        var selected: UnsafePointer<UInt8>?
        var selectedLength: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &selectedLength)
        guard ALPN.isOurs(selected, selectedLength) else {
            throw fail(YaOKError(.tlsFailed, "TLS handshake with \(peer) failed: no agreement on ALPN \(ALPN.name)"))
        }
        guard SSL_version(ssl) == TLS1_3_VERSION else {
            throw fail(YaOKError(.tlsFailed, "TLS handshake with \(peer) failed: not TLS 1.3"))
        }
        if !context.isServer {
            guard let certificate = SSL_get0_peer_certificate(ssl), let pin = CertificatePin.of(certificate) else {
                throw fail(YaOKError(.certificateRejected, "The relay sent no usable certificate"))
            }
            switch context.verification {
            case .pin(let expected):
                guard pin == expected else {
                    throw fail(YaOKError(.certificateRejected, "The relay's certificate does not match the pinned key"))
                }
            case .certificateAuthority(let file):
                let result = SSL_get_verify_result(ssl)
                guard result == X509_V_OK else {
                    let message = PeerVerification.caRejection(result, serverName: serverName ?? "", caFile: file)
                    throw fail(YaOKError(.certificateRejected, message))
                }
            case .none:
                throw fail(YaOKError(.certificateRejected, "No way to check the relay's certificate"))
            }
            peerPin = pin
        }
        isHandshakeComplete = true
    }

    // MARK: Data

    /// Reads up to `maxBytes` of application data. Call again until `.wantRead`: OpenSSL
    /// may hold more decrypted bytes than one read returns. `.closed`: the peer closed (with
    /// close_notify or not).
    public func read(maxBytes: Int) throws -> ReadResult {
        guard maxBytes > 0 else { throw YaOKError(.invalidArgument, "A TLS read needs room for at least one byte") }
        let ssl = try established()
        OpenSSLError.clear()
        var rc: Int32 = 0
        var count = 0
        let data = [UInt8](unsafeUninitializedCapacity: maxBytes) { buffer, initialized in
            rc = SSL_read_ex(ssl, buffer.baseAddress, maxBytes, &count)
            initialized = rc == 1 ? count : 0
        }
        if rc == 1 {
            // A short read in a large buffer would keep the whole buffer alive.
            return .data(count * 2 < maxBytes ? Array(data[..<count]) : data)
        }
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            OpenSSLError.clear()
            return .closed
        default:
            let reason = OpenSSLError.drain() ?? systemReason(ssl, code)
            throw fail(YaOKError(.tlsFailed, "TLS read from \(peer) failed: \(reason)"))
        }
    }

    /// Writes application data; may write only part of it (`.wrote(n)`, 1 ≤ n ≤ count: a
    /// record of up to 16 KiB at a time when the socket takes it at once). After `.wantWrite`
    /// or `.wantRead`, call again with at least the same bytes (the buffer may move):
    /// OpenSSL has already taken some of them into a record.
    public func write(_ bytes: ArraySlice<UInt8>) throws -> WriteResult {
        let ssl = try established()
        guard !bytes.isEmpty else { return .wrote(0) }
        OpenSSLError.clear()
        var written = 0
        let rc = bytes.withUnsafeBytes { SSL_write_ex(ssl, $0.baseAddress, $0.count, &written) }
        if rc == 1 { return .wrote(written) }
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default:
            let reason = OpenSSLError.drain() ?? systemReason(ssl, code)
            throw fail(YaOKError(.tlsFailed, "TLS write to \(peer) failed: \(reason)"))
        }
    }

    /// RFC 8446 §7.5 exporter with no context (in TLS 1.3 the same as an empty one), e.g.
    /// the relay's `binding` (PROTOCOL.md §8.1). After the handshake.
    public func exportKeyingMaterial(label: String, length: Int) throws -> [UInt8] {
        guard length > 0 else { throw YaOKError(.invalidArgument, "Exported keying material needs a length of at least 1") }
        let ssl = try established()
        OpenSSLError.clear()
        var output = [UInt8](repeating: 0, count: length)
        let labelLength = label.utf8.count
        let rc = SSL_export_keying_material(ssl, &output, length, label, labelLength, nil, 0, 0)
        guard rc == 1 else {
            throw OpenSSLError.error(.tlsFailed, "Cannot export \(length) bytes of TLS keying material", fallback: "refused")
        }
        return output
    }

    // MARK: Closing

    /// Sends close_notify if the connection is healthy and the socket takes it now, then
    /// frees OpenSSL's state. Idempotent. Does not close the descriptor.
    public func close() {
        guard let ssl else { return }
        if isHandshakeComplete && failure == nil {
            OpenSSLError.clear()
            _ = SSL_shutdown(ssl)  // one attempt: a full socket or a gone peer loses only the alert
        }
        SSL_free(ssl)
        self.ssl = nil
        OpenSSLError.clear()
    }

    // MARK: Helpers

    private var peer: String { context.isServer ? "a client" : "the relay" }
    private var peerNoun: String { context.isServer ? "the client" : "the relay" }

    private func usable() throws -> OpaquePointer {
        if let failure { throw failure }
        guard let ssl else { throw YaOKError(.tlsFailed, "The TLS connection is closed") }
        return ssl
    }

    private func established() throws -> OpaquePointer {
        let ssl = try usable()
        guard isHandshakeComplete else {
            throw YaOKError(.invalidArgument, "The TLS handshake is not complete yet")
        }
        return ssl
    }

    /// Records the first failure (later calls throw it again) and leaves the queue empty.
    private func fail(_ error: YaOKError) -> YaOKError {
        if failure == nil { failure = error }
        OpenSSLError.clear()
        return error
    }

    /// For SSL_ERROR_SYSCALL (and an empty queue): the socket's errno, else that the peer closed.
    private func systemReason(_ ssl: OpaquePointer, _ code: Int32) -> String {
        let errorNumber = SocketBIO.lastError(SSL_get_rbio(ssl))
        if code == SSL_ERROR_SYSCALL, errorNumber != 0 {
            return String(cString: strerror(errorNumber))
        }
        if code == SSL_ERROR_SYSCALL || code == SSL_ERROR_ZERO_RETURN {
            return "the peer closed the connection"
        }
        return "OpenSSL error \(code)"
    }
}
