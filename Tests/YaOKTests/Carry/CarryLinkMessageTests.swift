import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The meeting's link payloads (docs/PROTOCOL.md §12.2): strict decoders, and a hostile peer
/// that keeps the link up but gets nothing stored.
@Suite struct CarryLinkMessageTests: VectorSuite {
    static let id1 = [UInt8](repeating: 1, count: 16)
    static let id2 = [UInt8](repeating: 2, count: 16)

    func decode(_ plaintext: [UInt8]) throws -> LinkPayload { try LinkPayload.decode(plaintext) }

    @Test func everyKindRoundTrips() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet()
        let messages: [CarryLinkMessage] = [
            .reconcile([0x01, 0x01, 0x00]),
            .offer([CarryOffer(identity: Self.id1, routingTag: RoutingTag(value: 7), copyBudget: 8, claimHash: Self.id2),
                    CarryOffer(identity: Self.id2, routingTag: RoutingTag(value: 9), copyBudget: 1, claimHash: Self.id1)]),
            .request([Self.id2, Self.id1]),
            .carried(packet),
            .taken([Self.id1]),
            .purge(try PurgeRecord(claims: [Self.id1, Self.id2])),
            .refused([Self.id1, Self.id2]),
        ]
        for message in messages {
            let plaintext = try LinkPayload.carry(message).encode()
            #expect(plaintext[0] == message.kind.rawValue)
            #expect(try decode(plaintext) == .carry(message))
        }
    }

    /// The vectors of docs/PROTOCOL.md §12.2: built, encoded, decoded back.
    @Test func vectors() throws {
        let offer = try vector("carry-offer")
        let entry = CarryOffer(identity: try offer.hex("identity"), routingTag: try RoutingTag(bytes: try offer.hex("routing_tag")),
                               copyBudget: UInt8(try offer.int64("copy_budget")), claimHash: try offer.hex("claim_hash"))
        #expect(try LinkPayload.carry(.offer([entry])).encode() == (try offer.hex("plaintext")))
        #expect(try decode(try offer.hex("plaintext")) == .carry(.offer([entry])))
        let taken = try vector("carry-taken")
        #expect(try LinkPayload.carry(.taken([try taken.hex("identity")])).encode() == (try taken.hex("plaintext")))
        #expect(try decode(try taken.hex("plaintext")) == .carry(.taken([try taken.hex("identity")])))
    }

    @Test(arguments: ["carry-reject-offer-budget", "carry-reject-request-twice"])
    func rejectVectors(_ name: String) throws {
        let v = try vector(name)
        #expect(try v.string("error") == "malformedPacket")
        #expect(throws: YaOKError(.malformedPacket)) { try decode(try v.hex("plaintext")) }
    }

    @Test func hostileBodiesAreRefused() throws {
        let id = Self.id1
        let claimHash = Self.id2
        let entry = id + [0, 0, 0, 0, 0, 0, 0, 1] + [8] + claimHash
        let bad: [[UInt8]] = [
            [0x06],                                                // empty reconciliation message
            [0x06] + [UInt8](repeating: 1, count: 16 * 1024 + 1),  // over the message limit
            [0x07], [0x07, 0x00],                                  // offer: no count, count 0
            [0x07, 0x01] + entry.dropLast(),                       // entry cut short
            [0x07, 0x01] + entry + [0],                            // a byte too many
            [0x07, 0x02] + entry + entry,                          // the same packet twice
            [0x07, 0x01] + id + [0, 0, 0, 0, 0, 0, 0, 1] + [0] + claimHash,  // budget 0
            [0x07, 0xff] + entry,                                  // count says 255
            [0x08], [0x08, 0x00], [0x08, 0x01] + id.dropLast(),    // request
            [0x08, 0x02] + id + id,                                // request twice
            [0x09], [0x09, 0x01, 0x06, 0x08],                      // carried: cut short
            [0x09, 0x01, 0x06, 0x08, 0x00] + [UInt8](repeating: 0, count: 30),  // budget 0
            [0x09, 0x01, 0x01] + [UInt8](repeating: 0, count: 40), // a routed packet, not carried
            [0x0A], [0x0A, 0x01], [0x0A, 0x01] + id + [0],         // taken
            [0x0A, 0x02] + id + id,
            [0x0B], [0x0B, 0x01, 0x07, 0x00],                      // purge: no claim
            [0x0B, 0x01, 0x07, 0x02] + Self.id2 + Self.id1,        // claims not ascending
            [0x0C], [0x0C, 0x00], [0x0C, 0x01] + id + id,          // refused
        ]
        for plaintext in bad {
            #expect(throws: YaOKError(.malformedPacket)) { try decode(plaintext) }
        }
    }

    /// Builds refuse what the receiver would refuse, so no counter is spent on it.
    @Test func unencodableMessagesAreRefused() {
        #expect(throws: YaOKError(.invalidArgument)) { try LinkPayload.carry(.request([])).encode() }
        #expect(throws: YaOKError(.invalidArgument)) { try LinkPayload.carry(.taken([Self.id1, Self.id1])).encode() }
        #expect(throws: YaOKError(.invalidArgument)) { try LinkPayload.carry(.reconcile([])).encode() }
        #expect(throws: YaOKError(.invalidArgument)) {
            try LinkPayload.carry(.refused((0..<256).map { i in [UInt8](repeating: UInt8(i & 0xff), count: 15) + [UInt8(i >> 8)] })).encode()
        }
    }

    /// Mallory, a stranger, links with Bob and sends what an honest peer never would: a
    /// packet Bob did not ask for, answers for nothing, requests for what was not offered,
    /// a reconciliation message that is junk, a flood of offers, random claims. The link
    /// stays up, Bob stores nothing he did not ask for, and his state stays bounded.
    @Test func aHostilePeerKeepsTheLinkButGetsNothingStored() throws {
        let m = try Meeting(["Mallory", "Bob"])
        defer { m.finish() }
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now = m.clock.now
        let pipe = try m.link("Mallory", "Bob") { m["Mallory"].carryIdle && m["Bob"].carryIdle }
        defer { pipe.close() }
        let mallory = m["Mallory"]
        try mallory.sendCarry(.carried(try bench.packet()))
        try mallory.sendCarry(.taken([Self.id1]))
        try mallory.sendCarry(.refused([Self.id2]))
        try mallory.sendCarry(.request([Self.id1, Self.id2]))
        try mallory.sendCarry(.reconcile([0x01, 0x01, 0x05, 0xff]))
        try mallory.sendCarry(.purge(try PurgeRecord(claims: [Self.id1, Self.id2])))
        // After all that the link still works: a packet Bob asks for is taken.
        let honest = try bench.packet()
        try mallory.sendCarry(.offer([CarryOffer(identity: honest.identity, routingTag: honest.routingTag, copyBudget: 8,
                                                 claimHash: honest.claimHash)]))
        #expect(eventually { m["Bob"].state.withLock { $0.delivery.carry.sessions.values.contains { $0.asked.contains(honest.identity) } } })
        try mallory.sendCarry(.carried(honest))
        #expect(eventually { m["Bob"].carriedCount == 1 })
        // Offers without end: Bob asks for a bounded number.
        for round in 0..<12 {
            let entries = (0..<255).map { i in
                CarryOffer(identity: Sodium.randomBytes(16), routingTag: RoutingTag(value: UInt64(round * 255 + i)), copyBudget: 8,
                           claimHash: Sodium.randomBytes(16))
            }
            try mallory.sendCarry(.offer(entries))
        }
        m.settle("Mallory", "Bob")
        m.settle("Mallory", "Bob")
        #expect(pipe.initiator.isAuthenticated && pipe.responder.isAuthenticated)
        #expect(m["Bob"].carriedCount == 1)
        let asked = m["Bob"].state.withLock { $0.delivery.carry.sessions.values.map(\.asked.count).max() ?? 0 }
        #expect(asked <= CarrySession.maxAsked)
        let settled = m["Bob"].state.withLock { $0.delivery.carry.sessions.values.map(\.settled.count).max() ?? 0 }
        #expect(settled == 1)  // the honest packet only
    }
}

