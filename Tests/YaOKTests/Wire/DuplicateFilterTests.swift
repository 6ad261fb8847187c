import Testing
import Foundation
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct DuplicateFilterTests {
    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("wire-seen-\(UUID().uuidString).sqlite").path
    }

    @Test func newThenDuplicateThenExpired() throws {
        let filter = try DuplicateFilter(database: try Database(path: ":memory:"))
        let id = MessageID.random()
        #expect(try filter.check(id, expiresAtMs: 2000, nowMs: 1000) == .new)
        #expect(try filter.check(id, expiresAtMs: 2000, nowMs: 1500) == .duplicate)
        #expect(try filter.check(id, expiresAtMs: 2000, nowMs: 2000) == .expired)
        #expect(try filter.check(MessageID.random(), expiresAtMs: 2000, nowMs: 1999) == .new)
    }

    @Test func survivesRestartAndForgetsAfterExpiry() throws {
        let path = temporaryPath()
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let header = try sampleHeader()
        let now = header.createdMs
        do {
            let filter = try DuplicateFilter(database: try Database(path: path))
            #expect(try filter.check(header, nowMs: now) == .new)
        }
        let db = try Database(path: path)
        let filter = try DuplicateFilter(database: db)  // fresh front: the answer comes from SQLite
        #expect(try filter.check(header, nowMs: now + 1) == .duplicate)
        #expect(try filter.contains(header.messageID))
        #expect(try filter.purge(nowMs: header.expiresAtMs - 1) == 0)
        #expect(try filter.purge(nowMs: header.expiresAtMs) == 1)
        #expect(try filter.storedCount() == 0)
        #expect(try filter.check(header, nowMs: header.expiresAtMs) == .expired)
    }

    @Test func farFutureExpiryIsCappedInStorage() throws {
        let db = try Database(path: ":memory:")
        let filter = try DuplicateFilter(database: db)
        #expect(try filter.check(MessageID.random(), expiresAtMs: Int64.max, nowMs: 1000) == .new)
        var stored: Int64 = 0
        try db.query("SELECT expires_at FROM wire_seen_ids") { stored = $0.int64(0) }
        #expect(Int64(stored) == 1000 + DuplicateFilter.maxRetentionMs)
    }

    @Test func expiredRowsArePurgedAutomatically() throws {
        let filter = try DuplicateFilter(database: try Database(path: ":memory:"))
        for i in 0..<10 { _ = try filter.check(MessageID.random(), expiresAtMs: 100 + Int64(i), nowMs: 0) }
        // Later arrivals, after those expired: the periodic purge removes them.
        for _ in 0..<DuplicateFilter.purgeInterval {
            _ = try filter.check(MessageID.random(), expiresAtMs: 100_000, nowMs: 1000)
        }
        #expect(try filter.storedCount() == DuplicateFilter.purgeInterval)
    }

    @Test func frontIsBounded() throws {
        var front = try SeenIDFront(capacity: 100)
        let ids = (0..<1000).map { _ in MessageID.random() }
        for id in ids { front.insert(id) }
        #expect(front.count <= 100)
        // The newest half is always remembered.
        #expect(ids.suffix(50).allSatisfy { front.contains($0) })
        #expect(!front.contains(ids[0]))
    }

    @Test func duplicatesAreFoundAfterLeavingTheFront() throws {
        let filter = try DuplicateFilter(database: try Database(path: ":memory:"), frontCapacity: 4)
        let ids = (0..<50).map { _ in MessageID.random() }
        for id in ids { #expect(try filter.check(id, expiresAtMs: 10_000, nowMs: 0) == .new) }
        for id in ids { #expect(try filter.check(id, expiresAtMs: 10_000, nowMs: 1) == .duplicate) }
    }

    @Test func tableIsCreatedIdempotently() throws {
        let db = try Database(path: ":memory:")
        _ = try DuplicateFilter(database: db)
        _ = try DuplicateFilter(database: db)
        #expect(try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'") { $0.text(0) } .contains(DuplicateFilter.table))
    }
}
