import Glibc
import YaOKSupport

/// A commit whose disk sync is taken out of the lock that serialises the database
/// (`Database.unsynced`, then `LogSync.sync`): the group commit of `Node.send`
/// (docs/ARCHITECTURE.md, "Sending"). SQLite commits in WAL mode with `synchronous=NORMAL`
/// write the log without syncing it, and stay consistent after a crash or power loss (a
/// commit not synced yet is lost whole, never half); the committer then syncs the log file
/// itself, with the lock released, so the next senders plan, seal and write meanwhile and
/// one sync covers every commit written before it.
///
/// Its own descriptor of the log file, closed with it: a sync after the database closed
/// (closing checkpoints and syncs everything) syncs a file that may be gone, harmlessly.
public final class LogSync: Sendable {
    private let descriptor: Int32
    private let done = Locked(0)

    /// Syncs run so far (tests count one per group commit).
    package var syncs: Int { done.withLock { $0 } }

    init(logPath: String) throws {
        let fd = open(logPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw YaOKError(.storage, "Cannot open the database's log to sync it: \(String(cString: strerror(errno)))")
        }
        descriptor = fd
    }

    deinit { Glibc.close(descriptor) }

    /// Makes every commit written to the log so far durable (as `synchronous=FULL` would
    /// have at each commit). Safe from any thread, with or without the database's lock.
    public func sync() throws {
        while fdatasync(descriptor) != 0 {
            guard errno == EINTR else {
                throw YaOKError(.storage, "The disk could not confirm the write: \(String(cString: strerror(errno)))")
            }
        }
        done.withLock { $0 += 1 }
    }
}

extension Database {
    /// Runs `body` with commits that write the log without syncing it, and returns its
    /// result with the `LogSync` that makes them durable. The caller must not report what
    /// they stored as stored before `sync()` returns. Outside any transaction only.
    public func unsynced<T>(_ body: () throws -> T) throws -> (result: T, sync: LogSync) {
        guard !inTransaction else { throw YaOKError(.internal, "Unsynced commits cannot begin inside a transaction") }
        let syncer = try logSync()
        try execute("PRAGMA synchronous=NORMAL")
        defer { try? execute("PRAGMA synchronous=FULL") }
        return (try body(), syncer)
    }
}
