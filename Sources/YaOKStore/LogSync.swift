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
public final class LogSync: @unchecked Sendable {
    /// The log's descriptor (internal for the tests, which put another file in its place).
    let descriptor: Int32
    /// A pthread mutex and condition (as `SendCommitQueue`'s) so that ThreadSanitizer sees
    /// the hand-over between a sync's runner and the callers it covered.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Syncs begun and syncs completed so far (one runs at a time, so they complete in the
    /// order they began), whether one runs now, and the first failure (kept: see `sync`).
    private var begun = 0, completed = 0, running = false
    private var failure: YaOKError?
    /// Callers waiting for another's sync (`sync(expectingAnother:)`), for the tests.
    private var patient = 0

    /// Syncs run so far (tests count one per group commit).
    package var syncs: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return completed
    }

    /// How many callers wait for another's sync to begin now (tests line one up).
    package var patientCallers: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return patient
    }

    init(logPath: String) throws {
        let fd = open(logPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw YaOKError(.storage, "Cannot open the database's log to sync it: \(String(cString: strerror(errno)))")
        }
        descriptor = fd
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)  // `sync(expecting:)`'s patience
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        Glibc.close(descriptor)
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Makes every commit written to the log so far durable (as `synchronous=FULL` would
    /// have at each commit). Safe from any thread, with or without the database's lock.
    ///
    /// Callers on several threads share syncs: any sync that begins after a caller arrived
    /// covers every commit that caller wrote before it called. So one sync runs at a time;
    /// a caller that finds one running waits for it and then for the next, which one of
    /// the callers that waited runs for them all (a send's commit and the event thread's
    /// drain, arriving during the same sync, share the next: each was two, now one).
    ///
    /// Once a sync has failed, every later one fails with it (until the store is opened
    /// again): the commits it covered stay committed in SQLite's view, later commits' frames
    /// follow theirs in the log, and the kernel reports a writeback error once (the next
    /// fdatasync may succeed with those pages lost), so after a crash the log would end at
    /// the first frame lost and a later commit "synced" here would be gone too. (A
    /// `synchronous=FULL` commit whose sync fails is not committed at all, and the next
    /// commit writes over its frames.)
    public func sync() throws {
        try sync(expectingAnother: false)
    }

    /// As `sync`, but when `expectingAnother` (callers on another thread are writing
    /// commits they will sync, one after the other: an app sending back to back) waits, once
    /// no sync runs, up to `patience` for one of theirs to begin and cover this caller's
    /// commits too, instead of running its own at once. The event thread's drain that
    /// applies an ack while the app sends so shares a send's sync (two syncs a message in a
    /// row on the sender were the disk's whole time). Past `patience` (the app stopped, or
    /// its write failed) it runs its own.
    public func sync(expectingAnother: Bool, patience: Duration = .microseconds(500)) throws {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        // Any sync that begins from now on covers every commit written before this call.
        let needed = begun + 1
        var waitForAnother = expectingAnother
        var deadline: timespec?
        while true {
            // Covered first: a sync that began after this caller arrived and succeeded made
            // its commits durable, whatever a later one did (a send so reported failed
            // would be sent again by the app).
            if completed >= needed { return }
            if let failure { throw failure }
            if running {
                pthread_cond_wait(condition, mutex)
                continue
            }
            if waitForAnother {
                // A patience below zero is none: its deadline's nanoseconds would be negative,
                // which the wait refuses at once (EINVAL) without releasing the mutex.
                if deadline == nil { deadline = Self.monotonicTime(after: max(patience, .zero)) }
                patient += 1
                // Any error ends the patience: only ETIMEDOUT is expected, but this loop
                // must never come back to a wait that returns at once.
                if pthread_cond_timedwait(condition, mutex, &deadline!) != 0 { waitForAnother = false }
                patient -= 1
                continue
            }
            running = true
            begun += 1
            let mine = begun
            pthread_mutex_unlock(mutex)
            let error = Self.syncFile(descriptor)
            pthread_mutex_lock(mutex)
            running = false
            if let error { failure = failure ?? error } else { completed = mine }
            pthread_cond_broadcast(condition)
        }
    }

    private static func monotonicTime(after duration: Duration) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = duration.components
        let nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
        return timespec(tv_sec: now.tv_sec + Int(seconds) + nanoseconds / 1_000_000_000,
                        tv_nsec: nanoseconds % 1_000_000_000)
    }

    /// fdatasync, again after a signal; nil once the disk confirmed.
    private static func syncFile(_ descriptor: Int32) -> YaOKError? {
        while fdatasync(descriptor) != 0 {
            guard errno == EINTR else {
                return YaOKError(.storage, "The disk could not confirm the write (\(String(cString: strerror(errno)))): "
                                 + "nothing more can be confirmed until the node is opened again")
            }
        }
        return nil
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
