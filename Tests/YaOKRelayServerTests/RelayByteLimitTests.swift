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
}
