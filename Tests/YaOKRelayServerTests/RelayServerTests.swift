import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The server's behaviour end to end over loopback, without TLS (`.plaintextForTesting`):
/// store and forward, live pushes, idempotence, quotas, limits, revocation, timeouts.
/// On SQLite here; `PostgresRelayServerTests` runs every one of them on PostgreSQL.
class RelayServerTests: XCTestCase {
    var relays: [TestRelay] = []
    var backend: StoreBackend { .sqlite }

    override func tearDown() {
        for r in relays {
            r.stop()
            try? FileManager.default.removeItem(atPath: r.directory)
        }
        relays = []
    }

    func startRelay(_ configure: (inout RelayConfiguration) -> Void = { _ in }) throws -> TestRelay {
        var c = testConfiguration()
        configure(&c)
        let r = try TestRelay(configuration: c, backend: backend)
        relays.append(r)
        return r
    }

    func readyClient(_ relay: TestRelay, key: SigningKey? = nil) throws -> TestClient {
        let client = try TestClient(port: relay.port)
        guard case .ready? = try client.login(key) else { throw TestFailure("no READY") }
        return client
    }

    func testOfflineStoreThenDeliverOnSubscribe() throws {
        let relay = try startRelay()
        let box = try SigningKey.random()
        let alice = try readyClient(relay)
        let packets = try (0..<5).map { _ in try makePacket() }
        for p in packets { XCTAssertEqual(try alice.post(p, to: mailbox(box)), .accepted(request: UInt32(packets.firstIndex(of: p)! + 1))) }
        let bob = try readyClient(relay)
        XCTAssertEqual(try bob.subscribe([box]), 1)
        let got = try bob.delivered(5)
        XCTAssertEqual(got.map(\.1), packets, "all, oldest first")
        XCTAssertTrue(got.allSatisfy { $0.0 == mailbox(box) })
    }

    func testLivePushToConnectedSubscriber() throws {
        let relay = try startRelay()
        let box = try SigningKey.random()
        let bob = try readyClient(relay)
        XCTAssertEqual(try bob.subscribe([box]), 1)
        let alice = try readyClient(relay)
        let packet = try makePacket()
        XCTAssertEqual(try alice.post(packet, to: mailbox(box)), .accepted(request: 1))
        XCTAssertEqual(try bob.delivered(1).map(\.1), [packet])
    }

    func testPostIsIdempotentAndUndeletedPacketsComeAgainNextSession() throws {
        let relay = try startRelay()
        let box = try SigningKey.random()
        let alice = try readyClient(relay)
        let packet = try makePacket()
        XCTAssertEqual(try alice.post(packet, to: mailbox(box)), .accepted(request: 1))
        XCTAssertEqual(try alice.post(packet, to: mailbox(box)), .accepted(request: 2), "a re-post is accepted again")
        let bobKey = try SigningKey.random()
        do {
            let bob = try readyClient(relay, key: bobKey)
            _ = try bob.subscribe([box])
            XCTAssertEqual(try bob.delivered(2, timeout: 1).count, 1, "one copy only")
        }
        // Not deleted: delivered again in the next session; deleted: never again.
        let bob = try readyClient(relay, key: bobKey)
        _ = try bob.subscribe([box])
        XCTAssertEqual(try bob.delivered(1).map(\.1), [packet])
        try bob.send(.delete([StoredPacketRef(mailbox: mailbox(box), messageID: try messageID(of: packet))]))
        XCTAssertTrue(eventually { relay.server.statistics.deleted == 1 })
        let again = try readyClient(relay, key: bobKey)
        _ = try again.subscribe([box])
        XCTAssertEqual(try again.delivered(1, timeout: 0.5).count, 0)
    }

    func testDeleteOnlyFromOwnSubscriptions() throws {
        let relay = try startRelay()
        let box = try SigningKey.random()
        let alice = try readyClient(relay)
        let packet = try makePacket()
        XCTAssertEqual(try alice.post(packet, to: mailbox(box)), .accepted(request: 1))
        // Mallory knows the mailbox ID and the message ID but not the mailbox key.
        let mallory = try readyClient(relay)
        try mallory.send(.delete([StoredPacketRef(mailbox: mailbox(box), messageID: try messageID(of: packet))]))
        try mallory.send(.ping(request: 5))
        XCTAssertEqual(try mallory.next(), .pong(request: 5))
        let bob = try readyClient(relay)
        _ = try bob.subscribe([box])
        XCTAssertEqual(try bob.delivered(1).map(\.1), [packet], "still there")
        XCTAssertEqual(relay.server.statistics.deleted, 0)
    }

