import XCTest
@testable import YaOKRelayServer

/// Bytes posted per hour are limited per address and per /24 (issue 17 §2: the addresses
/// of one network could multiply the address's limit).
final class RelayByteLimitTests: XCTestCase {
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
