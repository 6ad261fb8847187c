import Glibc
import YaOKCrypto
import YaOKSupport
import YaOKWire

/// The relay's store in PostgreSQL, shared by several relay processes (docs/RELAY.md,
/// "PostgreSQL"): mailboxes, quotas, the rate-limit log, revocations and each process's
/// counters, so any relay can serve any client. The disk thread still batches every POST
/// and DELETE of a round into one transaction (group commit: one WAL flush for the lot);
/// the commit returns only once PostgreSQL has it durable, before ACCEPTED goes out.
///
/// Connections come from a bounded pool; statements are prepared once per connection;
/// a commit is one server function call (`relay_commit`: one round trip, `PostgresRelaySchema`).
public final class PostgresRelayStore: RelayStore, @unchecked Sendable {
    let pool: PostgresPool
    /// This process's row key in `counters` (a restart is a new relay there).
    public let relayID: String
    private var watcher: PostgresListener?
    /// The key of the deletion notes (`DeletionNote`), one per database.
    private var noteKey: [UInt8] = []
    /// The key of the address and /24 tags (`HolderTag`): a file of the data directory,
    /// never in the database (`AddressKey`).
    private let addressKey: [UInt8]

    /// Connects (the server must be reachable now) and migrates the schema. `conninfo` is a
    /// `postgresql://` URI or a libpq `key=value` string. `log` hears outages and returns.
    /// `migrate: false` (stats, revoke: tools that should not change a database) only checks
    /// that the schema is this relay's current one. `directory` holds the address tags' key
    /// (`AddressKey`; the relays of a cluster share the quotas if they share the file); nil
    /// (tools that post nothing) a key of this process only.
    public init(conninfo: String, poolSize: Int = 4, migrate: Bool = true, directory: String? = nil,
                log: @escaping @Sendable (String) -> Void = { _ in }) throws {
        addressKey = try directory.map { try AddressKey.load(directory: $0) } ?? Sodium.randomBytes(AddressKey.length)
        pool = PostgresPool(conninfo: conninfo, size: poolSize, log: log)
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        relayID = "\(host)/\(getpid())/\(Hex.encode((0..<4).map { _ in UInt8.random(in: 0...255) }))"
        if migrate {
            try pool.withConnection { try PostgresRelaySchema.migrate($0) }
        } else {
            try pool.withConnection { try PostgresRelaySchema.check($0) }
        }
        noteKey = try pool.withConnection { c in
            let rows = try c.query("note_key", "SELECT key FROM relay_secret LIMIT 1", types: [], [])
            return rows.count == 1 ? rows.bytes(0, 0) : []
        }
        guard noteKey.count == 32 else { throw YaOKError(.storage, "The relay database has no deletion-note key") }
    }

    public func close() {
        watcher?.stop()
        watcher = nil
        pool.close()
    }

    public var isShared: Bool { true }

    public func watch(_ onChange: @escaping @Sendable (RelayStoreChange) -> Void) throws -> RelayStoreWatch? {
        let pool = self.pool
        let listener = PostgresListener(conninfo: pool.conninfo, ownPIDs: { pool.backendPIDs }, onChange: onChange)
        try listener.start()
        watcher = listener
        return listener
    }

    public var health: RelayStoreHealth? {
        let h = pool.health
        return RelayStoreHealth(reachable: h.reachable, lastError: h.lastError, outages: h.outages, reconnects: h.reconnects,
                                description: "\(serverDescription), pool of \(pool.size) connection\(pool.size == 1 ? "" : "s") per relay")
    }

    /// "PostgreSQL 15.18": the server, without this process's pool (stats --postgres).
    public var serverDescription: String {
        let v = pool.health.serverVersion
        return "PostgreSQL" + (v > 0 ? " \(v / 10000).\(v % 10000)" : "")
    }

    // MARK: - Writes

