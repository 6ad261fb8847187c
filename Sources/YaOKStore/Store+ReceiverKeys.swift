import YaOKSupport
import YaOKCrypto

/// Forward-secrecy key state per contact (docs/PROTOCOL.md §13.3; migration 14), sealed by
/// the unlocked node's field cipher like every other secret. Saving a ring deletes the rows
/// of the keys it no longer holds and then checkpoints the write-ahead log, so that with
/// `secure_delete` (Database) no page of the file or the log keeps an erased key, even sealed:
/// a seizure with the PIN opens the vault, and so would open a stale sealed copy.
extension Store {
    /// The contacts that have key state (for the hourly expiry).
    package func contactsWithReceiverKeys() throws -> [Int64] {
        try db.rows("SELECT DISTINCT contact_id FROM receiver_keys ORDER BY contact_id") { $0.int64(0) }
    }

    /// An own receiver key's sealed row: secret, created and superseded times, public key.
    /// Rows of 48 bytes (without the public key) written before it was kept still read.
    static let ownKeyRowLength = 80

    /// The ring for `contactID`, or an empty one: as kept since it was last read or written
    /// (ReceiverKeyRingCache), else read from its rows.
    package func receiverKeyRing(contactID: Int64, cipher: FieldCipher) throws -> ReceiverKeyRing {
        if let kept = ringCache.ring(contactID, cipher: cipher) { return kept }
        var (ring, state) = try readReceiverKeyRing(contactID: contactID, cipher: cipher)
        ring.markStored(version: ringCache.nextVersion())
        ringCache.keep(.init(ring: ring, state: state), contactID, cipher: cipher, inTransaction: db.inTransaction)
        return ring
    }

    /// The ring for `contactID`, to be changed and then saved (saveReceiverKeyRing): as
    /// `receiverKeyRing`, but the kept copy lets go of its unsettled sends meanwhile, so that
    /// telling the ring of a send or an ack copies none of the up to 4,096 it holds. Read
    /// again before it is saved, it comes from the rows.
    package func receiverKeyRingToChange(contactID: Int64, cipher: FieldCipher) throws -> ReceiverKeyRing {
        if let ring = ringCache.take(contactID, cipher: cipher) { return ring }
        let ring = try receiverKeyRing(contactID: contactID, cipher: cipher)
        return ringCache.take(contactID, cipher: cipher) ?? ring
    }

    /// The ring as its rows hold it, and its state row's plaintext (nil: none). A state row
    /// written before migration 18 holds the unsettled sends itself: they move into rows of
    /// their own here, at the first read with the key.
    private func readReceiverKeyRing(contactID: Int64, cipher: FieldCipher) throws -> (ReceiverKeyRing, [UInt8]?) {
        var own: [ReceiverKeyRing.OwnKey] = []
        try db.query("SELECT key_id, sealed FROM receiver_keys WHERE contact_id = ? ORDER BY key_id", [.int(contactID)]) { row in
            let keyID = UInt32(truncatingIfNeeded: row.int64(0))
            var plain = try cipher.open(row.blob(1), ad: RowAD.receiverKey(contactID: contactID, keyID: keyID))
            defer { Sodium.wipe(&plain) }
            // secret (32) || created (8) || superseded (8) [|| public key (32)]: rows written
            // since the public key was kept need no base multiplication to load (a ring is
            // loaded for every packet from the contact: up to 32 X25519s each before).
            guard plain.count == Self.ownKeyRowLength || plain.count == Self.ownKeyRowLength - 32 else {
                throw FieldCipher.failure
            }
            let superseded = Int64(bigEndianBytes: plain[40..<48])
            let secret = try SecureBytes(copying: plain[0..<32], in: .receiverKeys)  // no unwiped Array copy
            let pair = plain.count == Self.ownKeyRowLength
                ? try ReceiverKeyPair(id: keyID, secret: secret, publicKey: Array(plain[48..<80]))
                : try ReceiverKeyPair(id: keyID, secret: secret)
            own.append(ReceiverKeyRing.OwnKey(pair: pair, createdMs: Int64(bigEndianBytes: plain[32..<40]),
                                              supersededMs: superseded < 0 ? nil : superseded))
        }
        var pending = try pendingSends(contactID: contactID, cipher: cipher)
        let sealedState = try db.rows("SELECT sealed FROM receiver_key_state WHERE contact_id = ?", [.int(contactID)]) { $0.blob(0) }.first
        guard let sealedState else {
            return (ReceiverKeyRing(own: own, lastID: own.last?.pair.key.id ?? 0, peerKey: nil, pending: pending, releasedPeer: 0), nil)
        }
        var state = try cipher.open(sealedState, ad: RowAD.receiverKeyState(contactID: contactID))
        let decoded = try Self.decodeRingState(state[...], own: own)
        if !decoded.pending.isEmpty {
            try db.transaction {
                for (id, entry) in decoded.pending where pending[id] == nil {
                    try writePendingSend(id, entry, contactID: contactID, cipher: cipher)
                    pending[id] = entry
                }
                state = Self.encodeRingState(decoded)
                try writeRingState(state, contactID: contactID, cipher: cipher)
            }
        }
        return (ReceiverKeyRing(own: own, lastID: decoded.lastID, peerKey: decoded.peerKey, pending: pending,
                                releasedPeer: decoded.releasedPeer), state)
    }

