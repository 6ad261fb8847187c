import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A ring's unsettled sends as rows of their own (migration 18) and the rings kept decoded
/// (ReceiverKeyRingCache): a send writes its own row only, the rows survive a reopen, a
/// store of schema 17 moves its sends out of the state row, and the kept rings are never
/// ahead of or behind the disk (a rolled-back transaction, the lock).
@Suite struct ReceiverKeyRowsTests {
    let day = RingStoreFixture.day
    let t0 = RingStoreFixture.t0

    func messageID(_ n: Int) -> [UInt8] { withUnsafeBytes(of: UInt64(n).bigEndian, Array.init) + [UInt8](repeating: 7, count: 8) }

    /// Own key 1 and `sends` unsettled sends under the contact's key 5, release announced.
    func ring(sends: Int) throws -> ReceiverKeyRing {
        var ring = ReceiverKeyRing()
        _ = try ring.announcement(nowMs: t0)
        try ring.acknowledged([], announced: Announcement(key: try ReceiverKeyPair.generate(id: 5).key, release: 0), nowMs: t0)
        for n in 0..<sends { ring.sent(messageID: messageID(n), peerKeyID: 5, expiresMs: t0 + 14 * day + Int64(n)) }
        _ = try ring.announcement(nowMs: t0)  // the release as it stands (4)
        return ring
    }

    func pendingRows(_ store: Store) throws -> [[UInt8]: [UInt8]] {
        var rows: [[UInt8]: [UInt8]] = [:]
        try store.db.query("SELECT message_id, sealed FROM receiver_key_pending") { rows[$0.blob(0)] = $0.blob(1) }
        return rows
    }

    func stateRow(_ store: Store, _ id: Int64) throws -> [UInt8]? {
        try store.db.rows("SELECT sealed FROM receiver_key_state WHERE contact_id = ?", [.int(id)]) { $0.blob(0) }.first
    }

    func same(_ a: ReceiverKeyRing, _ b: ReceiverKeyRing) -> Bool {
        a.own.map(\.pair.key) == b.own.map(\.pair.key) && a.own.map(\.supersededMs) == b.own.map(\.supersededMs)
            && a.lastID == b.lastID && a.peerKey == b.peerKey && a.releasedPeer == b.releasedPeer
            && a.pending.count == b.pending.count
            && a.pending.allSatisfy { b.pending[$0.key]?.keyID == $0.value.keyID && b.pending[$0.key]?.expiresMs == $0.value.expiresMs }
    }