    public func commit(_ writes: [RelayStoreWrite], nowMs: Int64, quota: MailboxQuota) throws -> [RelayStoreOutcome] {
        guard !writes.isEmpty else { return [] }
        let call = CommitCall(writes, store: self)
        var outcomes = writes.map { write -> RelayStoreOutcome in
            if case .delete = write { return .deleted(count: 0, bytes: 0) }
            return .duplicate
        }
        guard !call.posts.isEmpty || !call.deletes.isEmpty else { return outcomes }
        let t = PostgresType.self
        let parameters = call.parameters + [
            .int(nowMs), .int(Int64(quota.packets)), .int(Int64(quota.bytes)), .int(RateLimiter.windowMs),
            .int(Int64(quota.addressBytes)), .int(Int64(quota.prefixBytes)), .int(Int64(Self.notifyPayloadBytes)),
        ]
        var attempt = 0
        while true {
            attempt += 1
            do {
                // One call, sent alone: its own transaction, durable before the answer comes
                // (no BEGIN and COMMIT: one round trip for the whole commit).
                let rows = try pool.withConnection { c in
                    try c.query("commit", """
                        SELECT r_outcome, r_value FROM relay_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                                                                    $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26::int)
                        """, types: [t.byteaArray, t.byteaArray, t.int8Array, t.byteaArray, t.int8Array, t.byteaArray, t.int8Array,
                                     t.byteaArray, t.byteaArray, t.int8Array, t.int8Array, t.int8Array,
                                     t.byteaArray, t.int8Array, t.byteaArray, t.byteaArray, t.int8Array, t.int8Array, t.byteaArray,
                                     t.int8, t.int8, t.int8, t.int8, t.int8, t.int8, t.int8], parameters)
                }
                // A row per POST, then a row per DELETEd packet, in the call's order.
                let entries = call.posts + call.deletes
                guard rows.count == entries.count else {
                    throw YaOKError(.storage, "PostgreSQL: relay_commit answered \(rows.count) rows for \(entries.count) writes")
                }
                for (row, entry) in entries.enumerated() {
                    let value = rows.int64(row, 1)
                    switch (rows.int(row, 0), outcomes[entry.write]) {
                    case (5, .deleted(let count, let bytes)): outcomes[entry.write] = .deleted(count: count + 1, bytes: bytes + Int(value))
                    case (5, _), (6, _): break
                    case (0, _): outcomes[entry.write] = .stored(sequence: value)
                    case (1, _): outcomes[entry.write] = .duplicate
                    case (2, _): outcomes[entry.write] = .mailboxFull
                    case (4, _): outcomes[entry.write] = .overQuota(prefix: value == 1)
                    case (3, _): outcomes[entry.write] = .rateLimited(retryAfterSeconds: Int(value))
                    case (let code, _): throw YaOKError(.storage, "PostgreSQL: relay_commit answered outcome \(code)")
                    }
                }
                return outcomes
            } catch let error as PostgresError where error.isRetryable && attempt < 4 {
                continue
            }
        }
    }

    /// The address and /24 tags (`HolderTag`) of a POST whose address is known.
    fileprivate func tags(_ post: RelayPost) -> ([UInt8], [UInt8])? {
        post.address.map { (HolderTag.address($0, key: addressKey), HolderTag.prefix($0, key: addressKey)) }
    }

    fileprivate var deletionNoteKey: [UInt8] { noteKey }

    /// Below PostgreSQL's limit on a notification's payload (8,000 bytes by default):
    /// relay_commit sends one notification per commit naming, in hex joined by commas, the
    /// mailboxes it stored into, split where it would pass this (`PostgresListener` reads
    /// both this and the single ID that relay_post sent before schema 8).
    static let notifyPayloadBytes = 7_900

    private func transaction<T>(_ c: PostgresConnection, _ body: () throws -> T) throws -> T {
        try c.execute("BEGIN")
        do {
            let value = try body()
            try c.execute("COMMIT")
            return value
        } catch {
            if !c.broken { try? c.execute("ROLLBACK") }
            throw error
        }
    }

