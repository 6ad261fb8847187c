import Foundation
import Glibc
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The relay over TLS 1.3, with the exporter binding in every signature (§8.1).
final class RelayTLSTests: XCTestCase {
    var relay: TestRelay!
    var pin: [UInt8] = []

    override func setUpWithError() throws {
        (relay, pin) = try startTLSRelay { $0.ratePerHour = 3 }
    }

    override func tearDown() {
        relay.stop()
        try? FileManager.default.removeItem(atPath: relay.directory)
    }

    func client() throws -> TestClient { try TestClient(tlsPort: relay.port, pin: pin) }

    func readyClient(_ key: SigningKey? = nil) throws -> TestClient {
        let c = try client()
        guard case .ready? = try c.login(key) else { throw TestFailure("no READY") }
        return c
    }

    func testPostDeliverDeleteOverTLS() throws {
        let box = try SigningKey.random()
        let alice = try readyClient()
        let offline = try makePacket()
        XCTAssertEqual(try alice.post(offline, to: mailbox(box)), .accepted(request: 1))
        XCTAssertEqual(try alice.post(offline, to: mailbox(box)), .accepted(request: 2), "idempotent")
        let bob = try readyClient()
        XCTAssertEqual(try bob.subscribe([box]), 1)
        XCTAssertEqual(try bob.delivered(1).map(\.1), [offline])
        let live = try makePacket(type: .ack)
        XCTAssertEqual(try alice.post(live, to: mailbox(box)), .accepted(request: 3))
        XCTAssertEqual(try bob.delivered(1).map(\.1), [live])
        try bob.send(.delete([offline, live].map { StoredPacketRef(mailbox: mailbox(box), messageID: try! messageID(of: $0)) }))
        XCTAssertTrue(eventually { relay.server.statistics.deleted == 2 })
    }

    func testRateLimitOverTLS() throws {
        let alice = try readyClient()
        let box = mailbox(try SigningKey.random())
        for i in 1...3 { XCTAssertEqual(try alice.post(try makePacket(), to: box), .accepted(request: UInt32(i))) }
        guard case .error(let e) = try alice.post(try makePacket(), to: box) else { return XCTFail() }
        XCTAssertEqual(e.code, .rateLimited)
        XCTAssertGreaterThan(e.retryAfterSeconds, 0)
    }

    func testBadAuthSignatureIsRefused() throws {
        let c = try client()
        let key = try SigningKey.random()
        try c.send(.auth(pseudonym: key.publicKey, signature: key.sign(Array("not the challenge".utf8))))
        let (closed, frames) = c.waitForClose()
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.authFailed])
    }

    /// A machine in the middle that relays a client's AUTH onto its own TLS connection:
    /// the signature covers the first connection's binding, so the second refuses it.
    func testSignatureForAnotherConnectionsBindingIsRefused() throws {
        let victim = try client()
        let attacker = try client()
        let key = try SigningKey.random()
        XCTAssertNotEqual(try victim.transport.binding(), try attacker.transport.binding())
        // Signed with the attacker's nonce (the attacker passes it on) but the victim's binding.
        let signature = key.sign(RelaySignedData.auth(nonce: attacker.nonce, binding: try victim.transport.binding()))
        try attacker.send(.auth(pseudonym: key.publicKey, signature: signature))
        let (closed, frames) = attacker.waitForClose()
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.authFailed])
        // The same for a SUBSCRIBE proof made on another connection.
        let a = try readyClient()
        let b = try readyClient(a.pseudonym)
        let box = try SigningKey.random()
        try b.send(try a.subscribeFrame([box]))
        XCTAssertEqual(sessionErrors(b.waitForClose().frames), [.notSubscribed])
    }

    func testRevocationEndsLiveTLSSession() throws {
        let key = try SigningKey.random()
        let c = try readyClient(key)
        try relay.revoke(key.publicKey)
        let (closed, frames) = c.waitForClose(timeout: 3)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.revoked])
    }

    func testWrongPinIsRefusedByTheClient() throws {
        let fd = try connectLoopback(port: relay.port)
        defer { close(fd) }
        XCTAssertThrowsError(try TLSTestTransport(fd: fd, pin: [UInt8](repeating: 0, count: 32)))
    }
}

/// Hostile input on the listening port: the relay survives and keeps serving a
/// well-behaved client meanwhile.
final class RelayHostileInputTests: XCTestCase {
    var relay: TestRelay!
    var pin: [UInt8] = []

    override func setUpWithError() throws {
        (relay, pin) = try startTLSRelay {
            $0.handshakeTimeoutSeconds = 1.5
            $0.idleTimeoutSeconds = 30
            $0.maxConnections = 5000
            $0.maxConnectionsPerAddress = 5000
            $0.maxConnectionsPerPrefix = 5000
            $0.maxPendingPerAddress = 5000  // every client is 127.0.0.1; many never log in
        }
    }

    override func tearDown() {
        relay.stop()
        try? FileManager.default.removeItem(atPath: relay.directory)
    }

    /// A full round trip by a well-behaved client.
    func assertServing(file: StaticString = #filePath, line: UInt = #line) throws {
        let box = try SigningKey.random()
        let c = try TestClient(tlsPort: relay.port, pin: pin)
        guard case .ready? = try c.login() else { return XCTFail("no READY", file: file, line: line) }
        XCTAssertEqual(try c.subscribe([box]), 1, file: file, line: line)
        let p = try makePacket()
        XCTAssertEqual(try c.post(p, to: mailbox(box)), .accepted(request: 1), file: file, line: line)
        XCTAssertEqual(try c.delivered(1).map(\.1), [p], file: file, line: line)
    }

    func raw() throws -> Int32 { try connectLoopback(port: relay.port, blocking: true) }

