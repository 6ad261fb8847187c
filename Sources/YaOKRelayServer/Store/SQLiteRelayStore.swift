import Glibc
import YaOKCrypto
import YaOKSupport
import YaOKWire
import YaOKStore

/// The relay's store in SQLite: `relay.db` in the data directory (0700; the files 0600),
/// WAL with `synchronous=FULL`, so a commit that returned is on disk. One connection, used
/// by the relay's disk thread only; `yaok-relay stats` and `revoke` open their own.
public final class SQLiteRelayStore: RelayStore {
    public static let fileName = "relay.db"
    /// The page cache's bound (KiB): RELAY.md, "What is stored".
    static let cacheKiB = 65_536
    /// WAL pages (4 KiB) past which `checkpointIfDue` checkpoints.
    var checkpointPages = 4_000
    let db: Database
    /// The key of the deletion notes (`DeletionNote`), made at the first open.
    private let noteKey: [UInt8]
    /// The key of the address and /24 tags (`HolderTag`): a file beside the database,
    /// never in it (`AddressKey`).
    private let addressKey: [UInt8]

    /// Opens (creating if needed) the store in `directory`, and migrates its schema.
    /// `posting: false` (stats, revoke: tools that store nothing) leaves the address tags'
    /// key file alone, so a tool run as another user never makes one the relay cannot read.
    public init(directory: String, posting: Bool = true) throws {
        try Store.makeDirectory(directory)
        let path = directory + "/" + Self.fileName
        // Created 0600 before SQLite opens it; SQLite gives -wal and -shm the same mode.
        try Store.createPrivateFile(path)
        db = try Database(path: path)
        for suffix in ["", "-wal", "-shm"] { _ = chmod(path + suffix, 0o600) }
        // A checkpoint (every page of the WAL read back and copied into the database file)
        // at 4,000 pages of WAL (16 MiB) rather than 1,000: the same hot pages (the indexes
        // by mailbox, the mailbox totals) are dirtied by nearly every commit, and each
        // checkpoint writes them again. Measured with `yaok-relay-load store` (50 POSTs and
        // 50 DELETEs a commit): 25.7 → 21.3 KiB written per message, CPU 63 → 57 µs. The WAL
        // file stays at up to about 16 MiB. The disk thread runs it (`checkpointIfDue`)
        // after it has handed a round's results back, not inside that round's COMMIT: the
        // ACCEPTEDs go out while it copies, and the POSTs they free queue for the next round.
        try db.checkpointByOwner()
        // A page cache of up to 64 MiB (SQLite's default is 2 MiB): the trees every commit
        // touches (the packets' index by mailbox, the mailbox and holder totals, the newest
        // packets and notes) outgrow 2 MiB once a few thousand packets are stored, and each
        // page missing from the cache is a pread of the file (or a WAL lookup) in the commit
        // path. Pages are allocated as used: an idle or small relay stays small.
        try db.execute("PRAGMA cache_size = -\(Self.cacheKiB)")
        try RelaySchema.migrate(db)
        var key: [UInt8] = []
        try db.query("SELECT key FROM relay_secret") { key = $0.blob(0) }
        guard key.count == 32 else { throw YaOKError(.storage, "The relay database has no deletion-note key") }
        noteKey = key
        addressKey = posting ? try AddressKey.load(directory: directory) : Sodium.randomBytes(AddressKey.length)
    }

    /// Whether `directory` holds a relay database (for the commands that must not create one).
    public static func exists(in directory: String) -> Bool {
        access(directory + "/" + fileName, F_OK) == 0
    }

    public func close() { db.close() }

    /// A checkpoint once the WAL holds `checkpointPages` pages (PASSIVE: a `stats` reading
    /// meanwhile is not waited for; what it holds back is copied next time).
    public func checkpointIfDue() throws {
        if db.walFrames >= checkpointPages { try db.checkpointPassive() }
    }

    // MARK: - Writes

    public func commit(_ writes: [RelayStoreWrite], nowMs: Int64, quota: MailboxQuota) throws -> [RelayStoreOutcome] {
        guard !writes.isEmpty else { return [] }
        return try db.transaction {
            var ledger = CommitLedger()
            // Decided in PostgreSQL's order (`RelayCommitOrder`), answered in the writes' order.
            var outcomes = [RelayStoreOutcome](repeating: .duplicate, count: writes.count)
            for i in RelayCommitOrder.indices(writes) {
                switch writes[i] {
                case .post(let post): outcomes[i] = try store(post, nowMs: nowMs, quota: quota, ledger: &ledger)
                case .delete(let refs):
                    let (count, bytes) = try delete(refs, ledger: &ledger)
                    outcomes[i] = .deleted(count: count, bytes: bytes)
                }
            }
            try apply(ledger)
            return outcomes
        }
    }

