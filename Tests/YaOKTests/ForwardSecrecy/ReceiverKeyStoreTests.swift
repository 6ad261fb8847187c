import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKStore

/// docs/PROTOCOL.md §13.3 in the store (migration 14): the ring survives a reopen sealed,
/// goes with its contact, and an erased key is gone from every file of the data directory.
@Suite struct ReceiverKeyStoreTests {
    let day = RingStoreFixture.day
    let t0 = RingStoreFixture.t0

    /// A ring of three own keys (1 and 2 superseded), a peer key and one unsettled send.
    func ring() throws -> ReceiverKeyRing {
        var ring = ReceiverKeyRing()
        let peer = Announcement(key: try ReceiverKeyPair.generate(id: 4).key, release: 0)
        _ = try ring.announcement(nowMs: t0)                   // own key 1
        try ring.opened(with: 1, announced: peer, nowMs: t0)   // mints 2
        try ring.opened(with: 2, announced: peer, nowMs: t0 + 1)  // mints 3; 1 superseded
        try ring.opened(with: 3, announced: peer, nowMs: t0 + 2)  // mints 4; 2 superseded
        ring.sent(messageID: [UInt8](repeating: 9, count: 16), peerKeyID: 4, expiresMs: t0 + 14 * day)
        return ring
    }

