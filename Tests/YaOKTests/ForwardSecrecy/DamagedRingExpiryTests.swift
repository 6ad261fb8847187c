import Testing
import Foundation
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The hourly expiry of receiver keys (§13.3 rule 5) goes through every contact's ring: one
/// ring that fails its check (changed in the file, or damaged on disk) must not keep the
/// keys of the contacts after it from being erased on time, hour after hour.
@Suite struct DamagedRingExpiryTests {
    /// A ring of three own keys, 1 superseded at `t`: the expiry erases it once its
    /// retention is over.
    private static func ring(at t: Int64) throws -> ReceiverKeyRing {
        var ring = ReceiverKeyRing()
        let peer = Announcement(key: try ReceiverKeyPair.generate(id: 4).key, release: 0)
        _ = try ring.announcement(nowMs: t)
        try ring.opened(with: 1, announced: peer, nowMs: t)
        try ring.opened(with: 2, announced: peer, nowMs: t)
        return ring
    }

    private static func keyIDs(_ node: Node, _ contactID: Int64) throws -> [Int64] {
        try node.withDatabase { db in
            try db.rows("SELECT key_id FROM receiver_keys WHERE contact_id = ? ORDER BY key_id", [.int(contactID)]) { $0.int64(0) }
        }
    }

    @Test func aDamagedRingDoesNotKeepTheOthersKeys() throws {
        let clock = TestClock()
        let dir = TempDir()
        defer { dir.remove() }
        var alice = try makeNode(dir, clock: clock)
        let bob = try alice.addContact(card: try cardText("Bob")).id
        let carol = try alice.addContact(card: try cardText("Carol")).id
        #expect(bob < carol)  // Bob's ring is expired first
        let t = clock.now
        try alice.withStore { store, s in
            let cipher = try #require(s.keys).cipher
            try store.saveReceiverKeyRing(try Self.ring(at: t), contactID: bob, cipher: cipher)
            try store.saveReceiverKeyRing(try Self.ring(at: t), contactID: carol, cipher: cipher)
        }
        #expect(try Self.keyIDs(alice, carol) == [1, 2, 3])
        alice.close()
        do {  // Bob's newest key's row damaged (the kept rings go with the node)
            let db = try Database(path: dir.path + "/" + Store.fileName)
            defer { db.close() }
            try db.execute("UPDATE receiver_keys SET sealed = zeroblob(length(sealed)) WHERE contact_id = \(bob) AND key_id = 3")
        }
        alice = try Node(dataDirectory: dir.path, options: fastOptions(clock: clock))
        defer { alice.close() }
        try alice.unlock(pin: testPIN)
        clock.advance(milliseconds: ReceiverKeyRing.retentionMs + 1)
        alice.runDeliveryTimers()
        // Carol's superseded key is erased on time; Bob's ring is left as it is.
        #expect(try Self.keyIDs(alice, carol) == [2, 3])
        #expect(try Self.keyIDs(alice, bob) == [1, 2, 3])
        // And the sweep after it went on: said in the security log, once.
        let events = try alice.securityEvents().filter { $0.kind == .receiverKeysDamaged }
        #expect(events.count == 1)
        #expect(events.first?.detail.contains("contact \(bob)") == true)
        clock.advance(seconds: 3_601)
        alice.runDeliveryTimers()
        #expect(try alice.securityEvents().filter { $0.kind == .receiverKeysDamaged }.count == 1)
    }
}
