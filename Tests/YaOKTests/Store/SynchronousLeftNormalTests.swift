import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKStore

/// `Database.unsynced` leaves the connection at `synchronous=NORMAL`: each switch is a
/// PRAGMA parsed anew, and back-to-back groups and batches switch nothing. What must sync
/// by itself puts FULL back before it runs: a transaction (SynchronousRestoreTests), a
/// write outside any transaction; a read leaves it.
@Suite struct SynchronousLeftNormalTests {
    private func database(_ dir: TempDir) throws -> Database {
        let db = try dir.database("normal.sqlite")
        try db.execute("CREATE TABLE t (x INTEGER)")
        return db
    }

    private func insertUnsynced(_ db: Database, _ x: Int64) throws {
        _ = try db.unsynced { try db.transaction { try db.query("INSERT INTO t VALUES (?)", [.int(x)]) } }
    }

    private func level(_ db: Database) throws -> Int {
        var level = -1
        try db.query("PRAGMA synchronous") { level = $0.int(0) }
        return level
    }

    @Test func backToBackUnsyncedCommitsParseNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try database(dir)
        try insertUnsynced(db, 1)
        let prepared = db.statementsPrepared
        for x in 2...4 { try insertUnsynced(db, Int64(x)) }
        #expect(db.statementsPrepared == prepared)
        #expect(!db.synchronousFull)
        #expect(try level(db) == 1)  // a read leaves it at NORMAL
        #expect(!db.synchronousFull)
    }

    @Test func aWriteOutsideATransactionAfterUnsyncedRunsAtFull() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try database(dir)
        try insertUnsynced(db, 1)
        #expect(!db.synchronousFull)
        try db.query("INSERT INTO t VALUES (?)", [.int(2)])  // autocommit: its own commit syncs
        #expect(db.synchronousFull)
        #expect(try level(db) == 2)
        try insertUnsynced(db, 3)
        try db.execute("INSERT INTO t VALUES (4)")
        #expect(db.synchronousFull)
        #expect(try level(db) == 2)
        // A transaction's commit syncs inside COMMIT again.
        try insertUnsynced(db, 5)
        let syncs = db.commitSyncs
        try db.transaction { try db.query("INSERT INTO t VALUES (?)", [.int(6)]) }
        #expect(db.commitSyncs == syncs + 1)
        #expect(db.synchronousFull)
    }

    /// A transaction opened by hand (a plain BEGIN or SAVEPOINT through `query`, which SQLite
    /// calls read-only) after `unsynced` commits at FULL, as `transaction()` does: in either
    /// case, after whitespace or a comment, as SQLite reads it.
    @Test(arguments: ["BEGIN", "begin immediate", " SAVEPOINT s", "-- by hand\nBEGIN", "/* by hand */ savepoint s"])
    func aTransactionOpenedByHandAfterUnsyncedRunsAtFull(_ opening: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try database(dir)
        try insertUnsynced(db, 1)
        #expect(!db.synchronousFull)
        try db.query(opening)
        try db.query("INSERT INTO t VALUES (?)", [.int(2)])
        try db.query(opening.uppercased().contains("SAVEPOINT") ? "RELEASE s" : "COMMIT")
        #expect(db.synchronousFull)
        #expect(try level(db) == 2)
    }
}