    @discardableResult
    public func deleteExpired(nowMs: Int64) throws -> (packets: Int, bytes: Int) {
        try pool.withConnection { c in
            let before = try storedBytes(c)
            let n = try c.query("sweep", "SELECT relay_sweep($1, $2)", types: [PostgresType.int8, PostgresType.int8],
                                [.int(nowMs), .int(RateLimiter.windowMs)], timeout: 15).int(0, 0)
            try c.query("sweep_deleted", "DELETE FROM deleted WHERE expires_ms <= $1", types: [PostgresType.int8], [.int(nowMs)])
            // Empty mailboxes' rows go too (a POST recreates its row, in the same lock order).
            try c.query("sweep_mailboxes", "DELETE FROM mailboxes WHERE packets <= 0", types: [], [])
            // Other relays may write meanwhile: the bytes are this sweep's best estimate.
            return (n, max(0, before - (try storedBytes(c))))
        }
    }

    public func storedBytes() throws -> Int {
        try pool.withConnection { try storedBytes($0) }
    }

    private func storedBytes(_ c: PostgresConnection) throws -> Int {
        try c.query("stored_bytes", "SELECT COALESCE(sum(bytes), 0)::bigint FROM mailboxes", types: [], []).int(0, 0)
    }

    // MARK: - Reads

    public func packets(_ requests: [RelayPageRequest], maxPackets: Int, maxBytes: Int, nowMs: Int64) throws -> [RelayPage] {
        try pool.withConnection { c in
            var pages: [RelayPage] = []
            var packetBudget = maxPackets, byteBudget = maxBytes
            for request in requests {
                guard packetBudget > 0, byteBudget > 0 else {
                    pages.append(RelayPage(mailbox: request.mailbox, packets: [], complete: false))
                    continue
                }
                // One more row than the budget tells whether the mailbox has more.
                let rows = try c.query("page", """
                    SELECT seq, packet FROM packets WHERE mailbox = $1 AND seq > $2 AND expires_ms > $3 ORDER BY seq LIMIT $4
                    """, types: [PostgresType.bytea, PostgresType.int8, PostgresType.int8, PostgresType.int8],
                    [.bytes(request.mailbox.bytes), .int(request.after), .int(nowMs), .int(Int64(packetBudget + 1))])
                var found: [StoredRelayPacket] = []
                var complete = true
                for row in 0..<rows.count {
                    let packet = rows.bytes(row, 1)
                    guard found.count < packetBudget, byteBudget - packet.count >= 0 || found.isEmpty else {
                        complete = false
                        break
                    }
                    found.append(StoredRelayPacket(sequence: rows.int64(row, 0), packet: packet))
                    byteBudget -= packet.count
                }
                packetBudget -= found.count
                pages.append(RelayPage(mailbox: request.mailbox, packets: found, complete: complete))
            }
            return pages
        }
    }

