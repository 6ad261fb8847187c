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
/// POST and DELETE are server functions (one round trip each, `PostgresRelaySchema`).
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
        // Every write locks its mailbox's row; taking them in key order means two relays'
        // batches never wait on each other in a cycle. Within a mailbox the order is kept.
        let order = writes.indices.sorted { a, b in
            let ka = Self.key(writes[a]), kb = Self.key(writes[b])
            return ka == kb ? a < b : ka.lexicographicallyPrecedes(kb)
        }
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try pool.withConnection { c -> [RelayStoreOutcome] in
                    try transaction(c) {
                        var outcomes = [RelayStoreOutcome](repeating: .duplicate, count: writes.count)
                        var holders = HolderLedger()
                        var notes = PendingNotes()
                        var stored: [MailboxID] = []
                        // The writes go in pipelines (one round trip for many statements),
                        // cut where a POST follows a DELETE of its mailbox in this batch: the
                        // DELETE's note must be written before the POST looks for it.
                        var pipeline = PostPipeline()
                        func flush() throws {
                            let rows = try c.pipeline(pipeline.statements)
                            for (entry, result) in zip(pipeline.entries, rows) {
                                switch entry {
                                case .post(let i, let post, let tags):
                                    outcomes[i] = Self.outcome(result, post, tags, &holders)
                                    if case .stored = outcomes[i], stored.last != post.mailbox { stored.append(post.mailbox) }
                                case .delete(let i, let ref):
                                    guard case .deleted(let count, let bytes) = outcomes[i] else { continue }
                                    guard result.count == 1, !result.isNull(0, 0) else { continue }
                                    let packet = result.bytes(0, 0)
                                    // Written in this transaction (`write(_:_:)`), under the
                                    // mailbox's lock that relay_delete took: a re-post through
                                    // another relay waits for it and then sees the note.
                                    notes.add(DeletionNote.of(mailbox: ref.mailbox, packet: packet, key: noteKey),
                                              expires: result.int64(0, 1), mailbox: ref.mailbox)
                                    for column in [2, 3] where !result.isNull(0, column) { holders.release(result.bytes(0, column), packet.count) }
                                    outcomes[i] = .deleted(count: count + 1, bytes: bytes + packet.count)
                                }
                            }
                            pipeline = PostPipeline()
                        }
                        for i in order {
                            switch writes[i] {
                            case .post(let post):
                                // A re-post of what this batch deleted must see its note.
                                if pipeline.deleted.contains(post.mailbox) { try flush() }
                                if notes.mailboxes.contains(post.mailbox) { try write(&notes, c) }
                                pipeline.add(post, i, statement: postStatement(post, nowMs: nowMs, quota: quota, holders: holders,
                                                                              pending: pipeline.added))
                            case .delete(let refs):
                                outcomes[i] = .deleted(count: 0, bytes: 0)
                                for ref in refs.sorted(by: { $0.mailbox.bytes.lexicographicallyPrecedes($1.mailbox.bytes) }) {
                                    pipeline.add(ref, i)
                                }
                            }
                        }
                        try flush()
                        try write(&notes, c)
                        // Last, after every mailbox lock: holder rows are locked in tag order.
                        try account(holders, c)
                        try notify(stored, c)
                        return outcomes
                    }
                }
            } catch let error as PostgresError where error.isRetryable && attempt < 4 {
                continue
            }
        }
    }

    private static func key(_ write: RelayStoreWrite) -> [UInt8] {
        switch write {
        case .post(let post): return post.mailbox.bytes
        case .delete(let refs): return refs.first?.mailbox.bytes ?? []
        }
    }

    /// relay_post for one POST. The room left under its address and /24 tags is the quota
    /// less what this transaction stored under them already and (`pending`) what the POSTs
    /// before it in the same pipeline would store (their outcomes are not known yet: on
    /// the safe side).
    private func postStatement(_ post: RelayPost, nowMs: Int64, quota: MailboxQuota, holders: HolderLedger,
                               pending: [[UInt8]: Int]) -> (PostgresConnection.Statement, ([UInt8], [UInt8])?) {
        let t = PostgresType.self
        let tags = self.tags(post)
        // Deleted already (the same bytes re-posted after the DELETE: its `DeletionNote`) is a
        // duplicate: relay_post checks that under the mailbox's lock (migrations 3 and 4), so a
        // DELETE from another relay cannot slip in.
        let charge = post.charge
        func used(_ tag: [UInt8]) -> Int { (holders.added[tag] ?? 0) + (pending[tag] ?? 0) }
        return (PostgresConnection.Statement(name: "post", sql: """
            SELECT outcome, value FROM relay_post($1, $2, $3, $4, $5, $6, $7, $8, $9::smallint, $10, $11, $12, $13, $14, $15, $16, $17)
            """, types: [t.bytea, t.bytea, t.int8, t.int8, t.bytea, t.int8, t.int8, t.bytea, t.int8, t.int8, t.int8, t.bytea, t.bytea,
                         t.bytea, t.bytea, t.int8, t.int8], parameters: [
                .bytes(post.mailbox.bytes), .bytes(post.messageID.bytes), .int(post.expiresAtMs), .int(nowMs),
                .bytes(post.packet), .int(Int64(quota.packets)), .int(Int64(quota.bytes)),
                // rate_log is keyed by the poster tag, never the pseudonym: a copy of the
                // database must not name who posted each packet of the last hour (§8.5).
                .bytes(charge.map { PosterTag.of($0.pseudonym, key: noteKey) } ?? []), .int(charge?.isAck == true ? 1 : 0), .int(Int64(charge?.limit ?? 0)),
                .int(RateLimiter.windowMs), .bytes(DeletionNote.of(mailbox: post.mailbox, packet: post.packet, key: noteKey)),
                .bytes(post.poster.map { PosterTag.of($0, key: noteKey) } ?? []),  // empty: NULL, none known
                // Empty: no address known, counted against nobody.
                .bytes(tags?.0 ?? []), .bytes(tags?.1 ?? []),
                .int(Int64(quota.addressBytes - (tags.map { used($0.0) } ?? 0))),
                .int(Int64(quota.prefixBytes - (tags.map { used($0.1) } ?? 0))),
            ]), tags)
    }

    private func tags(_ post: RelayPost) -> ([UInt8], [UInt8])? {
        post.address.map { (HolderTag.address($0, key: addressKey), HolderTag.prefix($0, key: addressKey)) }
    }

    private static func outcome(_ rows: PostgresRows, _ post: RelayPost, _ tags: ([UInt8], [UInt8])?,
                                _ holders: inout HolderLedger) -> RelayStoreOutcome {
        let value = rows.int64(0, 1)
        switch rows.int(0, 0) {
        case 0:
            if let (address, prefix) = tags {
                for tag in [address, prefix] { holders.add(tag, post.packet.count) }
            }
            return .stored(sequence: value)
        case 1: return .duplicate
        case 2: return .mailboxFull
        case 4: return .overQuota(prefix: value == 1)
        default: return .rateLimited(retryAfterSeconds: Int(value))
        }
    }

    /// Adds a transaction's holder bytes to `holders` (relay_account: in tag order).
    private func account(_ holders: HolderLedger, _ c: PostgresConnection) throws {
        guard !holders.deltas.isEmpty else { return }
        let entries = holders.deltas.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        _ = try c.query("account", "SELECT relay_account($1, $2)", types: [PostgresType.byteaArray, PostgresType.int8Array], [
            .text("{" + entries.map { "\"\\\\x\(Hex.encode($0.key))\"" }.joined(separator: ",") + "}"),
            .text("{" + entries.map { String($0.value) }.joined(separator: ",") + "}"),
        ])
    }

    /// The mailboxes a commit stored into, for the other relays' live push: one
    /// notification per commit (delivered by PostgreSQL at COMMIT, dropped on ROLLBACK)
    /// whose payload is their IDs in hex joined by commas, split where it would pass
    /// PostgreSQL's 8,000-byte payload limit (`PostgresListener` reads both this and the
    /// single ID that relay_post sent before schema 8). `mailboxes` is in key order, so a
    /// mailbox named twice in a row is named once.
    private func notify(_ mailboxes: [MailboxID], _ c: PostgresConnection) throws {
        var payload = ""
        func send() throws {
            guard !payload.isEmpty else { return }
            try c.query("notify", "SELECT pg_notify('\(PostgresListener.mailboxChannel)', $1)", types: [PostgresType.text], [.text(payload)])
            payload = ""
        }
        for mailbox in mailboxes {
            let hex = Hex.encode(mailbox.bytes)
            if payload.utf8.count + hex.utf8.count + 1 > Self.notifyPayloadBytes { try send() }
            payload += payload.isEmpty ? hex : "," + hex
        }
        try send()
    }

    /// Below PostgreSQL's limit on a notification's payload (8,000 bytes by default).
    static let notifyPayloadBytes = 7_900

    /// Inserts the pending deletion notes in one statement (one round trip for a batch's
    /// DELETEs, not one per packet) and empties `notes`.
    private func write(_ notes: inout PendingNotes, _ c: PostgresConnection) throws {
        guard !notes.digests.isEmpty else { return }
        try c.query("note_deleted_many", """
            INSERT INTO deleted (digest, expires_ms) SELECT * FROM unnest($1::bytea[], $2::int8[]) ON CONFLICT DO NOTHING
            """, types: [PostgresType.byteaArray, PostgresType.int8Array], [
                .text("{" + notes.digests.map { "\"\\\\x\(Hex.encode($0))\"" }.joined(separator: ",") + "}"),
                .text("{" + notes.expiries.map { String($0) }.joined(separator: ",") + "}"),
            ])
        notes = PendingNotes()
    }

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
                        .text("{" + chunk.map { "\"\\\\x\(Hex.encode($0.mailbox.bytes))\"" }.joined(separator: ",") + "}"),
                        .text("{" + chunk.map { String($0.after) }.joined(separator: ",") + "}"),
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