extension CarryLinkMessageTests {
    /// A reconciliation message §11 refuses ends that meeting's reconciliation, counted as a
    /// bad packet, and the link stays up.
    @Test func aJunkReconciliationMessageEndsTheExchangeNotTheLink() throws {
        let m = try Meeting(["Mallory", "Bob"])
        defer { m.finish() }
        // Mallory does not carry, so she never opens; Bob (responder) waits for her first message.
        try m["Mallory"].setCarry(mode: .off)
        let pipe = try m.link("Mallory", "Bob") { m["Bob"].state.withLock { !$0.delivery.carry.sessions.isEmpty } }
        defer { pipe.close() }
        func reconciling() -> Bool { m["Bob"].state.withLock { $0.delivery.carry.sessions.values.contains { $0.reconciler != nil } } }
        #expect(reconciling())
        try m["Mallory"].sendCarry(.reconcile([0x01, 0x01, 0x05, 0xff]))
        #expect(eventually { !reconciling() })
        let bad = m["Bob"].state.withLock { $0.delivery.links.values.map(\.badUnits).max() ?? 0 }
        #expect(bad == 1)
        #expect(pipe.initiator.isAuthenticated && pipe.responder.isAuthenticated)
    }

    /// A peer whose packets the store refuses (here: a full store of higher budgets) is not
    /// asked for packet after packet, each handed and refused after a store transaction:
    /// after the first refusal for room only higher budgets are asked for on that link.
    @Test func afterARefusalForRoomNothingMoreIsAskedToCarry() throws {
        let m = try Meeting(["Mallory", "Bob"])
        defer { m.finish() }
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now = m.clock.now
        try m["Bob"].setCarry(mode: .anyone, limits: CarryLimits(maxPackets: 1))
        let pipe = try m.link("Mallory", "Bob") { m["Mallory"].carryIdle && m["Bob"].carryIdle }
        defer { pipe.close() }
        func isAsked(_ id: [UInt8]) -> Bool {
            m["Bob"].state.withLock { $0.delivery.carry.sessions.values.contains { $0.asked.contains(id) } }
        }
        func refused() -> Int { m["Bob"].state.withLock { $0.delivery.carry.counters.packetsRefused } }
        var asked = 0
        for i in 0..<8 {
            let packet = try bench.packet(budget: i == 0 ? 8 : 2)
            try m["Mallory"].sendCarry(.offer([CarryOffer(identity: packet.identity, routingTag: packet.routingTag,
                                                          copyBudget: packet.copyBudget, claimHash: packet.claimHash)]))
            m.settle("Mallory", "Bob")
            guard isAsked(packet.identity) else { continue }
            asked += 1
            let before = (m["Bob"].carriedCount, refused())
            try m["Mallory"].sendCarry(.carried(packet))
            #expect(eventually { (m["Bob"].carriedCount, refused()) != before })
        }
        #expect(m["Bob"].carriedCount == 1)
        #expect(refused() == 1)
        #expect(asked == 2)
        // A higher budget than the one refused is still asked for (it may evict, §10.9).
        let higher = try bench.packet(budget: 8)
        try m["Mallory"].sendCarry(.offer([CarryOffer(identity: higher.identity, routingTag: higher.routingTag,
                                                      copyBudget: 8, claimHash: higher.claimHash)]))
        #expect(eventually { isAsked(higher.identity) })
    }
}

