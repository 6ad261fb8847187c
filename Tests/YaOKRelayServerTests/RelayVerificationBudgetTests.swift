import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto

/// The SUBSCRIBE signature budget (issue 17 §2): a token bucket that carries debt, checked
/// before every SUBSCRIBE frame. Measured before: the budget's window reset every 5 ms
/// whatever had been spent and was checked once per 16 KiB read (~170 proofs), so 22,737
/// checks a second went through against 6,400 documented.
final class RelayVerificationBudgetTests: XCTestCase {
    /// Over a simulated second of frames of 64 proofs offered every 0.1 ms, the checks stay
    /// within the rate, the burst and one frame.
    func testBucketBoundsAFloodWithDebt() {
        var bucket = TokenBucket(rate: 6_400, burst: 32, now: 0)
        var checked = 0
        var now: UInt64 = 0
        while now <= 1_000_000_000 {
            if bucket.allows(now: now) {
                bucket.spend(64, now: now)
                checked += 64
            }
            now += 100_000
        }
        XCTAssertLessThanOrEqual(checked, 6_400 + 32 + 64)
        XCTAssertGreaterThanOrEqual(checked, 6_400 - 64)
    }

    /// With the relay's clock stopped, no credit comes back: across connections and however
    /// many frames one read holds, the checks stop at the burst plus one frame's proofs.
    func testChecksStopAtTheBudgetPerFrameNotPerRead() throws {
        var c = testConfiguration()
        c.verificationsPerWindow = 32
        let relay = try TestRelay(configuration: c)
        defer {
            relay.stop()
            try? FileManager.default.removeItem(atPath: relay.directory)
        }
        let server = relay.server
        _ = server.onLoop { [server] in server.verificationClock = { 1 } }
        var clients: [TestClient] = []
        for _ in 0..<3 {
            let client = try TestClient(port: relay.port)
            guard case .ready? = try client.login() else { return XCTFail("no READY") }
            clients.append(client)
        }
        for client in clients {
            // Two frames of 64 new mailboxes in one write: one read holds both.
            let frames = try (0..<2).map { _ in
                try Frame.encode(client.subscribeFrame(try (0..<64).map { _ in try SigningKey.random() }).encode(),
                                 maxLength: RelayFrame.maxLength)
            }
            try client.sendRaw(Array(frames.joined()))
        }
        XCTAssertTrue(eventually { (server.onLoop { [server] in server.verificationsChecked } ?? 0) >= 64 })
        usleep(300_000)
        XCTAssertEqual(server.onLoop { [server] in server.verificationsChecked }, 64,
                       "one frame past the burst of 32, then nothing until credit returns")
        // Credit returns with the clock (a second a look): the held frames go on.
        _ = server.onLoop { [server] in
            var t: UInt64 = 1
            server.verificationClock = {
                t += 1_000_000_000
                return t
            }
        }
        XCTAssertTrue(eventually { (server.onLoop { [server] in server.verificationsChecked } ?? 0) == 6 * 64 })
    }
}