    /// What one transaction changes in the mailboxes' and the holders' totals, written once
    /// per mailbox and per tag at its end (`apply`) rather than by each POST and DELETE: in
    /// a commit of many writes from one address (a NAT, the load test) its two holder rows
    /// were updated twice per message. Quota checks read the table plus what is pending.
    private struct CommitLedger {
        var mailboxes: [[UInt8]: (packets: Int, bytes: Int)] = [:]
        var holders: [[UInt8]: Int] = [:]
        /// Holder totals as the table had them when this transaction first read them.
        var heldAtStart: [[UInt8]: Int] = [:]
        /// Bytes this transaction stored under each holder tag: a quota check counts them,
        /// not what the transaction deleted (the safe side, as PostgreSQL's relay_commit).
        var storedUnder: [[UInt8]: Int] = [:]

        mutating func count(_ mailbox: [UInt8], packets: Int, bytes: Int) {
            let old = mailboxes[mailbox] ?? (0, 0)
            mailboxes[mailbox] = (old.packets + packets, old.bytes + bytes)
        }

        /// A NULL tag (a packet stored before schema 6) counts against nobody.
        mutating func account(_ tag: SQLValue, bytes: Int) {
            guard case .blob(let bytesOfTag) = tag else { return }
            holders[bytesOfTag, default: 0] += bytes
        }
    }

