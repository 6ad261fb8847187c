import Foundation
import Glibc
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Connection slots under abuse (issue 17 §2): caps per address and per /24, room made
/// for a newcomer when full, sessions that do nothing end, one session per pseudonym.
final class RelaySlotTests: RelayTestCase {

    /// 127.0.`network`.`host` in host byte order.
    func loopback(_ network: UInt32, _ host: UInt32 = 1) -> UInt32 { 0x7F00_0000 | network << 8 | host }

    /// A READY session from `address` that has subscribed to a mailbox (so it is active).
    func activeClient(_ relay: TestRelay, from address: UInt32) throws -> TestClient {
        let client = try TestClient(port: relay.port, from: address)
        guard case .ready? = try client.login() else { throw TestFailure("no READY") }
        _ = try client.subscribe([try SigningKey.random()])
        return client
    }

    func count(_ relay: TestRelay) -> Int? {
        relay.server.onLoop { [server = relay.server] in server.connections.count }
    }

    func isReady(_ relay: TestRelay, from address: UInt32) -> Bool {
        guard let client = try? TestClient(port: relay.port, from: address),
              case .ready? = try? client.login() else { return false }
        return true
    }

    /// Ten addresses hold every slot: a client from an eleventh still gets a session (one
    /// of the biggest holder's connections makes room).
    func testEleventhAddressConnectsWhileTenHoldEverything() throws {
        let relay = try startRelay { $0.maxConnections = 20 }
        var held: [TestClient] = []
        for network in 1...10 {
            for _ in 0..<2 { held.append(try activeClient(relay, from: loopback(UInt32(network)))) }
        }
        XCTAssertEqual(count(relay), 20)
        XCTAssertTrue(isReady(relay, from: loopback(11)), "a newcomer takes a slot of the biggest holder")
        XCTAssertEqual(relay.server.onLoop { [server = relay.server] in server.evictedConnections }, 1)
        XCTAssertEqual(held.count, 20)
    }

    /// One address cannot take every slot either: past its cap it is refused, and others
    /// still get in; when it is the biggest holder of a full relay, it gives way.
    func testOneAddressCannotLockOthersOut() throws {
        let relay = try startRelay {
            $0.maxConnections = 12
            $0.maxConnectionsPerAddress = 4
            $0.maxConnectionsPerPrefix = 8
        }
        var held: [TestClient] = []
        for _ in 0..<4 { held.append(try activeClient(relay, from: loopback(1, 1))) }
        XCTAssertFalse(isReady(relay, from: loopback(1, 1)), "the address is at its cap")
        for _ in 0..<4 { held.append(try activeClient(relay, from: loopback(1, 2))) }
        XCTAssertEqual(count(relay), 8)
        XCTAssertFalse(isReady(relay, from: loopback(1, 3)), "the /24 is at its cap")
        for _ in 0..<4 { held.append(try activeClient(relay, from: loopback(2))) }
        XCTAssertEqual(count(relay), 12)
        // Full: a third network's client takes a slot from 127.0.1.0/24, the biggest.
        XCTAssertTrue(isReady(relay, from: loopback(3)))
        XCTAssertEqual(relay.server.onLoop { [server = relay.server] in server.connectionsByPrefix[0x7F00_0100] }, 7)
    }

