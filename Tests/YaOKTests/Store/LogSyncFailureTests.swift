import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKStore

/// A failed sync of the log (`LogSync`, the group commit of `Node.send`) is not followed by
/// a "durable": the commits it covered are committed in SQLite's view (synchronous=NORMAL)
/// and later commits' frames follow theirs in the log, while the kernel reports a writeback
/// error once and may have dropped those pages; after a crash the log ends at the first
/// frame lost, so no later commit through it can be confirmed either. Every later sync
/// fails too, until the store is opened again.
@Suite struct LogSyncFailureTests {
    @Test func aSyncAfterAFailedOneFailsToo() throws {
        // A descriptor fdatasync refuses (a character device: EINVAL) then, in its place,
        // a regular file it would sync: as a disk whose error is reported once.
        let syncer = try LogSync(logPath: "/dev/null")
        #expect(throws: YaOKError.self) { try syncer.sync() }
        let dir = TempDir()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        defer { dir.remove() }
        let file = open(dir.path + "/log", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(file >= 0)
        defer { close(file) }
        #expect(dup2(file, syncer.descriptor) == syncer.descriptor)
        #expect(fdatasync(syncer.descriptor) == 0)  // the descriptor itself syncs now
        #expect(throws: YaOKError.self) { try syncer.sync() }
        #expect(syncer.syncs == 0)
    }
}