    func testMailboxQuota() throws {
        let relay = try startRelay { $0.mailboxQuotaPackets = 3 }
        let box = try SigningKey.random()
        let alice = try readyClient(relay)
        for i in 1...3 { XCTAssertEqual(try alice.post(try makePacket(), to: mailbox(box)), .accepted(request: UInt32(i))) }
        guard case .error(let e) = try alice.post(try makePacket(), to: mailbox(box)) else { return XCTFail() }
        XCTAssertEqual(e.code, .mailboxFull)
        XCTAssertEqual(e.request, 4)
        XCTAssertEqual(try alice.post(try makePacket(), to: mailbox(try SigningKey.random())), .accepted(request: 5),
                       "other mailboxes are not affected")
    }

    func testRateLimitWithRetryAfter() throws {
        let relay = try startRelay { $0.ratePerHour = 2 }
        let alice = try readyClient(relay)
        let box = mailbox(try SigningKey.random())
        let packet = try makePacket()
        XCTAssertEqual(try alice.post(packet, to: box), .accepted(request: 1))
        XCTAssertEqual(try alice.post(packet, to: box), .accepted(request: 2), "a duplicate does not use up the limit")
        XCTAssertEqual(try alice.post(try makePacket(), to: box), .accepted(request: 3))
        guard case .error(let e) = try alice.post(try makePacket(), to: box) else { return XCTFail() }
        XCTAssertEqual(e.code, .rateLimited)
        XCTAssertGreaterThan(e.retryAfterSeconds, 3500)
        XCTAssertLessThanOrEqual(e.retryAfterSeconds, 3600)
        XCTAssertEqual(try alice.post(try makePacket(type: .ack), to: box), .accepted(request: 5), "acks have their own limit")
        // The limit is the pseudonym's, not the connection's.
        let again = try TestClient(port: relay.port)
        guard case .ready(_, 2, 0)? = try again.login(alice.pseudonym) else { return XCTFail("READY shows none remaining") }
        XCTAssertEqual(relay.server.statistics.rateLimited, 1)
    }

