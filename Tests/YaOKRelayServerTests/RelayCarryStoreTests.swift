import Foundation
import Glibc
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore

/// The relay's carry store (§12.9, §10.9): take, duplicate, quota, the eviction order,
/// purge by verified claim, sweep; on SQLite here, every test again on PostgreSQL in
/// `PostgresRelayCarryStoreTests`.
class RelayCarryStoreTests: XCTestCase {
    var directory = ""
    var store: RelayCarryStore!
    var conninfo = ""
    let now = Clock.milliseconds()
    var backend: StoreBackend { .sqlite }
    let alice = try! CarryDepositor(Array(repeating: 1, count: 16))
    let bob = try! CarryDepositor(Array(repeating: 2, count: 16))
    let carol = try! CarryDepositor(Array(repeating: 3, count: 16))

    override func setUpWithError() throws {
        directory = try makeTempDirectory("relay-carry")
        if backend == .postgres { conninfo = try TestPostgres.freshDatabase() }
        store = backend == .postgres ? try PostgresRelayCarryStore(conninfo: conninfo)
                                     : try SQLiteRelayCarryStore(directory: directory + "/carry")
    }

    override func tearDown() {
        store?.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func policy(packets: Int = 100, bytes: Int = 1 << 20, perHour: Int = 100) -> CarryPolicy {
        CarryPolicy(maxPackets: packets, maxBytes: max(bytes, Wire.maxPacketLength), depositorPacketsPerHour: perHour,
                    depositorBytesPerHour: 1 << 20)
    }

    func testTakeThenDuplicateThenKeysInOrder() throws {
        let a = try carriedPacket(nowMs: now, lifetimeMs: 2 * 86_400_000).packet
        let b = try carriedPacket(nowMs: now, lifetimeMs: 86_400_000).packet
        XCTAssertEqual(try store.takeCarried(a.encode(), from: alice, nowMs: now, policy: policy()), .taken(evicted: 0))
        XCTAssertEqual(try store.takeCarried(b.encode(), from: alice, nowMs: now, policy: policy()), .taken(evicted: 0))
        XCTAssertEqual(try store.takeCarried(a.encode(), from: bob, nowMs: now, policy: policy()), .duplicate)
        XCTAssertEqual(try store.carriedKeys(nowMs: now, limit: 10).map(\.id), [b.identity, a.identity])
        XCTAssertEqual(try store.carriedPacket(a.identity)?.payload, a.payload)
        XCTAssertTrue(try store.holdsCarried(a.identity))
        XCTAssertEqual(try store.carryUsage().packets, 2)
        XCTAssertEqual(try store.carryQuotaUsed(alice, nowMs: now).packets, 2)
        XCTAssertEqual(try store.carryQuotaUsed(bob, nowMs: now).packets, 0)
    }

    func testDepositorQuotaPerHour() throws {
        let p = policy(perHour: 2)
        for _ in 0..<2 {
            XCTAssertEqual(try store.takeCarried(carriedPacket(nowMs: now).packet.encode(), from: alice, nowMs: now, policy: p), .taken(evicted: 0))
        }
        XCTAssertEqual(try store.takeCarried(carriedPacket(nowMs: now).packet.encode(), from: alice, nowMs: now, policy: p), .overQuota)
        XCTAssertEqual(try store.takeCarried(carriedPacket(nowMs: now).packet.encode(), from: bob, nowMs: now, policy: p), .taken(evicted: 0))
        // The next clock hour gives Alice her quota again.
        let later = now + CarriedPacket.hourMs
        XCTAssertEqual(try store.takeCarried(carriedPacket(nowMs: later).packet.encode(), from: alice, nowMs: later, policy: p), .taken(evicted: 0))
    }

    /// A take into a full store evicts every expired packet, however many (PostgreSQL reads
    /// them a page of 256 at a time: three pages here), and nothing live.
    func testEveryExpiredPacketGoesInOneTake() throws {
        let p = policy(packets: 531, bytes: 1 << 30, perHour: 10_000)
        var expiring: Set<[UInt8]> = []
        for _ in 0..<530 {
            let packet = try carriedPacket(nowMs: now, lifetimeMs: CarriedPacket.hourMs, payloadLength: 16).packet
            expiring.insert(packet.identity)
            XCTAssertEqual(try store.takeCarried(packet.encode(), from: alice, nowMs: now, policy: p), .taken(evicted: 0))
        }
        let live = try carriedPacket(nowMs: now, budget: 1, lifetimeMs: 4 * CarriedPacket.hourMs).packet
        XCTAssertEqual(try store.takeCarried(live.encode(), from: bob, nowMs: now, policy: p), .taken(evicted: 0))
        let later = now + 3 * CarriedPacket.hourMs
        let newcomer = try carriedPacket(nowMs: later).packet
        XCTAssertEqual(try store.takeCarried(newcomer.encode(), from: carol, nowMs: later, policy: p), .taken(evicted: 530))
        XCTAssertTrue(try store.holdsCarried(live.identity))
        XCTAssertTrue(try store.holdsCarried(newcomer.identity))
        XCTAssertFalse(try expiring.contains { try store.holdsCarried($0) })
        XCTAssertTrue(try store.carryUsage().packets == 2)
    }

    /// Full: the biggest depositor's packets go first within a budget; a packet ranking
    /// below everything held is refused rather than churn the store.
    func testEvictionIsTheNodes() throws {
        let p = policy(packets: 3)
        var alices: [[UInt8]] = []
        for _ in 0..<2 {
            let packet = try carriedPacket(nowMs: now, budget: 1).packet
            alices.append(packet.identity)
            XCTAssertEqual(try store.takeCarried(packet.encode(), from: alice, nowMs: now, policy: p), .taken(evicted: 0))
        }
        let bobs = try carriedPacket(nowMs: now, budget: 1).packet
        XCTAssertEqual(try store.takeCarried(bobs.encode(), from: bob, nowMs: now, policy: p), .taken(evicted: 0))
        let next = try carriedPacket(nowMs: now, budget: 1).packet
        XCTAssertEqual(try store.takeCarried(next.encode(), from: carol, nowMs: now + 1, policy: p), .taken(evicted: 1))
        XCTAssertTrue(try store.holdsCarried(bobs.identity), "Alice holds the most: one of hers goes")
        XCTAssertEqual(try alices.filter { try store.holdsCarried($0) }.count, 1)
        XCTAssertEqual(try store.carryUsage().packets, 3)
        // Budget-8 copies fill a new store: a budget-1 newcomer is refused.
        let small = policy(packets: 1)
        try store.sweepCarried(nowMs: now + 30 * 86_400_000)
        let valuable = try carriedPacket(nowMs: now + 30 * 86_400_000, budget: 8).packet
        XCTAssertEqual(try store.takeCarried(valuable.encode(), from: alice, nowMs: now + 30 * 86_400_000, policy: small), .taken(evicted: 0))
        let cheap = try carriedPacket(nowMs: now + 30 * 86_400_000, budget: 1).packet
        XCTAssertEqual(try store.takeCarried(cheap.encode(), from: bob, nowMs: now + 30 * 86_400_000, policy: small), .full)
    }

    func testPurgeOnlyByTheRightClaimAndRemembered() throws {
        let (packet, claim) = try carriedPacket(nowMs: now)
        XCTAssertEqual(try store.takeCarried(packet.encode(), from: alice, nowMs: now, policy: policy()), .taken(evicted: 0))
        // A random claim purges nothing (anyone can publish one).
        XCTAssertEqual(try store.purgeCarried(try PurgeRecord(claims: [PurgeClaim.random()]), nowMs: now, policy: policy()), [])
        XCTAssertTrue(try store.holdsCarried(packet.identity))
        XCTAssertEqual(try store.purgeCarried(try PurgeRecord(claims: [claim]), nowMs: now, policy: policy()), [packet.identity])
        XCTAssertFalse(try store.holdsCarried(packet.identity))
        XCTAssertEqual(try store.rememberedClaim(hash: packet.claimHash, nowMs: now), claim)
        // A late copy of the delivered packet is not taken again.
        XCTAssertEqual(try store.takeCarried(packet.encode(), from: bob, nowMs: now, policy: policy()), .purged)
    }

    func testSweepDeletesExpiredAndTakeRefusesThem() throws {
        let short = try carriedPacket(nowMs: now, lifetimeMs: 3_600_000).packet
        let long = try carriedPacket(nowMs: now, lifetimeMs: 14 * 86_400_000).packet
        _ = try store.takeCarried(short.encode(), from: alice, nowMs: now, policy: policy())
        _ = try store.takeCarried(long.encode(), from: alice, nowMs: now, policy: policy())
        let later = short.expiresAtMs + 1
        XCTAssertEqual(try store.sweepCarried(nowMs: later), 1)
        XCTAssertEqual(try store.carriedKeys(nowMs: later, limit: 10).map(\.id), [long.identity])
        XCTAssertThrowsError(try store.takeCarried(short.encode(), from: alice, nowMs: later, policy: policy()))
        // Over 14 days (and the hour of rounding, and the skew) ahead: refused.
        let far = try CarriedPacket(hopLimit: 7, copyBudget: 8, expiryHour: UInt32((now + 16 * 86_400_000) / CarriedPacket.hourMs),
                                    routingTag: RoutingTag(value: 1), claimHash: PurgeClaim.hash(PurgeClaim.random()),
                                    payload: Sodium.randomBytes(64))
        XCTAssertThrowsError(try store.takeCarried(far.encode(), from: alice, nowMs: now, policy: policy()))
    }

    /// Bytes that no longer hash to their identity (an altered row) are never handed on.
    func testBudgetClampedAndHopKept() throws {
        let packet = try carriedPacket(nowMs: now, budget: 200, hop: 200).packet
        _ = try store.takeCarried(packet.encode(), from: alice, nowMs: now, policy: policy())
        let held = try XCTUnwrap(try store.carriedPacket(packet.identity))
        XCTAssertEqual(held.copyBudget, CopyBudget.maximum)
        XCTAssertEqual(held.hopLimit, HopLimit.maximum)
    }
}

final class PostgresRelayCarryStoreTests: RelayCarryStoreTests {
    override var backend: StoreBackend { .postgres }

    /// Two relays of a cluster carry from one store: what one takes, the other holds (and
    /// the relay store over the same database opens at the same schema version).
    func testRelaysOfAClusterShareTheCarryStore() throws {
        let (packet, claim) = try carriedPacket(nowMs: now)
        let other = try PostgresRelayCarryStore(conninfo: conninfo)
        defer { other.close() }
        let relayStore = try PostgresRelayStore(conninfo: conninfo, migrate: false)
        relayStore.close()
        XCTAssertEqual(try store.takeCarried(packet.encode(), from: alice, nowMs: now, policy: policy()), .taken(evicted: 0))
        XCTAssertEqual(try other.takeCarried(packet.encode(), from: bob, nowMs: now, policy: policy()), .duplicate)
        XCTAssertEqual(try other.purgeCarried(try PurgeRecord(claims: [claim]), nowMs: now, policy: policy()), [packet.identity])
        XCTAssertFalse(try store.holdsCarried(packet.identity))
    }
}
