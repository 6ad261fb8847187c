import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The relay identifier (PROTOCOL.md §8.2): stated in every CHALLENGE, kept in the store, so
/// it survives a restart and every relay of a cluster over one database states the same one;
/// clients derive their mailboxes there from it.
final class RelayIdentifierTests: RelayTestCase {

    func start(directory: String? = nil, backend: StoreBackend = .sqlite, conninfo: String? = nil) throws -> TestRelay {
        kept(try TestRelay(directory: directory, backend: backend, conninfo: conninfo))
    }

    func testChallengeStatesTheStoredIdentifierAndARestartKeepsIt() throws {
        let a = try start()
        XCTAssertEqual(a.server.relayIdentifier.count, 16)
        XCTAssertEqual(try TestClient(port: a.port).relayIdentifier, a.server.relayIdentifier)
        let directory = a.directory
        let before = a.server.relayIdentifier
        a.stop()
        relays.removeAll()
        let again = try start(directory: directory)
        XCTAssertEqual(again.server.relayIdentifier, before, "restarted over its data: the same mailboxes")
        let other = try start()
        XCTAssertNotEqual(other.server.relayIdentifier, before, "another relay: other mailboxes")
    }

    func testRelaysOverOneDatabaseStateOneIdentifier() throws {
        let a = try start(backend: .postgres)
        let b = try start(backend: .postgres, conninfo: a.conninfo)
        XCTAssertEqual(a.server.relayIdentifier, b.server.relayIdentifier)
        XCTAssertEqual(try TestClient(port: a.port).relayIdentifier, try TestClient(port: b.port).relayIdentifier)
        let elsewhere = try start(backend: .postgres)
        XCTAssertNotEqual(elsewhere.server.relayIdentifier, a.server.relayIdentifier)
    }

    /// Relays of a cluster starting at the same moment over a fresh database agree.
    func testConcurrentFirstStartsAgree() throws {
        let conninfo = try TestPostgres.freshDatabase()
        let results = Locked<[Result<[UInt8], Error>]>([])
        let threads = (0..<4).map { _ in
            Thread {
                let result = Result { () throws -> [UInt8] in
                    let store = try PostgresRelayStore(conninfo: conninfo)
                    defer { store.close() }
                    return try store.relayIdentifier()
                }
                results.withLock { $0.append(result) }
            }
        }
        threads.forEach { $0.start() }
        XCTAssertTrue(eventually(timeout: 30) { results.withLock { $0.count } == 4 })
        let ids = try results.withLock { try $0.map { try $0.get() } }
        XCTAssertEqual(Set(ids).count, 1)
        XCTAssertEqual(ids.first?.count, 16)
    }
}
