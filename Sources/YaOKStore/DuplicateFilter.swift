import YaOKSupport
import YaOKWire
import YaOKCrypto

/// Duplicate detection for routed packets (docs/PROTOCOL.md §4.8; US-021 AC-021-05).
///
/// The same message reaches a node over several paths and again whenever a sender retries,
/// so each message ID is remembered until its packet expires: in SQLite (table
/// `wire_seen_ids`, so it survives restarts) behind a bounded in-memory front for the hot
/// path. An ID may be forgotten once expired because an expired packet is dropped before
/// it gets here: a replay of a forgotten ID is therefore always refused as `expired`.
///
/// Not thread-safe: its owner serialises calls, like the Database it uses.
public final class DuplicateFilter {
    /// What the caller does with the packet.
    public enum Verdict: Equatable, Sendable {
        /// First sighting: deliver (or forward), then acknowledge.
        case new
        /// Seen before: drop silently, but send the acknowledgement again so that a sender
        /// whose first ack was lost stops retrying.
        case duplicate
        /// Expired: drop, no acknowledgement (the sender has stopped retrying by now).
        case expired
    }

    public static let table = "wire_seen_ids"
    /// The longest an ID is kept: the longest lifetime plus the allowed clock skew. Caps
    /// what a packet with a far-future expiry can cost in storage.
    /// Fourteen days (the longest lifetime a node accepts from a peer) plus the skew.
    public static let maxRetentionMs = Int64(14 * 24 * 60) * 60_000 + HopLimit.defaultMaxClockSkewMs
    /// Expired rows are deleted after this many new IDs (and by `purge`).
    public static let purgeInterval = 1024
    /// The most rows kept: past it the soonest-expiring go first. At ~63 bytes a row this
    /// bounds the table near 13 MB whatever peers send.
    public static let defaultMaxEntries = 200_000
    public let maxEntries: Int

    private let db: Database
    private var front: SeenIDFront
    private var insertsSincePurge = 0

    /// Creates the table if needed (a node's store already has it from its migrations; the
    /// statement is then a no-op, and a standalone database, e.g. a relay's, gets it here). `frontCapacity` IDs stay in memory.
    public init(database: Database, frontCapacity: Int = 65_536, maxEntries: Int = defaultMaxEntries) throws {
        db = database
        self.maxEntries = maxEntries
        front = try SeenIDFront(capacity: frontCapacity)
        try db.execute(Self.tableSQL)
    }

    /// The table, idempotently. It is also schema migration 4 of a node's store
    /// (Store/Schema.swift), so this text is frozen: change the table with a new migration.
    static let tableSQL = """
        CREATE TABLE IF NOT EXISTS wire_seen_ids (
            id BLOB PRIMARY KEY NOT NULL CHECK (length(id) = 16),
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS wire_seen_ids_expires_at ON wire_seen_ids (expires_at);
        """

    /// Records `id` and says whether it was new. Run it inside the caller's transaction
    /// together with storing the message, so that a crash cannot keep one without the other.
    /// The in-memory front assumes that transaction commits: if the caller rolls it back, it
    /// must call `dropFront()`, or a retry of the same packet would be taken for a duplicate
    /// and acknowledged without being delivered.
    public func check(_ id: MessageID, expiresAtMs: Int64, nowMs: Int64) throws -> Verdict {
        guard nowMs < expiresAtMs else { return .expired }
        if front.contains(id) { return .duplicate }
        if insertsSincePurge >= Self.purgeInterval {
            // Housekeeping first, so that its failure cannot leave an ID in the front that
            // storage never recorded; a failed purge is retried at the next new ID.
            _ = try? purge(nowMs: nowMs)
        }
        let keepUntil = min(expiresAtMs, nowMs &+ Self.maxRetentionMs)
        try db.query("INSERT OR IGNORE INTO wire_seen_ids (id, expires_at) VALUES (?, ?)",
                     [.blob(id.bytes), .int(keepUntil)])
        let inserted = db.changes > 0
        front.insert(id)
        guard inserted else { return .duplicate }
        insertsSincePurge += 1
        return .new
    }

    public func check(_ header: RoutedHeader, nowMs: Int64) throws -> Verdict {
        try check(header.messageID, expiresAtMs: header.expiresAtMs, nowMs: nowMs)
    }

    /// Whether `id` has been seen (front first, then storage), without recording it.
    public func contains(_ id: MessageID) throws -> Bool {
        if front.contains(id) { return true }
        var found = false
        try db.query("SELECT 1 FROM wire_seen_ids WHERE id = ?", [.blob(id.bytes)]) { _ in found = true }
        return found
    }

    /// Deletes IDs whose packets have expired, then, above `maxEntries`, the ones that
    /// expire soonest (they are the least useful to keep); returns how many went.
    @discardableResult
    public func purge(nowMs: Int64) throws -> Int {
        insertsSincePurge = 0
        try db.query("DELETE FROM wire_seen_ids WHERE expires_at <= ?", [.int(nowMs)])
        var removed = db.changes
        let excess = try storedCount() - maxEntries
        if excess > 0 {
            try db.query("""
                DELETE FROM wire_seen_ids WHERE id IN
                (SELECT id FROM wire_seen_ids ORDER BY expires_at LIMIT ?)
                """, [.int(Int64(excess))])
            removed += db.changes
            front.removeAll()  // evicted IDs may still be in the front; storage is the truth
        }
        return removed
    }

    /// Records `key` (a packet digest) after the packet was opened and stored, in the same
    /// transaction. Retention is capped at `maxRetentionMs`.
    public func record(_ key: MessageID, expiresAtMs: Int64, nowMs: Int64) throws {
        _ = try check(key, expiresAtMs: expiresAtMs, nowMs: nowMs)
    }

    /// Forgets the in-memory front (as after a restart); storage is untouched.
    public func dropFront() { front.removeAll() }

    /// Rows in storage (tests, diagnostics).
    public func storedCount() throws -> Int {
        var n = 0
        try db.query("SELECT count(*) FROM wire_seen_ids") { n = $0.int(0) }
        return n
    }
}