/// A transaction's changes to the holders' stored bytes (`HolderTag`), applied at its end.
struct HolderLedger {
    /// Net change per tag.
    private(set) var deltas: [[UInt8]: Int] = [:]
    /// Bytes stored per tag (not less what was deleted: the quota check stays on the safe side).
    private(set) var added: [[UInt8]: Int] = [:]

    mutating func add(_ tag: [UInt8], _ bytes: Int) {
        deltas[tag, default: 0] += bytes
        added[tag, default: 0] += bytes
    }

    mutating func release(_ tag: [UInt8], _ bytes: Int) {
        deltas[tag, default: 0] -= bytes
    }
}

/// Deletion notes (`DeletionNote`) a transaction made and has not written yet, and the
/// mailboxes they are of (a POST into one of them writes them first).
struct PendingNotes {
    private(set) var digests: [[UInt8]] = []
    private(set) var expiries: [Int64] = []
    private(set) var mailboxes = Set<MailboxID>()

    mutating func add(_ digest: [UInt8], expires: Int64, mailbox: MailboxID) {
        digests.append(digest)
        expiries.append(expires)
        mailboxes.insert(mailbox)
    }
}

/// The statements of one pipeline of a commit and what each is for.
private struct PostPipeline {
    enum Entry {
        case post(Int, RelayPost, ([UInt8], [UInt8])?)
        case delete(Int, StoredPacketRef)
    }
    private(set) var statements: [PostgresConnection.Statement] = []
    private(set) var entries: [Entry] = []
    /// Mailboxes this pipeline DELETEs from.
    private(set) var deleted = Set<MailboxID>()
    /// Bytes this pipeline's POSTs would store per holder tag.
    private(set) var added: [[UInt8]: Int] = [:]

    mutating func add(_ post: RelayPost, _ index: Int, statement: (PostgresConnection.Statement, ([UInt8], [UInt8])?)) {
        statements.append(statement.0)
        entries.append(.post(index, post, statement.1))
        if let (address, prefix) = statement.1 {
            added[address, default: 0] += post.packet.count
            added[prefix, default: 0] += post.packet.count
        }
    }

    mutating func add(_ ref: StoredPacketRef, _ index: Int) {
        statements.append(PostgresConnection.Statement(
            name: "delete", sql: "SELECT p_packet, p_expires, p_address_tag, p_prefix_tag FROM relay_delete($1, $2)",
            types: [PostgresType.bytea, PostgresType.bytea], parameters: [.bytes(ref.mailbox.bytes), .bytes(ref.messageID.bytes)]))
        entries.append(.delete(index, ref))
        deleted.insert(ref.mailbox)
    }
}
