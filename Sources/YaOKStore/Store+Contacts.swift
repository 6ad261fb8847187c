import YaOKSupport
import YaOKWire
import YaOKCrypto

/// Contacts and the conversations they belong to. Names and public keys are AEAD
/// ciphertexts bound to the person's lookup hash and the row id; the lookup hash finds
/// duplicates.
extension Store {
    package struct ContactRecord {
        package let id: Int64
        package let name: String
        package let publicIdentity: PublicIdentity
        package let verified: Bool
        package let addedAt: Int64
        package let lastSeen: Int64?
        let lastTransport: String?
    }

    package func conversationID(lookup: [UInt8]) throws -> Int64? {
        try db.rows("SELECT id FROM conversations WHERE peer_lookup = ?", [.blob(lookup)]) { $0.int64(0) }.first
    }

    /// Adds a contact for `card`, reusing the conversation kept from an earlier deletion of
    /// the same person so that the old history reappears. Returns the contact id.
    package func insertContact(_ card: ContactCard, lookup: [UInt8], cipher: FieldCipher, now: Int64) throws -> Int64 {
        try db.transaction {
            let id: Int64
            if let existing = try conversationID(lookup: lookup) {
                id = existing
            } else {
                // The row id is part of the title's associated data: insert, then seal.
                try db.query("INSERT INTO conversations (peer_lookup, title) VALUES (?, x'')", [.blob(lookup)])
                id = db.lastInsertRowID
            }
            let title = try cipher.seal(Array(card.name.utf8), ad: RowAD.conversationTitle(lookup, id: id))
            try db.query("UPDATE conversations SET title = ? WHERE id = ?", [.blob(title), .int(id)])
            try db.query("INSERT INTO contacts (id, name, keys, verified, added_ms, card, mac) VALUES (?, ?, ?, 0, ?, ?, ?)",
                         [.int(id), .blob(try cipher.seal(Array(card.name.utf8), ad: RowAD.contactName(lookup, id: id))),
                          .blob(try cipher.seal(card.publicIdentity.keyBytes, ad: RowAD.contactKeys(lookup, id: id))),
                          .int(now), .blob(try cipher.seal(Array(card.text.utf8), ad: RowAD.contactCard(lookup, id: id))),
                          .blob(cipher.mac(.contact(id: id, lookup: lookup, verified: false, addedAt: now)))])
            return id
        }
    }

    /// All contacts, or the one with `id`.
    package func contactRecords(cipher: FieldCipher, id: Int64? = nil) throws -> [ContactRecord] {
        var sql = """
            SELECT c.id, v.peer_lookup, c.name, c.keys, c.verified, c.added_ms, c.last_seen_ms, c.last_transport, c.mac
            FROM contacts c JOIN conversations v ON v.id = c.id
            """
        var args: [SQLValue] = []
        if let id {
            sql += " WHERE c.id = ?"
            args.append(.int(id))
        }
        var records: [ContactRecord] = []
        try db.query(sql, args) { row in
            let id = row.int64(0)
            let lookup = row.blob(1)
            guard cipher.verify(row.isNull(8) ? nil : row.blob(8),
                                .contact(id: id, lookup: lookup, verified: row.int(4) != 0, addedAt: row.int64(5))) else {
                throw Store.contactAltered
            }
            let keyBytes = try cipher.open(row.blob(3), ad: RowAD.contactKeys(lookup, id: id))
            guard keyBytes.count == 64 else { throw FieldCipher.failure }
            records.append(ContactRecord(
                id: id,
                name: try cipher.openString(row.blob(2), ad: RowAD.contactName(lookup, id: id)),
                publicIdentity: try PublicIdentity(encryptionKey: Array(keyBytes[0..<32]), signingKey: Array(keyBytes[32..<64])),
                verified: row.int(4) != 0,
                addedAt: row.int64(5),
                lastSeen: row.isNull(6) ? nil : row.int64(6),
                lastTransport: row.isNull(7) ? nil : row.text(7)))
        }
        return records
    }

