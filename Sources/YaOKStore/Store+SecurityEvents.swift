import YaOKSupport
import YaOKWire
import YaOKCrypto

/// The security log: time, kind and a detail that never holds message content or keys.
/// A hash chain, MACed and sealed while unlocked (Store+Integrity.swift).
extension Store {
    @discardableResult
    package func appendSecurityEvent(_ kind: SecurityEventKind, _ detail: String, time: Int64) throws -> SecurityEvent {
        try db.transaction {
            let last = try db.rows("SELECT id, chain FROM security_events ORDER BY id DESC LIMIT 1") {
                (id: $0.int64(0), chain: $0.isNull(1) ? nil : $0.blob(1))
            }.first
            try db.query("INSERT INTO security_events (time_ms, kind, detail) VALUES (?, ?, ?)",
                         [.int(time), .text(kind.rawValue), .text(detail)])
            let id = db.lastInsertRowID
            try chainNewEvent(id: id, time: time, kind: kind.rawValue, detail: detail, previous: last)
            return SecurityEvent(id: id, time: time, kind: kind, detail: detail)
        }
    }

    /// The newest `limit` events with an id below `before` (all when nil), oldest first.
    /// With the key at hand the whole log is verified first (and what fails is marked, see
    /// `checkLog`), so the `tampered` flags are current.
    package func securityEvents(limit: Int, before: Int64?, now: Int64) throws -> [SecurityEvent] {
        if let cipher = attached {
            _ = try db.transaction { try checkLog(cipher, starting: false, now: now) }
        }
        let rows = try db.rows("""
            SELECT id, time_ms, kind, detail, tampered FROM security_events
            WHERE id < ? ORDER BY id DESC LIMIT ?
            """, [.int(before ?? Int64.max), .int(Int64(limit))]) {
            SecurityEvent(id: $0.int64(0), time: $0.int64(1),
                          kind: SecurityEventKind(rawValue: $0.text(2)) ?? .other, detail: $0.text(3),
                          tampered: $0.int(4) != 0)
        }
        return rows.reversed()
    }
}