    /// Every read of a disk round in one statement (a statement per mailbox was a round trip
    /// each, and with a shared store every delivery is a read): the mailboxes' pages come
    /// from one LATERAL query over arrays, at most `batchedPagePackets` packets per mailbox
    /// (a mailbox with more comes back not complete and is read on after its last), in
    /// chunks of `batchedRequests` mailboxes; each read's budget is then applied in order
    /// as `packets` does.
    public func packets(reads: [[RelayPageRequest]], maxPackets: Int, maxBytes: Int, nowMs: Int64) throws -> [[RelayPage]] {
        let all = reads.flatMap { $0 }
        guard !all.isEmpty else { return reads.map { _ in [] } }
        let perMailbox = max(1, min(maxPackets, Self.batchedPagePackets))
        var fetched = [[StoredRelayPacket]](repeating: [], count: all.count)
        try pool.withConnection { c in
            for start in stride(from: 0, to: all.count, by: Self.batchedRequests) {
                let chunk = all[start..<min(start + Self.batchedRequests, all.count)]
                // One more row than the limit tells whether the mailbox has more.
                let rows = try c.query("pages", """
                    SELECT r.i, p.seq, p.packet
                    FROM unnest($1::bytea[], $2::int8[]) WITH ORDINALITY AS r(mailbox, after, i)
                    CROSS JOIN LATERAL (SELECT seq, packet FROM packets
                                        WHERE mailbox = r.mailbox AND seq > r.after AND expires_ms > $3
                                        ORDER BY seq LIMIT $4) p
                    ORDER BY r.i, p.seq
                    """, types: [PostgresType.byteaArray, PostgresType.int8Array, PostgresType.int8, PostgresType.int8], [
                        .byteaArray(chunk.map(\.mailbox.bytes)), .int8Array(chunk.map(\.after)),
                        .int(nowMs), .int(Int64(perMailbox + 1)),
                    ])
                for row in 0..<rows.count {
                    let i = start + rows.int(row, 0) - 1
                    guard i >= start, i < start + chunk.count else { continue }
                    fetched[i].append(StoredRelayPacket(sequence: rows.int64(row, 1), packet: rows.bytes(row, 2)))
                }
            }
        }
        var next = 0
        return reads.map { requests in
            var pages: [RelayPage] = []
            var packetBudget = maxPackets, byteBudget = maxBytes
            for request in requests {
                let candidates = fetched[next]
                next += 1
                guard packetBudget > 0, byteBudget > 0 else {
                    pages.append(RelayPage(mailbox: request.mailbox, packets: [], complete: false))
                    continue
                }
                var found: [StoredRelayPacket] = []
                var complete = candidates.count <= perMailbox
                for packet in candidates.prefix(perMailbox) {
                    guard found.count < packetBudget, byteBudget - packet.packet.count >= 0 || found.isEmpty else {
                        complete = false
                        break
                    }
                    found.append(packet)
                    byteBudget -= packet.packet.count
                }
                packetBudget -= found.count
                pages.append(RelayPage(mailbox: request.mailbox, packets: found, complete: complete))
            }
            return pages
        }
    }

    /// A batched read's packets per mailbox: a page of many mailboxes costs at most this many
    /// packets each in memory at once (a backlog is read on, page after page).
    static let batchedPagePackets = 16
    /// Mailboxes per statement of a batched read.
    static let batchedRequests = 256

    public func storedPacketCount(nowMs: Int64) throws -> Int {
        try pool.withConnection { c in
            try c.query("stored", "SELECT count(*) FROM packets WHERE expires_ms > $1", types: [PostgresType.int8], [.int(nowMs)]).int(0, 0)
        }
    }

    // MARK: - Revocation and counters

    public func revoke(pseudonym: [UInt8], nowMs: Int64) throws {
        // One transaction: the revocation, what it stored (relay_purge takes the mailboxes'
        // locks in key order, as writes do), and the NOTIFY, which goes out at COMMIT so
        // relays listening end the pseudonym's sessions at once, not at their next poll.
        try pool.withConnection { c in
            try transaction(c) {
                try c.query("revoke", """
                    INSERT INTO revoked (pseudonym, revoked_ms) VALUES ($1, $2) ON CONFLICT (pseudonym) DO NOTHING
                    """, types: [PostgresType.bytea, PostgresType.int8], [.bytes(pseudonym), .int(nowMs)])
                _ = try c.query("purge", "SELECT relay_purge($1)", types: [PostgresType.bytea],
                                [.bytes(PosterTag.of(pseudonym, key: noteKey))], timeout: 60)
                try c.execute("NOTIFY yaok_relay_revoked")
            }
        }
    }

    public func revokedPseudonyms() throws -> Set<[UInt8]> {
        try pool.withConnection { c in
            let rows = try c.query("revoked", "SELECT pseudonym FROM revoked", types: [], [])
            return Set((0..<rows.count).map { rows.bytes($0, 0) })
        }
    }

    public func revokedCount() throws -> Int {
        try pool.withConnection { c in try c.query("revoked_count", "SELECT count(*) FROM revoked", types: [], []).int(0, 0) }
    }

