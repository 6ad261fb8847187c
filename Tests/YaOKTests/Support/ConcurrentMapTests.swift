import Testing
import Glibc
@testable import YaOKSupport

/// `ConcurrentMap.map` is `map` spread over threads: results in order, the first failing
/// item's error, and (with more than one processor) work done on another thread.
@Suite struct ConcurrentMapTests {
    private struct Failure: Error, Equatable { let item: Int }

    @Test func resultsComeInOrder() throws {
        let items = Array(0..<1_000)
        #expect(try ConcurrentMap.map(items) { $0 * 3 } == items.map { $0 * 3 })
        #expect(try ConcurrentMap.map([7]) { $0 + 1 } == [8])
        #expect(try ConcurrentMap.map([Int]()) { $0 }.isEmpty)
    }

    @Test func theFirstFailingItemsErrorIsThrown() {
        #expect(throws: Failure(item: 3)) {
            try ConcurrentMap.map(Array(0..<100)) { i -> Int in
                if i == 3 || i == 97 { throw Failure(item: i) }
                return i
            }
        }
    }

    @Test(.enabled(if: ConcurrentMap.maxThreads > 1)) func theWorkIsSpreadOverThreads() throws {
        let caller = pthread_self()
        let onCaller = try ConcurrentMap.map(Array(0..<64)) { _ in pthread_equal(pthread_self(), caller) != 0 }
        #expect(onCaller.first == true)   // the first chunk: the caller's
        #expect(onCaller.last == false)   // the last: a helper's
    }
}