    /// The unsettled sends' rows of `contactID`: message ID → (the contact's key sealed to, expiry).
    private func pendingSends(contactID: Int64, cipher: FieldCipher) throws -> PendingSends.Storage {
        var pending: PendingSends.Storage = [:]
        try db.query("SELECT message_id, sealed FROM receiver_key_pending WHERE contact_id = ?", [.int(contactID)]) { row in
            let id = row.blob(0)
            let plain = try cipher.open(row.blob(1), ad: RowAD.receiverKeyPending(contactID: contactID, messageID: id))
            guard plain.count == 12 else { throw FieldCipher.failure }
            pending[id] = (UInt32(bigEndianBytes: plain[0..<4]), Int64(bigEndianBytes: plain[4..<12]))
        }
        return pending
    }

    /// key ID (u32) || expiry (i64), sealed with the contact and message ID in its AD.
    private func writePendingSend(_ id: [UInt8], _ entry: PendingSends.Entry, contactID: Int64, cipher: FieldCipher) throws {
        let sealed = try cipher.seal(entry.keyID.bigEndianBytes + entry.expiresMs.bigEndianBytes,
                                     ad: RowAD.receiverKeyPending(contactID: contactID, messageID: id))
        try db.query("INSERT OR REPLACE INTO receiver_key_pending (contact_id, message_id, sealed) VALUES (?, ?, ?)",
                     [.int(contactID), .blob(id), .blob(sealed)])
    }

    private func writeRingState(_ state: [UInt8], contactID: Int64, cipher: FieldCipher) throws {
        let sealed = try cipher.seal(state, ad: RowAD.receiverKeyState(contactID: contactID))
        try db.query("INSERT OR REPLACE INTO receiver_key_state (contact_id, sealed) VALUES (?, ?)",
                     [.int(contactID), .blob(sealed)])
    }

