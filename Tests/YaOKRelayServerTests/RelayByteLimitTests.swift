import XCTest
@testable import YaOKRelayServer

/// Bytes posted per hour are limited per address and per /24 (issue 17 §2: the addresses
/// of one network could multiply the address's limit).
final class RelayByteLimitTests: XCTestCase {
    /// The stored-byte quotas (§8.5) default to a 32nd and an 8th of the total cap, and are
    /// clamped: the address's to the /24's, the /24's to the total, each to one packet of
    /// the largest size at least.
    func testStoredQuotasDefaultToSharesOfTheTotalAndAreClamped() {
        var c = RelayConfiguration()
        XCTAssertTrue(c.storedQuotas == (256 << 20, 1 << 30), "\(c.storedQuotas)")
        c.maxStoredBytes = 64 << 20
        XCTAssertTrue(c.storedQuotas == (2 << 20, 8 << 20), "\(c.storedQuotas)")
        c.addressStoredBytes = 100 << 20
        c.prefixStoredBytes = 10 << 20
        XCTAssertTrue(c.storedQuotas == (10 << 20, 10 << 20), "\(c.storedQuotas)")
        c.prefixStoredBytes = 1 << 40
        XCTAssertTrue(c.storedQuotas == (64 << 20, 64 << 20), "\(c.storedQuotas)")
        c.addressStoredBytes = 1
        c.prefixStoredBytes = 1
        XCTAssertTrue(c.storedQuotas == (17_408, 17_408), "\(c.storedQuotas)")
    }

    func testAddressesOfOneSlash24ShareItsHourlyBytes() {
        let limiter = ByteRateLimiter(bytesPerHour: 100, prefixBytesPerHour: 250)
        let now: Int64 = 1_000_000
        func allowed(_ key: [UInt8], _ bytes: Int) -> Bool {
            if case .allowed = limiter.take(key, bytes, nowMs: now) { return true }
            return false
        }
        XCTAssertTrue(allowed([10, 0, 0, 1], 100))
        XCTAssertFalse(allowed([10, 0, 0, 1], 1), "the address's hour is full")
        XCTAssertTrue(allowed([10, 0, 0, 2], 100))
        XCTAssertFalse(allowed([10, 0, 0, 3], 100), "the /24's 250 would be passed")
        XCTAssertTrue(allowed([10, 0, 0, 3], 50), "the refused take held none of the address's bytes")
        XCTAssertFalse(allowed([10, 0, 0, 4], 1))
        XCTAssertTrue(allowed([10, 0, 1, 1], 100), "another /24 is not held")
        // Given back (a POST refused before the disk): the /24 has room again.
        limiter.release([10, 0, 0, 3], 50, takenAtMs: now)
        XCTAssertTrue(allowed([10, 0, 0, 4], 50))
        // An hour on, all of it has aged out.
        if case .allowed = limiter.take([10, 0, 0, 5], 100, nowMs: now + RateLimiter.windowMs + 1) {} else { XCTFail() }
    }

    /// One address posting all the time (many clients behind a NAT): each take sees exactly
    /// the bytes of the last hour, entries age out one by one, a release after the log was
    /// compacted finds its entry, and the log never holds much more than an hour's posts.
    /// (The log used to be copied whole at each POST: the relay benchmark's per-interval
    /// figures show that; this test pins what the in-place log must still do.)
    func testOneBusyAddressAgesItsBytesOutOneByOne() {
        let limiter = ByteRateLimiter(bytesPerHour: 1 << 40)
        let key: [UInt8] = [192, 0, 2, 7]
        let step: Int64 = 100
        let perHour = Int(RateLimiter.windowMs / step)
        var most = 0
        var held = 0
        for i in 0..<(3 * perHour) {
            let now = Int64(i) * step
            let bytes = 1 + i % 7
            guard case .allowed(let remaining) = limiter.take(key, bytes, nowMs: now) else { return XCTFail("take \(i) refused") }
            // The posts within the window, those after now - 1 h: post i - perHour has just aged out.
            held += bytes
            if i >= perHour { held -= 1 + (i - perHour) % 7 }
            if remaining != (1 << 40) - held { return XCTFail("take \(i): \(remaining) left, not \((1 << 40) - held)") }
            if i == 2 * perHour + 5 {
                // A refused POST gives its bytes back after aged entries were compacted away.
                limiter.release(key, bytes, takenAtMs: now)
                guard case .allowed(let again) = limiter.take(key, bytes, nowMs: now) else { return XCTFail() }
                XCTAssertEqual(again, remaining)
            }
            most = max(most, limiter.storedEntries(key))
        }
        XCTAssertLessThanOrEqual(most, 2 * perHour + 64, "aged entries are dropped")
        limiter.prune(nowMs: 3 * Int64(perHour) * step + RateLimiter.windowMs)
        XCTAssertEqual(limiter.storedEntries(key), 0, "a quiet address is forgotten")
    }
}
