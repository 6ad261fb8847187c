import COpenSSL
import Foundation
import Glibc
import XCTest
import YaOKSupport
@testable import YaOKTLS

/// Application data after the handshake: volume, partial writes, closing, a vanished peer.
final class TLSDataTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var serverContext: TLSContext!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory("data")
        serverContext = try TLSContext.selfSigned(directory: directory.path)
    }

    override func tearDown() {
        serverContext = nil
        directory = nil
    }

    /// One side of the transfer: writes its bytes as the socket takes them, reads the
    /// peer's, and says what it waits for.
    private final class Side {
        let connection: TLSConnection
        let fd: Int32
        let outgoing: [UInt8]
        var sent = 0
        var received: [UInt8] = []
        var partialWrites = 0
        var writeWaits = 0

        init(_ connection: TLSConnection, fd: Int32, outgoing: [UInt8]) {
            self.connection = connection
            self.fd = fd
            self.outgoing = outgoing
        }

        /// Does what it can now; returns the poll events it needs next.
        func step() throws -> Int16 {
            var events: Int16 = 0
            writing: while sent < outgoing.count {
                // After a want, the same bytes again (the slice may be a new buffer each time).
                let chunk = outgoing[sent..<min(sent + 50_000, outgoing.count)]
                switch try connection.write(chunk) {
                case .wrote(let n):
                    XCTAssertGreaterThan(n, 0)
                    if n < chunk.count { partialWrites += 1 }
                    sent += n
                case .wantWrite:
                    writeWaits += 1
                    events |= Int16(POLLOUT)
                    break writing
                case .wantRead:
                    events |= Int16(POLLIN)
                    break writing
                }
            }
            reading: while true {
                switch try connection.read(maxBytes: 7_000) {
                case .data(let bytes): received += bytes
                case .wantRead:
                    events |= Int16(POLLIN)
                    break reading
                case .wantWrite:
                    events |= Int16(POLLOUT)
                    break reading
                case .closed:
                    XCTFail("closed early")
                    break reading
                }
            }
            return events
        }
    }

    func testOneMebibyteEachWayWithPartialWritesAndWaits() throws {
        let pair = try ConnectedPair(server: serverContext, sendBuffer: 32_768)
        let size = 1 << 20
        var generator = SystemRandomNumberGenerator()
        let upload = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let download = upload.reversed() as [UInt8]
        let client = Side(pair.client, fd: pair.sockets.client, outgoing: upload)
        let server = Side(pair.server, fd: pair.sockets.server, outgoing: download)
        let deadline = Date().addingTimeInterval(20)
        while client.received.count < size || server.received.count < size {
            var waits = [
                pollfd(fd: client.fd, events: try client.step(), revents: 0),
                pollfd(fd: server.fd, events: try server.step(), revents: 0),
            ]
            if client.received.count == size && server.received.count == size { break }
            XCTAssertLessThan(Date(), deadline, "transfer stalled at \(client.received.count) and \(server.received.count) bytes")
            if Date() > deadline { return }
            _ = poll(&waits, 2, 100)
        }
        XCTAssertEqual(server.received, upload)
        XCTAssertEqual(client.received, download)
        XCTAssertGreaterThan(client.partialWrites + server.partialWrites, 0, "expected partial writes")
        XCTAssertGreaterThan(client.writeWaits + server.writeWaits, 0, "expected the sockets to fill")
        assertErrorQueueEmpty()
    }

    func testPinnedConnectionOverTCPLoopback() throws {
        let tcp = try TCPPair()
        let client = try TLSConnection(client: TLSContext.client(pin: serverContext.certificatePin, caFile: nil),
                                       fd: tcp.client, serverName: "127.0.0.1")
        let server = try TLSConnection(server: serverContext, fd: tcp.server)
        let outcome = driveHandshake(client: client, clientFD: tcp.client, server: server, serverFD: tcp.server)
        guard case .done = outcome.client, case .done = outcome.server else {
            return XCTFail("handshake failed: \(String(describing: outcome))")
        }
        XCTAssertEqual(try server.write(Array("challenge".utf8)[...]), .wrote(9))
        XCTAssertEqual(try readAll(client, fd: tcp.client, count: 9), Array("challenge".utf8))
        XCTAssertEqual(try client.write(Array("auth".utf8)[...]), .wrote(4))
        XCTAssertEqual(try readAll(server, fd: tcp.server, count: 4), Array("auth".utf8))
        server.close()
        XCTAssertEqual(try readAll(client, fd: tcp.client, count: 1), [])
        XCTAssertEqual(try client.read(maxBytes: 10), .closed)
        client.close()
        assertErrorQueueEmpty()
    }

    func testCloseSendsCloseNotifyAndIsIdempotent() throws {
        let pair = try ConnectedPair(server: serverContext)
        XCTAssertEqual(try pair.client.write(Array("last words".utf8)[...]), .wrote(10))
        pair.client.close()
        pair.client.close()
        XCTAssertEqual(try readAll(pair.server, fd: pair.sockets.server, count: 10), Array("last words".utf8))
        XCTAssertEqual(try pair.server.read(maxBytes: 100), .closed)
        XCTAssertEqual(try pair.server.read(maxBytes: 100), .closed)
        XCTAssertThrowsError(try pair.client.write([1][...])) { XCTAssertEqual(($0 as? YaOKError)?.code, .tlsFailed) }
        XCTAssertThrowsError(try pair.client.read(maxBytes: 1))
        pair.server.close()
        assertErrorQueueEmpty()
    }

    func testPeerThatClosesWithoutCloseNotifyReadsAsClosed() throws {
        let pair = try ConnectedPair(server: serverContext)
        pair.sockets.close(pair.sockets.client)
        XCTAssertEqual(try readAll(pair.server, fd: pair.sockets.server, count: 1), [])
        XCTAssertEqual(try pair.server.read(maxBytes: 100), .closed)
        assertErrorQueueEmpty()
    }

    /// Without MSG_NOSIGNAL the first write would raise SIGPIPE and end the test process.
    func testWritingToAVanishedPeerThrowsInsteadOfRaisingSIGPIPE() throws {
        let pair = try ConnectedPair(server: serverContext)
        pair.server.close()
        pair.sockets.close(pair.sockets.server)
        var failure: YaOKError?
        for _ in 0..<10 {
            do {
                _ = try pair.client.write([UInt8](repeating: 7, count: 1000)[...])
            } catch let error as YaOKError {
                failure = error
                break
            }
        }
        XCTAssertEqual(failure?.code, .tlsFailed)
        XCTAssertTrue(failure?.message.contains("TLS write to the relay failed: Broken pipe") == true, failure?.message ?? "no error")
        assertErrorQueueEmpty()
    }

    func testReadAndWriteNeedTheHandshake() throws {
        let sockets = try SocketPair()
        let server = try TLSConnection(server: serverContext, fd: sockets.server)
        XCTAssertThrowsError(try server.read(maxBytes: 10)) { XCTAssertEqual(($0 as? YaOKError)?.code, .invalidArgument) }
        XCTAssertThrowsError(try server.write([1][...])) { XCTAssertEqual(($0 as? YaOKError)?.code, .invalidArgument) }
        XCTAssertEqual(try server.handshake(), .wantRead)
        server.close()
        XCTAssertThrowsError(try server.handshake()) { XCTAssertEqual(($0 as? YaOKError)?.code, .tlsFailed) }
        assertErrorQueueEmpty()
    }
}