    /// Writes `ring` for `contactID`: the keys it holds that are new or changed (sealed anew),
    /// the rest of its state when it changed, its unsettled sends that changed, and erases the
    /// rows of keys it no longer holds. Returns how many keys were erased.
    ///
    /// A ring as last read or written (its `storeVersion` the one kept) is compared with the
    /// kept copy, and only the sends it touched since are written: a send writes one row, not
    /// the 4,096 a sender may hold. Any other ring is compared with the rows themselves.
    ///
    /// `savepoint: false` inside a caller's transaction that rolls back whole when this throws
    /// (a group commit of sends, a batch of own carried copies): no savepoint of its own, which
    /// cost two statements and SQLite's copies of the pages it changes under the node's lock
    /// at every group. Outside a transaction it is one all the same.
    @discardableResult
    package func saveReceiverKeyRing(_ ring: ReceiverKeyRing, contactID: Int64, cipher: FieldCipher,
                                     savepoint: Bool = true) throws -> Int {
        let write = { [self] () throws -> Int in
            let kept = ringCache.kept(contactID, cipher: cipher)
            // whole: every send compared; holdsPending: stored.ring's sends are the rows'.
            let stored: (ring: ReceiverKeyRing, state: [UInt8]?, whole: Bool, holdsPending: Bool)
            if let kept, let version = ring.storeVersion, kept.ring.storeVersion == version {
                stored = (kept.ring, kept.state, false, kept.holdsPending)
            } else {
                let (disk, state) = try readReceiverKeyRing(contactID: contactID, cipher: cipher)
                stored = (disk, state, true, true)
            }
            // What each stored key's superseded time is: a row is written only when new or
            // changed, so that an erased row's bytes are not papered over by chance (the
            // test of erasure must see what secure_delete does).
            var superseded: [Int64: Int64] = [:]
            for key in stored.ring.own { superseded[Int64(key.pair.key.id)] = key.supersededMs ?? -1 }
            let held = Set(ring.own.map { Int64($0.pair.key.id) })
            let gone = superseded.keys.filter { !held.contains($0) }.sorted()
            for keyID in gone {
                try db.query("DELETE FROM receiver_keys WHERE contact_id = ? AND key_id = ?", [.int(contactID), .int(keyID)])
            }
            for key in ring.own where superseded[Int64(key.pair.key.id)] != (key.supersededMs ?? -1) {
                var plain = key.pair.secret.withUnsafeBytes { Array($0) } + key.createdMs.bigEndianBytes
                    + (key.supersededMs ?? -1).bigEndianBytes + key.pair.key.publicKey
                defer { Sodium.wipe(&plain) }
                let sealed = try cipher.seal(plain, ad: RowAD.receiverKey(contactID: contactID, keyID: key.pair.key.id))
                try db.query("INSERT OR REPLACE INTO receiver_keys (contact_id, key_id, sealed) VALUES (?, ?, ?)",
                             [.int(contactID), .int(Int64(key.pair.key.id)), .blob(sealed)])
            }
            let state = Self.encodeRingState(ring)
            if state != stored.state { try writeRingState(state, contactID: contactID, cipher: cipher) }
            let changed = stored.whole
                ? Set(stored.ring.pending.map(\.key)).union(ring.pending.map(\.key)) : ring.pending.touched
            for id in changed where !(stored.holdsPending && Self.same(ring.pending[id], stored.ring.pending[id])) {
                if let entry = ring.pending[id] {
                    try writePendingSend(id, entry, contactID: contactID, cipher: cipher)
                } else {
                    try db.query("DELETE FROM receiver_key_pending WHERE contact_id = ? AND message_id = ?",
                                 [.int(contactID), .blob(id)])
                }
            }
            var saved = ring
            saved.markStored(version: ringCache.nextVersion())
            ringCache.keep(.init(ring: saved, state: state), contactID, cipher: cipher, inTransaction: true)
            return gone.count
        }
        let erased = try !savepoint && db.inTransaction ? write() : db.transaction(write)
        if erased > 0 { eraseFreedPages() }
        return erased
    }

    private static func same(_ a: PendingSends.Entry?, _ b: PendingSends.Entry?) -> Bool {
        a?.keyID == b?.keyID && a?.expiresMs == b?.expiresMs
    }