    /// An own key's row keeps its public key (80 bytes), so loading a ring, which happens for
    /// every packet from the contact, computes no X25519 (a row planted with another public
    /// key reads back with that one: nothing was computed); a 48-byte row written before
    /// still reads, its public key computed from the secret.
    @Test func loadingARingComputesNoPublicKeyAndOldRowsStillRead() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let (store, id) = try f.storeWithContact()
        try store.saveReceiverKeyRing(try ring(), contactID: id, cipher: cipher)
        let rows = try store.db.rows("SELECT key_id, sealed FROM receiver_keys WHERE contact_id = ?", [.int(id)]) {
            ($0.int64(0), $0.blob(1))
        }
        let lengths = try rows.map { try cipher.open($0.1, ad: RowAD.receiverKey(contactID: id, keyID: UInt32($0.0))).count }
        #expect(!lengths.isEmpty && lengths.allSatisfy { $0 == 80 })
        let secret = [UInt8](repeating: 7, count: 32), times = Int64(t0).bigEndianBytes + Int64(-1).bigEndianBytes
        let marker = [UInt8](repeating: 0x42, count: 32)
        for (keyID, plain) in [(UInt32(10), secret + times + marker), (UInt32(11), secret + times)] {
            try store.db.query("INSERT INTO receiver_keys (contact_id, key_id, sealed) VALUES (?, ?, ?)",
                               [.int(id), .int(Int64(keyID)),
                                .blob(try cipher.seal(plain, ad: RowAD.receiverKey(contactID: id, keyID: keyID)))])
        }
        // Read by a store opened afresh: this one keeps the ring as it saved it (rows written
        // behind its back are seen after the node locks, ReceiverKeyRingCacheTests).
        let fresh = try f.open()
        defer { fresh.close() }
        let own = try fresh.receiverKeyRing(contactID: id, cipher: cipher).own
        let computed = try ReceiverKeyPair(id: 11, secret: SecureBytes(copying: secret)).key
        #expect(own.first { $0.pair.key.id == 10 }?.pair.key.publicKey == marker)
        #expect(own.first { $0.pair.key.id == 11 }?.pair.key == computed)
    }

    @Test func aRingSurvivesAReopen() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let original = try ring()
        let id = try f.saving(original)
        let store = try f.open()
        defer { store.close() }
        let back = try store.receiverKeyRing(contactID: id, cipher: cipher)
        #expect(back.own.map(\.pair.key) == original.own.map(\.pair.key))
        #expect(back.own.map(\.supersededMs) == original.own.map(\.supersededMs))
        #expect(back.lastID == original.lastID && back.peerKey == original.peerKey)
        #expect(back.pending.count == 1 && back.pending.first?.value.keyID == 4)
        // Under another database key nothing opens (sealed like every secret).
        let other = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        #expect(throws: YaOKError(.corruptStore)) { _ = try store.receiverKeyRing(contactID: id, cipher: other) }
    }

    @Test func keysGoWithTheContact() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let store = try f.open()
        defer { store.close() }
        let bob = try f.contact(store), carol = try f.contact(store, name: "Carol")
        try store.saveReceiverKeyRing(try ring(), contactID: bob, cipher: cipher)
        try store.saveReceiverKeyRing(try ring(), contactID: carol, cipher: cipher)
        try store.deleteContact(bob, withMessages: false)
        try store.deleteContact(carol, withMessages: true)
        let rows = try store.db.rows("SELECT (SELECT count(*) FROM receiver_keys) + (SELECT count(*) FROM receiver_key_state)") { $0.int64(0) }
        #expect(rows == [0])
    }

    @Test func anErasedKeyIsGoneFromTheFiles() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let store = try f.open()
        var ring = try ring()
        let id = try f.contact(store)
        try store.saveReceiverKeyRing(ring, contactID: id, cipher: cipher)
        store.eraseFreedPages()  // key 1's row now in the main file, not only the log
        let sealed = try store.db.rows("SELECT sealed FROM receiver_keys WHERE contact_id = ? AND key_id = 1", [.int(id)]) { $0.blob(0) }
        #expect(sealed.count == 1)
        let before = try files(f.dir.path).contains { holdsAPiece(of: sealed[0], in: $0.data) }
        #expect(before)

        ring.expire(nowMs: t0 + 1 + ReceiverKeyRing.retentionMs)  // erases key 1 (superseded at t0 + 1)
        #expect(ring.own.map(\.pair.key.id) == [2, 3, 4])
        #expect(try store.saveReceiverKeyRing(ring, contactID: id, cipher: cipher) == 1)
        let stillOpen = try files(f.dir.path).filter { holdsAPiece(of: sealed[0], in: $0.data) }.map(\.name)
        #expect(stillOpen == [])
        store.close()
        let closed = try files(f.dir.path).filter { holdsAPiece(of: sealed[0], in: $0.data) }.map(\.name)
        #expect(closed == [])
    }

    /// Recorded traffic, then seizure of the data directory with what the PIN and the
    /// device secret give (the database key): Bob's ring saved after every packet he takes,
    /// as a node does; the attacker reads it back from the files and opens none of Alice's
    /// delivered forward-secret packets. Alice's first message (to the long-term key, before
    /// Bob had announced one) is the stated exception.
    @Test func seizedDataDirectoryOpensNoDeliveredPacket() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let store = try f.open()
        let aliceID = try f.contact(store, name: "Alice")
        let net = try FSNetwork()
        let everHeld = KeyBox()
        net.afterEachDelivery = { party in
            guard party === net.bob else { return }
            for pair in party.ring.openingKeys { everHeld.keys[pair.key.id] = pair }
            try store.saveReceiverKeyRing(party.ring, contactID: aliceID, cipher: cipher)
        }
        for round in 0..<10 {
            try net.send(net.alice, "a\(round)")
            try net.advance(3_600_000)
            try net.send(net.bob, "b\(round)")
            try net.advance(3_600_000)
        }
        store.close()
        let recorded = try #require(net.recorded[net.bob.id])
        #expect(recorded.count == 10 && net.bob.stored.count == 10)

        let seized = try f.open()
        defer { seized.close() }
        let keys = try seized.receiverKeyRing(contactID: aliceID, cipher: cipher).openingKeys
        #expect(!keys.isEmpty)
        #expect(openedBySeizure(Array(recorded.dropFirst()), identity: net.bob.identity, keys: keys, sender: net.alice.identity) == 0)
        #expect(openedBySeizure([recorded[0]], identity: net.bob.identity, keys: keys, sender: net.alice.identity) == 1)
        // Not vacuous: every key Bob ever held, had the files kept them, would open them all.
        #expect(openedBySeizure(Array(recorded.dropFirst()), identity: net.bob.identity, keys: Array(everHeld.keys.values), sender: net.alice.identity) == 9)
    }

    func files(_ dir: String) throws -> [(name: String, data: [UInt8])] {
        try FileManager.default.contentsOfDirectory(atPath: dir).map {
            ($0, Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/" + $0))))
        }
    }

}

final class KeyBox { var keys: [UInt32: ReceiverKeyPair] = [:] }
