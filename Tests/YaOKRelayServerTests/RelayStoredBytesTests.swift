import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The running relay's count of stored bytes follows deletions made by another process
/// even when the revoked list does not change (a second `revoke` of a pseudonym; issue 17
/// §2): it is read again at every expiry sweep.
final class RelayStoredBytesTests: XCTestCase {
    func testStoredBytesAreReadAgainAtEachSweep() throws {
        var c = testConfiguration()
        c.sweepSeconds = 0.2
        let relay = try TestRelay(configuration: c)
        defer {
            relay.stop()
            try? FileManager.default.removeItem(atPath: relay.directory)
        }
        let box = try SigningKey.random()
        let alice = try TestClient(port: relay.port)
        guard case .ready? = try alice.login() else { return XCTFail("no READY") }
        let packet = try makePacket()
        XCTAssertEqual(try alice.post(packet, to: mailbox(box)), .accepted(request: 1))
        let server = relay.server
        XCTAssertEqual(server.storedBytesOnLoop, packet.count)
        // Another process (as `yaok-relay revoke` does) deletes it.
        let other = try SQLiteRelayStore(directory: relay.directory)
        defer { other.close() }
        _ = try other.commit([.delete([StoredPacketRef(mailbox: mailbox(box), messageID: try messageID(of: packet))])],
                             nowMs: Clock.milliseconds(), quota: MailboxQuota(packets: 1000, bytes: 1 << 24))
        XCTAssertTrue(eventually { server.storedBytesOnLoop == 0 })
    }
}