    /// Each send is a row (its key ID and expiry sealed to the contact and message ID), the
    /// state row holds none, and they read back after a reopen; one more send writes its
    /// row alone: no other row and not the state are written again.
    @Test func sendsAreRowsThatSurviveAReopenAndASendWritesOneRow() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let original = try ring(sends: 300)
        let id = try f.saving(original) { store, id in
            let rows = try pendingRows(store)
            #expect(rows.count == 300)
            let sealed = try #require(rows[messageID(3)])
            let plain = try cipher.open(sealed, ad: RowAD.receiverKeyPending(contactID: id, messageID: messageID(3)))
            #expect(plain == UInt32(5).bigEndianBytes + (t0 + 14 * day + 3).bigEndianBytes)
            // Moved to another message's row, it does not open.
            #expect(throws: (any Error).self) {
                try cipher.open(sealed, ad: RowAD.receiverKeyPending(contactID: id, messageID: messageID(4)))
            }
            let state = try cipher.open(try #require(try stateRow(store, id)), ad: RowAD.receiverKeyState(contactID: id))
            #expect(state.suffix(4) == [0, 0, 0, 0])

            // One more send, and an ack of another, on the ring as read.
            let stateBefore = try stateRow(store, id)
            var next = try store.receiverKeyRing(contactID: id, cipher: cipher)
            _ = try next.announcement(nowMs: t0)
            next.sent(messageID: messageID(1000), peerKeyID: 5, expiresMs: t0 + 15 * day)
            try next.acknowledged([messageID(7)], announced: nil, nowMs: t0)
            try store.saveReceiverKeyRing(next, contactID: id, cipher: cipher)
            let after = try pendingRows(store)
            #expect(after.count == 300 && after[messageID(7)] == nil && after[messageID(1000)] != nil)
            #expect(after.filter { rows[$0.key] != nil && rows[$0.key] != $0.value }.isEmpty)  // none rewritten
            #expect(try stateRow(store, id) == stateBefore)
        }
        let store = try f.open()
        defer { store.close() }
        let back = try store.receiverKeyRing(contactID: id, cipher: cipher)
        #expect(back.pending.count == 300 && back.pending[messageID(1000)]?.keyID == 5 && back.pending[messageID(7)] == nil)
        #expect(back.pending[messageID(3)]?.expiresMs == t0 + 14 * day + 3)
        #expect(back.own.map(\.pair.key) == original.own.map(\.pair.key) && back.peerKey == original.peerKey)
    }

    /// A ring taken to be changed (its kept copy lets go of its sends meanwhile): an ack
    /// deletes its row and a send adds one; read in between, the ring is the disk's.
    @Test func aRingTakenToChangeWritesItsChanges() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let (store, id) = try f.storeWithContact()
        try store.saveReceiverKeyRing(try ring(sends: 20), contactID: id, cipher: cipher)
        _ = try store.receiverKeyRing(contactID: id, cipher: cipher)
        var taken = try store.receiverKeyRingToChange(contactID: id, cipher: cipher)
        try taken.acknowledged([messageID(2), messageID(3)], announced: nil, nowMs: t0)
        taken.sent(messageID: messageID(50), peerKeyID: 5, expiresMs: t0 + day)
        #expect(try store.receiverKeyRing(contactID: id, cipher: cipher).pending.count == 20)
        var again = try store.receiverKeyRingToChange(contactID: id, cipher: cipher)
        again.sent(messageID: messageID(51), peerKeyID: 5, expiresMs: t0 + day)
        try store.saveReceiverKeyRing(again, contactID: id, cipher: cipher)
        try store.saveReceiverKeyRing(taken, contactID: id, cipher: cipher)  // compared with the rows: last writer wins
        let rows = try pendingRows(store)
        #expect(rows.count == 19 && rows[messageID(2)] == nil && rows[messageID(50)] != nil && rows[messageID(51)] == nil)
        let fresh = try f.open()
        defer { fresh.close() }
        #expect(same(try fresh.receiverKeyRing(contactID: id, cipher: cipher), taken))
        #expect(same(try store.receiverKeyRing(contactID: id, cipher: cipher), taken))
    }

    /// A store of schema 17 (the sends inside the sealed state row) opened by this version:
    /// migration 18 adds the table, and the first read with the key moves the sends into
    /// rows and writes the state without them; the ring reads the same before and after.
    @Test func aSchema17StoreMovesItsSendsIntoRows() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let original = try ring(sends: 50)
        let id = try f.saving(original) { store, id in
            // Back to schema 17 as that version wrote it: no table of sends, the sends in the state.
            let legacy = Store.encodeRingState(original, pending: original.pending.dictionary)
            try store.db.execute("DROP TABLE receiver_key_pending; PRAGMA user_version = 17;")
            try store.db.query("UPDATE receiver_key_state SET sealed = ? WHERE contact_id = ?",
                               [.blob(try cipher.seal(legacy, ad: RowAD.receiverKeyState(contactID: id))), .int(id)])
        }
        do {
            let store = try f.open()
            defer { store.close() }
            #expect(try store.db.userVersion == Schema.latestVersion)
            #expect(try pendingRows(store).isEmpty)  // nothing to move without the key
            let read = try store.receiverKeyRing(contactID: id, cipher: cipher)
            #expect(same(read, original))
            #expect(try pendingRows(store).count == 50)
            let state = try cipher.open(try #require(try stateRow(store, id)), ad: RowAD.receiverKeyState(contactID: id))
            #expect(state.suffix(4) == [0, 0, 0, 0])
        }
        let store = try f.open()
        defer { store.close() }
        #expect(same(try store.receiverKeyRing(contactID: id, cipher: cipher), original))
    }

    /// A save inside a transaction that rolls back, at its end or as a savepoint: the ring
    /// read afterwards is the one on disk, not the one saved (the kept rings take a write at
    /// the outermost commit only, and forget everything at a rollback).
    @Test func aRolledBackSaveLeavesTheKeptRingAsTheDisk() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let (store, id) = try f.storeWithContact()
        try store.saveReceiverKeyRing(try ring(sends: 3), contactID: id, cipher: cipher)
        struct Refused: Error {}
        // Saved in a savepoint that is released, then the outer transaction rolls back.
        #expect(throws: Refused.self) {
            try store.db.transaction {
                var ring = try store.receiverKeyRing(contactID: id, cipher: cipher)
                ring.sent(messageID: messageID(99), peerKeyID: 5, expiresMs: t0 + day)
                _ = try ring.announcement(nowMs: t0)
                try ring.opened(with: 1, announced: Announcement(key: try ReceiverKeyPair.generate(id: 6).key, release: 0), nowMs: t0)
                try store.saveReceiverKeyRing(ring, contactID: id, cipher: cipher)
                #expect(try store.receiverKeyRing(contactID: id, cipher: cipher).pending[messageID(99)] != nil)
                throw Refused()
            }
        }
        // A savepoint of its own that rolls back inside a transaction that commits.
        try store.db.transaction {
            _ = try? store.db.transaction {
                var ring = try store.receiverKeyRing(contactID: id, cipher: cipher)
                ring.sent(messageID: messageID(98), peerKeyID: 5, expiresMs: t0 + day)
                try store.saveReceiverKeyRing(ring, contactID: id, cipher: cipher)
                throw Refused()
            }
        }
        let kept = try store.receiverKeyRing(contactID: id, cipher: cipher)
        let fresh = try f.open()
        defer { fresh.close() }
        let disk = try fresh.receiverKeyRing(contactID: id, cipher: cipher)
        #expect(disk.pending.count == 3 && disk.own.count == 1)
        #expect(same(kept, disk))
        // And the next save from the kept ring writes what it says.
        var ring = kept
        ring.sent(messageID: messageID(97), peerKeyID: 5, expiresMs: t0 + day)
        try store.saveReceiverKeyRing(ring, contactID: id, cipher: cipher)
        let third = try f.open()
        defer { third.close() }
        #expect(same(try third.receiverKeyRing(contactID: id, cipher: cipher), ring))
    }

    /// A node that locks drops the rings it kept: the disk changed while it was locked (here
    /// by another connection) is what it reads after the unlock.
    @Test func aLockedThenUnlockedNodeReadsTheDisk() throws {
        let nodes = try ForwardSecretNodes()
        defer { nodes.close() }
        let (alice, bobID) = (nodes.alice, nodes.bobID)
        _ = try alice.send(to: bobID, text: "one")  // sealed to Bob's prekey: one unsettled send
        // Its carried copy made now: made after the unlock, it would record the send again.
        try alice.makeOwnCarriedCopies()
        let ring = { try alice.state.withLock { s in
            try s.store!.receiverKeyRing(contactID: bobID, cipher: try #require(s.keys).cipher)
        } }
        #expect(try ring().pending.count == 1)
        try alice.lock()
        // Nothing of the rings (their own keys' secrets) stays in memory while locked.
        #expect(alice.state.withLock { $0.store!.ringCache.isEmpty })
        // Changed on disk behind the (empty) cache, through the node's own connection: the
        // running node holds its file alone.
        try alice.withDatabase { db in try db.query("DELETE FROM receiver_key_pending") }
        try alice.unlock(pin: testPIN)
        #expect(try ring().pending.count == 0)
    }
}

