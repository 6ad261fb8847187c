import COpenSSL
import Foundation
import Glibc
import XCTest
import YaOKSupport
@testable import YaOKTLS

/// A directory under /tmp, removed when the test ends.
final class TemporaryDirectory {
    let path: String

    init(_ name: String) throws {
        var template = Array("/tmp/yaok-tls-\(name)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw YaOKError(.internal, "mkdtemp failed") }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}

/// Two connected non-blocking AF_UNIX stream sockets.
final class SocketPair {
    let client: Int32
    let server: Int32
    private var closed: Set<Int32> = []

    init() throws {
        var fds: [Int32] = [0, 0]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw YaOKError(.internal, "socketpair failed") }
        client = fds[0]
        server = fds[1]
    }

    deinit {
        close(client)
        close(server)
    }

    func close(_ fd: Int32) {
        guard !closed.contains(fd) else { return }
        closed.insert(fd)
        Glibc.close(fd)
    }

    /// A small send buffer, so that writes fill it and must wait for the peer.
    func shrinkBuffers(_ bytes: Int32) {
        for fd in [client, server] {
            var size = bytes
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }
}

/// One side of a handshake that the driver below can step: a `TLSConnection` or a raw
/// OpenSSL peer configured the way ours never is.
protocol HandshakeSide: AnyObject {
    func step() throws -> TLSConnection.Progress
}

extension TLSConnection: HandshakeSide {
    func step() throws -> Progress { try handshake() }
}

/// Outcome of one side: nil while running; then success or the error it threw.
enum SideOutcome {
    case done
    case failed(Error)

    var error: YaOKError? {
        if case .failed(let error) = self { return error as? YaOKError }
        return nil
    }
}

/// Steps both sides in this thread, polling each descriptor for what its side waits for,
/// until both have finished. A side that fails shuts down its writing half (after the
/// alert it sent), so the other one ends too instead of waiting for more.
func driveHandshake(client: HandshakeSide, clientFD: Int32, server: HandshakeSide, serverFD: Int32,
                    timeout: Double = 5, file: StaticString = #filePath, line: UInt = #line) -> (client: SideOutcome?, server: SideOutcome?) {
    var outcomes: [SideOutcome?] = [nil, nil]
    let sides: [(HandshakeSide, Int32)] = [(client, clientFD), (server, serverFD)]
    let deadline = Date().addingTimeInterval(timeout)
    while outcomes.contains(where: { $0 == nil }) {
        var waits: [pollfd] = []
        for (index, (side, fd)) in sides.enumerated() where outcomes[index] == nil {
            do {
                switch try side.step() {
                case .done: outcomes[index] = .done
                case .wantRead: waits.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
                case .wantWrite: waits.append(pollfd(fd: fd, events: Int16(POLLOUT), revents: 0))
                }
            } catch {
                outcomes[index] = .failed(error)
                shutdown(fd, Int32(SHUT_WR))
            }
        }
        if waits.isEmpty { continue }
        guard Date() < deadline else {
            XCTFail("handshake did not finish in \(timeout) s", file: file, line: line)
            break
        }
        _ = poll(&waits, nfds_t(waits.count), 50)
    }
    return (outcomes[0], outcomes[1])
}

/// Reads until `count` bytes came, the peer closed, or 5 s passed.
func readAll(_ connection: TLSConnection, fd: Int32, count: Int) throws -> [UInt8] {
    var received: [UInt8] = []
    let deadline = Date().addingTimeInterval(5)
    while received.count < count, Date() < deadline {
        switch try connection.read(maxBytes: 4096) {
        case .data(let bytes): received += bytes
        case .wantRead:
            var wait = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&wait, 1, 50)
        case .wantWrite:
            var wait = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&wait, 1, 50)
        case .closed: return received
        }
    }
    return received
}

/// OpenSSL's per-thread error queue must be empty after every call into YaOKTLS.
func assertErrorQueueEmpty(file: StaticString = #filePath, line: UInt = #line) {
    let code = ERR_peek_error()
    XCTAssertEqual(code, 0, "OpenSSL error queue not empty: \(ERR_reason_error_string(code).map { String(cString: $0) } ?? "?")",
                   file: file, line: line)
    ERR_clear_error()
}

func assertError(_ outcome: SideOutcome?, _ code: YaOKError.Code, containing text: String? = nil,
                 file: StaticString = #filePath, line: UInt = #line) {
    guard let error = outcome?.error else {
        XCTFail("expected \(code), got \(String(describing: outcome))", file: file, line: line)
        return
    }
    XCTAssertEqual(error.code, code, "message: \(error.message)", file: file, line: line)
    if let text {
        XCTAssertTrue(error.message.contains(text), "\"\(error.message)\" does not contain \"\(text)\"", file: file, line: line)
    }
}

/// A raw OpenSSL endpoint (over the library's MSG_NOSIGNAL BIO), for peers our API would
/// never make: TLS 1.2 only, no ALPN.
final class RawTLSPeer: HandshakeSide {
    let context: OpaquePointer
    let ssl: OpaquePointer

