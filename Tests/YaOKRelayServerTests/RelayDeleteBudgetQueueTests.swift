import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKWire
import YaOKSupport
@testable import YaOKCrypto

/// The per-address DELETE budget shared by many connections of one address (issue 20):
/// DELETE refs over it are parked and served in turn, and the connection is read on, so
/// its POSTs do not wait behind its DELETEs; the address still deletes at its budget, no
/// faster, and a flood parks a bounded number of refs.
final class RelayDeleteBudgetQueueTests: XCTestCase {
    private var relays: [TestRelay] = []

    override func tearDown() {
        for r in relays {
            r.stop()
            try? FileManager.default.removeItem(atPath: r.directory)
        }
        relays = []
    }

    /// A relay whose per-address DELETE budget is `rate` refs a second (bursts of `burst`)
    /// and whose per-session budget does not bind.
    private func startRelay(rate: Double, burst: Double) throws -> TestRelay {
        var c = testConfiguration()
        c.deleteRefsPerSecond = 1e12
        c.deleteRefsBurst = 1e12
        c.deleteRefsPerSecondPerAddress = rate
        c.deleteRefsBurstPerAddress = burst
        let relay = try TestRelay(configuration: c)
        relays.append(relay)
        return relay
    }

    private func readyClient(_ relay: TestRelay, subscribedTo box: SigningKey) throws -> TestClient {
        let client = try TestClient(port: relay.port)
        guard case .ready? = try client.login() else { throw TestFailure("no READY") }
        guard try client.subscribe([box]) == 1 else { throw TestFailure("not subscribed") }
        return client
    }

    private func madeUpRefs(_ box: SigningKey, _ n: Int) -> [StoredPacketRef] {
        (0..<n).map { _ in StoredPacketRef(mailbox: mailbox(box), messageID: .random()) }
    }

    /// Before: a connection over its address's budget was not read at all, so a POST sent
    /// after its DELETEs waited until the budget refilled (here never).
    func testPostIsReadWhileDeletesWaitForTheBudget() throws {
        let relay = try startRelay(rate: 0.001, burst: 16)
        let server = relay.server
        let box = try SigningKey.random()
        let client = try readyClient(relay, subscribedTo: box)
        // The burst, then one frame into debt (a budget at zero still has credit).
        try client.send(.delete(madeUpRefs(box, 16)))
        try client.send(.delete(madeUpRefs(box, 16)))
        XCTAssertTrue(eventually { server.onLoop { [server] in server.deleteRefsTaken } == 32 })
        // Over the budget now: this DELETE waits, the POST behind it does not.
        try client.send(.delete(madeUpRefs(box, 16)))
        guard case .accepted = try client.post(try makePacket(), to: mailbox(try SigningKey.random())) else {
            return XCTFail("the POST behind a DELETE over the budget was not answered")
        }
        XCTAssertEqual(server.onLoop { [server] in server.parkedDeleteRefs }, 16, "the DELETE waits for the budget")
        XCTAssertEqual(server.onLoop { [server] in server.deleteRefsTaken }, 32, "the address did not go past its budget")
    }

    /// `yaok-relay stats` shows the refs parked over the budget while the relay runs (text
    /// and JSON), as it reads them from the counters the relay saves.
    func testStatsShowTheParkedRefs() throws {
        let relay = try startRelay(rate: 0.001, burst: 16)
        let server = relay.server
        let box = try SigningKey.random()
        let client = try readyClient(relay, subscribedTo: box)
        // The burst and one frame into debt go to the disk; the next 16 + 5 refs are parked.
        for n in [16, 16, 16, 5] { try client.send(.delete(madeUpRefs(box, n))) }
        XCTAssertTrue(eventually { server.onLoop { [server] in server.parkedDeleteRefs } == 21 })
        XCTAssertTrue(eventually { (try? RelayStatistics.read(directory: relay.directory).counters.parkedDeletes) == 21 })
        let stats = try RelayStatistics.read(directory: relay.directory)
        XCTAssertTrue(stats.text.contains("deletes parked:    21 DELETE ref(s)"), stats.text)
        XCTAssertTrue(stats.json(top: 0).serialized.contains("\"parked_deletes\":21"), stats.json(top: 0).serialized)
        _ = client
    }

    /// A flood of DELETEs over the budget parks at most about one frame plus one read per
    /// connection: then the connection is not read, and the rest waits in the kernel.
    func testDeleteFloodParksBoundedRefs() throws {
        let relay = try startRelay(rate: 0.001, burst: 256)
        let server = relay.server
        let box = try SigningKey.random()
        let flooder = try readyClient(relay, subscribedTo: box)
        for _ in 0..<32 { try flooder.send(.delete(madeUpRefs(box, 256))) }  // 8,192 refs, 393 KB
        XCTAssertTrue(eventually { (server.onLoop { [server] in server.parkedDeleteRefs } ?? 0) >= RelayServer.maxParkedDeleteRefs })
        usleep(300_000)
        let peak = server.onLoop { [server] in server.peakParkedDeleteRefs } ?? -1
        // One frame, then what one 16 KiB read can complete (a frame begun in the last read
        // and the refs of the rest: 48 bytes a ref).
        XCTAssertLessThanOrEqual(peak, RelayServer.maxParkedDeleteRefs - 1 + 256 + RelayServer.readSize / 48)
        XCTAssertLessThanOrEqual(server.onLoop { [server] in server.deleteRefsTaken } ?? -1, 2 * 256, "the burst and one frame of debt")
        XCTAssertEqual(server.onLoop { [server] in server.connections.count }, 1, "the flooder is paused, not closed")
        _ = flooder
    }

