import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// The node's page cache holds what a batch of large messages just wrote: the pump reads
/// each outbox packet back moments after the send wrote it, and the status updates read
/// the messages. With SQLite's default 2 MiB those reads went back to the file (`yaok-bench
/// bulk`: 90 preads per 10 KB message, 31 with 16 MiB; ~9 % of the batch's CPU). Which
/// pages a given sequence evicts depends on SQLite's cache internals, so this pins the
/// setting, and shows that a batch's pages come back from the cache.
@Suite struct PageCacheTests {
    @Test func theStoreCachesUpTo16MiB() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let kib = try node.withStore { store, _ in try store.db.rows("PRAGMA cache_size") { $0.int(0) }.first ?? 0 }
        #expect(kib == -16_384)
    }

    @Test func aBatchOfLargeMessagesIsReadBackFromTheCache() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let bob = try node.addContact(card: try cardText("Bob")).id
        let text = String(repeating: "z", count: 10_000)
        _ = try node.send((0..<100).map { (bob, "\($0) " + text) })
        let (misses, rows) = try node.withStore { store, _ -> (Int, Int) in
            let before = store.db.cacheMisses
            let rows = try store.outboxRows(kind: .message)
            return (store.db.cacheMisses - before, rows.count)
        }
        #expect(rows == 100)
        #expect(misses == 0, "pages of the batch just written were read from the file again")
    }
}
