import Foundation
import Glibc
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// Subscriptions under abuse (issue 17 §2): capped per address and in all; what a flood of
/// them costs (printed, not asserted: a figure, not a property).
final class RelaySubscriptionTests: RelayTestCase {

    func client(_ relay: TestRelay, from address: UInt32) throws -> TestClient {
        let c = try TestClient(port: relay.port, from: address)
        guard case .ready? = try c.login() else { throw TestFailure("no READY") }
        return c
    }

    func testSubscriptionsAreCappedPerAddressAndInAll() throws {
        let relay = try startRelay {
            $0.maxSubscriptionsPerAddress = 10
            $0.maxTotalSubscriptions = 16
        }
        let keys = try (0..<8).map { _ in try SigningKey.random() }
        let a = try client(relay, from: 0x7F00_0101)
        XCTAssertEqual(try a.subscribe(keys), 8)
        // A second session of the same address goes past its 10.
        let b = try client(relay, from: 0x7F00_0101)
        try b.send(b.subscribeFrame(Array(keys.prefix(3))))
        var (closed, frames) = b.waitForClose(timeout: 5)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.notSubscribed])
        // Another address: 8 more would pass the relay's 16.
        let c = try client(relay, from: 0x7F00_0201)
        XCTAssertEqual(try c.subscribe(Array(keys.prefix(7))), 7)
        // From the /24 that holds the most: refused (another /24 would evict it, below).
        let d = try client(relay, from: 0x7F00_0102)
        try d.send(d.subscribeFrame(Array(keys.prefix(2))))
        (closed, frames) = d.waitForClose(timeout: 5)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.notSubscribed])
        // Closing gives them back.
        shutdown(a.fd, Int32(SHUT_RDWR))
        XCTAssertTrue(eventually { relay.server.onLoop { [server = relay.server] in server.totalSubscriptions } == 7 })
        let e = try client(relay, from: 0x7F00_0101)
        XCTAssertEqual(try e.subscribe(keys), 8)
    }

    /// One /24 cannot hold every subscription: it is capped (4× an address by default),
    /// and at the total a newcomer from a /24 holding fewer evicts a session of the /24
    /// holding the most (issue 17 §2: 62 addresses locked everyone out).
    func testOnePrefixCannotLockNewcomersOutOfSubscribing() throws {
        let relay = try startRelay {
            $0.maxSubscriptionsPerAddress = 8
            $0.maxSubscriptionsPerPrefix = 16
            $0.maxTotalSubscriptions = 24
        }
        let keys = try (0..<8).map { _ in try SigningKey.random() }
        let a1 = try client(relay, from: 0x7F00_0101)
        XCTAssertEqual(try a1.subscribe(keys), 8)
        let a2 = try client(relay, from: 0x7F00_0102)
        XCTAssertEqual(try a2.subscribe(keys), 8)
        // A third address of the same /24 passes the /24's 16.
        let a3 = try client(relay, from: 0x7F00_0103)
        try a3.send(a3.subscribeFrame(keys))
        let (closed, frames) = a3.waitForClose(timeout: 5)
        XCTAssertTrue(closed)
        XCTAssertEqual(sessionErrors(frames), [.notSubscribed])
        let b = try client(relay, from: 0x7F00_0201)
        XCTAssertEqual(try b.subscribe(keys), 8)
        // The relay is full (24): a newcomer of a third /24 gets in; one session of the
        // /24 holding the most (16) is closed for it.
        let c = try client(relay, from: 0x7F00_0301)
        XCTAssertEqual(try c.subscribe(Array(keys.prefix(4))), 4)
        let server = relay.server
        XCTAssertEqual(server.onLoop { [server] in server.evictedForSubscriptions }, 1)
        XCTAssertEqual(server.onLoop { [server] in server.totalSubscriptions }, 20)
        XCTAssertEqual(server.onLoop { [server] in server.subscriptionsByPrefix[0x7F_0001] }, 8)
    }

    /// What a subscription costs the relay's heap (issue 17 §2, "keep cursors compact"):
    /// one session subscribing 4,096 mailboxes of its own, counted in heap bytes in use
    /// once its backlog reads are done, and given back when it closes. Before the compact
    /// tables it was ~170 bytes a subscription (a heap array per mailbox ID, a Set per
    /// mailbox in the index, the drained read queue's capacity); now ~75 (a 40-byte sorted
    /// entry in the session and a 16-byte bucket in the relay's index).
    func testASubscriptionCostsTheHeapUnderOneHundredTenBytes() throws {
        let relay = try startRelay { $0.maxSubscriptionsPerAddress = 1 << 20 }
        let keys = try (0..<4096).map { _ in try SigningKey.random() }
        let c = try client(relay, from: 0x7F00_0101)
        let frames = try stride(from: 0, to: keys.count, by: 64).map {
            try Frame.encode(c.subscribeFrame(Array(keys[$0..<min($0 + 64, keys.count)])).encode(), maxLength: RelayFrame.maxLength)
        }
        let server = relay.server
        let settled = {
            server.onLoop { [server] in
                server.connections.values.allSatisfy { $0.needsRead.isEmpty && $0.reading.isEmpty }
            } == true
        }
        XCTAssertTrue(eventually(timeout: 30, settled))
        let before = heapBytesInUse()
        try c.sendRaw(Array(frames.joined()))
        XCTAssertTrue(eventually(timeout: 60) { server.onLoop { [server] in server.totalSubscriptions } == keys.count })
        XCTAssertTrue(eventually(timeout: 30, settled))
        let perSubscription = (heapBytesInUse() - before) / keys.count
        XCTAssertLessThan(perSubscription, 110, "heap bytes per subscription")
        shutdown(c.fd, Int32(SHUT_RDWR))
        XCTAssertTrue(eventually(timeout: 30) { server.onLoop { [server] in server.totalSubscriptions } == 0 })
        XCTAssertTrue(eventually(timeout: 30) { heapBytesInUse() - before < 64 * 1024 }, "given back after close")
        print("heap per subscription: \(perSubscription) bytes (4,096 in one session)")
    }

    /// Sessions that each subscribe to the same 4,096 mailboxes: relay memory per session,
    /// what is given back after they close, and a bystander's PING meanwhile. Printed (the
    /// relay runs in this process: RSS includes the test's own clients, a rough figure).
    func testMeasureSubscriptionFlood() throws {
        let sessions = 8
        let relay = try startRelay {
            $0.maxSubscriptionsPerAddress = 1 << 20
            $0.activityGraceSeconds = 600
        }
        let keys = try (0..<4096).map { _ in try SigningKey.random() }
        let bystander = try client(relay, from: 0x7F00_0901)
        let stop = Locked(false)
        let latencies = Locked<[Double]>([])
        let pinger = Thread {
            var request: UInt32 = 1
            while !stop.withLock({ $0 }) {
                let started = Date()
                guard (try? bystander.send(.ping(request: request))) != nil,
                      (try? bystander.next(where: { $0 == .pong(request: request) }, timeout: 10)) != nil else { break }
                let took = Date().timeIntervalSince(started)
                latencies.withLock { $0.append(took) }
                request += 1
                usleep(5_000)
            }
        }
        // Signed beforehand, so that signing in this process does not count as the relay's time.
        var prepared: [(TestClient, [[UInt8]])] = []
        for _ in 0..<sessions {
            let c = try client(relay, from: 0x7F00_0101)
            let frames = try stride(from: 0, to: keys.count, by: 64).map {
                try Frame.encode(c.subscribeFrame(Array(keys[$0..<min($0 + 64, keys.count)])).encode(), maxLength: RelayFrame.maxLength)
            }
            prepared.append((c, frames))
        }
        let before = residentBytes()
        let heapBefore = heapBytesInUse()
        pinger.start()
        let started = Date()
        for (c, frames) in prepared {
            try c.sendRaw(Array(frames.joined()))
        }
        let server = relay.server
        XCTAssertTrue(eventually(timeout: 120) { server.onLoop { [server] in server.totalSubscriptions } == sessions * keys.count })
        let subscribedIn = Date().timeIntervalSince(started)
        let subscribed = residentBytes()
        let heapSubscribed = heapBytesInUse()
        for (c, _) in prepared { shutdown(c.fd, Int32(SHUT_RDWR)) }
        XCTAssertTrue(eventually(timeout: 30) { server.onLoop { [server] in server.totalSubscriptions } == 0 })
        usleep(300_000)  // a tick compacts the mailbox index
        let closed = residentBytes()
        let heapClosed = heapBytesInUse()
        stop.withLock { $0 = true }
        let sorted = latencies.withLock { $0 }.sorted()
        let worst = sorted.last ?? -1
        let median = sorted.isEmpty ? -1 : sorted[sorted.count / 2]
        let p90 = sorted.isEmpty ? -1 : sorted[sorted.count * 9 / 10]
        let index = server.onLoop { [server] in (server.subscribers.count, server.subscribers.capacity, server.deferredReads) }
        print(String(format: "SUBSCRIBE flood: %d sessions x %d mailboxes in %.2f s; RSS +%d KiB per session while subscribed, %d KiB above the start after they closed; bystander PING median %.1f ms, p90 %.1f ms, worst %.1f ms (%d pings)",
                     sessions, keys.count, subscribedIn, (subscribed - before) / sessions / 1024, (closed - before) / 1024,
                     median * 1000, p90 * 1000, worst * 1000, sorted.count)
              + "; mailbox index after close: \(index.map { "\($0.0) entries, capacity \($0.1)" } ?? "?"), reads deferred for the signature budget: \(index?.2 ?? -1)")
        print("SUBSCRIBE flood heap: \((heapSubscribed - heapBefore) / sessions) bytes per session, \((heapSubscribed - heapBefore) / (sessions * keys.count)) per subscription while subscribed; \((heapClosed - heapBefore) / 1024) KiB above the start after they closed")
        prepared.removeAll()
    }
}