    /// Over simulated seconds (the budgets' clock is the test's), 20 connections of one
    /// address, each with more DELETEs than the budget allows, are given at least 90 % of
    /// the address's budget, no more than the budget, and shares within a factor of two.
    func testManyConnectionsOfOneAddressGetTheAddressBudgetInTurn() throws {
        let rate = 1_000.0, burst = 4_000.0
        let relay = try startRelay(rate: rate, burst: burst)
        let server = relay.server
        let start: UInt64 = 1_000_000_000_000
        let clock = Locked(start)
        _ = server.onLoop { [server] in server.deleteBudgetClock = { clock.withLock { $0 } } }
        let box = try SigningKey.random()
        let clients = try (0..<20).map { _ in try readyClient(relay, subscribedTo: box) }
        for client in clients {
            for _ in 0..<4 { try client.send(.delete(madeUpRefs(box, 256))) }  // 20,480 refs in all
        }
        // The burst is spent at once (the clock stands still), then the rest is parked.
        XCTAssertTrue(eventually { server.onLoop { [server] in server.deleteRefsTaken } ?? 0 >= Int(burst) })
        XCTAssertTrue(eventually { server.onLoop { [server] in server.deleteBudgetQueues.isEmpty == false } ?? false })
        usleep(200_000)  // every connection has read what it may
        let afterBurst = server.onLoop { [server] in server.deleteRefsTaken } ?? 0
        XCTAssertLessThanOrEqual(afterBurst, Int(burst) + 20 * 256, "the burst and at most one frame each past it")
        // Ten simulated seconds in steps of 10 ms; the real timers also run, on the same clock.
        let seconds = 10.0
        for _ in 0..<Int(seconds * 100) {
            clock.withLock { $0 += 10_000_000 }
            _ = server.onLoop { [server] in server.serveDeleteQueue(0x7F00_0001) }
            _ = server.onLoop { () }  // the reads the turn resumed
        }
        let taken = (server.onLoop { [server] in server.deleteRefsTaken } ?? 0) - afterBurst
        let budget = rate * seconds
        print("20 connections of one address, \(Int(rate))/s for \(Int(seconds)) simulated s: \(taken) refs given (budget \(Int(budget)))")
        XCTAssertGreaterThanOrEqual(Double(taken), 0.9 * budget, "the address is given its budget")
        XCTAssertLessThanOrEqual(Double(taken), budget + 256, "and no more (one turn of debt)")
        let shares = server.onLoop { [server] in server.connections.values.map(\.deleteRefsTaken) } ?? []
        XCTAssertEqual(shares.count, 20)
        let mean = Double(shares.reduce(0, +)) / Double(max(shares.count, 1))
        XCTAssertGreaterThanOrEqual(Double(shares.min() ?? 0), mean / 2, "shared evenly: \(shares.sorted())")
        XCTAssertLessThanOrEqual(Double(shares.max() ?? 0), mean * 2, "shared evenly: \(shares.sorted())")
    }

    /// A connection held by its own (per-session) budget while its address has credit sets
    /// the timer for when its own budget refills, not the 5 ms floor (before, the queue
    /// woke every 5 ms for it). The budgets' clock stands still: the refill is 1.6 s away.
    func testConnectionHeldByItsOwnBudgetDoesNotSpinTheTimer() throws {
        var c = testConfiguration()
        c.deleteRefsPerSecond = 10
        c.deleteRefsBurst = 16
        let relay = try TestRelay(configuration: c)
        relays.append(relay)
        let server = relay.server
        _ = server.onLoop { [server] in server.deleteBudgetClock = { 1_000_000_000_000 } }
        let box = try SigningKey.random()
        let client = try readyClient(relay, subscribedTo: box)
        try client.send(.delete(madeUpRefs(box, 16)))  // the burst
        try client.send(.delete(madeUpRefs(box, 16)))  // into debt: -16, 1.6 s to refill
        try client.send(.delete(madeUpRefs(box, 16)))  // parked
        XCTAssertTrue(eventually { server.onLoop { [server] in server.parkedDeleteRefs } == 16 })
        usleep(300_000)
        XCTAssertLessThanOrEqual(server.onLoop { [server] in server.deleteQueueWakes } ?? -1, 1,
                                 "the timer waits for the connection's own budget")
        XCTAssertEqual(server.onLoop { [server] in server.deleteRefsTaken }, 32)
    }
}