    /// last ID (u32) || released (u32) || peer key present (u8) [|| peer key (36)] ||
    /// pending count (u32) || count × (message ID (16) || key ID (u32) || expiry (i64)).
    ///
    /// Since migration 18 the unsettled sends are rows of their own (receiver_key_pending)
    /// and the count written is 0; `pending` is for writing the form before it (tests).
    /// Pending entries in message-ID order, so equal rings encode alike: the order is taken
    /// on the IDs' two big-endian halves (the same order as comparing the 16 bytes).
    static func encodeRingState(_ ring: ReceiverKeyRing, pending: PendingSends.Storage = [:]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(9 + ReceiverKey.encodedLength + 4 + pending.count * 28)
        out += ring.lastID.bigEndianBytes
        out += ring.releasedPeer.bigEndianBytes
        if let peer = ring.peerKey { out.append(1); out += peer.encoded } else { out.append(0) }
        out += UInt32(pending.count).bigEndianBytes
        let ordered = pending.map { (order: Self.orderKey($0.key), id: $0.key, entry: $0.value) }
            .sorted { $0.order < $1.order }
        for (_, id, entry) in ordered {
            out += id
            out += entry.keyID.bigEndianBytes
            out += entry.expiresMs.bigEndianBytes
        }
        return out
    }

    /// A message ID (16 bytes) as two big-endian integers: tuples of them order as the bytes do.
    private static func orderKey(_ id: [UInt8]) -> (UInt64, UInt64) {
        var hi: UInt64 = 0, lo: UInt64 = 0
        for (i, byte) in id.prefix(16).enumerated() {
            if i < 8 { hi = hi << 8 | UInt64(byte) } else { lo = lo << 8 | UInt64(byte) }
        }
        return (hi, lo)
    }

    static func decodeRingState(_ bytes: ArraySlice<UInt8>, own: [ReceiverKeyRing.OwnKey]) throws -> ReceiverKeyRing {
        var rest = bytes
        func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard rest.count >= n else { throw FieldCipher.failure }
            defer { rest = rest.dropFirst(n) }
            return rest.prefix(n)
        }
        let lastID = UInt32(bigEndianBytes: try take(4)), released = UInt32(bigEndianBytes: try take(4))
        let peer: ReceiverKey? = try take(1).first == 1 ? try ReceiverKey(encoded: try take(ReceiverKey.encodedLength)) : nil
        var pending: [[UInt8]: (keyID: UInt32, expiresMs: Int64)] = [:]
        let count = UInt32(bigEndianBytes: try take(4))
        guard Int(count) <= rest.count / 28 else { throw FieldCipher.failure }
        pending.reserveCapacity(Int(count))
        for _ in 0..<count {
            let id = Array(try take(16))
            pending[id] = (UInt32(bigEndianBytes: try take(4)), Int64(bigEndianBytes: try take(8)))
        }
        guard rest.isEmpty else { throw FieldCipher.failure }
        return ReceiverKeyRing(own: own, lastID: lastID, peerKey: peer, pending: pending, releasedPeer: released)
    }
}

extension RowAD {
    static func receiverKey(contactID: Int64, keyID: UInt32) -> [UInt8] {
        Array("YaOK-receiver-key-v1".utf8) + bigEndian(UInt64(bitPattern: contactID)) + bigEndian(UInt64(keyID))
    }
    static func receiverKeyState(contactID: Int64) -> [UInt8] {
        Array("YaOK-receiver-key-state-v1".utf8) + bigEndian(UInt64(bitPattern: contactID))
    }
    static func receiverKeyPending(contactID: Int64, messageID: [UInt8]) -> [UInt8] {
        Array("YaOK-receiver-key-pending-v1".utf8) + bigEndian(UInt64(bitPattern: contactID)) + messageID
    }
}

extension FixedWidthInteger {
    var bigEndianBytes: [UInt8] { withUnsafeBytes(of: self.bigEndian, Array.init) }
    init(bigEndianBytes bytes: ArraySlice<UInt8>) {
        self = bytes.reduce(Self.zero) { $0 << 8 | Self(truncatingIfNeeded: $1) }
    }
}
