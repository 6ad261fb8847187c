import YaOKSupport
import YaOKWire
import YaOKCrypto

/// Integrity of what the store keeps in clear (issue 8 §5; docs/ABI.md, "Storage").
///
/// Someone who can write `yaok.db` but has no keys must not be able to mark a contact
/// verified, change a message's status, times or read state, redirect an outbox entry, or
/// erase security events (a `wrong_pin` most of all) without it being noticed.
///
/// Rows written while unlocked — contacts, messages, outbox entries — carry a MAC under a
/// sub-key of the database key (FieldCipher.mac) over the row's identity and its clear
/// columns (RowMAC). It is checked on every read with the key; a mismatch is `corruptStore`.
/// Outbox rows are also read while locked (links go on sending): only then are they used
/// unchecked, and what their MAC does not cover (state, attempts, next attempt) is
/// scheduling, whose forgery delays or hastens a retry — what deleting the row does anyway.
///
/// The security log is mostly written while locked (`wrong_pin`, `lockout`), when there is
/// no key. It is a hash chain: each event stores BLAKE2b(previous chain value, its id,
/// time, kind, detail, tampered flag), which needs no key, and once the key is at hand
/// (every unlock, and every event written while unlocked) each chain value gets a MAC and
/// the log's last event is recorded in a MACed seal (meta 'security_log_seal'). Checked at
/// every unlock and every listing:
///  - an event changed, or one removed from the middle: its chain link (or MAC) fails;
///  - events removed from the end of what was sealed: the seal names an event that is gone;
///  - events removed while the app runs (even locked): the store remembers, in memory, the
///    last event it wrote, and finds it missing;
///  - a seal removed or forged: its MAC.
/// Findings are kept: the events are marked `tampered` (the mark is part of the chain, so
/// it cannot be cleared), and a `log_tampered` event says what was found.
///
/// What it cannot stop: events written while locked can be changed or removed, together
/// with the chain after them, by someone who edits the file while the app is not running,
/// before the next unlock: a locked node holds no key such a person lacks. (A key bound to
/// device hardware, issue 8 §1, is what would close this.) Nor can any of it stop the
/// whole file being replaced by an older copy of itself.
///
/// Stores set up before schema 8 (vault format 1) have rows without MACs: the first unlock
/// adopts them — when the log has no seal and no row anywhere has integrity data — and
/// reseals the vault in format 2, which from then on rules adoption out for that vault.
/// (Whoever strips every MAC and chain and puts back a format-1 vault row from an older
/// copy can still have such a store adopted.) Stores set up since never adopt: a row
/// without a MAC is tampering.
extension Store {
    static let logSealKey = "security_log_seal"
    static let logGenesis = [UInt8](repeating: 0, count: 32)
    static let logChainKey = Array("YaOK-security-log-chain-v1".utf8)

    // MARK: - Attach and detach

    /// Called at each unlock, with the unlocked keys and the vault contents they came from.
    /// Adopts a pre-integrity store's rows, saves the vault resealed in the current format,
    /// then checks the security log and seals what was written while locked. Returns the
    /// `log_tampered` event it wrote, if it found the log altered, for the node to announce.
    package func attach(_ cipher: FieldCipher, vault contents: VaultContents, now: Int64) throws -> [SecurityEvent] {
        attached = cipher
        do {
            return try db.transaction {
                let seal = try storedLogSeal()
                let adopting = try seal == nil && contents.format < 2 && !hasIntegrityData()
                // Decided before the vault upgrade below, whose saveVault must not count as a setup.
                let starting = seal == nil && (adopting || startingLog)
                if adopting { try adoptRows(cipher) }
                if let upgraded = contents.upgradedVault { try saveVault(upgraded) }
                startingLog = false
                return try checkLog(cipher, starting: starting, now: now)
            }
        } catch {
            attached = nil
            throw error
        }
    }

    /// Called when the node locks: authenticated writes need the key again, the rings
    /// kept decoded (their own keys' secrets) are dropped, and an erasure still waiting
    /// for its checkpoint (Store+Erasure) gets it now.
    package func detach() {
        attached = nil
        ringCache.removeAll()
        sentTexts.removeAll()
        erasePendingPages()
    }

    func requireAttached() throws -> FieldCipher {
        guard let attached else { throw YaOKError(.locked) }
        return attached
    }

    /// Whether any row anywhere carries integrity data (then nothing may be adopted).
    private func hasIntegrityData() throws -> Bool {
        try db.rows("""
            SELECT EXISTS (SELECT 1 FROM contacts WHERE mac IS NOT NULL)
                OR EXISTS (SELECT 1 FROM messages WHERE mac IS NOT NULL)
                OR EXISTS (SELECT 1 FROM outbox WHERE mac IS NOT NULL)
                OR EXISTS (SELECT 1 FROM security_events WHERE mac IS NOT NULL OR chain IS NOT NULL)
            """) { $0.int(0) != 0 }.first ?? false
    }

