import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// A stranger must not be able to plant a value in a node and read it back at a later
/// meeting (docs/PROTOCOL.md §12.8, "planted values"): that would let it recognise the node
/// across days although anonymous links name nobody (§5.8).
@Suite struct CarryCookieTests {
    /// Mallory, a stranger, tells Bob (contacts mode) a random claim of a packet he never
    /// held, then offers a made-up packet under that claim's hash. Before the fix Bob
    /// remembered the claim and answered the offer with it: a cookie Mallory could read back
    /// on any later link for 14 days, although a node in contacts mode shows strangers an
    /// empty store. Now a link where Bob does not carry only purges what he holds.
    @Test func aStrangerCannotPlantAClaimInANodeThatDoesNotCarryForIt() throws {
        let m = try Meeting(["Mallory", "Bob"])
        defer { m.finish() }
        try m["Bob"].setCarry(mode: .contactsOnly)
        let pipe = try m.link("Mallory", "Bob") { m["Mallory"].carryIdle && m["Bob"].carryIdle }
        defer { pipe.close() }
        let claim = Sodium.randomBytes(16)
        let hash = PurgeClaim.hash(claim)
        try m["Mallory"].sendCarry(.purge(try PurgeRecord(claims: [claim])))
        m.settle("Mallory", "Bob")
        try m["Mallory"].sendCarry(.offer([CarryOffer(identity: Sodium.randomBytes(16), routingTag: RoutingTag(value: 42),
                                                      copyBudget: 8, claimHash: hash)]))
        m.settle("Mallory", "Bob")
        m.settle("Mallory", "Bob")
        #expect(m["Bob"].remembers(claimHash: hash) == false)
        // Had Bob answered, Mallory's node would now remember the claim it never published.
        #expect(m["Mallory"].remembers(claimHash: hash) == false)
        #expect(pipe.initiator.isAuthenticated && pipe.responder.isAuthenticated)
    }
}

extension Node {
    /// Whether this node remembers a published claim with this hash (§10.9).
    func remembers(claimHash: [UInt8]) -> Bool? {
        state.withLock { s in try? s.store?.isPurged(claimHash: claimHash, nowMs: s.delivery.now) }
    }
}

extension CarryCookieTests {
    /// Switching to contacts mode applies to the meetings in progress: a stranger's link
    /// that was carrying stops (before the fix it went on taking the stranger's packets,
    /// showing it the store and remembering its claims until the link closed, which an
    /// app's own link may never do).
    @Test func switchingToContactsEndsMeetingsWithStrangers() throws {
        let m = try Meeting(["Mallory", "Bob"])
        defer { m.finish() }
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now = m.clock.now
        let pipe = try m.link("Mallory", "Bob") { m["Mallory"].carryIdle && m["Bob"].carryIdle }
        defer { pipe.close() }
        try m["Bob"].setCarry(mode: .contactsOnly)
        let packet = try bench.packet()
        try m["Mallory"].sendCarry(.offer([CarryOffer(identity: packet.identity, routingTag: packet.routingTag,
                                                      copyBudget: 8, claimHash: packet.claimHash)]))
        m.settle("Mallory", "Bob")
        m.settle("Mallory", "Bob")
        #expect(m["Bob"].state.withLock { $0.delivery.carry.sessions.values.allSatisfy { !$0.asked.contains(packet.identity) } })
        try m["Mallory"].sendCarry(.carried(packet))
        m.settle("Mallory", "Bob")
        #expect(m["Bob"].carriedCount == 0)
    }
}

extension CarryCookieTests {
    /// A stranger floods a node in mode `anyone` with purge records of random claims (each
    /// remembered as a claim of a packet never held): the memory stays at its cap (§10.9:
    /// 20,000), the link stays up, and the node's own claim outlives the flood. Passes as
    /// is (coverage of §10.9's ranks through a real link, not a fix).
    @Test func aFloodOfRandomClaimsStaysAtTheCap() throws {
        let m = try Meeting(["Mallory", "Bob"])
        defer { m.finish() }
        let own = PurgeClaim.random()
        try m["Bob"].withEngine { engine, store, _ in try engine.publishClaims([own], store) }
        let pipe = try m.link("Mallory", "Bob") { m["Mallory"].carryIdle && m["Bob"].carryIdle }
        defer { pipe.close() }
        let start = Date()
        for _ in 0..<100 {
            let claims = (0..<PurgeRecord.maxClaims).map { _ in PurgeClaim.random() }.sorted { $0.lexicographicallyPrecedes($1) }
            try m["Mallory"].sendCarry(.purge(try PurgeRecord(claims: claims)))
        }
        m.settle("Mallory", "Bob")
        #expect(eventually {
            m["Bob"].state.withLock { s in ((try? s.store?.rememberedPurgeClaims(nowMs: s.delivery.now, limit: 100_000))?.count ?? 0) == CarryPolicy.default.maxPurgeRecords }
        })
        print("purge flood: 100 records of 255 claims handled in \(Date().timeIntervalSince(start)) s")
        #expect(m["Bob"].remembers(claimHash: PurgeClaim.hash(own)) == true)
        #expect(pipe.initiator.isAuthenticated && pipe.responder.isAuthenticated)
    }
}
