import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The server's behaviour end to end over loopback, without TLS (`.plaintextForTesting`):
/// store and forward, live pushes, idempotence, quotas, limits, revocation, timeouts.
/// On SQLite here; `PostgresRelayServerTests` runs every one of them on PostgreSQL.
class RelayServerTests: RelayTestCase {

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

    /// One IPv4 address holds at most its quota of stored bytes, over all its pseudonyms
    /// and mailboxes (§8.5): past it a POST gets ERROR unavailable, counted in stats as
    /// over quota; a DELETE gives the room back. (Every test client is 127.0.0.1.)
    func testStoredByteQuotaPerAddress() throws {
        let relay = try startRelay { $0.addressStoredBytes = 17_408 }
        let box = try SigningKey.random()
        let alice = try readyClient(relay), carol = try readyClient(relay)
        let first = try makePacket(payloadLength: 8000)
        XCTAssertEqual(try alice.post(first, to: mailbox(box)), .accepted(request: 1))
        XCTAssertEqual(try carol.post(try makePacket(payloadLength: 8000), to: mailbox(try SigningKey.random())), .accepted(request: 1))
        let third = try makePacket(payloadLength: 8000)
        guard case .error(let e) = try carol.post(third, to: mailbox(box)) else { return XCTFail("over the address's quota") }
        XCTAssertEqual(e.code, .unavailable)
        XCTAssertEqual(e.request, 2)
        XCTAssertTrue(e.message.contains("This IP address holds its share of the relay's storage (17408 bytes)"), e.message)
        XCTAssertEqual(relay.server.statistics.quotaRefused, 1)
        // Saved with the counters, and shown by `yaok-relay stats` (text and JSON).
        func stats() throws -> RelayStatistics {
            try relay.conninfo.map { try RelayStatistics.read(postgres: $0) } ?? RelayStatistics.read(directory: relay.directory)
        }
        XCTAssertTrue(eventually { (try? stats().counters.quotaRefused) == 1 })
        let shown = try stats()
        XCTAssertTrue(shown.text.contains("over quota:        1 POST(s) refused"), shown.text)
        XCTAssertTrue(shown.json.serialized.contains("\"quota_refused\":1"), shown.json.serialized)
        let bob = try readyClient(relay)
        _ = try bob.subscribe([box])
        XCTAssertEqual(try bob.delivered(1).map(\.1), [first])
        try bob.send(.delete([StoredPacketRef(mailbox: mailbox(box), messageID: try messageID(of: first))]))
        XCTAssertTrue(eventually { relay.server.statistics.deleted == 1 })
        XCTAssertEqual(try carol.post(third, to: mailbox(box)), .accepted(request: 3), "the DELETE gave the room back")
    }

