import Glibc
import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKStore
@testable import YaOKNode

/// The node's store is its file's only user (`Database(path:exclusive:)`): the log's index
/// lives in the process, so there is no `-shm` file, and a transaction takes no file lock
/// (each took and released its `-shm` locks with `fcntl`, about eight system calls per
/// commit). Reopened after a crash, the log is still read back.
@Suite struct ExclusiveStoreTests {
    @Test func theNodeStoreHoldsItsFileAloneWithNoSharedIndex() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try Node(dataDirectory: dir.path, options: fastOptions())
        _ = try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        _ = try node.addContact(card: try cardText("Bob"))
        let mode = try node.withDatabase { db in try db.rows("PRAGMA locking_mode") { $0.text(0) }.first }
        #expect(mode == "exclusive")
        #expect(access(dir.path + "/" + Store.fileName + "-wal", F_OK) == 0)  // WAL mode still
        #expect(access(dir.path + "/" + Store.fileName + "-shm", F_OK) != 0)
        node.close()
    }

    /// Rows committed to the log and never checkpointed (the process ended) are read back
    /// by the next open, whose index is rebuilt from the log in memory.
    @Test func aLogLeftBehindIsReadBack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let path = dir.path + "/store.db"
        do {
            let db = try Database(path: path, exclusive: true)
            try db.execute("PRAGMA wal_autocheckpoint=0; CREATE TABLE t (x); INSERT INTO t VALUES (42)")
            // Copy the log aside before close checkpoints it, as a killed process leaves it.
            try copyFile(path + "-wal", to: dir.path + "/left.wal")
            try copyFile(path, to: dir.path + "/left.db")
            db.close()
        }
        let copy = dir.path + "/reopened.db"
        try copyFile(dir.path + "/left.db", to: copy)
        try copyFile(dir.path + "/left.wal", to: copy + "-wal")
        let reopened = try Database(path: copy, exclusive: true)
        defer { reopened.close() }
        #expect(try reopened.rows("SELECT x FROM t") { $0.int(0) } == [42])
    }

    private func copyFile(_ from: String, to: String) throws {
        try FileManager.default.copyItem(atPath: from, toPath: to)
    }
}
