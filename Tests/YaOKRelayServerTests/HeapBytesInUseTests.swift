import Foundation
import XCTest

/// The relay's memory bounds rest on `heapBytesInUse`: what it does not see, they cannot
/// bound. glibc serves a large allocation (from 128 KiB, up to 32 MiB as it adapts) with
/// its own mmap, which mallinfo2 counts in `hblkhd`, not in `uordblks`.
final class HeapBytesInUseTests: XCTestCase {
    func testALargeAllocationIsCounted() throws {
        let size = 64 << 20  // above glibc's largest mmap threshold: always mapped on its own
        let before = heapBytesInUse()
        let block = try XCTUnwrap(malloc(size))
        defer { free(block) }
        XCTAssertGreaterThanOrEqual(heapBytesInUse() - before, size)
    }
}
