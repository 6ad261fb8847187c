import Foundation
import XCTest
@testable import YaOKRelayServer
@testable import YaOKSupport

/// A relay whose start fails gives back each descriptor it took, once. The reserve
/// descriptor (kept for accepting at the descriptor limit) leaked when the store failed at
/// start; and a failure after the server was fully made closed the listener twice (by hand,
/// then in deinit), the second close hitting whatever had taken its number meanwhile.
final class RelayStartFailureTests: XCTestCase {
    private func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
    }

    /// Fails `count` starts over `store` and returns how many more descriptors are open.
    private func descriptorsLeft(failing count: Int, over store: RelayStore) throws -> Int {
        let before = try openDescriptors()
        for _ in 0..<count {
            XCTAssertThrowsError(try RelayServer(configuration: testConfiguration(), store: store,
                                                 security: .plaintextForTesting, host: "127.0.0.1", port: 0))
        }
        return try openDescriptors() - before
    }

    func testAStartThatFailsLeaksNoDescriptor() throws {
        let directory = try makeTempDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = FlakyRelayStore(try SQLiteRelayStore(directory: directory))
        defer { store.close() }
        // At the store's first read, then at the last step (the watch), with the server made.
        // 20 would be one leaked a start; a little slack for the process's other threads.
        store.failsAtStart.withLock { $0 = true }
        XCTAssertLessThan(try descriptorsLeft(failing: 20, over: store), 5)
        store.failsAtStart.withLock { $0 = false }
        store.watchFails.withLock { $0 = true }
        XCTAssertLessThan(try descriptorsLeft(failing: 20, over: store), 5)
    }
}