    /// A session that logs in and then neither subscribes nor posts ends after the grace
    /// period; one that subscribed stays.
    func testSessionThatDoesNothingEnds() throws {
        let relay = try startRelay { $0.activityGraceSeconds = 0.3 }
        let idle = try TestClient(port: relay.port)
        guard case .ready? = try idle.login() else { return XCTFail("no READY") }
        let busy = try activeClient(relay, from: loopback(0))
        let (closed, frames) = idle.waitForClose(timeout: 10)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.unavailable])
        try busy.send(.ping(request: 9))
        XCTAssertEqual(try busy.next(), .pong(request: 9), "an active session stays")
    }

    /// A second login of one pseudonym replaces the first.
    func testNewLoginOfAPseudonymReplacesTheOld() throws {
        let relay = try startRelay()
        let key = try SigningKey.random()
        let first = try TestClient(port: relay.port)
        guard case .ready? = try first.login(key) else { return XCTFail("no READY") }
        let second = try TestClient(port: relay.port)
        guard case .ready? = try second.login(key) else { return XCTFail("no READY") }
        let (closed, frames) = first.waitForClose(timeout: 5)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.unavailable])
        try second.send(.ping(request: 3))
        XCTAssertEqual(try second.next(), .pong(request: 3))
    }

    /// The descriptor limit: raised to the hard limit, and the caps clamped below it.
    func testCapsAreClampedToTheDescriptorLimit() {
        var c = RelayConfiguration()
        c.maxConnections = 10_000
        let caps = RelayServer.caps(c, descriptorLimit: 1024)
        XCTAssertEqual(caps.connections, 1024 - c.descriptorReserve)
        XCTAssertLessThanOrEqual(caps.perPrefix, caps.connections)
        XCTAssertEqual(caps.perAddress, 64)
        var limit = rlimit()
        _ = RelayServer.raiseDescriptorLimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        XCTAssertEqual(limit.rlim_cur, limit.rlim_max)
    }
}

/// What a POST costs is bounded (issue 17 §2): re-posts and POSTs to a full mailbox use up
/// the rate limit, acks are no bigger than a real one.
final class RelayPostCostTests: XCTestCase {
    var relay: TestRelay!

    override func setUpWithError() throws {
        var c = testConfiguration()
        c.ratePerHour = 5
        c.mailboxQuotaPackets = 2
        relay = try TestRelay(configuration: c)
    }

    override func tearDown() {
        relay.stop()
        try? FileManager.default.removeItem(atPath: relay.directory)
    }

    /// A relay configured otherwise in place of setUp's, whose directory goes with it (it
    /// was left in the temp directory at every run).
    private func replaceRelay(_ configure: (inout RelayConfiguration) -> Void) throws {
        relay.stop()
        try? FileManager.default.removeItem(atPath: relay.directory)
        var c = testConfiguration()
        configure(&c)
        relay = try TestRelay(configuration: c)
    }

    func testDuplicatesAndFullMailboxPostsUseUpTheLimit() throws {
        let alice = try TestClient(port: relay.port)
        guard case .ready? = try alice.login() else { return XCTFail("no READY") }
        let box = mailbox(try SigningKey.random())
        let packet = try makePacket()
        var answers: [RelayErrorFrame.Code?] = []
        for _ in 0..<3 {
            if case .error(let e) = try alice.post(packet, to: box) { answers.append(e.code) } else { answers.append(nil) }
        }
        XCTAssertEqual(answers, [nil, nil, nil], "re-posts are accepted")
        XCTAssertEqual(try alice.post(try makePacket(), to: box), .accepted(request: 4))
        guard case .error(let full) = try alice.post(try makePacket(), to: box) else { return XCTFail() }
        XCTAssertEqual(full.code, .mailboxFull)
        guard case .error(let limited) = try alice.post(try makePacket(), to: mailbox(try SigningKey.random())) else { return XCTFail() }
        XCTAssertEqual(limited.code, .rateLimited, "five POSTs, whatever their outcome, use up a limit of five")
    }

    /// A POST refused after its signature was checked (storage full, the address's limit)
    /// keeps its slot: re-sending one signed packet costs at most the pseudonym's limit of
    /// verifications, then it is refused before the check (the pseudonym's own limit).
    /// Each `unavailable` and each "of this IP address" answer is one verification.
    func testRefusalsAfterTheSignatureCheckUseUpTheLimit() throws {
        for path in ["storage full", "address limit"] {
            try replaceRelay { c in
                c.ratePerHour = 5
                if path == "storage full" { c.maxStoredBytes = 0 } else { c.addressRateMultiplier = 0 }
            }
            let alice = try TestClient(port: relay.port)
            guard case .ready? = try alice.login() else { return XCTFail("no READY") }
            let box = mailbox(try SigningKey.random())
            let packet = try makePacket()
            var verified = 0
            var refusedBeforeCheck = 0
            for _ in 0..<40 {
                guard case .error(let e) = try alice.post(packet, to: box) else { return XCTFail("\(path): stored") }
                if e.code == .unavailable || e.message.contains("IP address") {
                    verified += 1
                } else if e.code == .rateLimited {
                    refusedBeforeCheck += 1
                }
            }
            XCTAssertEqual(verified, 5, "\(path): one verification per slot of the pseudonym's limit")
            XCTAssertEqual(refusedBeforeCheck, 35, path)
        }
    }