    /// MACs every row of a pre-integrity store as it stands (trust on first unlock).
    private func adoptRows(_ cipher: FieldCipher) throws {
        let contacts = try db.rows("""
            SELECT c.id, v.peer_lookup, c.verified, c.added_ms FROM contacts c JOIN conversations v ON v.id = c.id
            """) { ($0.int64(0), $0.blob(1), $0.int(2) != 0, $0.int64(3)) }
        for (id, lookup, verified, added) in contacts {
            try db.query("UPDATE contacts SET mac = ? WHERE id = ?",
                         [.blob(cipher.mac(.contact(id: id, lookup: lookup, verified: verified, addedAt: added))), .int(id)])
        }
        let messages = try db.rows("""
            SELECT id, conversation_id, message_id, direction, status, sender_ts_ms, created_ms, sent_ms, received_ms, unread
            FROM messages
            """) { row in
            (row.int64(0), RowMAC.message(conversation: row.int64(1), messageID: row.blob(2), direction: row.int(3),
                                          status: row.int(4), senderTimestamp: row.int64(5), createdAt: row.int64(6),
                                          sentAt: row.isNull(7) ? nil : row.int64(7), receivedAt: row.isNull(8) ? nil : row.int64(8),
                                          unread: row.int(9) != 0))
        }
        for (id, input) in messages {
            try db.query("UPDATE messages SET mac = ? WHERE id = ?", [.blob(cipher.mac(input)), .int(id)])
        }
        let outbox = try db.rows("SELECT seq, packet_id, kind, contact_id, expires_ms, packet FROM outbox") { row in
            (row.int64(0), RowMAC.outbox(packetID: row.blob(1), kind: row.int(2), contactID: row.int64(3),
                                         expiresAt: row.int64(4), packet: row.blob(5)))
        }
        for (seq, input) in outbox {
            try db.query("UPDATE outbox SET mac = ? WHERE seq = ?", [.blob(cipher.mac(input)), .int(seq)])
        }
    }

    // MARK: - The security log's chain and seal

    struct LogRow {
        let id: Int64
        let time: Int64
        let kind: String
        let detail: String
        let tampered: Bool
        let chain: [UInt8]?
        let mac: [UInt8]?
    }

    struct LogSeal {
        let lastID: Int64
        let head: [UInt8]
        let mac: [UInt8]
    }

    /// The chain value of an event that follows one whose chain value is `previous`.
    static func logChain(after previous: [UInt8], id: Int64, time: Int64, kind: String, detail: String,
                         tampered: Bool) -> [UInt8] {
        var input = RowMAC("YaOK-security-log-chain-v1")
        input.blob(previous); input.int(id); input.int(time); input.text(kind); input.text(detail); input.int(tampered ? 1 : 0)
        return Sodium.blake2b([input.bytes[...]], key: logChainKey, outputLength: 32)
    }

    static func logChain(after previous: [UInt8], _ row: LogRow, tampered: Bool? = nil) -> [UInt8] {
        logChain(after: previous, id: row.id, time: row.time, kind: row.kind, detail: row.detail,
                 tampered: tampered ?? row.tampered)
    }

    func logRows() throws -> [LogRow] {
        try db.rows("SELECT id, time_ms, kind, detail, tampered, chain, mac FROM security_events ORDER BY id") {
            LogRow(id: $0.int64(0), time: $0.int64(1), kind: $0.text(2), detail: $0.text(3), tampered: $0.int(4) != 0,
                   chain: $0.isNull(5) ? nil : $0.blob(5), mac: $0.isNull(6) ? nil : $0.blob(6))
        }
    }

    /// The stored seal; a malformed one comes back as one that fails verification.
    func storedLogSeal() throws -> LogSeal? {
        try db.rows("SELECT value FROM meta WHERE key = ?", [.text(Store.logSealKey)]) { row -> LogSeal in
            let v = row.blob(0)
            guard v.count == 8 + 32 + FieldCipher.macLength else { return LogSeal(lastID: -1, head: [], mac: []) }
            let id = v[0..<8].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            return LogSeal(lastID: id, head: Array(v[8..<40]), mac: Array(v[40...]))
        }.first
    }