    /// The signed card the contact was added with (nil for a contact stored before cards were kept).
    package func contactCard(_ id: Int64, cipher: FieldCipher) throws -> String? {
        try db.rows("SELECT v.peer_lookup, c.card FROM contacts c JOIN conversations v ON v.id = c.id WHERE c.id = ?",
                    [.int(id)]) { row -> String? in
            guard !row.isNull(1) else { return nil }
            return try cipher.openString(row.blob(1), ad: RowAD.contactCard(row.blob(0), id: id))
        }.first ?? nil
    }

    /// Needs the store attached (unlocked): the row's MAC is checked, then rewritten.
    package func setContactVerified(_ id: Int64) throws {
        let cipher = try requireAttached()
        try db.transaction {
            guard let (lookup, verified, added, mac) = try db.rows("""
                SELECT v.peer_lookup, c.verified, c.added_ms, c.mac FROM contacts c JOIN conversations v ON v.id = c.id
                WHERE c.id = ?
                """, [.int(id)], map: { ($0.blob(0), $0.int(1) != 0, $0.int64(2), $0.isNull(3) ? nil : $0.blob(3)) }).first else {
                return
            }
            guard cipher.verify(mac, .contact(id: id, lookup: lookup, verified: verified, addedAt: added)) else {
                throw Store.contactAltered
            }
            try db.query("UPDATE contacts SET verified = 1, mac = ? WHERE id = ?",
                         [.blob(cipher.mac(.contact(id: id, lookup: lookup, verified: true, addedAt: added))), .int(id)])
        }
    }

    static let contactAltered = YaOKError(.corruptStore,
        "The data store is corrupt: a contact's verification or date was changed outside Ya OK")

    package func renameContact(_ id: Int64, to name: String, cipher: FieldCipher) throws {
        guard let lookup = try db.rows("SELECT peer_lookup FROM conversations WHERE id = ?", [.int(id)], map: { $0.blob(0) }).first else {
            throw YaOKError(.notFound, "No such contact")
        }
        try db.transaction {
            try db.query("UPDATE contacts SET name = ? WHERE id = ?",
                         [.blob(try cipher.seal(Array(name.utf8), ad: RowAD.contactName(lookup, id: id))), .int(id)])
            try db.query("UPDATE conversations SET title = ? WHERE id = ?",
                         [.blob(try cipher.seal(Array(name.utf8), ad: RowAD.conversationTitle(lookup, id: id))), .int(id)])
        }
    }

    /// Deletes the contact (its public keys go with it). With `withMessages` the whole
    /// conversation goes (messages by ON DELETE CASCADE); otherwise the conversation stays
    /// only if it still has messages, so no row is left pointing at nothing.
    package func deleteContact(_ id: Int64, withMessages: Bool) throws {
        try db.transaction {
            ringCache.forget(id)  // its rings' rows go by ON DELETE CASCADE
            if withMessages {
                sentTexts.removeAll()  // no deleted text stays in memory (any contact's: rare)
                try db.query("DELETE FROM conversations WHERE id = ?", [.int(id)])
            } else {
                try db.query("DELETE FROM contacts WHERE id = ?", [.int(id)])
                // What was still waiting to go to this person will never go: no keys left.
                try db.query("DELETE FROM outbox WHERE contact_id = ?", [.int(id)])
                try db.query("DELETE FROM conversations WHERE id = ? AND NOT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?)",
                             [.int(id), .int(id)])
            }
        }
    }

    package func contactExists(_ id: Int64) throws -> Bool {
        !(try db.rows("SELECT 1 FROM contacts WHERE id = ?", [.int(id)]) { _ in true }).isEmpty
    }

    package func conversationExists(_ id: Int64) throws -> Bool {
        !(try db.rows("SELECT 1 FROM conversations WHERE id = ?", [.int(id)]) { _ in true }).isEmpty
    }

    package func setLastSeen(_ id: Int64, time: Int64, transport: String) throws {
        try db.query("UPDATE contacts SET last_seen_ms = ?, last_transport = ? WHERE id = ?", [.int(time), .text(transport), .int(id)])
    }
}
