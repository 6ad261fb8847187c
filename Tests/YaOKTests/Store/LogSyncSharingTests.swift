import Foundation
import Glibc
import Testing
@testable import YaOKSupport
@testable import YaOKStore

/// Callers on several threads share the log's syncs (`LogSync`): a caller that expects
/// another's sync (the event thread's drain while the app sends) waits for it instead of
/// running one of its own, up to its patience; a failed sync fails those it covered.
@Suite struct LogSyncSharingTests {
    /// A log file of its own (any regular file syncs).
    private func syncer(_ dir: TempDir) throws -> LogSync {
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: dir.path + "/log", contents: Data([1]))
        return try LogSync(logPath: dir.path + "/log")
    }

    @Test func aCallerExpectingAnotherIsCoveredByItsSync() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let syncer = try syncer(dir)
        let outcome = Locked<Result<Void, any Error>?>(nil)
        let drain = Thread { outcome.withLock { $0 = Result { try syncer.sync(expectingAnother: true, patience: .seconds(600)) } } }
        drain.start()
        #expect(eventually { syncer.patientCallers == 1 })
        try syncer.sync()  // the send's
        #expect(eventually { outcome.withLock { $0 } != nil })
        #expect(throws: Never.self) { try outcome.withLock { $0 }?.get() }
        #expect(syncer.syncs == 1)  // one sync for both callers
    }

    @Test func pastItsPatienceACallerSyncsItself() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let syncer = try syncer(dir)
        try syncer.sync(expectingAnother: true, patience: .milliseconds(1))  // nobody else comes
        #expect(syncer.syncs == 1)
        #expect(syncer.patientCallers == 0)
        try syncer.sync(expectingAnother: false)
        #expect(syncer.syncs == 2)
    }

    /// A patience below zero is none: the caller runs its own sync at once. It made a
    /// deadline with negative nanoseconds, which pthread_cond_timedwait refuses at once
    /// (EINVAL, not ETIMEDOUT, the mutex never released), and the caller spun on it for
    /// ever, holding the lock: no sync on that log could run again, anyone's.
    @Test func aPatienceBelowZeroIsNone() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let syncer = try syncer(dir)
        let outcome = Locked<Result<Void, any Error>?>(nil)
        let drain = Thread {
            let result = Result { try syncer.sync(expectingAnother: true, patience: .nanoseconds(-999_999_999)) }
            outcome.withLock { $0 = result }
        }
        drain.start()
        let returned = eventually { outcome.withLock { $0 } != nil }
        #expect(returned)
        guard returned else { return }  // it spins with the lock held: nothing more can sync
        #expect(throws: Never.self) { try outcome.withLock { $0 }?.get() }
        #expect(syncer.syncs == 1)
    }

    @Test func aFailedSyncFailsTheCallersWaitingForIt() throws {
        let syncer = try LogSync(logPath: "/dev/null")  // fdatasync refuses a character device
        let outcome = Locked<Result<Void, any Error>?>(nil)
        let drain = Thread { outcome.withLock { $0 = Result { try syncer.sync(expectingAnother: true, patience: .seconds(600)) } } }
        drain.start()
        #expect(eventually { syncer.patientCallers == 1 })
        #expect(throws: YaOKError.self) { try syncer.sync() }
        #expect(eventually { outcome.withLock { $0 } != nil })
        #expect(throws: YaOKError.self) { try outcome.withLock { $0 }?.get() }
        #expect(syncer.syncs == 0)
    }
}