    private func writeLogSeal(_ cipher: FieldCipher, lastID: Int64, head: [UInt8]) throws {
        let mac = cipher.mac(.logSeal(lastID: lastID, head: head))
        try db.query("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                     [.text(Store.logSealKey), .blob(RowAD.bigEndian(UInt64(bitPattern: lastID)) + head + mac)])
    }

    /// Chains a new event onto the log (id already assigned). While unlocked it is also
    /// MACed and sealed. A store whose log has never been sealed (set up before schema 8
    /// and not unlocked since, or not set up yet) leaves it unchained until its first unlock.
    func chainNewEvent(id: Int64, time: Int64, kind: String, detail: String, previous: (id: Int64, chain: [UInt8]?)?) throws {
        noteAnchor(previous)
        guard try attached != nil || storedLogSeal() != nil else {
            logAnchor = nil
            return
        }
        let chain = Store.logChain(after: previous?.chain ?? Store.logGenesis, id: id, time: time, kind: kind,
                                   detail: detail, tampered: false)
        let mac = attached.map { $0.mac(.securityEvent(chain: chain)) }
        try db.query("UPDATE security_events SET chain = ?, mac = ? WHERE id = ?",
                     [.blob(chain), mac.map { .blob($0) } ?? .null, .int(id)])
        if let cipher = attached { try writeLogSeal(cipher, lastID: id, head: chain) }
        setAnchor(id: id, chain: chain)
    }

    /// The anchor is trusted only if no transaction has rolled back since it was set (a
    /// rollback may have taken the anchored event with it).
    private func setAnchor(id: Int64, chain: [UInt8]) {
        logAnchor = (id, chain)
        anchorRollbacks = db.rollbacks
    }

    private var anchorIsReliable: Bool { logAnchor != nil && anchorRollbacks == db.rollbacks }

    /// Before an append: the file's last event should be the one this store last wrote.
    private func noteAnchor(_ last: (id: Int64, chain: [UInt8]?)?) {
        guard anchorIsReliable, let anchor = logAnchor else { return }
        if last?.id != anchor.id || last?.chain != anchor.chain {
            logFindings.append("events were removed or added while Ya OK was running")
        }
    }

    /// Verifies the whole log, marks what fails, rechains and MACs from there, seals, and
    /// logs a `log_tampered` event if anything was found (returned). `starting`: the log
    /// has no seal yet legitimately (first unlock after setup, or adoption).
    func checkLog(_ cipher: FieldCipher, starting: Bool, now: Int64) throws -> [SecurityEvent] {
        let rows = try logRows()
        let seal = try storedLogSeal()
        var findings = logFindings
        logFindings = []
        var flagged = Set<Int64>()

        let sealValid = seal.map { cipher.verify($0.mac, .logSeal(lastID: $0.lastID, head: $0.head)) } ?? false
        var previous = Store.logGenesis
        for row in rows {
            let expected = Store.logChain(after: previous, row)
            guard let chain = row.chain else {
                if !starting { flagged.insert(row.id) }  // once sealed, every event is chained
                previous = expected
                continue
            }
            if chain != expected { flagged.insert(row.id) }
            if let mac = row.mac {
                if !cipher.verify(mac, .securityEvent(chain: chain)) { flagged.insert(row.id) }
            } else if let seal, sealValid, row.id <= seal.lastID {
                flagged.insert(row.id)  // a sealed event lost its MAC
            }
            previous = chain
        }
        if let seal {
            if !sealValid {
                findings.append("its seal was altered")
            } else if let row = rows.first(where: { $0.id == seal.lastID }) {
                if row.chain != seal.head { flagged.insert(row.id) }
            } else {
                findings.append("events were removed")
            }
        } else if !starting {
            findings.append("its seal was removed")
        }
        if anchorIsReliable, let anchor = logAnchor {
            if let row = rows.first(where: { $0.id == anchor.id }) {
                if row.chain != anchor.chain { flagged.insert(row.id) }
            } else {
                findings.append("events were removed while Ya OK was running")
            }
        }

        // Keep the findings: mark, rechain and MAC from the first change on, seal.
        previous = Store.logGenesis
        for row in rows {
            let tampered = row.tampered || flagged.contains(row.id)
            let chain = Store.logChain(after: previous, row, tampered: tampered)
            let mac = cipher.mac(.securityEvent(chain: chain))
            if chain != row.chain || mac != row.mac || tampered != row.tampered {
                try db.query("UPDATE security_events SET chain = ?, mac = ?, tampered = ? WHERE id = ?",
                             [.blob(chain), .blob(mac), .int(tampered ? 1 : 0), .int(row.id)])
            }
            previous = chain
        }
        if let last = rows.last {
            try writeLogSeal(cipher, lastID: last.id, head: previous)
            setAnchor(id: last.id, chain: previous)
        } else {
            try db.query("DELETE FROM meta WHERE key = ?", [.text(Store.logSealKey)])
            logAnchor = nil
        }

        guard !flagged.isEmpty || !findings.isEmpty else { return [] }
        var parts: [String] = []
        if !flagged.isEmpty {
            let ids = flagged.sorted()
            let shown = ids.prefix(10).map { "#\($0)" }.joined(separator: ", ") + (ids.count > 10 ? ", …" : "")
            parts.append("\(ids.count) \(ids.count == 1 ? "event was" : "events were") changed, or follow removed events (\(shown))")
        }
        parts += findings
        let detail = "The security log was altered outside Ya OK: " + parts.joined(separator: "; ")
        return [try appendSecurityEvent(.logTampered, detail, time: now)]
    }
}