    func testRevocationEndsLiveSessionAndRefusesLogin() throws {
        let relay = try startRelay()
        let key = try SigningKey.random()
        let victim = try readyClient(relay, key: key)
        let box = try SigningKey.random()
        _ = try victim.subscribe([box])
        let alice = try readyClient(relay)
        XCTAssertEqual(try alice.post(try makePacket(), to: mailbox(box)), .accepted(request: 1))
        _ = try victim.delivered(1)
        try relay.revoke(key.publicKey)
        let (closed, frames) = victim.waitForClose(timeout: 3)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.revoked])
        let retry = try TestClient(port: relay.port)
        guard case .error(let e)? = try retry.login(key) else { return XCTFail() }
        XCTAssertEqual(e.code, .revoked)
        // What it had stored stays until it expires.
        let other = try readyClient(relay)
        _ = try other.subscribe([box])
        XCTAssertEqual(try other.delivered(1).count, 1)
    }

    func testSessionExpires() throws {
        let relay = try startRelay { $0.sessionLifetimeSeconds = 0.5 }
        let client = try TestClient(port: relay.port)
        guard case .ready(1, _, _)? = try client.login() else { return XCTFail() }
        let (closed, frames) = client.waitForClose(timeout: 3)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.sessionExpired])
    }

    func testNoAuthInTimeAndIdleTimeouts() throws {
        let relay = try startRelay {
            $0.handshakeTimeoutSeconds = 0.5
            $0.idleTimeoutSeconds = 1
        }
        let silent = try TestClient(port: relay.port)
        let (closed, frames) = silent.waitForClose(timeout: 3)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.authFailed])
        let idle = try readyClient(relay)
        XCTAssertTrue(idle.waitForClose(timeout: 3).closed)
        // Keepalives keep a session open.
        let alive = try readyClient(relay)
        for _ in 0..<8 {
            try alive.sendRaw(Frame.keepalive)
            usleep(250_000)
        }
        try alive.send(.ping(request: 3))
        XCTAssertEqual(try alive.next(), .pong(request: 3))
    }

    func testBadFramesEndTheSessionMalformed() throws {
        let relay = try startRelay()
        let client = try readyClient(relay)
        try client.sendRaw([0, 3, 0x99, 1, 2])
        let (closed, frames) = client.waitForClose()
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.malformed])
        // An oversized length prefix: refused before any of it is buffered.
        let big = try readyClient(relay)
        try big.sendRaw([0xFF, 0xFF])
        XCTAssertTrue(big.waitForClose().closed)
        XCTAssertNotNil(try readyClient(relay))
    }

    func testGroupCommitSharesTransactionsAcrossClients() throws {
        let relay = try startRelay { $0.ratePerHour = 100_000 }
        let box = mailbox(try SigningKey.random())
        let clients = try (0..<8).map { _ in try readyClient(relay) }
        let before = relay.server.commitCount
        let perClient = 50
        let results = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: clients.count) { i in
            let answers = try? clients[i].postMany((0..<perClient).map { _ in (try! makePacket(), box) })
            let accepted = answers?.values.filter { if case .accepted = $0 { return true } else { return false } }.count ?? 0
            results.withLock { $0.append(accepted) }
        }
        XCTAssertEqual(results.withLock { $0 }.reduce(0, +), clients.count * perClient)
        let commits = relay.server.commitCount - before
        XCTAssertLessThan(commits, clients.count * perClient, "several posts share one commit")
        XCTAssertEqual(relay.server.statistics.accepted, Int64(clients.count * perClient))
    }

    func testLargeBacklogIsPagedInOrder() throws {
        let relay = try startRelay {
            $0.ratePerHour = 10_000
            $0.backlogPagePackets = 16
        }
        let box = try SigningKey.random()
        let alice = try readyClient(relay)
        let packets = try (0..<200).map { _ in try makePacket(payloadLength: 4000) }
        let answers = try alice.postMany(packets.map { ($0, mailbox(box)) })
        XCTAssertEqual(answers.count, 200)
        let bob = try readyClient(relay)
        _ = try bob.subscribe([box])
        // A live post while the backlog is being paged comes after it, once.
        let late = try makePacket()
        XCTAssertEqual(try alice.post(late, to: mailbox(box)), .accepted(request: 201))
        XCTAssertEqual(try bob.delivered(201, timeout: 20).map(\.1), packets + [late])
        XCTAssertEqual(try bob.delivered(1, timeout: 0.3).count, 0, "and nothing twice")
    }

    func testMaxConnectionsRefusesBeyondTheCap() throws {
        let relay = try startRelay { $0.maxConnections = 3 }
        let held = try (0..<3).map { _ in try TestClient(port: relay.port) }
        let extra = try connectLoopback(port: relay.port)
        defer { close(extra) }
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertTrue(eventually { recv(extra, &buffer, 16, 0) == 0 }, "closed at once")
        XCTAssertEqual(held.count, 3)
    }

    func testOneAddressCannotTakeEveryConnection() throws {
        let relay = try startRelay { $0.maxConnectionsPerAddress = 2 }
        let held = try (0..<2).map { _ in try TestClient(port: relay.port) }
        let extra = try connectLoopback(port: relay.port)
        defer { close(extra) }
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertTrue(eventually { recv(extra, &buffer, 16, 0) == 0 }, "the third from 127.0.0.1 is closed at once")
        // One leaves: its place is free again.
        shutdown(held[0].fd, Int32(SHUT_RDWR))
        XCTAssertTrue(eventually { (try? TestClient(port: relay.port)) != nil })
        XCTAssertEqual(held.count, 2)
    }

    func testStatisticsAreSavedForTheStatsCommand() throws {
        let relay = try startRelay()
        let alice = try readyClient(relay)
        XCTAssertEqual(try alice.post(try makePacket(), to: mailbox(try SigningKey.random())), .accepted(request: 1))
        XCTAssertTrue(eventually {
            let stats = try? (relay.conninfo.map { try RelayStatistics.read(postgres: $0) } ?? RelayStatistics.read(directory: relay.directory))
            return stats?.counters.accepted == 1 && stats?.counters.connected == 1 && stats?.storedPackets == 1
        })
    }
}