extension CarryLinkMessageTests {
    /// `packets_refused` counts what the header and docs/ABI.md say: packets asked for and
    /// then refused, an expired one included (it was answered `refused` and not counted).
    @Test func anExpiredPacketCountsAsRefused() throws {
        let m = try Meeting(["Mallory", "Bob"])
        defer { m.finish() }
        let bench = try CarryBench()
        defer { bench.finish() }
        bench.now = m.clock.now
        let pipe = try m.link("Mallory", "Bob") { m["Mallory"].carryIdle && m["Bob"].carryIdle }
        defer { pipe.close() }
        let packet = try bench.packet(lifetimeMs: 60_000)
        try m["Mallory"].sendCarry(.offer([CarryOffer(identity: packet.identity, routingTag: packet.routingTag,
                                                      copyBudget: 8, claimHash: packet.claimHash)]))
        #expect(eventually { m["Bob"].state.withLock { $0.delivery.carry.sessions.values.contains { $0.asked.contains(packet.identity) } } })
        m.clock.advance(seconds: 2 * 3_600)
        try m["Mallory"].sendCarry(.carried(packet))
        m.settle("Mallory", "Bob")
        #expect(m["Bob"].carriedCount == 0)
        #expect(m["Bob"].state.withLock { $0.delivery.carry.counters.packetsRefused } == 1)
    }
}
