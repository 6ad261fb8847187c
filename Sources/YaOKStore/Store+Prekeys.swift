import YaOKSupport
import YaOKCrypto

/// The node's prekeys (docs/PROTOCOL.md §13.4; migration 16): the receiver keys its version 2
/// card publishes, one per UTC day at most, for every contact's first messages. Each secret
/// is sealed by the unlocked node's field cipher in its own row, so that erasing one deletes
/// the row and, with `secure_delete` and the log checkpoint (Store+ReceiverKeys), leaves no
/// copy in the file. The row seals secret || public key (64 bytes): a packet that matches
/// no per-contact key reads every prekey to compare selectors, and recomputing 23 public
/// keys (an X25519 base multiplication each) for each such packet, junk included, would
/// let whoever replays a routing tag make the node do 23 times the work of one open.
extension Store {
    /// Every prekey held, oldest first.
    package func prekeys(cipher: FieldCipher) throws -> [ReceiverKeyPair] {
        var out: [ReceiverKeyPair] = []
        try db.query("SELECT key_id, sealed FROM prekeys ORDER BY key_id") { row in
            let keyID = UInt32(truncatingIfNeeded: row.int64(0))
            var plain = try cipher.open(row.blob(1), ad: RowAD.prekey(keyID: keyID))
            defer { Sodium.wipe(&plain) }
            guard plain.count == 64 else { throw FieldCipher.failure }
            out.append(try ReceiverKeyPair(id: keyID, secret: SecureBytes(copying: Array(plain[0..<32])),
                                           publicKey: Array(plain[32...])))
        }
        return out
    }

    /// The prekey of UTC day `day`, made and stored if there is none yet.
    package func prekey(day: Int64, cipher: FieldCipher) throws -> ReceiverKeyPair {
        let id = ReceiverKey.prekeyID(day: day)
        if let held = try prekeys(cipher: cipher).first(where: { $0.key.id == id }) { return held }
        let pair = try ReceiverKeyPair.generate(id: id)
        var plain = pair.secret.withUnsafeBytes { Array($0) } + pair.key.publicKey  // secret || public (64)
        defer { Sodium.wipe(&plain) }
        let sealed = try cipher.seal(plain, ad: RowAD.prekey(keyID: id))
        try db.query("INSERT INTO prekeys (key_id, sealed) VALUES (?, ?)", [.int(Int64(id)), .blob(sealed)])
        return pair
    }

    /// Erases the prekeys whose retention has passed at `nowMs` (§13.4: 23 days after their
    /// day). Returns how many.
    @discardableResult
    package func expirePrekeys(nowMs: Int64) throws -> Int {
        let ids = try db.rows("SELECT key_id FROM prekeys") { UInt32(truncatingIfNeeded: $0.int64(0)) }
            .filter { Prekey.isExpired(id: $0, nowMs: nowMs) }
        guard !ids.isEmpty else { return 0 }
        try db.transaction {
            for id in ids { try db.query("DELETE FROM prekeys WHERE key_id = ?", [.int(Int64(id))]) }
        }
        eraseFreedPages()
        return ids.count
    }
}

extension RowAD {
    static func prekey(keyID: UInt32) -> [UInt8] {
        Array("YaOK-prekey-v1".utf8) + bigEndian(UInt64(keyID))
    }
}
