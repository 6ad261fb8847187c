import COpenSSL
import Foundation
import Glibc
import XCTest
import YaOKSupport
@testable import YaOKTLS

/// Contexts: the self-signed development certificate, pins, files and arguments.
final class TLSContextTests: XCTestCase {
    func testSelfSignedKeepsItsKeyAndPinAcrossRestarts() throws {
        let directory = try TemporaryDirectory("self-signed")
        let first = try TLSContext.selfSigned(directory: directory.path)
        let second = try TLSContext.selfSigned(directory: directory.path, commonName: "another name")
        let pin = try XCTUnwrap(first.certificatePin)
        XCTAssertEqual(pin.count, 32)
        XCTAssertEqual(second.certificatePin, pin)
        XCTAssertEqual(try TLSContext.pin(ofCertificateFile: directory.file("relay-cert.pem")), pin)

        var info = stat()
        XCTAssertEqual(stat(directory.file("relay-key.pem"), &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted(),
                       ["relay-cert.pem", "relay-key.pem"], "no temporary files left behind")

        // A lost certificate is made again from the same key: same pin.
        XCTAssertEqual(unlink(directory.file("relay-cert.pem")), 0)
        XCTAssertEqual(try TLSContext.selfSigned(directory: directory.path).certificatePin, pin)
        // A new directory is a new key.
        let other = try TemporaryDirectory("self-signed-other")
        XCTAssertNotEqual(try TLSContext.selfSigned(directory: other.path).certificatePin, pin)
    }

    func testSelfSignedKeyIsPrivateWhateverTheUmask() throws {
        let directory = try TemporaryDirectory("umask")
        let old = umask(0)
        defer { umask(old) }
        _ = try TLSContext.selfSigned(directory: directory.path)
        var info = stat()
        XCTAssertEqual(stat(directory.file("relay-key.pem"), &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
    }

    func testSelfSignedCertificateIsWhatItSays() throws {
        let directory = try TemporaryDirectory("self-signed-text")
        let context = try TLSContext.selfSigned(directory: directory.path, commonName: "relay.example")
        let text = try OpenSSLTool.run(["x509", "-in", "relay-cert.pem", "-noout", "-text"], in: directory.path)
        XCTAssertTrue(text.contains("Subject: CN = relay.example"), text)
        XCTAssertTrue(text.contains("IP Address:127.0.0.1"), text)
        XCTAssertTrue(text.contains("DNS:localhost"), text)
        XCTAssertTrue(text.contains("NIST CURVE: P-256") || text.contains("prime256v1"), text)
        let endDate = try OpenSSLTool.run(["x509", "-in", "relay-cert.pem", "-noout", "-checkend", "\(9 * 365 * 86400)"], in: directory.path)
        XCTAssertTrue(endDate.contains("will not expire"), endDate)

        // The pin is the SHA-256 of the DER SubjectPublicKeyInfo, as the command line computes it.
        try OpenSSLTool.run(["x509", "-in", "relay-cert.pem", "-noout", "-pubkey", "-out", "public.pem"], in: directory.path)
        try OpenSSLTool.run(["pkey", "-pubin", "-in", "public.pem", "-outform", "DER", "-out", "public.der"], in: directory.path)
        let digest = try OpenSSLTool.run(["dgst", "-sha256", "-r", "public.der"], in: directory.path)
        XCTAssertEqual(String(digest.prefix(64)), Hex.encode(context.certificatePin!))
    }

    func testSelfSignedRefusesAKeyOthersCanRead() throws {
        let directory = try TemporaryDirectory("loose-key")
        _ = try TLSContext.selfSigned(directory: directory.path)
        XCTAssertEqual(chmod(directory.file("relay-key.pem"), 0o644), 0)
        XCTAssertThrowsError(try TLSContext.selfSigned(directory: directory.path)) {
            let error = $0 as? YaOKError
            XCTAssertEqual(error?.code, .tlsFailed)
            XCTAssertTrue(error?.message.contains("relay-key.pem can be read by other users (mode 644)") == true, error?.message ?? "")
        }
    }

    func testSelfSignedRefusesACertificateWithoutItsKey() throws {
        let directory = try TemporaryDirectory("orphan-cert")
        _ = try TLSContext.selfSigned(directory: directory.path)
        XCTAssertEqual(unlink(directory.file("relay-key.pem")), 0)
        XCTAssertThrowsError(try TLSContext.selfSigned(directory: directory.path)) {
            XCTAssertEqual(($0 as? YaOKError)?.code, .tlsFailed)
        }
    }

    func testFileErrorsNameTheFile() throws {
        let directory = try TemporaryDirectory("files")
        let missing = directory.file("missing.pem")
        XCTAssertThrowsError(try TLSContext.server(certificateFile: missing, keyFile: missing)) {
            XCTAssertEqual(($0 as? YaOKError)?.code, .tlsFailed)
            XCTAssertTrue("\($0)".contains(missing), "\($0)")
            XCTAssertTrue("\($0)".contains("No such file"), "\($0)")
        }
        let junk = directory.file("junk.pem")
        try "not a certificate\n".write(toFile: junk, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try TLSContext.pin(ofCertificateFile: junk)) {
            XCTAssertEqual(($0 as? YaOKError)?.code, .tlsFailed)
            XCTAssertTrue("\($0)".contains(junk), "\($0)")
        }
        XCTAssertThrowsError(try TLSContext.server(certificateFile: junk, keyFile: junk)) {
            XCTAssertEqual(($0 as? YaOKError)?.code, .tlsFailed)
            XCTAssertTrue("\($0)".contains("Cannot load the TLS certificate from \(junk)"), "\($0)")
        }
        XCTAssertThrowsError(try TLSContext.client(pin: nil, caFile: junk)) {
            XCTAssertEqual(($0 as? YaOKError)?.code, .tlsFailed)
            XCTAssertTrue("\($0)".contains(junk), "\($0)")
        }

        // A key that is not the certificate's.
        let a = try TemporaryDirectory("files-a"), b = try TemporaryDirectory("files-b")
        _ = try TLSContext.selfSigned(directory: a.path)
        _ = try TLSContext.selfSigned(directory: b.path)
        XCTAssertThrowsError(try TLSContext.server(certificateFile: a.file("relay-cert.pem"), keyFile: b.file("relay-key.pem"))) {
            XCTAssertEqual(($0 as? YaOKError)?.code, .tlsFailed)
            XCTAssertTrue("\($0)".contains("does not belong to the certificate"), "\($0)")
        }
        assertErrorQueueEmpty()
    }

    func testClientNeedsExactlyOneWayToCheckTheServer() throws {
        let pin = [UInt8](repeating: 1, count: 32)
        for (pin, caFile) in [(nil, nil), (pin, "/etc/ssl/certs/ca-certificates.crt"), (Array(pin.prefix(31)), nil)] as [([UInt8]?, String?)] {
            XCTAssertThrowsError(try TLSContext.client(pin: pin, caFile: caFile)) {
                XCTAssertEqual(($0 as? YaOKError)?.code, .invalidArgument)
            }
        }
        let client = try TLSContext.client(pin: pin, caFile: nil)
        XCTAssertNil(client.certificatePin)
        let directory = try TemporaryDirectory("roles")
        let server = try TLSContext.selfSigned(directory: directory.path)
        let sockets = try SocketPair()
        XCTAssertThrowsError(try TLSConnection(server: client, fd: sockets.server))
        XCTAssertThrowsError(try TLSConnection(client: server, fd: sockets.client, serverName: "localhost"))
        // An empty name would switch off the CA mode's name check.
        for name in ["", "relay.example\0evil.example"] {
            XCTAssertThrowsError(try TLSConnection(client: client, fd: sockets.client, serverName: name)) {
                XCTAssertEqual(($0 as? YaOKError)?.code, .invalidArgument)
            }
        }
    }

    func testIPAddressesAreToldFromHostNames() {
        XCTAssertEqual(PeerVerification.ipAddress("127.0.0.1"), "127.0.0.1")
        XCTAssertEqual(PeerVerification.ipAddress("::1"), "::1")
        XCTAssertEqual(PeerVerification.ipAddress("[2001:db8::1]"), "2001:db8::1")
        XCTAssertNil(PeerVerification.ipAddress("relay.example"))
        XCTAssertNil(PeerVerification.ipAddress("127.0.0.1.example"))
        XCTAssertNil(PeerVerification.ipAddress("localhost"))
    }
}