    /// This process's counters: a new process starts from zero (its own row), and `stats`
    /// adds every relay's rows up.
    public func loadCounters() throws -> RelayCounters {
        try pool.withConnection { c in
            let rows = try c.query("load_counters", "SELECT name, value FROM counters WHERE relay = $1",
                                   types: [PostgresType.text], [.text(relayID)])
            var counters = RelayCounters()
            for row in 0..<rows.count { counters.set(rows.text(row, 0), rows.int64(row, 1)) }
            let top = try c.query("load_top", "SELECT pseudonym, posts FROM top_posters WHERE relay = $1 ORDER BY rank",
                                  types: [PostgresType.text], [.text(relayID)])
            for row in 0..<top.count {
                counters.topPosters.append(RelayTopPoster(pseudonym: top.bytes(row, 0), posts: top.int64(row, 1)))
            }
            return counters
        }
    }

    public func saveCounters(_ counters: RelayCounters, nowMs: Int64) throws {
        try pool.withConnection { c in
            try transaction(c) {
                for (name, value) in zip(RelayCounters.names + ["updated_ms"], counters.values + [nowMs]) {
                    try c.query("save_counter", """
                        INSERT INTO counters (relay, name, value) VALUES ($1, $2, $3)
                        ON CONFLICT (relay, name) DO UPDATE SET value = excluded.value
                        """, types: [PostgresType.text, PostgresType.text, PostgresType.int8], [.text(relayID), .text(name), .int(value)])
                }
                try c.query("clear_top", "DELETE FROM top_posters WHERE relay = $1", types: [PostgresType.text], [.text(relayID)])
                for (rank, top) in counters.topPosters.enumerated() {
                    try c.query("save_top", "INSERT INTO top_posters (relay, rank, pseudonym, posts) VALUES ($1, $2, $3, $4)",
                                types: [PostgresType.text, PostgresType.int8, PostgresType.bytea, PostgresType.int8],
                                [.text(relayID), .int(Int64(rank)), .bytes(top.pseudonym), .int(top.posts)])
                }
            }
        }
    }

    /// Every relay's counters added up; `connected` counts only relays that saved within
    /// `currentMs` (the others are stopped or dead). Also how many relays are running.
    public func clusterCounters(nowMs: Int64, currentMs: Int64 = 5000) throws -> (counters: RelayCounters, running: Int, savedAtMs: Int64) {
        try pool.withConnection { c in
            let rows = try c.query("cluster_counters", """
                SELECT c.name, sum(c.value)::bigint,
                       sum(CASE WHEN u.value > $1 THEN c.value ELSE 0 END)::bigint
                FROM counters c JOIN counters u ON u.relay = c.relay AND u.name = 'updated_ms'
                WHERE c.name <> 'updated_ms' GROUP BY c.name
                """, types: [PostgresType.int8], [.int(nowMs - currentMs)])
            var counters = RelayCounters()
            for row in 0..<rows.count {
                let name = rows.text(row, 0)
                counters.set(name, RelayCounters.liveNames.contains(name) ? rows.int64(row, 2) : rows.int64(row, 1))
            }
            let live = try c.query("cluster_running", """
                SELECT count(*) FILTER (WHERE value > $1), COALESCE(max(value), 0)::bigint FROM counters WHERE name = 'updated_ms'
                """, types: [PostgresType.int8], [.int(nowMs - currentMs)])
            return (counters, live.int(0, 0), live.int64(0, 1))
        }
    }
}

/// A commit as relay_commit's arguments (migration 10): its mailboxes, its POSTs, and the
/// packets its DELETEs name, each in mailbox key order, a mailbox's in the order they came
/// (relay_commit locks the mailboxes' rows in key order: two relays' commits never wait on
/// each other in a cycle). What relay_commit looks up per write is numbered here (1-based,
/// 0 for none): a write's mailbox, a POST's poster tag (rate limit) and its address and
/// /24 tags, so that no step of the call searches an array.
private struct CommitCall {
    struct Entry {
        let write: Int
        let mailbox: [UInt8]
        let post: RelayPost?
        let messageID: MessageID
    }
    let posts: [Entry]
    let deletes: [Entry]
    let parameters: [PostgresValue]

