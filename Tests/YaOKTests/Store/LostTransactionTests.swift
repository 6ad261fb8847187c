import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKStore

/// SQLite rolls a whole transaction back by itself on SQLITE_FULL (and may on IOERR, BUSY,
/// NOMEM), not only the failing statement. A body that goes on after such an error (caught
/// where it came from a savepoint, or a write under `try?`) must not go on writing outside
/// any transaction: a `transaction` called there would start a transaction of its own and
/// commit it, so half of a batch meant all-or-nothing would stay, and what keeps a copy of
/// the rows in memory (the store's ring cache) would take the lost transaction's writes as
/// stored at that commit.
@Suite struct LostTransactionTests {
    @Test func aTransactionSQLiteRolledBackIsNotContinuedOutsideIt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try dir.database("lost.sqlite")
        try db.execute("CREATE TABLE t (x BLOB)")
        var pages = 0
        try db.query("PRAGMA page_count") { pages = $0.int(0) }
        try db.execute("PRAGMA max_page_count = \(pages + 3)")
        var commits = 0, rollbacks = 0
        db.afterCommit = { commits += 1 }
        db.afterRollback = { rollbacks += 1 }

        var innerFailure: YaOKError?
        #expect(throws: YaOKError.self) {
            try db.transaction {
                try db.query("INSERT INTO t VALUES (x'01')")
                do {
                    try db.transaction {
                        for _ in 0..<100 { try db.query("INSERT INTO t VALUES (randomblob(3000))") }
                    }
                } catch let error as YaOKError {
                    innerFailure = error  // the disk is full: SQLite rolled everything back
                }
                try db.transaction { try db.query("INSERT INTO t VALUES (x'02')") }
            }
        }
        #expect(innerFailure?.code == .diskFull)
        try db.execute("PRAGMA max_page_count = 1000000")
        var rows = -1
        try db.query("SELECT count(*) FROM t") { rows = $0.int(0) }
        #expect(rows == 0)  // nothing of the batch, not its last part
        #expect(commits == 0)
        #expect(rollbacks >= 1)
    }
}
