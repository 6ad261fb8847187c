import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKStore

/// Commits outside `Database.unsynced` always sync: a connection left at
/// `synchronous=NORMAL` (the restore at the end of `unsynced` refused) is put back at FULL
/// before the next transaction begins, so no commit goes unsynced by accident.
@Suite struct SynchronousRestoreTests {
    @Test func aConnectionLeftAtNormalIsFullAgainBeforeTheNextCommit() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try dir.database("restore.sqlite")
        try db.execute("CREATE TABLE t (x INTEGER)")
        try db.setSynchronous(full: false)  // as a failed restore leaves it
        let syncs = db.commitSyncs
        try db.transaction { try db.query("INSERT INTO t VALUES (1)") }
        #expect(db.synchronousFull)
        #expect(db.commitSyncs == syncs + 1)
        var level = -1
        try db.query("PRAGMA synchronous") { level = $0.int(0) }
        #expect(level == 2)
        // The batches' transactions (`transactionSyncedAsNeeded`) sync what must be durable too.
        try db.setSynchronous(full: false)
        try db.transactionSyncedAsNeeded { try db.query("INSERT INTO t VALUES (2)") }
        #expect(db.commitSyncs == syncs + 2)
    }
}
