import XCTest
@testable import YaOKRelayServer

/// The count limiter's sliding log (`SlidingLog`), kept in place rather than copied at
/// each take: one key posting all the time (the address limiter with many clients behind
/// one NAT) must still see exactly the last hour's slots, age them out one by one, find a
/// slot to release after the log was compacted, and hold about an hour's slots at most.
final class RateLimiterLogTests: XCTestCase {
    func testOneBusyKeyAgesItsSlotsOutOneByOne() {
        let limit = 40_000
        let limiter = RateLimiter(messagesPerHour: limit, acksPerHour: 10)
        let key: [UInt8] = [192, 0, 2, 7]
        let step: Int64 = 100
        let perHour = Int(RateLimiter.windowMs / step)  // 36,000: under the limit
        var most = 0
        for i in 0..<(3 * perHour) {
            let now = Int64(i) * step
            guard case .allowed(let remaining) = limiter.take(key, .message, nowMs: now) else {
                return XCTFail("take \(i) refused")
            }
            let live = min(i + 1, perHour)
            if remaining != limit - live { return XCTFail("take \(i): \(remaining) left, not \(limit - live)") }
            if i % 5000 == 0 {
                XCTAssertEqual(limiter.remaining(key, nowMs: now), limit - live)
                XCTAssertEqual(limiter.top(1, nowMs: now).first?.count, live)
            }
            if i == 2 * perHour + 5 {
                limiter.release(key, .message, takenAtMs: now)
                XCTAssertEqual(limiter.remaining(key, nowMs: now), limit - live + 1, "the released slot is free")
                guard case .allowed = limiter.take(key, .message, nowMs: now) else { return XCTFail() }
            }
            most = max(most, limiter.storedEntries(key, .message))
        }
        XCTAssertLessThanOrEqual(most, 2 * perHour + 64, "aged slots are dropped")
        limiter.prune(nowMs: Int64(3 * perHour) * step + RateLimiter.windowMs)
        XCTAssertEqual(limiter.storedEntries(key, .message), 0, "a quiet key is forgotten")
    }

    /// At the limit, the wait is until the oldest slot of the hour ages out.
    func testAFullLogWaitsForItsOldestSlot() {
        let limiter = RateLimiter(messagesPerHour: 3, acksPerHour: 10)
        let key: [UInt8] = [1]
        for t: Int64 in [0, 1_000, 2_000] { _ = limiter.take(key, .message, nowMs: t) }
        XCTAssertEqual(limiter.take(key, .message, nowMs: 10_000), .limited(retryAfterSeconds: 3_590))
        // The first slot has aged out an hour after it was taken.
        guard case .allowed(let left) = limiter.take(key, .message, nowMs: RateLimiter.windowMs) else { return XCTFail() }
        XCTAssertEqual(left, 0)
    }
}
