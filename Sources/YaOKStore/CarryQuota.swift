import YaOKSupport
import YaOKWire

/// Who handed a carried packet over, as far as the quota is concerned: an opaque token the
/// engine picks per link or per source (for example random bytes drawn when a link opens, or
/// a relay session's), never an identity, a key or anything stable across a stranger's
/// links. The store only compares it: it is what "one depositor" means for the quota. It is
/// kept with each packet (`CarriedEntry.depositor`), for diagnostics and for a fairer
/// eviction should the simulator favour one.
package struct CarryDepositor: Hashable, Sendable {
    package static let maxLength = 32
    package let bytes: [UInt8]

    /// `invalidArgument` for an empty token or one over 32 bytes.
    package init(_ bytes: [UInt8]) throws {
        guard (1...Self.maxLength).contains(bytes.count) else {
            throw YaOKError(.invalidArgument, "A depositor token is 1 to \(Self.maxLength) bytes, got \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// A fresh random token (for a link that has no better one).
    package static func random() -> CarryDepositor {
        var rng = SystemRandomNumberGenerator()
        // 16 random bytes: unique per link with overwhelming probability, and meaningless.
        return CarryDepositor(unchecked: (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &rng) })
    }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }
}

/// The per-depositor quota (docs/PROTOCOL.md §10.9): packets and bytes taken from one
/// depositor in one clock hour (`floor(now / 3600000)`), counted in `carry_quota` when a
/// packet is taken, in the same transaction. It counts what was taken, not what is still
/// held: a depositor whose packets were evicted or purged does not get its quota back
/// within the hour, so a stranger cannot push packets through the store faster than the
/// quota by making the store evict its own. Fixed windows: a depositor may take up to twice
/// the hourly quota across an hour boundary; that is bounded and needs no per-packet log.
/// The counters are in the database, so a restart does not hand out a fresh quota.
extension Store {
    /// What `depositor` has used in the hour of `nowMs`.
    package func carryQuotaUsed(_ depositor: CarryDepositor, nowMs: Int64) throws -> (packets: Int, bytes: Int) {
        let rows = try db.rows("SELECT packets, bytes FROM carry_quota WHERE depositor = ? AND hour = ?",
                               [.blob(depositor.bytes), .int(Self.quotaHour(nowMs))]) { ($0.int(0), $0.int(1)) }
        return rows.first.map { (packets: $0.0, bytes: $0.1) } ?? (0, 0)
    }

    /// Whether one more packet of `size` bytes from `depositor` fits its hourly quota.
    func carryQuotaAllows(_ depositor: CarryDepositor, size: Int, nowMs: Int64, policy: CarryPolicy) throws -> Bool {
        let used = try carryQuotaUsed(depositor, nowMs: nowMs)
        return used.packets + 1 <= policy.depositorPacketsPerHour && used.bytes + size <= policy.depositorBytesPerHour
    }

    /// Counts one packet taken; run in the take's transaction.
    func chargeCarryQuota(_ depositor: CarryDepositor, size: Int, nowMs: Int64) throws {
        try db.query("""
            INSERT INTO carry_quota (depositor, hour, packets, bytes) VALUES (?, ?, 1, ?)
            ON CONFLICT (depositor, hour) DO UPDATE SET packets = packets + 1, bytes = bytes + excluded.bytes
            """, [.blob(depositor.bytes), .int(Self.quotaHour(nowMs)), .int(Int64(size))])
    }

    /// Forgets the counters of hours before the hour of `nowMs` (the sweep).
    @discardableResult
    func forgetOldCarryQuota(nowMs: Int64) throws -> Int {
        try db.query("DELETE FROM carry_quota WHERE hour < ?", [.int(Self.quotaHour(nowMs))])
        return db.changes
    }

    static func quotaHour(_ nowMs: Int64) -> Int64 {
        // Floor division: a clock before 1970 (a broken RTC) still lands in a well-defined hour.
        nowMs >= 0 ? nowMs / CarriedPacket.hourMs : -((-nowMs - 1) / CarriedPacket.hourMs) - 1
    }
}