    func closedByRelay(_ fd: Int32, timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n == 0 || (n < 0 && errno != EAGAIN) { return true }
        }
        return false
    }

    func testGarbageBeforeTLS() throws {
        let fd = try raw()
        defer { close(fd) }
        let junk = Array("GET / HTTP/1.1\r\nHost: relay\r\n\r\n".utf8) + Sodium.randomBytes(3000)
        _ = junk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        XCTAssertTrue(closedByRelay(fd))
        try assertServing()
    }

    func testGarbageAfterTLS() throws {
        let c = try TestClient(tlsPort: relay.port, pin: pin)
        try c.sendRaw(Sodium.randomBytes(5000))
        XCTAssertTrue(c.waitForClose().closed)
        // And raw bytes under TLS, breaking its records.
        let d = try TestClient(tlsPort: relay.port, pin: pin)
        _ = Sodium.randomBytes(500).withUnsafeBytes { send(d.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        XCTAssertTrue(d.waitForClose().closed)
        try assertServing()
    }

    func testOversizedFrameLength() throws {
        let c = try TestClient(tlsPort: relay.port, pin: pin)
        _ = try c.login()
        try c.sendRaw([0x44, 0x81])  // 17,537: one more than RelayFrame.maxLength
        let (closed, frames) = c.waitForClose()
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.malformed])
        try assertServing()
    }

    func testHandshakeNeverFinishedTimesOut() throws {
        let silent = try raw()
        defer { close(silent) }
        // Half a ClientHello, then nothing.
        let partial: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]
        _ = partial.withUnsafeBytes { send(silent, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let idle = try raw()
        defer { close(idle) }
        try assertServing()
        XCTAssertTrue(closedByRelay(silent, timeout: 5))
        XCTAssertTrue(closedByRelay(idle, timeout: 5))
    }

    func testOneBytePerSecondClientIsCutOffAndOthersServed() throws {
        let fd = try raw()
        defer { close(fd) }
        let hello = Sodium.randomBytes(10)
        let slow = Thread {
            for b in hello {
                var byte = b
                if send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) != 1 { return }
                sleep(1)
            }
        }
        slow.start()
        try assertServing()
        XCTAssertTrue(closedByRelay(fd, timeout: 6), "the handshake deadline holds whatever trickles in")
    }

    func testTwoThousandIdleConnectionsStayBounded() throws {
        let count = 2000
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try XCTSkipIf(Int(limit.rlim_cur) < count * 2 + 200, "ulimit -n is \(limit.rlim_cur)")
        relay.stop()
        try? FileManager.default.removeItem(atPath: relay.directory)
        (relay, pin) = try startTLSRelay {
            $0.handshakeTimeoutSeconds = 30
            $0.maxConnections = 5000
            $0.maxConnectionsPerAddress = 5000
            $0.maxConnectionsPerPrefix = 5000
            $0.maxPendingPerAddress = 5000  // every client is 127.0.0.1; many never log in
        }
        let before = residentBytes(), heapBefore = heapBytesInUse()
        var fds: [Int32] = []
        defer { for fd in fds { close(fd) } }
        for _ in 0..<count { fds.append(try connectLoopback(port: relay.port)) }
        XCTAssertTrue(eventually(timeout: 20) { relay.server.statistics.connected == Int64(count) }, "\(relay.server.statistics.connected) \(relay.server.caps) refused \(relay.server.onLoop { [server = relay.server] in server.refusedConnections } ?? -1)")
        let silent = residentBytes() - before, silentHeap = heapBytesInUse() - heapBefore
        // A quarter of them then start a TLS handshake (a record header of a ClientHello):
        // those hold OpenSSL state (about 46 KiB each) until the handshake deadline.
        let start: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x10]
        for fd in fds[0..<(count / 4)] { _ = start.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        try assertServing()
        usleep(300_000)
        let handshaking = residentBytes() - before, handshakingHeap = heapBytesInUse() - heapBefore
        print("RSS grew by \(silent / 1024) KiB for \(count) silent connections, \(handshaking / 1024) KiB with \(count / 4) of them"
              + " in a TLS handshake; the heap by \(silentHeap / 1024) KiB and \(handshakingHeap / 1024) KiB")
        // The heap, the same in every build (about 1 MiB and 40 MiB here): 64 KiB kept by each
        // connection would be 125 MiB.
        XCTAssertLessThan(silentHeap, 8 << 20, "a silent connection costs a descriptor and a small object")
        XCTAssertLessThan(handshakingHeap, 80 << 20, "bounded memory per connection")
        // RSS also counts what is not heap (a thread's stack), but under a sanitizer it counts
        // its shadow memory too (about 4 times the heap): there the heap bounds stand alone.
        guard sanitizerAllocatedBytes == nil else { return }
        XCTAssertLessThan(silent, 30 << 20, "a silent connection costs a descriptor and a small object")
        XCTAssertLessThan(handshaking, 80 << 20, "bounded memory per connection")
    }

    func testPeerVanishingMidWriteDoesNotKillTheRelay() throws {
        let box = try SigningKey.random()
        let poster = try TestClient(tlsPort: relay.port, pin: pin)
        _ = try poster.login()
        _ = try poster.postMany((0..<3).map { _ in (try! makePacket(payloadLength: 10_000), mailbox(box)) })
        do {
            let reader = try TestClient(tlsPort: relay.port, pin: pin)
            _ = try reader.login()
            try reader.send(try reader.subscribeFrame([box]))
            // Gone with the relay's DELIVERs unread: a reset, not a SIGPIPE.
            var l = linger(l_onoff: 1, l_linger: 0)
            setsockopt(reader.fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
        }
        usleep(200_000)
        try assertServing()
    }
}
