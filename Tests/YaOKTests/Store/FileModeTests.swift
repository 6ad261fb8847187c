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
    /// Whether any lock is held on `fd`'s file, this process's own included: an open file
    /// description lock conflicts with a POSIX lock even of the same process (fcntl(2)),
    /// where F_GETLK would not see our own. /proc/locks is no help: in a container it may
    /// name processes by another PID namespace's numbers (CI's did).
    private func isLocked(_ fd: Int32) -> Bool? {
        let F_OFD_GETLK: Int32 = 36  // <fcntl.h>, hidden from Swift behind _GNU_SOURCE
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        guard withUnsafeMutablePointer(to: &probe, { fcntl(fd, F_OFD_GETLK, $0) }) == 0 else { return nil }
        return probe.l_type != Int16(F_UNLCK)
    }

    @Test func aLiveStoresLocksSurviveASecondOpen() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let store = try Store(directory: dir.path)
        let path = dir.path + "/" + Store.fileName
        // Kept open until the store is closed: closing it would be the very thing tested.
        let probe = open(path, O_RDONLY | O_CLOEXEC)
        try #require(probe >= 0)
        try #require(isLocked(probe) != nil, "this kernel has no open file description locks (F_OFD_GETLK, Linux 3.15)")
        try store.db.execute("BEGIN IMMEDIATE")
        #expect(isLocked(probe) == true)
        try Store.createPrivateFile(path)  // what a second store's open does first
        #expect(isLocked(probe) == true)
        try store.db.execute("ROLLBACK")
        store.db.close()
        Glibc.close(probe)
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