    init(_ writes: [RelayStoreWrite], store: PostgresRelayStore) {
        var posts: [Entry] = [], deletes: [Entry] = []
        for (i, write) in writes.enumerated() {
            switch write {
            case .post(let post): posts.append(Entry(write: i, mailbox: post.mailbox.bytes, post: post, messageID: post.messageID))
            case .delete(let refs):
                for ref in refs { deletes.append(Entry(write: i, mailbox: ref.mailbox.bytes, post: nil, messageID: ref.messageID)) }
            }
        }
        // Stable: a mailbox's writes keep their order (`RelayCommitOrder`, as SQLite decides them).
        self.posts = RelayCommitOrder.byMailbox(posts) { $0.mailbox }
        self.deletes = RelayCommitOrder.byMailbox(deletes) { $0.mailbox }
        /// 1-based numbers of distinct values, in the order first seen.
        struct Numbering<Key: Hashable> {
            var keys: [Key] = []
            var index: [Key: Int64] = [:]
            mutating func number(_ key: Key) -> Int64 {
                if let n = index[key] { return n }
                keys.append(key)
                index[key] = Int64(keys.count)
                return Int64(keys.count)
            }
        }
        let key = store.deletionNoteKey
        var boxes = Numbering<[UInt8]>(), tags = Numbering<[UInt8]>()
        struct RateKey: Hashable { let tag: [UInt8]; let kind: Int64 }
        var rates = Numbering<RateKey>(), limits: [Int64] = []
        var postBox: [Int64] = [], rateIndex: [Int64] = [], addressIndex: [Int64] = [], prefixIndex: [Int64] = []
        let p = self.posts.compactMap(\.post)
        for post in p {
            postBox.append(boxes.number(post.mailbox.bytes))
            if let charge = post.charge, charge.limit > 0 {
                // rate_log is keyed by the poster tag, never the pseudonym: a copy of the
                // database must not name who posted each packet of the last hour (§8.5).
                let n = rates.number(RateKey(tag: PosterTag.of(charge.pseudonym, key: key), kind: charge.isAck ? 1 : 0))
                if n > limits.count { limits.append(Int64(charge.limit)) } else { limits[Int(n) - 1] = max(limits[Int(n) - 1], Int64(charge.limit)) }
                rateIndex.append(n)
            } else {
                rateIndex.append(0)
            }
            // None: no address known, counted against nobody.
            if let (address, prefix) = store.tags(post) {
                addressIndex.append(tags.number(address))
                prefixIndex.append(tags.number(prefix))
            } else {
                addressIndex.append(0)
                prefixIndex.append(0)
            }
        }
        let deleteBox = self.deletes.map { boxes.number($0.mailbox) }
        parameters = [
            .byteaArray(boxes.keys),
            .byteaArray(p.map(\.mailbox.bytes)), .int8Array(postBox), .byteaArray(p.map(\.messageID.bytes)),
            .int8Array(p.map(\.expiresAtMs)), .byteaArray(p.map(\.packet)), .int8Array(p.map { Int64($0.packet.count) }),
            // Deleted already (the same bytes re-posted after the DELETE) is a duplicate:
            // relay_commit looks the note up under the mailbox's lock, and keeps it with the
            // packet for its DELETE.
            .byteaArray(p.map { DeletionNote.of(mailbox: $0.mailbox, packet: $0.packet, key: key) }),
            .byteaArray(p.map { $0.poster.map { PosterTag.of($0, key: key) } ?? [] }),  // empty: NULL, none known
            .int8Array(rateIndex), .int8Array(addressIndex), .int8Array(prefixIndex),
            .byteaArray(self.deletes.map(\.mailbox)), .int8Array(deleteBox), .byteaArray(self.deletes.map(\.messageID.bytes)),
            .byteaArray(rates.keys.map(\.tag)), .int8Array(rates.keys.map(\.kind)), .int8Array(limits), .byteaArray(tags.keys),
        ]
    }
}