/// The kept rings stay within their bounds (rings and unsettled sends), dropping others,
/// and the ring kept last is always there.
@Suite struct ReceiverKeyRingCacheBoundTests {
    @Test func keptRingsStayBounded() throws {
        let cache = ReceiverKeyRingCache()
        let cipher = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        for contact in 0..<Int64(ReceiverKeyRingCache.capacity + 10) {
            cache.keep(.init(ring: ReceiverKeyRing(), state: nil), contact, cipher: cipher, inTransaction: false)
            #expect(cache.count <= ReceiverKeyRingCache.capacity)
        }
        #expect(cache.ring(Int64(ReceiverKeyRingCache.capacity + 9), cipher: cipher) != nil)
        cache.removeAll()
        var full: [[UInt8]: PendingSends.Entry] = [:]
        for n in 0..<ReceiverKeyRing.maxPending { full[withUnsafeBytes(of: UInt64(n), Array.init) + [UInt8](repeating: 0, count: 8)] = (1, 1) }
        let ring = ReceiverKeyRing(own: [], lastID: 0, peerKey: nil, pending: full, releasedPeer: 0)
        for contact in 0..<Int64(40) {
            cache.keep(.init(ring: ring, state: nil), contact, cipher: cipher, inTransaction: true)
            cache.committedTransaction()
            #expect(cache.sendsKept <= ReceiverKeyRingCache.pendingCapacity)
            #expect(cache.ring(contact, cipher: cipher)?.pending.count == ReceiverKeyRing.maxPending)
        }
        #expect(cache.count == ReceiverKeyRingCache.pendingCapacity / ReceiverKeyRing.maxPending)
    }

