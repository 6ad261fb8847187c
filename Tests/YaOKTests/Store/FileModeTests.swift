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