/// `yaok-relay revoke` deletes what the revoked pseudonym stored (issue 17 §2: four
/// throwaway pseudonyms filled the store, and revoking them freed nothing). The store
/// keeps a keyed hash of each packet's poster, not the pseudonym.
final class RelayRevokePurgeTests: XCTestCase {
    func testRevokingAPseudonymDeletesWhatItStored() throws {
        let relay = try TestRelay()
        defer {
            relay.stop()
            try? FileManager.default.removeItem(atPath: relay.directory)
        }
        let box = mailbox(try SigningKey.random())
        let mallory = try TestClient(port: relay.port)
        guard case .ready? = try mallory.login() else { return XCTFail("no READY") }
        let alice = try TestClient(port: relay.port)
        guard case .ready? = try alice.login() else { return XCTFail("no READY") }
        for _ in 0..<3 { XCTAssertEqual(try mallory.post(try makePacket(payloadLength: 1000), to: box).isAccepted, true) }
        let kept = try makePacket()
        XCTAssertEqual(try alice.post(kept, to: box).isAccepted, true)
        let server = relay.server
        let before = server.storedBytesOnLoop ?? 0
        try relay.revoke(mallory.pseudonym!.publicKey)
        let stats = { try? RelayStatistics.read(directory: relay.directory) }
        XCTAssertEqual(stats()?.storedPackets, 1, "only Alice's packet is left")
        XCTAssertTrue(eventually { (server.storedBytesOnLoop ?? 0) == kept.count },
                      "the running relay's stored bytes follow (\(before) before)")
    }
}

extension RelayFrame {
    var isAccepted: Bool { if case .accepted = self { return true } else { return false } }
}
