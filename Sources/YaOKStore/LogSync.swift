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
    /// The log's descriptor (internal for the tests, which put another file in its place).
    let descriptor: Int32
    /// Syncs run so far, and the first failure (kept: see `sync`).
    private let state = Locked<(syncs: Int, failure: YaOKError?)>((0, nil))

    /// Syncs run so far (tests count one per group commit).
    package var syncs: Int { state.withLock { $0.syncs } }

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
    ///
    /// Once a sync has failed, every later one fails with it (until the store is opened
    /// again): the commits it covered stay committed in SQLite's view, later commits' frames
    /// follow theirs in the log, and the kernel reports a writeback error once (the next
    /// fdatasync may succeed with those pages lost), so after a crash the log would end at
    /// the first frame lost and a later commit "synced" here would be gone too. (A
    /// `synchronous=FULL` commit whose sync fails is not committed at all, and the next
    /// commit writes over its frames.)
    public func sync() throws {
        if let failure = state.withLock({ $0.failure }) { throw failure }
        while fdatasync(descriptor) != 0 {
            guard errno == EINTR else {
                let error = YaOKError(.storage, "The disk could not confirm the write (\(String(cString: strerror(errno)))): "
                                      + "nothing more can be confirmed until the node is opened again")
                state.withLock { $0.failure = $0.failure ?? error }
                throw error
            }
        }
        state.withLock { $0.syncs += 1 }
    }
}

extension Database {
    /// Runs `body` with commits that write the log without syncing it, and returns its
    /// result with the `LogSync` that makes them durable. The caller must not report what
    /// they stored as stored before `sync()` returns. Outside any transaction only.
    public func unsynced<T>(_ body: () throws -> T) throws -> (result: T, sync: LogSync) {
        guard !inTransaction else { throw YaOKError(.internal, "Unsynced commits cannot begin inside a transaction") }
        let syncer = try logSync()
        // Left at NORMAL afterwards: the next commit that must sync by itself puts FULL back
        // first (`Database.restoreFullSync`), so back-to-back groups and batches (nearly
        // every commit of a busy node) switch nothing. Each switch is a `PRAGMA` parsed anew
        // (SQLite applies it when preparing, so a kept statement does nothing): two a group
        // were ~7 % of a group's write under the node's lock.
        if synchronousFull { try setSynchronous(full: false) }
        unsyncedDepth += 1
        defer { unsyncedDepth -= 1 }
        return (try body(), syncer)
    }

    /// A transaction that syncs the disk only when it must: its commit writes the log
    /// without syncing it (`unsynced`), and when it changed rows outside `lossTolerant` the
    /// log is synced before it returns, so that what the caller does next (a receipt, an
    /// ack, an event) follows a durable commit, as at synchronous=FULL. A commit of
    /// tolerated losses alone is made durable by the next sync of any later commit (the
    /// log is written and synced in order); an OS crash or power loss before that loses it
    /// whole. Inside another transaction it is a savepoint, and the outermost decides;
    /// inside `unsynced` it is a transaction whose sync is `unsynced`'s caller's.
    ///
    /// A failed sync throws with the rows committed (SQLite cannot take a commit back): the
    /// caller must not let out what depended on them; `LogSync.sync` says why every later
    /// sync fails too.
    public func transactionSyncedAsNeeded<T>(_ body: () throws -> T) throws -> T {
        guard !inTransaction, unsyncedDepth == 0 else { return try transaction(body) }
        let changes = totalChanges, tolerated = lossTolerantChanges
        let (result, syncer) = try unsynced { try transaction(body) }
        if totalChanges - changes > lossTolerantChanges - tolerated {
            if deferredSyncDepth > 0 { owedSync = syncer } else { try syncer.sync() }
        }
        return result
    }

    /// Runs `body`, and returns its result (or error) with the sync that its
    /// `transactionSyncedAsNeeded` commits still owe (nil: none had to sync), instead of
    /// syncing inside each: the caller syncs once `body` has returned, with the lock that
    /// serialises the database released, and lets nothing that depends on those commits out
    /// before the sync returns (the event thread's inbound drain: docs/ARCHITECTURE.md "Disk
    /// syncs"), even when `body` threw after one of them. Other commits (synchronous=FULL,
    /// `unsynced`) are unchanged. Not nested.
    public func syncsDeferred<T>(_ body: () throws -> T) -> (result: Result<T, any Error>, owed: LogSync?) {
        guard deferredSyncDepth == 0 else { return (Result { try body() }, nil) }
        deferredSyncDepth = 1
        defer {
            deferredSyncDepth = 0
            owedSync = nil
        }
        let result = Result { try body() }
        return (result, owedSync)
    }
}
