import COpenSSL
import Glibc
import XCTest
import YaOKSupport
@testable import YaOKTLS

/// The handshake: who is accepted, who is refused, and with which error.
final class TLSHandshakeTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var serverContext: TLSContext!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory("handshake")
        serverContext = try TLSContext.selfSigned(directory: directory.path)
    }

    override func tearDown() {
        serverContext = nil
        directory = nil
    }

    func testPinnedHandshakeCarriesDataBothWays() throws {
        let pin = try XCTUnwrap(serverContext.certificatePin)
        XCTAssertEqual(pin.count, 32)
        let sockets = try SocketPair()
        let client = try TLSConnection(client: TLSContext.client(pin: pin, caFile: nil), fd: sockets.client, serverName: "127.0.0.1")
        let server = try TLSConnection(server: serverContext, fd: sockets.server)
        XCTAssertFalse(client.isHandshakeComplete)
        let outcome = driveHandshake(client: client, clientFD: sockets.client, server: server, serverFD: sockets.server)
        guard case .done = outcome.client, case .done = outcome.server else {
            return XCTFail("handshake failed: \(String(describing: outcome))")
        }
        XCTAssertTrue(client.isHandshakeComplete)
        XCTAssertTrue(server.isHandshakeComplete)
        XCTAssertEqual(client.peerPin, pin)
        XCTAssertNil(server.peerPin)

        XCTAssertEqual(try client.write(Array("hello relay".utf8)[...]), .wrote(11))
        XCTAssertEqual(try readAll(server, fd: sockets.server, count: 11), Array("hello relay".utf8))
        XCTAssertEqual(try server.write(Array("hello client".utf8)[...]), .wrote(12))
        XCTAssertEqual(try readAll(client, fd: sockets.client, count: 12), Array("hello client".utf8))
        XCTAssertEqual(try client.read(maxBytes: 100), .wantRead)
        assertErrorQueueEmpty()
    }

    func testWrongPinIsRejectedAndTheServerSeesAFailure() throws {
        let wrongPin = [UInt8](repeating: 0x1a, count: 32)
        let sockets = try SocketPair()
        let client = try TLSConnection(client: TLSContext.client(pin: wrongPin, caFile: nil), fd: sockets.client, serverName: "127.0.0.1")
        let server = try TLSConnection(server: serverContext, fd: sockets.server)
        let outcome = driveHandshake(client: client, clientFD: sockets.client, server: server, serverFD: sockets.server)
        let actual = CertificatePin.abbreviated(serverContext.certificatePin!)
        assertError(outcome.client, .certificateRejected,
                    containing: "does not match the pinned key (expected 1a1a1a1a1a1a1a1a…, got \(actual))")
        assertError(outcome.server, .tlsFailed, containing: "TLS handshake with a client failed")
        XCTAssertFalse(client.isHandshakeComplete)
        XCTAssertFalse(server.isHandshakeComplete)
        XCTAssertNil(client.peerPin)
        // The failure sticks: no data can be sent on the rejected connection.
        XCTAssertThrowsError(try client.write([1, 2, 3][...])) { XCTAssertEqual(($0 as? YaOKError)?.code, .certificateRejected) }
        XCTAssertThrowsError(try client.handshake())
        assertErrorQueueEmpty()
    }

    func testCAFileAcceptsACertificateForTheDialledAddress() throws {
        let ca = try TemporaryDirectory("ca")
        try OpenSSLTool.makeCA(in: ca.path)
        let server = try TLSContext.server(certificateFile: ca.file("server-cert.pem"), keyFile: ca.file("server-key.pem"))
        let client = try TLSContext.client(pin: nil, caFile: ca.file("ca.pem"))
        let outcome = try handshake(client: client, serverName: "127.0.0.1", server: server)
        guard case .done = outcome.client, case .done = outcome.server else {
            return XCTFail("handshake failed: \(String(describing: outcome))")
        }
        XCTAssertEqual(outcome.connection.peerPin, try TLSContext.pin(ofCertificateFile: ca.file("server-cert.pem")))
        assertErrorQueueEmpty()
    }

    func testCAFileRejectsAnotherName() throws {
        let ca = try TemporaryDirectory("ca-name")
        try OpenSSLTool.makeCA(in: ca.path)
        let server = try TLSContext.server(certificateFile: ca.file("server-cert.pem"), keyFile: ca.file("server-key.pem"))
        let client = try TLSContext.client(pin: nil, caFile: ca.file("ca.pem"))
        for name in ["example.com", "127.0.0.2", "::1"] {
            let outcome = try handshake(client: client, serverName: name, server: server)
            assertError(outcome.client, .certificateRejected, containing: "not for \(name)")
            assertError(outcome.server, .tlsFailed)
        }
        assertErrorQueueEmpty()
    }

    func testCAFileRejectsACertificateFromElsewhere() throws {
        let ca = try TemporaryDirectory("ca-other")
        try OpenSSLTool.makeCA(in: ca.path)
        // The self-signed relay certificate is for 127.0.0.1 too, but no CA in the file signed it.
        let client = try TLSContext.client(pin: nil, caFile: ca.file("ca.pem"))
        let outcome = try handshake(client: client, serverName: "127.0.0.1", server: serverContext)
        assertError(outcome.client, .certificateRejected, containing: "does not verify against the CA file")
        assertError(outcome.server, .tlsFailed)
        assertErrorQueueEmpty()
    }

    func testGarbageInsteadOfTLSFailsTheServerHandshake() throws {
        let probes: [[UInt8]] = [
            Array("GET / HTTP/1.1\r\nHost: relay\r\n\r\n".utf8),
            (0..<600).map { UInt8(truncatingIfNeeded: $0 &* 7919) },
            [0x16, 0x03, 0x01, 0xff, 0xff] + [UInt8](repeating: 0, count: 64),  // a handshake record far too long
            [],  // connect and close at once
        ]
        for probe in probes {
            let sockets = try SocketPair()
            let server = try TLSConnection(server: serverContext, fd: sockets.server)
            XCTAssertEqual(probe.withUnsafeBytes { send(sockets.client, $0.baseAddress, $0.count, 0) }, probe.count)
            shutdown(sockets.client, Int32(SHUT_WR))
            let outcome = driveOne(server, fd: sockets.server)
            assertError(outcome, .tlsFailed, containing: "TLS handshake with a client failed")
            assertErrorQueueEmpty()
        }
    }

    func testTLS12IsRefusedBothWays() throws {
        // A TLS 1.2 client that otherwise does everything right.
        var sockets = try SocketPair()
        let oldClient = try RawTLSPeer(server: false, fd: sockets.client, maxVersion: TLS1_2_VERSION, alpn: ALPN.name)
        let server = try TLSConnection(server: serverContext, fd: sockets.server)
        var outcome = driveHandshake(client: oldClient, clientFD: sockets.client, server: server, serverFD: sockets.server)
        assertError(outcome.server, .tlsFailed, containing: "unsupported protocol")
        XCTAssertNotNil(outcome.client?.error)

        // A TLS 1.2 server with the right certificate, for a client that pins it.
        sockets = try SocketPair()
        let oldServer = try RawTLSPeer(server: true, fd: sockets.server, maxVersion: TLS1_2_VERSION, alpn: nil,
                                       certificate: directory.file("relay-cert.pem"), key: directory.file("relay-key.pem"))
        let client = try TLSConnection(client: TLSContext.client(pin: serverContext.certificatePin, caFile: nil),
                                       fd: sockets.client, serverName: "127.0.0.1")
        outcome = driveHandshake(client: client, clientFD: sockets.client, server: oldServer, serverFD: sockets.server)
        assertError(outcome.client, .tlsFailed, containing: "TLS handshake with the relay failed")
        XCTAssertNotNil(outcome.server?.error)
        assertErrorQueueEmpty()
    }

    func testALPNIsRequired() throws {
        // A TLS 1.3 client without ALPN.
        var sockets = try SocketPair()
        let bare = try RawTLSPeer(server: false, fd: sockets.client, maxVersion: TLS1_3_VERSION, alpn: nil)
        var server = try TLSConnection(server: serverContext, fd: sockets.server)
        var outcome = driveHandshake(client: bare, clientFD: sockets.client, server: server, serverFD: sockets.server)
        assertError(outcome.server, .tlsFailed, containing: "the client did not offer ALPN yaok-relay/1")
        // §8.1: the relay answers with a fatal no_application_protocol alert (120).
        assertError(outcome.client, .tlsFailed, containing: "no application protocol")

        // A TLS 1.3 client of another protocol.
        sockets = try SocketPair()
        let http = try RawTLSPeer(server: false, fd: sockets.client, maxVersion: TLS1_3_VERSION, alpn: "h2")
        server = try TLSConnection(server: serverContext, fd: sockets.server)
        outcome = driveHandshake(client: http, clientFD: sockets.client, server: server, serverFD: sockets.server)
        assertError(outcome.server, .tlsFailed, containing: "the client offered ALPN h2, not yaok-relay/1")
        assertError(outcome.client, .tlsFailed, containing: "no application protocol")

        // A TLS 1.3 server that ignores ALPN, for a client that pins its key.
        sockets = try SocketPair()
        let deaf = try RawTLSPeer(server: true, fd: sockets.server, maxVersion: TLS1_3_VERSION, alpn: nil,
                                  certificate: directory.file("relay-cert.pem"), key: directory.file("relay-key.pem"))
        let client = try TLSConnection(client: TLSContext.client(pin: serverContext.certificatePin, caFile: nil),
                                       fd: sockets.client, serverName: "127.0.0.1")
        outcome = driveHandshake(client: client, clientFD: sockets.client, server: deaf, serverFD: sockets.server)
        assertError(outcome.client, .tlsFailed, containing: "no agreement on ALPN yaok-relay/1")
        XCTAssertFalse(client.isHandshakeComplete)
        assertErrorQueueEmpty()
    }

    func testExporterAgreesOnBothSides() throws {
        let clientContext = try TLSContext.client(pin: serverContext.certificatePin, caFile: nil)
        var bindings: [[UInt8]] = []
        for _ in 0..<2 {
            let sockets = try SocketPair()
            let client = try TLSConnection(client: clientContext, fd: sockets.client, serverName: "localhost")
            let server = try TLSConnection(server: serverContext, fd: sockets.server)
            XCTAssertThrowsError(try client.exportKeyingMaterial(label: "EXPORTER-YaOK-relay-v1", length: 32))
            let outcome = driveHandshake(client: client, clientFD: sockets.client, server: server, serverFD: sockets.server)
            guard case .done = outcome.client, case .done = outcome.server else {
                return XCTFail("handshake failed: \(String(describing: outcome))")
            }
            let clientBinding = try client.exportKeyingMaterial(label: "EXPORTER-YaOK-relay-v1", length: 32)
            let serverBinding = try server.exportKeyingMaterial(label: "EXPORTER-YaOK-relay-v1", length: 32)
            XCTAssertEqual(clientBinding.count, 32)
            XCTAssertEqual(clientBinding, serverBinding)
            XCTAssertNotEqual(clientBinding, [UInt8](repeating: 0, count: 32))
            XCTAssertNotEqual(try client.exportKeyingMaterial(label: "EXPORTER-other", length: 32), clientBinding)
            bindings.append(clientBinding)
        }
        XCTAssertNotEqual(bindings[0], bindings[1], "two connections must not share a binding")
        assertErrorQueueEmpty()
    }

    // MARK: Helpers

    private struct Outcome {
        let client: SideOutcome?
        let server: SideOutcome?
        let connection: TLSConnection
    }

    private func handshake(client context: TLSContext, serverName: String, server serverContext: TLSContext) throws -> Outcome {
        let sockets = try SocketPair()
        let client = try TLSConnection(client: context, fd: sockets.client, serverName: serverName)
        let server = try TLSConnection(server: serverContext, fd: sockets.server)
        let outcome = driveHandshake(client: client, clientFD: sockets.client, server: server, serverFD: sockets.server)
        return Outcome(client: outcome.client, server: outcome.server, connection: client)
    }

    /// Steps one side until it finishes (its peer is raw bytes already sent).
    private func driveOne(_ side: HandshakeSide, fd: Int32) -> SideOutcome? {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            do {
                switch try side.step() {
                case .done: return .done
                case .wantRead:
                    var wait = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    _ = poll(&wait, 1, 50)
                case .wantWrite:
                    var wait = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&wait, 1, 50)
                }
            } catch {
                return .failed(error)
            }
        }
        return nil
    }
}
