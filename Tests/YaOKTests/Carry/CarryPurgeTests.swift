import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// Purge by claim (docs/PROTOCOL.md §10.6): only the claim deletes, and the claim is
/// remembered until the packet's expiry so that a late copy is refused.
@Suite struct CarryPurgeTests {
    @Test func theClaimDeletesItsPacketAndNoOther() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let claim = PurgeClaim.random()
        let target = try bench.packet(claim: claim)
        let other = try bench.packet()
        try bench.mustTake(target)
        try bench.mustTake(other)
        #expect(try bench.store.purgeCarried(try PurgeRecord(claims: [PurgeClaim.random()]), nowMs: bench.now) == [])
        #expect(try bench.heldIDs() == Set([target.identity, other.identity]))
        // The claim hash is public: publishing it instead of the claim deletes nothing.
        #expect(try bench.store.purgeCarried(try PurgeRecord(claims: [target.claimHash]), nowMs: bench.now) == [])
        #expect(try bench.store.purgeCarried(try PurgeRecord(claims: [claim]), nowMs: bench.now) == [target.identity])
        #expect(try bench.heldIDs() == Set([other.identity]))
    }

    @Test func aLateCopyIsRefusedUntilThePacketExpires() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let claim = PurgeClaim.random()
        let packet = try bench.packet(lifetimeMs: 2 * 86_400_000, claim: claim)
        try bench.mustTake(packet)
        try bench.store.purgeCarried(try PurgeRecord(claims: [claim]), nowMs: bench.now)
        #expect(try bench.take(packet, from: CarryBench.bob) == .purged)
        try bench.reopen()
        bench.now = packet.expiresAtMs - 1
        #expect(try bench.take(packet, from: CarryBench.bob) == .purged)
        #expect(try bench.store.rememberedPurgeClaims(nowMs: bench.now, limit: 10).map(\.claim) == [claim])
        // At its expiry the claim is forgotten: the packet is refused as expired anyway.
        bench.now = packet.expiresAtMs
        #expect(try bench.store.sweepCarried(nowMs: bench.now).purgeRecords == 1)
        #expect(throws: YaOKError(.expired)) { try bench.take(packet) }
    }

    @Test func aClaimForAPacketNeverHeldRefusesItLater() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let claim = PurgeClaim.random()
        let packet = try bench.packet(lifetimeMs: CarriedPacket.maxLifetimeMs, claim: claim)
        #expect(try bench.store.purgeCarried(try PurgeRecord(claims: [claim]), nowMs: bench.now) == [])
        bench.now += 86_400_000
        #expect(try bench.take(packet) == .purged)
        #expect(try bench.store.carryUsage().packets == 0)
    }

    /// The indexed claim hash is only a lookup: the claim is checked against the packet's
    /// own bytes, so a row whose column was altered is not purged by a claim of another.
    @Test func theClaimIsCheckedAgainstThePacket() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet()
        try bench.mustTake(packet)
        let forged = PurgeClaim.random()
        try bench.store.db.query("UPDATE carried_packets SET claim_hash = ?", [.blob(PurgeClaim.hash(forged))])
        #expect(try bench.store.purgeCarried(try PurgeRecord(claims: [forged]), nowMs: bench.now) == [])
        #expect(try bench.heldIDs() == Set([packet.identity]))
    }

    @Test func claimsOfPacketsNeverHeldAreForgottenFirst() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let policy = CarryPolicy(maxPurgeRecords: 4)
        var heldClaims: [[UInt8]] = []
        for _ in 0..<2 {
            let claim = PurgeClaim.random()
            try bench.mustTake(try bench.packet(claim: claim))
            heldClaims.append(claim)
        }
        try bench.store.purgeCarried(try PurgeRecord(claims: heldClaims), nowMs: bench.now, policy: policy)
        // A flood of random claims (anyone can publish those) keeps the held ones.
        for _ in 0..<5 {
            try bench.store.purgeCarried(try PurgeRecord(claims: (0..<100).map { _ in PurgeClaim.random() }),
                                         nowMs: bench.now, policy: policy)
        }
        let kept = try bench.store.rememberedPurgeClaims(nowMs: bench.now, limit: 100).map(\.claim)
        #expect(kept.count == 4)
        #expect(Set(heldClaims).isSubset(of: Set(kept)))
    }

    /// Claims this node published (it opened or sealed the packet) outrank every other: a
    /// peer that floods random claims, or deposits packets and purges them with their own
    /// claims (held claims), must not make it forget its own, which answer offers of its
    /// delivered packets and refuse their late copies.
    @Test func ownClaimsOutliveFloodsOfHeldAndRandomClaims() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let policy = CarryPolicy(maxPurgeRecords: 4)
        let own = PurgeClaim.random()
        try bench.store.purgeCarried(try PurgeRecord(claims: [own]), nowMs: bench.now, policy: policy, own: true)
        var held: [[UInt8]] = []
        for _ in 0..<6 {
            let claim = PurgeClaim.random()
            try bench.mustTake(try bench.packet(claim: claim))
            held.append(claim)
        }
        try bench.store.purgeCarried(try PurgeRecord(claims: held.sorted { $0.lexicographicallyPrecedes($1) }),
                                     nowMs: bench.now, policy: policy)
        try bench.store.purgeCarried(try PurgeRecord(claims: (0..<100).map { _ in PurgeClaim.random() }.sorted {
            $0.lexicographicallyPrecedes($1) }), nowMs: bench.now, policy: policy)
        #expect(try bench.store.isPurged(claimHash: PurgeClaim.hash(own), nowMs: bench.now))
        #expect(try bench.store.rememberedPurgeClaims(nowMs: bench.now, limit: 100).count == 4)
    }
}