    /// Own keys are the costly part of a kept ring: each secret is a guarded allocation
    /// (four memory mappings, of the 65,530 a process may have), and a ring may hold 32 of
    /// them. The kept rings hold at most 1,024 own keys in all, however many rings.
    @Test func keptOwnKeysStayBounded() throws {
        let cache = ReceiverKeyRingCache()
        let cipher = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
        var own: [ReceiverKeyRing.OwnKey] = []
        for id in 1...UInt32(ReceiverKeyRing.cap) {
            own.append(ReceiverKeyRing.OwnKey(pair: try ReceiverKeyPair.generate(id: id), createdMs: 0,
                                              supersededMs: id < UInt32(ReceiverKeyRing.cap) ? 1 : nil))
        }
        let ring = ReceiverKeyRing(own: own, lastID: UInt32(ReceiverKeyRing.cap), peerKey: nil, pending: [:], releasedPeer: 0)
        let contacts = Int64(200)
        for contact in 0..<contacts {
            cache.keep(.init(ring: ring, state: nil), contact, cipher: cipher, inTransaction: false)
        }
        let ownKept = (0..<contacts).reduce(0) { $0 + (cache.ring($1, cipher: cipher)?.own.count ?? 0) }
        #expect(ownKept <= 1_024)
        #expect(cache.ring(contacts - 1, cipher: cipher)?.own.count == ReceiverKeyRing.cap)
    }
}


extension ReceiverKeyRowsTests {
    /// A deleted contact's kept ring (its own keys' secrets) goes with its rows, and a
    /// contact added after it under the same row ID (SQLite reuses the highest) reads the
    /// disk, not the ring of the one deleted.
    @Test func aDeletedContactsRingIsNotKept() throws {
        let f = try RingStoreFixture()
        defer { f.remove() }
        let cipher = f.cipher
        let (store, id) = try f.storeWithContact()
        try store.saveReceiverKeyRing(try ring(sends: 3), contactID: id, cipher: cipher)
        #expect(store.ringCache.ring(id, cipher: cipher)?.pending.count == 3)
        try store.deleteContact(id, withMessages: true)
        #expect(store.ringCache.ring(id, cipher: cipher) == nil)
        let again = try f.contact(store)
        #expect(try store.receiverKeyRing(contactID: again, cipher: cipher).own.isEmpty)
        #expect(try store.receiverKeyRing(contactID: again, cipher: cipher).pending.isEmpty)
    }
}