    private func store(_ post: RelayPost, nowMs: Int64, quota: MailboxQuota, ledger: inout CommitLedger) throws -> RelayStoreOutcome {
        let mailbox = SQLValue.blob(post.mailbox.bytes)
        var exists = false
        try db.query("SELECT 1 FROM packets WHERE mailbox = ? AND message_id = ?",
                     [mailbox, .blob(post.messageID.bytes)]) { _ in exists = true }
        if !exists {
            let note = DeletionNote.of(mailbox: post.mailbox, packet: post.packet, key: noteKey)
            try db.query("SELECT 1 FROM deleted WHERE expires_ms = ? AND digest = ?",
                         [.int(post.expiresAtMs), .blob(note)]) { _ in exists = true }
        }
        if exists { return .duplicate }
        var packets = 0, bytes = 0
        try db.query("SELECT packets, bytes FROM mailboxes WHERE mailbox = ?", [mailbox]) { row in
            packets = row.int(0)
            bytes = row.int(1)
        }
        if let pending = ledger.mailboxes[post.mailbox.bytes] {
            packets += pending.packets
            bytes += pending.bytes
        }
        guard packets < quota.packets, bytes + post.packet.count <= quota.bytes else { return .mailboxFull }
        let tags = post.address.map { (HolderTag.address($0, key: addressKey), HolderTag.prefix($0, key: addressKey)) }
        if let (address, prefix) = tags {
            if try held(address, &ledger) > quota.addressBytes - post.packet.count { return .overQuota(prefix: false) }
            if try held(prefix, &ledger) > quota.prefixBytes - post.packet.count { return .overQuota(prefix: true) }
        }
        try db.query("""
            INSERT INTO packets (mailbox, message_id, expires_ms, received_ms, packet, poster, address_tag, prefix_tag)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [mailbox, .blob(post.messageID.bytes), .int(post.expiresAtMs), .int(nowMs), .blob(post.packet),
                  post.poster.map { .blob(PosterTag.of($0, key: noteKey)) } ?? .null,
                  tags.map { .blob($0.0) } ?? .null, tags.map { .blob($0.1) } ?? .null])
        let sequence = db.lastInsertRowID
        ledger.count(post.mailbox.bytes, packets: 1, bytes: post.packet.count)
        if let (address, prefix) = tags {
            for tag in [address, prefix] {
                ledger.account(.blob(tag), bytes: post.packet.count)
                ledger.storedUnder[tag, default: 0] += post.packet.count
            }
        }
        return .stored(sequence: sequence)
    }

    /// The bytes stored under a holder tag (`HolderTag`), this transaction's POSTs included
    /// and its DELETEs not (they count once it commits).
    private func held(_ tag: [UInt8], _ ledger: inout CommitLedger) throws -> Int {
        if ledger.heldAtStart[tag] == nil {
            var bytes = 0
            try db.query("SELECT bytes FROM holders WHERE tag = ?", [.blob(tag)]) { bytes = $0.int(0) }
            ledger.heldAtStart[tag] = bytes
        }
        return (ledger.heldAtStart[tag] ?? 0) + (ledger.storedUnder[tag] ?? 0)
    }

    /// Writes a transaction's changes to the totals: one statement per mailbox and per
    /// holder tag, a row dropped when it reaches zero (rows exist only while they hold).
    private func apply(_ ledger: CommitLedger) throws {
        for (mailbox, change) in ledger.mailboxes where change.packets != 0 || change.bytes != 0 {
            try db.query("""
                INSERT INTO mailboxes (mailbox, packets, bytes) VALUES (?, ?, ?)
                ON CONFLICT (mailbox) DO UPDATE SET packets = packets + excluded.packets, bytes = bytes + excluded.bytes
                """, [.blob(mailbox), .int(Int64(change.packets)), .int(Int64(change.bytes))])
            if change.packets < 0 { try db.query("DELETE FROM mailboxes WHERE mailbox = ? AND packets <= 0", [.blob(mailbox)]) }
        }
        for (tag, change) in ledger.holders where change != 0 {
            try db.query("""
                INSERT INTO holders (tag, bytes) VALUES (?, ?)
                ON CONFLICT (tag) DO UPDATE SET bytes = bytes + excluded.bytes
                """, [.blob(tag), .int(Int64(change))])
            if change < 0 { try db.query("DELETE FROM holders WHERE tag = ? AND bytes <= 0", [.blob(tag)]) }
        }
    }

    /// Gives back the holder bytes of the packets `condition` is about to delete (their
    /// address and /24 tags), a GROUP BY each.
    private func release(where condition: String, _ values: [SQLValue]) throws {
        var ledger = CommitLedger()
        for column in ["address_tag", "prefix_tag"] {
            try db.query("""
                SELECT \(column), SUM(length(packet)) FROM packets WHERE \(condition) AND \(column) IS NOT NULL GROUP BY \(column)
                """, values) { ledger.account(.blob($0.blob(0)), bytes: -$0.int(1)) }
        }
        try apply(ledger)
    }

    private func delete(_ refs: [StoredPacketRef], ledger: inout CommitLedger) throws -> (Int, Int) {
        var deleted = 0, bytes = 0
        for ref in refs {
            let mailbox = SQLValue.blob(ref.mailbox.bytes)
            var packet: [UInt8]?
            var expires: Int64 = 0
            var tags: [SQLValue] = []
            try db.query("""
                DELETE FROM packets WHERE mailbox = ? AND message_id = ? RETURNING packet, expires_ms, address_tag, prefix_tag
                """, [mailbox, .blob(ref.messageID.bytes)]) { row in
                packet = row.blob(0)
                expires = row.int64(1)
                tags = [Int32(2), 3].map { row.isNull($0) ? .null : .blob(row.blob($0)) }
            }
            guard let packet else { continue }
            let length = packet.count
            for tag in tags { ledger.account(tag, bytes: -length) }
            try db.query("INSERT OR IGNORE INTO deleted (expires_ms, digest) VALUES (?, ?)",
                         [.int(expires), .blob(DeletionNote.of(mailbox: ref.mailbox, packet: packet, key: noteKey))])
            deleted += 1
            bytes += length
            ledger.count(ref.mailbox.bytes, packets: -1, bytes: -length)
        }
        return (deleted, bytes)
    }

    @discardableResult
    public func deleteExpired(nowMs: Int64) throws -> (packets: Int, bytes: Int) {
        try db.transaction {
            var expired: [([UInt8], Int, Int)] = []
            try db.query("""
                SELECT mailbox, COUNT(*), SUM(length(packet)) FROM packets WHERE expires_ms <= ? GROUP BY mailbox
                """, [.int(nowMs)]) { expired.append(($0.blob(0), $0.int(1), $0.int(2))) }
            try db.query("DELETE FROM deleted WHERE expires_ms <= ?", [.int(nowMs)])
            guard !expired.isEmpty else { return (0, 0) }
            try release(where: "expires_ms <= ?", [.int(nowMs)])
            try db.query("DELETE FROM packets WHERE expires_ms <= ?", [.int(nowMs)])
            var ledger = CommitLedger()
            for (mailbox, packets, bytes) in expired { ledger.count(mailbox, packets: -packets, bytes: -bytes) }
            try apply(ledger)
            return (expired.reduce(0) { $0 + $1.1 }, expired.reduce(0) { $0 + $1.2 })
        }
    }

    public func storedBytes() throws -> Int {
        var bytes = 0
        try db.query("SELECT COALESCE(SUM(bytes), 0) FROM mailboxes") { bytes = $0.int(0) }
        return bytes
    }

    // MARK: - Reads

    public func packets(_ requests: [RelayPageRequest], maxPackets: Int, maxBytes: Int, nowMs: Int64) throws -> [RelayPage] {
        var pages: [RelayPage] = []
        var packetBudget = maxPackets, byteBudget = maxBytes
        for request in requests {
            guard packetBudget > 0, byteBudget > 0 else {
                pages.append(RelayPage(mailbox: request.mailbox, packets: [], complete: false))
                continue
            }
            var found: [StoredRelayPacket] = []
            var complete = true
            let limit = packetBudget
            // Schema 9 has no index by (mailbox, seq): the sequence numbers of the mailbox's
            // packets after the cursor come from the (mailbox, message ID) index, which holds
            // each row's seq (its rowid), sorted here without reading a packet; then only the
            // packets of the page are read, by seq. A chunk at a time, so a mailbox with many
            // packets sorts a bounded list per step. One more unexpired packet than the
            // budget tells whether the mailbox has more.
            var after = request.after
            scan: while true {
                var sequences: [Int64] = []
                try db.query("SELECT seq FROM packets WHERE mailbox = ? AND seq > ? ORDER BY seq LIMIT ?",
                             [.blob(request.mailbox.bytes), .int(after), .int(Int64(limit + 1))]) { sequences.append($0.int64(0)) }
                for sequence in sequences {
                    var packet: [UInt8]?
                    try db.query("SELECT packet FROM packets WHERE seq = ? AND expires_ms > ?",
                                 [.int(sequence), .int(nowMs)]) { packet = $0.blob(0) }
                    guard let packet else { continue }
                    guard found.count < limit, byteBudget - packet.count >= 0 || found.isEmpty else {
                        complete = false
                        break scan
                    }
                    found.append(StoredRelayPacket(sequence: sequence, packet: packet))
                    packetBudget -= 1
                    byteBudget -= packet.count
                }
                guard sequences.count == limit + 1, let last = sequences.last else { break }
                after = last
            }
            pages.append(RelayPage(mailbox: request.mailbox, packets: found, complete: complete))
        }
        return pages
    }

    public func storedPacketCount(nowMs: Int64) throws -> Int {
        var count = 0
        try db.query("SELECT COUNT(*) FROM packets WHERE expires_ms > ?", [.int(nowMs)]) { count = $0.int(0) }
        return count
    }

    // MARK: - Revocation and counters

    public func revoke(pseudonym: [UInt8], nowMs: Int64) throws {
        let poster = SQLValue.blob(PosterTag.of(pseudonym, key: noteKey))
        try db.transaction {
            try db.query("INSERT INTO revoked (pseudonym, revoked_ms) VALUES (?, ?) ON CONFLICT (pseudonym) DO NOTHING",
                         [.blob(pseudonym), .int(nowMs)])
            // No index by poster (schema 8): one scan of the table finds what it stored.
            var ledger = CommitLedger()
            var sequences: [Int64] = []
            try db.query("SELECT seq, mailbox, length(packet), address_tag, prefix_tag FROM packets WHERE poster = ?",
                         [poster]) { row in
                sequences.append(row.int64(0))
                let length = row.int(2)
                ledger.count(row.blob(1), packets: -1, bytes: -length)
                for column in [Int32(3), 4] where !row.isNull(column) { ledger.account(.blob(row.blob(column)), bytes: -length) }
            }
            for sequence in sequences { try db.query("DELETE FROM packets WHERE seq = ?", [.int(sequence)]) }
            try apply(ledger)
        }
    }

    public func revokedPseudonyms() throws -> Set<[UInt8]> {
        var out = Set<[UInt8]>()
        try db.query("SELECT pseudonym FROM revoked") { out.insert($0.blob(0)) }
        return out
    }

    public func loadCounters() throws -> RelayCounters {
        var counters = RelayCounters()
        try db.query("SELECT name, value FROM counters") { counters.set($0.text(0), $0.int64(1)) }
        try db.query("SELECT pseudonym, posts FROM top_posters ORDER BY rank") {
            counters.topPosters.append(RelayTopPoster(pseudonym: $0.blob(0), posts: $0.int64(1)))
        }
        return counters
    }

    public func saveCounters(_ counters: RelayCounters, nowMs: Int64) throws {
        try db.transaction {
            for (name, value) in zip(RelayCounters.names + ["updated_ms"], counters.values + [nowMs]) {
                try db.query("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                             [.text(name), .int(value)])
            }
            try db.execute("DELETE FROM top_posters")
            for (rank, top) in counters.topPosters.enumerated() {
                try db.query("INSERT INTO top_posters (rank, pseudonym, posts) VALUES (?, ?, ?)",
                             [.int(Int64(rank)), .blob(top.pseudonym), .int(top.posts)])
            }
        }
    }

    /// When the counters were last saved (ms since the epoch; 0 if never).
    public func countersSavedAtMs() throws -> Int64 {
        var value: Int64 = 0
        try db.query("SELECT value FROM counters WHERE name = 'updated_ms'") { value = $0.int64(0) }
        return value
    }

    public func revokedCount() throws -> Int {
        var count = 0
        try db.query("SELECT COUNT(*) FROM revoked") { count = $0.int(0) }
        return count
    }
}