    /// `maxVersion`: e.g. TLS1_2_VERSION. `alpn`: nil for none. Server peers load `certificate`/`key`.
    init(server: Bool, fd: Int32, maxVersion: Int32, alpn: String?, certificate: String? = nil, key: String? = nil) throws {
        context = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method())!
        _ = yaok_SSL_CTX_set_max_proto_version(context, maxVersion)
        if let alpn {
            let wire = [UInt8(alpn.utf8.count)] + Array(alpn.utf8)
            XCTAssertEqual(SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)), 0)
        }
        if let certificate, let key {
            XCTAssertEqual(SSL_CTX_use_certificate_chain_file(context, certificate), 1)
            XCTAssertEqual(SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM), 1)
        }
        ssl = SSL_new(context)!
        let bio = SocketBIO.make(fd: fd)!
        SSL_set_bio(ssl, bio, bio)
        if server { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
        ERR_clear_error()
    }

    func step() throws -> TLSConnection.Progress {
        let rc = SSL_do_handshake(ssl)
        if rc == 1 { return .done }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default:
            // OpenSSL's reason (e.g. the alert the other side sent), for tests to check.
            let reason = ERR_reason_error_string(ERR_peek_last_error()).map { String(cString: $0) } ?? "no reason"
            ERR_clear_error()
            throw YaOKError(.tlsFailed, "raw peer failed: \(reason)")
        }
    }
}

/// The `openssl` command line tool, for certificates made independently of the library.
enum OpenSSLTool {
    static let path = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @discardableResult
    static func run(_ arguments: [String], in directory: String) throws -> String {
        guard let path else { throw XCTSkip("the openssl command line tool is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw YaOKError(.internal, "openssl \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }

    /// A CA (ca.pem) and a server certificate it signs for IP 127.0.0.1 (server-cert.pem,
    /// server-key.pem), in `directory`.
    static func makeCA(in directory: String) throws {
        let config = """
            [req]
            distinguished_name = dn
            prompt = no
            [dn]
            CN = YaOK Test CA
            [ca_ext]
            basicConstraints = critical,CA:TRUE
            keyUsage = critical,keyCertSign,cRLSign
            subjectKeyIdentifier = hash
            [server_ext]
            basicConstraints = CA:FALSE
            keyUsage = critical,digitalSignature
            extendedKeyUsage = serverAuth
            subjectAltName = IP:127.0.0.1
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid

            """
        try config.write(toFile: directory + "/ca.cnf", atomically: true, encoding: .utf8)
        let p256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try run(["req", "-x509", "-config", "ca.cnf", "-extensions", "ca_ext", "-days", "2",
                 "-keyout", "ca-key.pem", "-out", "ca.pem"] + p256, in: directory)
        try run(["req", "-new", "-config", "ca.cnf", "-subj", "/CN=relay.test",
                 "-keyout", "server-key.pem", "-out", "server.csr"] + p256, in: directory)
        try run(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-set_serial", "4242",
                 "-days", "2", "-extfile", "ca.cnf", "-extensions", "server_ext", "-out", "server-cert.pem"], in: directory)
    }
}

/// A client and a server connection over a socket pair, handshake done.
final class ConnectedPair {
    let sockets: SocketPair
    let client: TLSConnection
    let server: TLSConnection

    init(server serverContext: TLSContext, sendBuffer: Int32? = nil) throws {
        sockets = try SocketPair()
        if let sendBuffer { sockets.shrinkBuffers(sendBuffer) }
        let clientContext = try TLSContext.client(pin: serverContext.certificatePin, caFile: nil)
        client = try TLSConnection(client: clientContext, fd: sockets.client, serverName: "127.0.0.1")
        server = try TLSConnection(server: serverContext, fd: sockets.server)
        let outcome = driveHandshake(client: client, clientFD: sockets.client, server: server, serverFD: sockets.server)
        guard case .done = outcome.client, case .done = outcome.server else {
            throw YaOKError(.tlsFailed, "handshake failed: \(String(describing: outcome))")
        }
    }
}

/// A TCP connection over 127.0.0.1, both ends non-blocking (the relay's real transport).
final class TCPPair {
    let client: Int32
    let server: Int32

    init() throws {
        let stream = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let listener = socket(AF_INET, stream, 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else { throw YaOKError(.internal, "cannot listen on 127.0.0.1") }
        let dialler = socket(AF_INET, stream | Int32(SOCK_NONBLOCK.rawValue), 0)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(dialler, $0, length) }
        }
        let connecting = rc == 0 || errno == EINPROGRESS
        let accepted = accept(listener, nil, nil)
        guard connecting, accepted >= 0 else {
            close(dialler)
            throw YaOKError(.internal, "cannot connect to 127.0.0.1")
        }
        _ = fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) | O_NONBLOCK)
        client = dialler
        server = accepted
    }

    deinit {
        close(client)
        close(server)
    }
}
