import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKStore
@testable import YaOKNode

/// A transaction's own statements (BEGIN IMMEDIATE, COMMIT, SAVEPOINT, RELEASE, ROLLBACK)
/// are prepared once and kept, like every query: through `sqlite3_exec` each was parsed
/// again at every use, four to six in each send (issue 20).
@Suite struct PreparedStatementTests {
    @Test func aWarmTransactionParsesNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try dir.database("prepared.sqlite")
        try db.execute("CREATE TABLE t (x INTEGER)")
        func write(_ x: Int64, failInside: Bool) throws {
            try db.transaction {
                try db.query("INSERT INTO t VALUES (?)", [.int(x)])
                _ = try? db.transaction {
                    try db.query("INSERT INTO t VALUES (?)", [.int(-x)])
                    if failInside { throw YaOKError(.internal, "refused") }
                }
            }
        }
        try write(1, failInside: false)
        try write(2, failInside: true)  // ROLLBACK TO prepared too
        #expect(throws: YaOKError.self) { try db.transaction { throw YaOKError(.internal, "refused") } }  // ROLLBACK
        let before = db.statementsPrepared
        try write(3, failInside: false)
        try write(4, failInside: true)
        #expect(throws: YaOKError.self) { try db.transaction { throw YaOKError(.internal, "refused") } }
        #expect(db.statementsPrepared == before)
        // What the kept statements did is what sqlite3_exec did: a savepoint rolled back
        // alone, the rest committed.
        let rows = try db.rows("SELECT x FROM t ORDER BY rowid") { $0.int64(0) }
        #expect(rows == [1, -1, 2, 3, -3, 4])
        #expect(!db.inTransaction)
    }

    /// A query run from inside another's row callback with the same SQL gets a statement of
    /// its own (the cached one is mid-step), finalized after it; the cached one is kept and
    /// reused once free.
    @Test func theSameQueryInsideItsOwnRowsGetsAFreshStatement() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try dir.database("nested.sqlite")
        try db.execute("CREATE TABLE t (x INTEGER)")
        for x in 1...3 { try db.query("INSERT INTO t VALUES (?)", [.int(Int64(x))]) }
        let sql = "SELECT x FROM t WHERE x >= ? ORDER BY x"
        var pairs: [[Int64]] = []
        try db.query(sql, [.int(2)]) { outer in
            let x = outer.int64(0)
            pairs.append([x] + (try db.rows(sql, [.int(x)]) { $0.int64(0) }))
        }
        #expect(pairs == [[2, 2, 3], [3, 3]])
        let before = db.statementsPrepared
        #expect(try db.rows(sql, [.int(1)]) { $0.int64(0) } == [1, 2, 3])
        #expect(db.statementsPrepared == before)
    }

    /// A send, once warm, parses nothing: not even a `PRAGMA synchronous` (a PRAGMA takes
    /// effect when prepared, so it cannot be kept), since `Database.unsynced` leaves the
    /// connection at NORMAL for the next group (two parsed a group before).
    @Test func aWarmSendParsesNothing() throws {
        let pair = try Pair()
        defer { pair.close() }
        for i in 0..<3 { try pair.alice.send(to: pair.bobID, text: "warm-up \(i)") }
        let before = try pair.alice.withDatabase { $0.statementsPrepared }
        try pair.alice.send(to: pair.bobID, text: "hello")
        let parsed = try pair.alice.withDatabase { $0.statementsPrepared } - before
        #expect(parsed == 0)
    }
}
