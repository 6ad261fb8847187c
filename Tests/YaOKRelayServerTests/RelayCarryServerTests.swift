import Foundation
import Glibc
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// The relay as a carrier over its sockets (§12.9): CARRY frames in sessions, a deposit
/// taken by a recipient who never met the depositor, the claim deleting it, hostile CARRY
/// frames and floods with bounded memory. SQLite here, PostgreSQL in the subclass.
class RelayCarryServerTests: RelayTestCase {
    func carryingRelay(_ configure: (inout RelayConfiguration) -> Void = { _ in }) throws -> TestRelay {
        var c = testConfiguration()
        configure(&c)
        return kept(try TestRelay(configuration: c, backend: backend, carry: true))
    }

    func readyClient(_ relay: TestRelay, from address: UInt32? = nil) throws -> TestClient {
        let client = try TestClient(port: relay.port, from: address)
        guard case .ready? = try client.login() else { throw TestFailure("no READY") }
        return client
    }

    /// A meeting driver over a session: each payload goes as CARRY; what comes back is read
    /// until the relay has been quiet a moment (replies come from its carry thread; one
    /// that comes later is read with the next exchange, in order).
    func carryClient(_ client: TestClient, holding packets: [CarriedPacket] = []) -> CarryClient {
        CarryClient(holding: packets) { message in
            try client.send(.carry(message))
            var replies: [CarryLinkMessage] = []
            var wait = 1.0
            while let frame = try client.next(timeout: wait) {
                if case .carryFromRelay(let m) = frame { replies.append(m) }
                wait = 0.15
            }
            return replies
        }
    }

    /// The case at the relay: Alice's node deposits and goes away; Carol, never
    /// linked to Alice and subscribed to no mailbox of hers, takes it from the relay as
    /// its recipient; her claim travels back and the relay deletes the packet; Bob's stale
    /// copy is answered with the claim.
    func testDepositGoAwayRecipientTakesClaimDeletes() throws {
        let relay = try carryingRelay()
        let now = Clock.milliseconds()
        let (packet, claim) = try carriedPacket(nowMs: now, tag: 0xca201)
        do {
            let aliceSession = try readyClient(relay, from: 0x7f00_0002)
            let alice = carryClient(aliceSession, holding: [packet])
            try alice.meet(nowMs: now)
            XCTAssertEqual(alice.takenByRelay, [packet.identity])
        }  // Alice's connection closes here.
        let carolSession = try readyClient(relay, from: 0x7f00_0003)
        let carol = carryClient(carolSession)
        carol.wants = { $0.routingTag.value == 0xca201 }
        try carol.meet(nowMs: now)
        XCTAssertEqual(carol.received.map(\.identity), [packet.identity])
        XCTAssertEqual(carol.received.first?.payload, packet.payload)
        // Carol's node opens it and publishes the claim on its next meeting.
        try carryClient(carolSession).meet(nowMs: now, publishing: [claim])
        let bob = carryClient(try readyClient(relay, from: 0x7f00_0004), holding: [packet])
        try bob.meet(nowMs: now)
        XCTAssertEqual(bob.claimsHeard, [claim], "the relay answers a stale copy with its claim")
        XCTAssertEqual(bob.requestedByRelay, [])
        let anyone = carryClient(try readyClient(relay, from: 0x7f00_0005))
        anyone.wants = { _ in true }
        try anyone.meet(nowMs: now)
        XCTAssertTrue(anyone.offeredByRelay.isEmpty, "deleted: nothing left to offer")
        let figures = try XCTUnwrap(relay.server.carry).figures.withLock { $0 }
        XCTAssertEqual(figures.taken, 1)
        XCTAssertEqual(figures.handed, 1)
        XCTAssertEqual(figures.purged, 1)
        let counters = relay.server.statistics
        XCTAssertEqual([counters.carryTaken, counters.carryHanded, counters.carryPurged], [1, 1, 1])
    }

    /// CARRY frames that do not decode end the session (malformed), like any bad frame; the
    /// relay goes on serving meetings.
    func testBadCarryFramesEndTheSession() throws {
        let relay = try carryingRelay()
        let now = Clock.milliseconds()
        let (packet, _) = try carriedPacket(nowMs: now)
        let bad: [[UInt8]] = [
            [0x06],                                           // no kind
            [0x06, 0x55, 1, 2, 3],                            // unknown kind
            [0x06, 0x07, 0x01] + [UInt8](repeating: 1, count: 40),  // offer one byte short
            [0x06, 0x08, 0x02] + [UInt8](repeating: 1, count: 32),  // the same identity twice
            [0x06, 0x06],                                     // empty reconciliation message
            [0x06, 0x09] + Array(packet.encode().dropLast()), // carried packet cut short
            [0x87, 0x0a, 0x01] + [UInt8](repeating: 2, count: 16),  // the relay's frame, from a client
        ]
        for payload in bad {
            let client = try readyClient(relay)
            try client.sendRaw(try Frame.encode(payload, maxLength: RelayFrame.maxLength))
            let (closed, frames) = client.waitForClose()
            XCTAssertTrue(closed, "\(payload.prefix(3))")
            XCTAssertEqual(sessionErrors(frames), [.malformed], "\(payload.prefix(3))")
        }
        // A frame over the limit is refused by its length prefix.
        let big = try readyClient(relay)
        try big.sendRaw([0xFF, 0xFF, 0x06, 0x06])
        XCTAssertTrue(big.waitForClose().closed)
        let alice = carryClient(try readyClient(relay), holding: [packet])
        try alice.meet(nowMs: now)
        XCTAssertEqual(alice.takenByRelay, [packet.identity])
    }

