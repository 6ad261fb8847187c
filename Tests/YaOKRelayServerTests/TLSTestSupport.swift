import Foundation
import Glibc
@testable import YaOKRelayServer
@testable import YaOKWire
import YaOKTLS

/// TLS 1.3 under a test client, pinned to the relay's certificate.
final class TLSTestTransport: TestTransport {
    let connection: TLSConnection

    /// Connects to 127.0.0.1:`port` and completes the handshake (within 5 s).
    init(fd: Int32, pin: [UInt8]) throws {
        connection = try TLSConnection(client: TLSContext.client(pin: pin, caFile: nil), fd: fd, serverName: "127.0.0.1")
        let deadline = Date().addingTimeInterval(5)
        while true {
            let progress = try connection.handshake()
            if progress == .done { return }
            guard Date() < deadline else { throw TestFailure("TLS handshake timed out") }
            var p = pollfd(fd: fd, events: Int16(progress == .wantWrite ? POLLOUT : POLLIN), revents: 0)
            _ = poll(&p, 1, 100)
        }
    }

    func read() throws -> [UInt8]? {
        switch try connection.read(maxBytes: 65536) {
        case .data(let bytes): return bytes
        case .wantRead, .wantWrite: return nil
        case .closed: throw TestFailure("closed")
        }
    }

    func write(_ bytes: ArraySlice<UInt8>) throws -> Int {
        switch try connection.write(bytes) {
        case .wrote(let n): return n
        case .wantRead, .wantWrite: return 0
        }
    }

    func binding() throws -> [UInt8] {
        try connection.exportKeyingMaterial(label: RelaySignedData.exporterLabel, length: 32)
    }
}

extension TestClient {
    /// A TLS client of a relay whose certificate has `pin`; reads the CHALLENGE.
    convenience init(tlsPort port: UInt16, pin: [UInt8], from: UInt32? = nil) throws {
        let fd = try connectLoopback(port: port, from: from)
        // On a failure past this point the descriptor is left open (closing it twice,
        // when deinit also runs, could close another test's): a test failure only.
        try self.init(fd: fd, transport: TLSTestTransport(fd: fd, pin: pin))
    }
}

/// A relay with TLS (self-signed, in its data directory).
func startTLSRelay(_ configure: (inout RelayConfiguration) -> Void = { _ in }) throws -> (TestRelay, pin: [UInt8]) {
    var c = testConfiguration()
    configure(&c)
    let directory = try makeTempDirectory()
    let context = try TLSContext.selfSigned(directory: directory)
    let relay = try TestRelay(configuration: c, security: .tls(context), directory: directory)
    return (relay, context.certificatePin!)
}
