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

    /// The ring for `contactID`, or an empty one.
    package func receiverKeyRing(contactID: Int64, cipher: FieldCipher) throws -> ReceiverKeyRing {
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
            let secret = try SecureBytes(copying: Array(plain[0..<32]))
            let pair = plain.count == Self.ownKeyRowLength
                ? try ReceiverKeyPair(id: keyID, secret: secret, publicKey: Array(plain[48..<80]))
                : try ReceiverKeyPair(id: keyID, secret: secret)
            own.append(ReceiverKeyRing.OwnKey(pair: pair, createdMs: Int64(bigEndianBytes: plain[32..<40]),
                                              supersededMs: superseded < 0 ? nil : superseded))
        }
        let state = try db.rows("SELECT sealed FROM receiver_key_state WHERE contact_id = ?", [.int(contactID)]) { $0.blob(0) }.first
        guard let state else { return ReceiverKeyRing(own: own, lastID: own.last?.pair.key.id ?? 0, peerKey: nil, pending: [:], releasedPeer: 0) }
        let plain = try cipher.open(state, ad: RowAD.receiverKeyState(contactID: contactID))
        return try Self.decodeRingState(plain[...], own: own)
    }

    /// Writes `ring` for `contactID`: the keys it holds (sealed anew), the rest of its state,
    /// and erases the rows of keys it no longer holds. Returns how many keys were erased.
    @discardableResult
    package func saveReceiverKeyRing(_ ring: ReceiverKeyRing, contactID: Int64, cipher: FieldCipher) throws -> Int {
        let erased = try db.transaction { () -> Int in
            let held = Set(ring.own.map { Int64($0.pair.key.id) })
            // What each stored key's superseded time is: a row is written only when new or
            // changed, so that an erased row's bytes are not papered over by chance (the
            // test of erasure must see what secure_delete does).
            var stored: [Int64: Int64] = [:]
            try db.query("SELECT key_id, sealed FROM receiver_keys WHERE contact_id = ?", [.int(contactID)]) { row in
                let keyID = row.int64(0)
                var plain = try cipher.open(row.blob(1), ad: RowAD.receiverKey(contactID: contactID, keyID: UInt32(truncatingIfNeeded: keyID)))
                defer { Sodium.wipe(&plain) }
                guard plain.count == Self.ownKeyRowLength || plain.count == Self.ownKeyRowLength - 32 else {
                    throw FieldCipher.failure
                }
                stored[keyID] = Int64(bigEndianBytes: plain[40..<48])
            }
            let gone = stored.keys.filter { !held.contains($0) }.sorted()
            for keyID in gone {
                try db.query("DELETE FROM receiver_keys WHERE contact_id = ? AND key_id = ?", [.int(contactID), .int(keyID)])
            }
            for key in ring.own where stored[Int64(key.pair.key.id)] != (key.supersededMs ?? -1) {
                var plain = key.pair.secret.withUnsafeBytes { Array($0) } + key.createdMs.bigEndianBytes
                    + (key.supersededMs ?? -1).bigEndianBytes + key.pair.key.publicKey
                defer { Sodium.wipe(&plain) }
                let sealed = try cipher.seal(plain, ad: RowAD.receiverKey(contactID: contactID, keyID: key.pair.key.id))
                try db.query("INSERT OR REPLACE INTO receiver_keys (contact_id, key_id, sealed) VALUES (?, ?, ?)",
                             [.int(contactID), .int(Int64(key.pair.key.id)), .blob(sealed)])
            }
            let state = try cipher.seal(Self.encodeRingState(ring), ad: RowAD.receiverKeyState(contactID: contactID))
            try db.query("INSERT OR REPLACE INTO receiver_key_state (contact_id, sealed) VALUES (?, ?)",
                         [.int(contactID), .blob(state)])
            return gone.count
        }
        if erased > 0 { eraseFreedPages() }
        return erased
    }

    /// Moves every page out of the write-ahead log into the file (where secure_delete has
    /// zeroed what was freed) and truncates the log, so that no older copy of a page remains:
    /// at once, or after the outermost commit when called inside a transaction.
    package func eraseFreedPages() {
        db.checkpointSoon()
    }

    /// last ID (u32) || released (u32) || peer key present (u8) [|| peer key (36)] ||
    /// pending count (u32) || count × (message ID (16) || key ID (u32) || expiry (i64)).
    ///
    /// Pending entries in message-ID order, so equal rings encode alike. A sender's ring holds
    /// up to 4,096 of them and is written at every send: the order is taken on the IDs' two
    /// big-endian halves (the same order as comparing the 16 bytes, without a byte-by-byte
    /// comparison of arrays), and the output is sized once.
    static func encodeRingState(_ ring: ReceiverKeyRing) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(9 + ReceiverKey.encodedLength + 4 + ring.pending.count * 28)
        out += ring.lastID.bigEndianBytes
        out += ring.releasedPeer.bigEndianBytes
        if let peer = ring.peerKey { out.append(1); out += peer.encoded } else { out.append(0) }
        out += UInt32(ring.pending.count).bigEndianBytes
        let ordered = ring.pending.map { (order: Self.orderKey($0.key), id: $0.key, entry: $0.value) }
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
}

extension FixedWidthInteger {
    var bigEndianBytes: [UInt8] { withUnsafeBytes(of: self.bigEndian, Array.init) }
    init(bigEndianBytes bytes: ArraySlice<UInt8>) {
        self = bytes.reduce(Self.zero) { $0 << 8 | Self(truncatingIfNeeded: $1) }
    }
}
