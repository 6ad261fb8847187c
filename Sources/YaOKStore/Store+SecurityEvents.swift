import YaOKSupport
import YaOKWire
import YaOKCrypto

/// The security log: time, kind and a detail that never holds message content or keys.
extension Store {
    @discardableResult
    package func appendSecurityEvent(_ kind: SecurityEventKind, _ detail: String, time: Int64) throws -> SecurityEvent {
        try db.query("INSERT INTO security_events (time_ms, kind, detail) VALUES (?, ?, ?)",
                     [.int(time), .text(kind.rawValue), .text(detail)])
        return SecurityEvent(id: db.lastInsertRowID, time: time, kind: kind, detail: detail)
    }

    /// The newest `limit` events with an id below `before` (all when nil), oldest first.
    package func securityEvents(limit: Int, before: Int64?) throws -> [SecurityEvent] {
        let rows = try db.rows("""
            SELECT id, time_ms, kind, detail FROM security_events
            WHERE id < ? ORDER BY id DESC LIMIT ?
            """, [.int(before ?? Int64.max), .int(Int64(limit))]) {
            SecurityEvent(id: $0.int64(0), time: $0.int64(1),
                          kind: SecurityEventKind(rawValue: $0.text(2)) ?? .other, detail: $0.text(3))
        }
        return rows.reversed()
    }
}