    func testRateLimitWithRetryAfter() throws {
        let relay = try startRelay { $0.ratePerHour = 2 }
        let alice = try readyClient(relay)
        let box = mailbox(try SigningKey.random())
        let packet = try makePacket()
        XCTAssertEqual(try alice.post(packet, to: box), .accepted(request: 1))
        // A re-post costs the disk a lookup: it uses up the limit as a new packet does.
        XCTAssertEqual(try alice.post(packet, to: box), .accepted(request: 2), "a duplicate is accepted")
        guard case .error(let e) = try alice.post(try makePacket(), to: box) else { return XCTFail() }
        XCTAssertEqual(e.code, .rateLimited)
        XCTAssertGreaterThan(e.retryAfterSeconds, 3500)
        XCTAssertLessThanOrEqual(e.retryAfterSeconds, 3600)
        XCTAssertEqual(try alice.post(try makePacket(type: .ack), to: box), .accepted(request: 4), "acks have their own limit")
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

    func testResentSubscribeEndsTheSessionAndDoesNotStallOthers() throws {
        let relay = try startRelay()
        let attacker = try readyClient(relay)
        let boxes = try (0..<64).map { _ in try SigningKey.random() }
        let frame = try Frame.encode(attacker.subscribeFrame(boxes).encode(), maxLength: RelayFrame.maxLength)
        // 200 copies (12,800 proofs) in one burst: at most 64 verifications, then the
        // session ends at 4,096 proofs.
        let burst = Array([[UInt8]](repeating: frame, count: 200).joined())
        let other = try readyClient(relay)
        let started = Date()
        do { try attacker.sendRaw(burst) } catch {}  // the relay may close before it has read it all
        let (closed, frames) = attacker.waitForClose(timeout: 5)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.notSubscribed])
        let answered = frames.filter { if case .subscribed = $0 { return true } else { return false } }
        XCTAssertEqual(answered.count, 64, "4,096 proofs, in frames of 64")
        try other.send(.ping(request: 7))
        XCTAssertEqual(try other.next(), .pong(request: 7))
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "64 verifications, not 12,800")
    }

    func testDeleteFloodOfRefsNeverDeliveredCostsNoDiskWork() throws {
        // Without the DELETE rates (those are RelayDeleteRateTests'): refs the session was
        // never delivered are ignored before the disk (§8.5; issue 17 §2: 64 sessions
        // flooding made-up IDs held up others' POSTs for seconds).
        let relay = try startRelay {
            $0.deleteRefsPerSecond = 1e12
            $0.deleteRefsBurst = 1e12
            $0.deleteRefsPerSecondPerAddress = 1e12
            $0.deleteRefsBurstPerAddress = 1e12
        }
        let box = try SigningKey.random()
        let flooder = try readyClient(relay)
        XCTAssertEqual(try flooder.subscribe([box]), 1)
        let alice = try readyClient(relay)
        // 800 DELETE frames of 256 refs (204,800 refs, 9.9 MB) of packets never stored.
        let frames = (0..<800).map { _ in
            try! Frame.encode(RelayFrame.delete((0..<256).map { _ in StoredPacketRef(mailbox: mailbox(box), messageID: .random()) }).encode(),
                              maxLength: RelayFrame.maxLength)
        }
        let flood = Array(frames.joined())
        let rssBefore = residentBytes()
        let sent = Locked(false)
        let fd = flooder.fd
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
        // While the flood runs, another client's POST is answered promptly.
        usleep(100_000)
        var slowest = 0.0
        for _ in 0..<5 {
            let started = Date()
            guard case .accepted = try alice.post(try makePacket(), to: mailbox(try SigningKey.random()), timeout: 5) else { return XCTFail() }
            slowest = max(slowest, Date().timeIntervalSince(started))
            usleep(50_000)
        }
        XCTAssertLessThan(slowest, 2, "POST during a DELETE flood")
        XCTAssertTrue(eventually(timeout: 60) { sent.withLock { $0 } }, "the flood is read, at the disk's pace")
        let flooded = Date()
        let server = relay.server
        // Drains once the flood stops (at the disk's pace: PostgreSQL on a loaded 2-core
        // machine took 8.7 s once); the bound that matters is the queue's peak, below.
        XCTAssertTrue(eventually(timeout: 30) { server.onLoop { server.pendingDeleteRefs } == 0 }, "nothing left queued behind the flood")
        let drained = Date().timeIntervalSince(flooded)
        let peak = server.onLoop { server.peakPendingDeleteRefs } ?? -1
        let growth = residentBytes() - rssBefore
        print("DELETE flood: peak \(peak) refs queued, RSS +\((growth >> 20)) MiB, disk done \(String(format: "%.2f", drained)) s after the last byte, slowest POST \(String(format: "%.3f", slowest)) s")
        XCTAssertEqual(peak, 0, "no made-up ref reached the disk")
        // The kernel's buffers hold the tail of the flood after the last send returns, and
        // the address's DELETE budget (4,096 refs/s) paces the reading: wait for all of it.
        XCTAssertTrue(eventually(timeout: 120) { server.onLoop { server.ignoredDeleteRefs } == 800 * 256 },
                      "every made-up ref read and ignored (\(server.onLoop { server.ignoredDeleteRefs } ?? -1))")
        XCTAssertEqual(server.onLoop { server.peakPendingDeleteRefs }, 0, "none reached the disk")
        XCTAssertLessThan(growth, 16 << 20)
        try flooder.send(.ping(request: 9))
        XCTAssertEqual(try flooder.next(where: { $0 == .pong(request: 9) }).0, .pong(request: 9))
    }

    func testStoredBytesCapRefusesPostsButNotDeletesAndSurvivesRestart() throws {
        let packets = try (0..<4).map { _ in try makePacket() }
        let cap = packets[0].count * 3
        let relay = try startRelay { $0.maxStoredBytes = cap }
        let box = try SigningKey.random()
        let alice = try readyClient(relay)
        for i in 0..<3 { XCTAssertEqual(try alice.post(packets[i], to: mailbox(box)), .accepted(request: UInt32(i + 1))) }
        guard case .error(let full) = try alice.post(packets[3], to: mailbox(try SigningKey.random())) else { return XCTFail() }
        XCTAssertEqual(full.request, 4, "refused on that request; the session goes on")
        XCTAssertEqual(full.code, .unavailable)
        XCTAssertTrue(full.message.hasPrefix("The relay's storage is full"), full.message)
        // A DELETE frees room.
        let bob = try readyClient(relay)
        _ = try bob.subscribe([box])
        XCTAssertEqual(try bob.delivered(3).count, 3)
        try bob.send(.delete([StoredPacketRef(mailbox: mailbox(box), messageID: try messageID(of: packets[0]))]))
        XCTAssertTrue(eventually { relay.server.statistics.deleted == 1 })
        XCTAssertEqual(try alice.post(packets[3], to: mailbox(box)), .accepted(request: 5))
        // The total is loaded when the relay starts.
        let directory = relay.directory
        relay.stop()
        relays.removeAll()
        var c = testConfiguration()
        c.maxStoredBytes = cap
        let again = try TestRelay(configuration: c, directory: directory)
        relays.append(again)
        let carol = try readyClient(again)
        guard case .error(let stillFull) = try carol.post(try makePacket(), to: mailbox(box)) else { return XCTFail() }
        XCTAssertEqual(stillFull.code, .unavailable)
    }

    func testLowFreeDiskRefusesPostsButNotDeletes() throws {
        let box = try SigningKey.random()
        let packet = try makePacket()
        let first = try startRelay()
        XCTAssertEqual(try readyClient(first).post(packet, to: mailbox(box)), .accepted(request: 1))
        let directory = first.directory
        first.stop()
        relays.removeAll()
        // Restarted with a floor no disk has free.
        var c = testConfiguration()
        c.dataDirectory = directory
        c.minFreeDiskBytes = 1 << 62
        let relay = try TestRelay(configuration: c, directory: directory)
        relays.append(relay)
        let alice = try readyClient(relay)
        guard case .error(let e) = try alice.post(try makePacket(), to: mailbox(box)) else { return XCTFail() }
        XCTAssertEqual(e.code, .unavailable)
        XCTAssertTrue(e.message.hasPrefix("The relay's storage is full"), e.message)
        let bob = try readyClient(relay)
        _ = try bob.subscribe([box])
        XCTAssertEqual(try bob.delivered(1).map(\.1), [packet])
        try bob.send(.delete([StoredPacketRef(mailbox: mailbox(box), messageID: try messageID(of: packet))]))
        XCTAssertTrue(eventually { relay.server.statistics.deleted == 1 }, "DELETEs still work")
    }

    func testPerAddressRateLimitSumsPseudonyms() throws {
        // 2 messages per pseudonym, 2 × 2 = 4 per address.
        let relay = try startRelay {
            $0.ratePerHour = 2
            $0.addressRateMultiplier = 2
        }
        let box = mailbox(try SigningKey.random())
        for _ in 0..<2 {
            let client = try readyClient(relay)
            for _ in 0..<2 { guard case .accepted = try client.post(try makePacket(), to: box) else { return XCTFail() } }
        }
        let third = try readyClient(relay)
        guard case .error(let e) = try third.post(try makePacket(), to: box) else { return XCTFail("a fresh pseudonym, same address") }
        XCTAssertEqual(e.code, .rateLimited)
        XCTAssertGreaterThan(e.retryAfterSeconds, 3500)
        XCTAssertTrue(e.message.contains("IP address"), e.message)
        guard case .accepted = try third.post(try makePacket(type: .ack), to: box) else { return XCTFail("acks have their own limit") }
        // The refused POST was signed and checked, so it used up one of the pseudonym's own
        // slots (§8.5: a refusal after the signature check keeps its slot).
        let again = try TestClient(port: relay.port)
        guard case .ready(_, 2, 1)? = try again.login(third.pseudonym) else { return XCTFail() }
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

    func testConnectionsNotYetReadyAreCappedPerAddress() throws {
        let relay = try startRelay { $0.maxPendingPerAddress = 2 }
        let pending = try (0..<2).map { _ in try TestClient(port: relay.port) }
        let extra = try connectLoopback(port: relay.port)
        defer { close(extra) }
        var buffer = [UInt8](repeating: 0, count: 16)
        XCTAssertTrue(eventually { recv(extra, &buffer, 16, 0) == 0 }, "a third pending one from 127.0.0.1 is closed at once")
        // Once one is READY, it no longer counts: a new one is let in, and READY ones are not capped.
        guard case .ready? = try pending[0].login() else { return XCTFail() }
        let third = try TestClient(port: relay.port)
        guard case .ready? = try third.login() else { return XCTFail() }
        guard case .ready? = try TestClient(port: relay.port).login() else { return XCTFail() }
        XCTAssertEqual(pending.count, 2)
    }

    func testSessionLogAndTopPosters() throws {
        let lines = Locked<[String]>([])
        let relay = try startRelay { $0.sessionLog = { line in lines.withLock { $0.append(line) } } }
        let busy = try readyClient(relay)
        let quiet = try readyClient(relay)
        let box = mailbox(try SigningKey.random())
        XCTAssertEqual(try busy.postMany((0..<3).map { _ in (try! makePacket(), box) }).count, 3)
        XCTAssertEqual(try quiet.post(try makePacket(), to: box), .accepted(request: 1))
        let busyHex = Hex.encode(busy.pseudonym!.publicKey)
        XCTAssertTrue(lines.withLock { $0 }.contains("session \(busyHex) from 127.0.0.1 ready"))
        try busy.sendRaw([0, 3, 0x99, 1, 2])  // a bad frame ends it
        XCTAssertTrue(busy.waitForClose().closed)
        XCTAssertTrue(eventually { lines.withLock { $0 }.contains { $0.hasPrefix("session \(busyHex) from 127.0.0.1 ended: malformed") && $0.hasSuffix(", posts 3") } },
                      "\(lines.withLock { $0 })")
        // The top posters, as `yaok-relay stats --top` reads them.
        XCTAssertTrue(eventually {
            let top = (try? RelayStatistics.read(directory: relay.directory))?.counters.topPosters ?? []
            return top == [RelayTopPoster(pseudonym: busy.pseudonym!.publicKey, posts: 3),
                           RelayTopPoster(pseudonym: quiet.pseudonym!.publicKey, posts: 1)]
        })
        let stats = try RelayStatistics.read(directory: relay.directory)
        XCTAssertEqual(stats.topText(1), "top posters, last hour (pseudonym, posts):\n\(busyHex)  3")
        XCTAssertTrue(stats.json(top: 1).serialized.contains("\"top\":[{\"pseudonym\":\"\(busyHex)\",\"posts\":3}]"))
    }

    func testTopIsBoundedAndOrdered() throws {
        let limiter = RateLimiter(messagesPerHour: 1000, acksPerHour: 1000)
        let now = Clock.milliseconds()
        for i in 0..<300 {
            for _ in 0..<(i % 50) { _ = limiter.take([UInt8(i & 0xFF), UInt8(i >> 8)], .message, nowMs: now - 3_000_000) }
        }
        _ = limiter.take([9, 9], .ack, nowMs: now - 3_700_000)  // out of the hour
        let top = limiter.top(100, nowMs: now)
        XCTAssertEqual(top.count, 100)
        XCTAssertEqual(top.first?.count, 49)
        XCTAssertTrue(zip(top, top.dropFirst()).allSatisfy { $0.count >= $1.count })
        XCTAssertFalse(top.contains { $0.key == [9, 9] })
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
