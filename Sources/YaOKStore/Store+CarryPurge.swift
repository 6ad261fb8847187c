import YaOKSupport
import YaOKWire
import YaOKCrypto

/// Purging carried packets by claim (docs/PROTOCOL.md §10.6, §10.9), and remembering the
/// claims so that a late copy of a delivered packet is refused and the claim can be handed on.
extension Store {
    /// Applies a purge record at `nowMs`: each packet held whose claim hash is the hash of a
    /// claim, and which the claim verifies (`PurgeClaim.purges`, constant time, against the
    /// packet's own bytes), is deleted. Every claim is remembered in `carry_purges`: until
    /// the packet's expiry when this node held it, else until the latest expiry a copy can
    /// still arrive with (now + 14 days + 1 hour + 15 minutes, `CarriedPacket.maxExpiryAheadMs`).
    /// Over `policy.maxPurgeRecords`, claims for packets never held go first (anyone can
    /// publish random claims, so they are worth least), then claims of packets held (a
    /// depositor can seal packets and purge them with their own claims), then, last, this
    /// node's own claims (`own`: it opened or sealed the packet, §12.6), each rank by
    /// soonest expiry. `rememberUnheld` false (a record from a peer this node does not carry
    /// for, §12.1): a claim that deletes nothing here is dropped, not remembered, so such a
    /// peer cannot plant one and see it answered later (§12.8, "planted values"). Returns
    /// the identities deleted. One transaction.
    @discardableResult
    package func purgeCarried(_ record: PurgeRecord, nowMs: Int64, policy: CarryPolicy = .default,
                              own: Bool = false, rememberUnheld: Bool = true) throws -> [[UInt8]] {
        try policy.validate()
        return try db.transaction {
            var purged: [[UInt8]] = []
            for claim in record.claims {
                let hash = PurgeClaim.hash(claim)
                let candidates = try db.rows("SELECT id FROM carried_packets WHERE claim_hash = ?", [.blob(hash)]) { $0.blob(0) }
                var heldUntil: Int64?
                for id in candidates {
                    // Checked against the packet itself, not only the indexed column.
                    guard let packet = try carriedPacket(id), PurgeClaim.purges(claim, packet) else { continue }
                    try removeCarried(id)
                    purged.append(id)
                    heldUntil = max(heldUntil ?? .min, packet.expiresAtMs)
                }
                if heldUntil == nil, !own, !rememberUnheld { continue }
                try rememberPurge(claim: claim, hash: hash, expiresAtMs: heldUntil ?? nowMs &+ CarriedPacket.maxExpiryAheadMs,
                                  rank: own ? .own : heldUntil != nil ? .held : .neverHeld)
            }
            try trimPurges(to: policy.maxPurgeRecords)
            return purged
        }
    }

    /// Whether a claim with this hash was published and is still remembered at `nowMs`.
    package func isPurged(claimHash: [UInt8], nowMs: Int64) throws -> Bool {
        try !db.rows("SELECT 1 FROM carry_purges WHERE claim_hash = ? AND expires_ms > ?",
                     [.blob(claimHash), .int(nowMs)]) { $0.int(0) }.isEmpty
    }

    /// The remembered claim whose hash is `claimHash`, if it is still live at `nowMs`: what a
    /// node answers an offer of a delivered packet with.
    package func rememberedClaim(hash claimHash: [UInt8], nowMs: Int64) throws -> [UInt8]? {
        try db.rows("SELECT claim FROM carry_purges WHERE claim_hash = ? AND expires_ms > ?",
                    [.blob(claimHash), .int(nowMs)]) { $0.blob(0) }.first
    }

    /// Remembered claims still live at `nowMs`, latest expiry first (the ones most worth
    /// handing on), at most `limit`.
    package func rememberedPurgeClaims(nowMs: Int64, limit: Int) throws -> [(claim: [UInt8], expiresAtMs: Int64)] {
        try db.rows("SELECT claim, expires_ms FROM carry_purges WHERE expires_ms > ? ORDER BY expires_ms DESC, claim_hash LIMIT ?",
                    [.int(nowMs), .int(Int64(max(0, limit)))]) { (claim: $0.blob(0), expiresAtMs: $0.int64(1)) }
    }

    /// Forgets claims whose packets have expired (a copy arriving now is refused as expired
    /// anyway); returns how many.
    @discardableResult
    func forgetExpiredPurges(nowMs: Int64) throws -> Int {
        try db.query("DELETE FROM carry_purges WHERE expires_ms <= ?", [.int(nowMs)])
        return db.changes
    }

    /// How much a remembered claim is worth keeping (the `held` column, trimmed lowest first).
    private enum ClaimRank: Int64 {
        case neverHeld = 0
        case held = 1
        case own = 2
    }

    private func rememberPurge(claim: [UInt8], hash: [UInt8], expiresAtMs: Int64, rank: ClaimRank) throws {
        try db.query("""
            INSERT INTO carry_purges (claim_hash, claim, expires_ms, held) VALUES (?, ?, ?, ?)
            ON CONFLICT (claim_hash) DO UPDATE SET
                expires_ms = CASE WHEN excluded.held > held THEN excluded.expires_ms ELSE max(expires_ms, excluded.expires_ms) END,
                held = max(held, excluded.held)
            """, [.blob(hash), .blob(claim), .int(expiresAtMs), .int(rank.rawValue)])
    }

    private func trimPurges(to maxRecords: Int) throws {
        let count = try db.rows("SELECT count(*) FROM carry_purges") { $0.int(0) }.first ?? 0
        guard count > maxRecords else { return }
        try db.query("""
            DELETE FROM carry_purges WHERE claim_hash IN
            (SELECT claim_hash FROM carry_purges ORDER BY held, expires_ms LIMIT ?)
            """, [.int(Int64(count - maxRecords))])
    }
}