    /// Bytes are limited per address as well as counts: big packets run out first.
    func testBytesPerAddressAreLimited() throws {
        try replaceRelay { $0.addressBytesPerHour = 5_000 }
        let alice = try TestClient(port: relay.port)
        guard case .ready? = try alice.login() else { return XCTFail("no READY") }
        let bob = try TestClient(port: relay.port)
        guard case .ready? = try bob.login() else { return XCTFail("no READY") }
        let box = mailbox(try SigningKey.random())
        XCTAssertEqual(try alice.post(try makePacket(payloadLength: 2_000), to: box), .accepted(request: 1))
        XCTAssertEqual(try bob.post(try makePacket(payloadLength: 2_000), to: box), .accepted(request: 1))
        guard case .error(let e) = try alice.post(try makePacket(payloadLength: 2_000), to: box) else {
            return XCTFail("past the address's bytes")
        }
        XCTAssertEqual(e.code, .rateLimited, "the address's pseudonyms together")
        XCTAssertGreaterThan(e.retryAfterSeconds, 3500)
        XCTAssertEqual(try alice.post(try makePacket(payloadLength: 500), to: box), .accepted(request: 3), "a small one still fits")
    }

    /// The longest real ack (255 IDs) is taken, a byte more is refused as malformed, and a
    /// message may still be large.
    func testAckPacketsAreCappedAtTheLongestRealAck() throws {
        XCTAssertEqual(RelayServer.maxAckPacketBytes, 4158)
        let alice = try TestClient(port: relay.port)
        guard case .ready? = try alice.login() else { return XCTFail("no READY") }
        let box = mailbox(try SigningKey.random())
        let longest = try makePacket(type: .ack, payloadLength: RelayServer.maxAckPacketBytes - RoutedHeader.length)
        XCTAssertEqual(try alice.post(longest, to: box), .accepted(request: 1))
        let junk = try makePacket(type: .ack, payloadLength: RelayServer.maxAckPacketBytes - RoutedHeader.length + 1)
        guard case .error(let e) = try alice.post(junk, to: box) else { return XCTFail("an oversized ack was accepted") }
        XCTAssertEqual(e.code, .malformed)
        XCTAssertEqual(try alice.post(try makePacket(payloadLength: 10_000), to: box), .accepted(request: 3))
    }
}

/// `yaok-relay stats` shows the running relay's live figures (issue 17 §2, operator view).
final class RelayStatsLiveTests: XCTestCase {
    /// Nothing changes for longer than `stats` waits before taking the relay for stopped
    /// (5 s): the relay still shows as running, with its sessions and its caps.
    func testAnIdleRelayShowsItsSessionsAndCaps() throws {
        let relay = try TestRelay()
        defer {
            relay.stop()
            try? FileManager.default.removeItem(atPath: relay.directory)
        }
        let clients = try (0..<3).map { _ -> TestClient in
            let c = try TestClient(port: relay.port)
            guard case .ready? = try c.login() else { throw TestFailure("no READY") }
            return c
        }
        func stats() -> RelayStatistics? { try? RelayStatistics.read(directory: relay.directory) }
        XCTAssertTrue(eventually { stats()?.counters.connected == 3 && stats()?.isCurrent() == true })
        sleep(6)  // nothing happens meanwhile
        let s = try XCTUnwrap(stats())
        XCTAssertTrue(s.isCurrent(), "an idle relay still shows as running")
        XCTAssertTrue(s.text.hasPrefix("connected clients: 3\n"), s.text)
        XCTAssertTrue(s.text.contains("caps in force:     \(relay.server.caps.connections) connections"), s.text)
        XCTAssertEqual(s.counters.capPerAddress, 64)
        XCTAssertEqual(clients.count, 3)
    }
}
