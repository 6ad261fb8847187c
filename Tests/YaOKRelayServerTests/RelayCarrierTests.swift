import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// The relay's side of a meeting (§12.9), without sockets: deposit, take by the
/// recipient, purge both ways, the quota per address, what is refused.
final class RelayCarrierTests: XCTestCase {
    var directory = ""
    var store: SQLiteRelayCarryStore!
    var carrier: RelayCarrier!
    let now = Clock.milliseconds()
    let aliceAddress: UInt32 = 0x0a00_0001
    let carolAddress: UInt32 = 0x0a00_0003

    override func setUpWithError() throws {
        directory = try makeTempDirectory("relay-carrier")
        store = try SQLiteRelayCarryStore(directory: directory + "/carry")
        carrier = try RelayCarrier(store: store, policy: CarryPolicy(depositorPacketsPerHour: 3))
    }

    override func tearDown() {
        store?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func client(_ session: UInt64, address: UInt32, holding packets: [CarriedPacket] = []) -> CarryClient {
        carrier.open(session, address: address)
        return CarryClient(holding: packets) { [carrier, now] in try carrier!.receive($0, from: session, nowMs: now) }
    }

    /// Alice deposits and goes; Carol, who never met Alice, takes it as its recipient
    /// (her tag); her claim deletes it; Bob's later offer of his copy is answered with the
    /// claim, not a request.
    func testDepositTakeAndPurgeBothWays() throws {
        let (packet, claim) = try carriedPacket(nowMs: now, budget: 8, tag: 0xca201)
        let alice = client(1, address: aliceAddress, holding: [packet])
        try alice.meet(nowMs: now)
        XCTAssertEqual(alice.requestedByRelay, [packet.identity])
        XCTAssertEqual(alice.takenByRelay, [packet.identity])
        let held = try XCTUnwrap(try store.carriedPacket(packet.identity))
        XCTAssertEqual(held.copyBudget, 1, "the relay keeps a wait-phase copy")
        XCTAssertEqual(held.payload, packet.payload)
        carrier.close(1)

        // A stranger who does not want it (not its tag) is offered it with budget 1 and gets nothing.
        let stranger = client(2, address: 0x0a00_0009)
        try stranger.meet(nowMs: now)
        XCTAssertEqual(stranger.offeredByRelay.map(\.identity), [packet.identity])
        XCTAssertEqual(stranger.offeredByRelay.map(\.copyBudget), [1])
        XCTAssertTrue(stranger.received.isEmpty)

        let carol = client(3, address: carolAddress)
        carol.wants = { $0.routingTag.value == 0xca201 }
        try carol.meet(nowMs: now)
        XCTAssertEqual(carol.received.map(\.identity), [packet.identity])
        XCTAssertEqual(carol.received.first?.payload, packet.payload)
        XCTAssertEqual(carol.received.first?.copyBudget, 1)
        XCTAssertTrue(try store.holdsCarried(packet.identity), "taken by a client is not delivered: the claim says so")
        // Carol opened it and publishes the claim (§12.6): the relay deletes its copy.
        try client(4, address: carolAddress).meet(nowMs: now, publishing: [claim])
        XCTAssertFalse(try store.holdsCarried(packet.identity))

        // Bob still carries a copy and offers it: the relay answers with the claim.
        let bob = client(5, address: 0x0a00_0002, holding: [packet])
        try bob.meet(nowMs: now)
        XCTAssertEqual(bob.claimsHeard, [claim])
        XCTAssertEqual(bob.requestedByRelay, [])
        XCTAssertEqual(try store.carryUsage().packets, 0)
    }

    /// One address deposits at most its hourly quota, over any number of sessions; another
    /// address is not held back by it.
    func testQuotaPerAddressAcrossSessions() throws {
        let five = try (0..<5).map { _ in try carriedPacket(nowMs: now).packet }
        let first = client(1, address: aliceAddress, holding: five)
        try first.meet(nowMs: now)
        XCTAssertEqual(first.takenByRelay.count, 3)
        let again = client(2, address: aliceAddress, holding: five)
        try again.meet(nowMs: now)
        XCTAssertEqual(again.requestedByRelay, [])
        let other = client(3, address: carolAddress, holding: five)
        try other.meet(nowMs: now)
        XCTAssertEqual(other.takenByRelay.count, 2)
        XCTAssertEqual(try store.carryUsage().packets, 5)
    }

    /// Unasked packets, answers for nothing, requests for what was not offered, a
    /// reconciliation message §11 refuses: refused or ignored, nothing stored, the meeting
    /// goes on.
    func testWhatDoesNotFitTheMeeting() throws {
        carrier.open(1, address: aliceAddress)
        let (packet, _) = try carriedPacket(nowMs: now)
        XCTAssertEqual(try carrier.receive(.carried(packet), from: 1, nowMs: now), [.refused([packet.identity])])
        XCTAssertFalse(try store.holdsCarried(packet.identity))
        XCTAssertEqual(try carrier.receive(.request([packet.identity]), from: 1, nowMs: now), [])
        XCTAssertEqual(try carrier.receive(.taken([packet.identity]), from: 1, nowMs: now), [])
        XCTAssertEqual(try carrier.receive(.reconcile([0xff, 0xff, 0xff]), from: 1, nowMs: now), [])
        // A session the relay never opened (or closed) gets nothing.
        XCTAssertEqual(try carrier.receive(.offer([CarryOffer(identity: packet.identity, routingTag: packet.routingTag,
                                                              copyBudget: 8, claimHash: packet.claimHash)]), from: 99, nowMs: now), [])
        // The meeting still works after all that.
        let alice = CarryClient(holding: [packet]) { [carrier, now] in try carrier!.receive($0, from: 1, nowMs: now) }
        try alice.meet(nowMs: now)
        XCTAssertEqual(alice.takenByRelay, [packet.identity])
    }

    /// A packet that expires is swept and no longer offered.
    func testExpiredIsNotOffered() throws {
        let (packet, _) = try carriedPacket(nowMs: now, lifetimeMs: 3_600_000)
        try client(1, address: aliceAddress, holding: [packet]).meet(nowMs: now)
        XCTAssertTrue(try store.holdsCarried(packet.identity))
        let later = packet.expiresAtMs + 1
        carrier.open(2, address: carolAddress)
        let carol = CarryClient { [carrier] in try carrier!.receive($0, from: 2, nowMs: later) }
        carol.wants = { _ in true }
        try carol.meet(nowMs: later)
        XCTAssertTrue(carol.offeredByRelay.isEmpty)
        XCTAssertFalse(try store.holdsCarried(packet.identity), "swept")
    }

    /// Equal stores settle in one small exchange, as between nodes (§11).
    func testEqualStoresCostOneSmallExchange() throws {
        let packets = try (0..<3).map { _ in try carriedPacket(nowMs: now).packet }
        try client(1, address: aliceAddress, holding: packets).meet(nowMs: now)
        var bytes = 0
        var messages = 0
        carrier.open(2, address: aliceAddress)
        let same = CarryClient(holding: packets) { [carrier, now] m in
            let replies = try carrier!.receive(m, from: 2, nowMs: now)
            messages += 1 + replies.count
            bytes += try m.encodeBody().count + replies.reduce(0) { $0 + (try $1.encodeBody().count) }
            return replies
        }
        try same.meet(nowMs: now)
        XCTAssertEqual(messages, 2)
        XCTAssertLessThanOrEqual(bytes, 64)
        XCTAssertTrue(same.requestedByRelay.isEmpty && same.offeredByRelay.isEmpty)
    }

    /// A copy handed with its full budget (a node that halves, or one that lies) is kept
    /// with budget 1 all the same, offered with budget 1 and handed on with budget 1.
    func testKeepsWaitPhaseCopiesWhateverItIsHanded() throws {
        carrier.open(1, address: aliceAddress)
        let (packet, _) = try carriedPacket(nowMs: now, budget: 8, hop: 7)
        let offer = CarryOffer(identity: packet.identity, routingTag: packet.routingTag, copyBudget: 8, claimHash: packet.claimHash)
        XCTAssertEqual(try carrier.receive(.offer([offer]), from: 1, nowMs: now), [.request([packet.identity])])
        XCTAssertEqual(try carrier.receive(.carried(packet), from: 1, nowMs: now), [.taken([packet.identity])])
        XCTAssertEqual(try store.carriedPacket(packet.identity)?.copyBudget, 1)
        let carol = client(2, address: carolAddress)
        carol.wants = { _ in true }
        try carol.meet(nowMs: now)
        XCTAssertEqual(carol.offeredByRelay.map(\.copyBudget), [1])
        XCTAssertEqual(carol.received.map(\.copyBudget), [1])
        XCTAssertEqual(carol.received.map(\.hopLimit), [6])
        XCTAssertEqual(try store.carriedPacket(packet.identity)?.copyBudget, 1, "the relay keeps its own copy")
    }

    /// A client that lacks everything is offered at most 2,048 packets a session, a new
    /// random draw each session; and at most 256 meetings run at once.
    func testOffersAndMeetingsAreBounded() throws {
        carrier = try RelayCarrier(store: store, policy: CarryPolicy(maxPackets: 10_000, depositorPacketsPerHour: 10_000))
        let many = try (0..<(RelayCarryMeeting.maxOffered + 100)).map { _ in try carriedPacket(nowMs: now, payloadLength: 16).packet }
        // 2,048 asked for at most per session: two sessions deposit them all.
        try client(1, address: aliceAddress, holding: many).meet(nowMs: now)
        try client(4, address: aliceAddress, holding: many).meet(nowMs: now)
        XCTAssertEqual(try store.carryUsage().packets, many.count)
        let first = client(2, address: carolAddress)
        try first.meet(nowMs: now)
        XCTAssertEqual(first.offeredByRelay.count, RelayCarryMeeting.maxOffered)
        let second = client(3, address: carolAddress)
        try second.meet(nowMs: now)
        XCTAssertEqual(second.offeredByRelay.count, RelayCarryMeeting.maxOffered)
        XCTAssertNotEqual(Set(first.offeredByRelay.map(\.identity)), Set(second.offeredByRelay.map(\.identity)),
                          "another draw (equal with probability ~0)")
        for session in 10..<UInt64(10 + RelayCarrier.maxMeetings) { carrier.open(session, address: carolAddress) }
        XCTAssertEqual(carrier.sessions, RelayCarrier.maxMeetings)
        carrier.open(9_999, address: carolAddress)
        let (packet, _) = try carriedPacket(nowMs: now)
        XCTAssertEqual(try carrier.receive(.offer([CarryOffer(identity: packet.identity, routingTag: packet.routingTag, copyBudget: 8,
                                                              claimHash: packet.claimHash)]), from: 9_999, nowMs: now), [])
    }

    /// One /24 holding every meeting slot (256 connections are within its connection cap)
    /// does not keep another client from meeting the relay: the newcomer displaces the
    /// oldest meeting of the /24 holding the most.
    func testOnePrefixCannotHoldEveryMeeting() throws {
        let attacker: UInt32 = 0x0b00_0000
        for session in 10..<UInt64(10 + RelayCarrier.maxMeetings) {
            carrier.open(session, address: attacker | UInt32(session % 200))
        }
        XCTAssertEqual(carrier.sessions, RelayCarrier.maxMeetings)
        let (packet, _) = try carriedPacket(nowMs: now)
        let alice = client(1, address: aliceAddress, holding: [packet])
        try alice.meet(nowMs: now)
        XCTAssertEqual(alice.requestedByRelay, [packet.identity], "met although the attacker's /24 held every slot")
        XCTAssertEqual(alice.takenByRelay, [packet.identity])
        XCTAssertEqual(carrier.sessions, RelayCarrier.maxMeetings)
        // The attacker's oldest meeting went (no answer); its newest still meets.
        let (fresh, _) = try carriedPacket(nowMs: now)
        let offer = CarryOffer(identity: fresh.identity, routingTag: fresh.routingTag, copyBudget: 1, claimHash: fresh.claimHash)
        XCTAssertEqual(try carrier.receive(.offer([offer]), from: 10, nowMs: now), [])
        XCTAssertEqual(try carrier.receive(.offer([offer]), from: UInt64(9 + RelayCarrier.maxMeetings), nowMs: now),
                       [.request([fresh.identity])])
    }

    /// A client past its hour's bytes but not its packets is not asked for packet after
    /// packet, each refused (a session's state grew with every one it handed): once the
    /// store refuses one for the quota, nothing more is asked in that session.
    func testNothingAskedAfterTheQuotaRefusesADeposit() throws {
        carrier = try RelayCarrier(store: store, policy: CarryPolicy(depositorPacketsPerHour: 100,
                                                                     depositorBytesPerHour: Wire.maxPacketLength))
        carrier.open(1, address: aliceAddress)
        var asked = 0
        var refused = 0
        for _ in 0..<20 {
            let (packet, _) = try carriedPacket(nowMs: now, payloadLength: 9_000)
            let offer = CarryOffer(identity: packet.identity, routingTag: packet.routingTag, copyBudget: 8, claimHash: packet.claimHash)
            guard try carrier.receive(.offer([offer]), from: 1, nowMs: now) == [.request([packet.identity])] else { continue }
            asked += 1
            if try carrier.receive(.carried(packet), from: 1, nowMs: now) == [.refused([packet.identity])] { refused += 1 }
        }
        XCTAssertEqual(try store.carryUsage().packets, 1, "one 9 KB packet fits the hour's bytes")
        XCTAssertEqual(refused, 1)
        XCTAssertEqual(asked, 2)
    }

    /// One address cannot pull the store again and again through fresh sessions: what the
    /// relay hands it is capped per clock hour over all its sessions; another address and
    /// the next hour are served.
    func testHandedBytesPerAddressPerHour() throws {
        let cap = 4 * 1_024
        carrier = try RelayCarrier(store: store, policy: CarryPolicy(maxPackets: 1_000, depositorPacketsPerHour: 1_000),
                                   handedBytesPerAddressPerHour: cap)
        let packets = try (0..<40).map { _ in try carriedPacket(nowMs: now, payloadLength: 512).packet }
        try client(1, address: aliceAddress, holding: packets).meet(nowMs: now)
        XCTAssertEqual(try store.carryUsage().packets, 40)
        let size = CarriedPacket.headerLength + 512
        var received = 0
        for session in UInt64(10)..<20 {
            let greedy = client(session, address: carolAddress)
            greedy.wants = { _ in true }
            try greedy.meet(nowMs: now)
            received += greedy.received.count
        }
        XCTAssertLessThanOrEqual(received * size, cap + size, "at most the cap (and the packet that crossed it)")
        XCTAssertGreaterThan(received, 0)
        let other = client(30, address: 0x0c00_0001)
        other.wants = { _ in true }
        try other.meet(nowMs: now)
        XCTAssertGreaterThan(other.received.count, 0)
        let later = now + CarriedPacket.hourMs
        carrier.open(31, address: carolAddress)
        let nextHour = CarryClient(holding: []) { [carrier] in try carrier!.receive($0, from: 31, nowMs: later) }
        nextHour.wants = { _ in true }
        try nextHour.meet(nowMs: later)
        XCTAssertGreaterThan(nextHour.received.count, 0)
    }
}