    /// A relay without carry storage answers no meeting (an `off` node): the session goes on.
    func testRelayThatDoesNotCarryIgnoresCarry() throws {
        let relay = try startRelay()
        let client = try readyClient(relay)
        let (packet, _) = try carriedPacket(nowMs: Clock.milliseconds())
        try client.send(.carry(.offer([CarryOffer(identity: packet.identity, routingTag: packet.routingTag, copyBudget: 8,
                                                  claimHash: packet.claimHash)])))
        try client.send(.ping(request: 9))
        XCTAssertEqual(try client.next(timeout: 5), .pong(request: 9))
        XCTAssertNil(try client.next(timeout: 0.3))
    }

    /// A flood of offers (255 new identities each) and of unasked packets: the relay asks
    /// for no more than the address's hourly quota, refuses every unasked packet, stops
    /// reading while frames wait for its carry thread (backpressure), keeps its memory
    /// bounded, and another client's meeting still goes through.
    func testCarryFloodIsBounded() throws {
        let relay = try carryingRelay { $0.carryPacketsPerHour = 50 }
        let now = Clock.milliseconds()
        let flooder = try readyClient(relay, from: 0x7f00_0009)
        let offers = (0..<300).map { _ -> [UInt8] in
            let entries = (0..<255).map { _ in
                CarryOffer(identity: Sodium.randomBytes(16), routingTag: RoutingTag(value: 7), copyBudget: 8,
                           claimHash: Sodium.randomBytes(16))
            }
            return try! Frame.encode(RelayFrame.carry(.offer(entries)).encode(), maxLength: RelayFrame.maxLength)
        }
        let unasked = try (0..<300).map { _ in
            try Frame.encode(RelayFrame.carry(.carried(try carriedPacket(nowMs: now, payloadLength: 4000).packet)).encode(),
                             maxLength: RelayFrame.maxLength)
        }
        let flood = Array((offers + unasked).joined())
        let rssBefore = residentBytes()
        let fd = flooder.fd
        let sent = Locked(false)
        let thread = Thread {
            var offset = 0
            while offset < flood.count {
                let n = flood[offset...].withUnsafeBytes { send(fd, $0.baseAddress, min($0.count, 65536), Int32(MSG_NOSIGNAL)) }
                if n > 0 { offset += n; continue }
                if n < 0 && errno != EAGAIN && errno != EINTR { break }
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 100)
            }
            sent.withLock { $0 = true }
        }
        thread.start()
        // Read what the relay answers meanwhile (so its writes never block on us).
        var requested = 0
        var refused = 0
        var ended: [RelayErrorFrame.Code] = []
        let deadline = Date().addingTimeInterval(180)
        // Until everything was sent and every unasked packet answered (or the session ended).
        while Date() < deadline, refused < unasked.count, ended.isEmpty {
            guard let frame = try? flooder.next(timeout: 1) else { continue }
            switch frame {
            case .carryFromRelay(.request(let ids)): requested += ids.count
            case .carryFromRelay(.refused(let ids)): refused += ids.count
            case .error(let e) where e.request == 0: ended.append(e.code)
            default: break
            }
        }
        XCTAssertTrue(eventually(timeout: 60) { sent.withLock { $0 } })
        let growth = residentBytes() - rssBefore
        print("CARRY flood: \(flood.count >> 10) KiB sent, \(requested) packets asked for, \(refused) unasked refused, session ended \(ended), RSS +\(growth >> 20) MiB")
        XCTAssertEqual(ended, [])
        // Reading stops at 64 waiting; the read that reached 64 (16 KiB) holds at most 4
        // more of these frames (each over 4 KB), and a frame cut at its end one more.
        let server = relay.server
        let peak = server.onLoop { server.peakPendingCarry } ?? -1
        XCTAssertLessThanOrEqual(peak, 64 + 5)
        print("CARRY flood: at most \(peak) frames waited for the carry thread")
        XCTAssertEqual(refused, unasked.count, "every unasked packet refused")
        XCTAssertLessThanOrEqual(requested, 50, "no more than the address's hourly quota is asked for")
        XCTAssertLessThan(growth, 32 << 20)
        // Another client meets as usual.
        let (packet, _) = try carriedPacket(nowMs: now)
        let alice = carryClient(try readyClient(relay, from: 0x7f00_0002), holding: [packet])
        try alice.meet(nowMs: now)
        XCTAssertEqual(alice.takenByRelay, [packet.identity])
    }
}

final class PostgresRelayCarryServerTests: RelayCarryServerTests {
    override var backend: StoreBackend { .postgres }

    /// Two relays over one database carry from one store: Alice deposits at one, Carol
    /// takes it from the other.
    func testDepositAtOneRelayTakeFromAnother() throws {
        let first = try carryingRelay()
        let second = kept(try TestRelay(configuration: testConfiguration(), backend: .postgres, conninfo: first.conninfo, carry: true))
        let now = Clock.milliseconds()
        let (packet, _) = try carriedPacket(nowMs: now, tag: 0xca201)
        let alice = carryClient(try readyClient(first), holding: [packet])
        try alice.meet(nowMs: now)
        XCTAssertEqual(alice.takenByRelay, [packet.identity])
        let carol = carryClient(try readyClient(second))
        carol.wants = { $0.routingTag.value == 0xca201 }
        try carol.meet(nowMs: now)
        XCTAssertEqual(carol.received.map(\.identity), [packet.identity])
    }
}
