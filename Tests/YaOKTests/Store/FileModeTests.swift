import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The data directory and every database file are the owner's alone, whatever the umask.
@Suite struct FileModeTests {
    @Test func directoryAndFilesAreOwnerOnly() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let home = dir.path + "/a/b"
        let old = umask(0)  // the most permissive umask a host app could have
        defer { umask(old) }
        let node = try Node(dataDirectory: home, options: fastOptions())
        _ = try node.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        _ = try node.addContact(card: try cardText("Bob"))
        for path in [home, dir.path + "/a"] {
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o700, "\(path)")
        }
        for suffix in ["", "-wal", "-shm"] {
            var st = stat()
            guard stat(home + "/" + Store.fileName + suffix, &st) == 0 else { continue }
            #expect(st.st_mode & 0o777 == 0o600, "\(suffix)")
        }
        node.close()
    }
}

/// Creating the database file never closes a descriptor of a file a connection of this
/// process has open: closing one drops every POSIX lock the process holds on the file, so
/// a second open of a live store (a relay's `stats` beside the relay, in its tests) took
/// the first connection's locks away, and SQLite then failed with "disk I/O error".
@Suite struct PrivateFileTests {
    /// POSIX locks this process holds on `path`'s file (/proc/locks names it by inode).
    private func locks(on path: String) -> Int {
        var st = stat()
        guard stat(path, &st) == 0, let text = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return -1 }
        let me = String(getpid())
        return text.split(separator: "\n").count { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count > 5 && fields[1] == "POSIX" && fields[4] == me && fields[5].hasSuffix(":\(st.st_ino)")
        }
    }

    @Test func aLiveStoresLocksSurviveASecondOpen() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        defer { store.db.close() }
        let path = dir.path + "/" + Store.fileName
        try store.db.execute("BEGIN IMMEDIATE")
        let held = locks(on: path)
        #expect(held > 0)
        try Store.createPrivateFile(path)  // what a second store's open does first
        #expect(locks(on: path) == held)
        try store.db.execute("ROLLBACK")
    }

    @Test func aSymbolicLinkInThePlaceOfTheDatabaseIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try Store.makeDirectory(dir.path)
        let target = dir.path + "/elsewhere"
        _ = creat(target, 0o600)
        #expect(symlink(target, dir.path + "/" + Store.fileName) == 0)
        #expect(throws: YaOKError.self) { try Store.createPrivateFile(dir.path + "/" + Store.fileName) }
    }
}
