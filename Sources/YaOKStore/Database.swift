internal import CSQLite
import YaOKSupport
import YaOKWire
import YaOKCrypto

/// A thin, synchronous wrapper over one sqlite3 connection (system libsqlite3).
/// Not thread-safe by itself: its owner serialises access (one connection per owner).
/// Every sqlite3 failure becomes a YaOKError: `diskFull` for SQLITE_FULL, `corruptStore`
/// for SQLITE_CORRUPT/SQLITE_NOTADB, `storage` otherwise, with sqlite's message.
public final class Database {
    private var handle: OpaquePointer?
    public let path: String
    /// Prepared statements by SQL text, reused across calls: parsing the SQL again for each
    /// query was a fifth of a relay's CPU per message. Bounded; a statement in use (a query
    /// run from inside another's row callback with the same SQL) gets a fresh one.
    private var statements: [String: CachedStatement] = [:]
    private static let maxCachedStatements = 256

    /// A cached statement and whether a query runs it now, in one entry: a cached query
    /// looks its SQL text up once. Hashing the text (hundreds of bytes) for the lookup, and
    /// again to mark it in use and free in a separate set, was 5 % of an inbound drain's
    /// instructions.
    private final class CachedStatement {
        let pointer: OpaquePointer
        var inUse = false
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
    }

    /// Opens (creating if needed) the database at `path` in WAL mode with foreign keys on.
    /// `synchronous=FULL` so a committed transaction survives power loss, not just a crash.
    /// `exclusive`: this connection is the file's only user for as long as it is open
    /// (`locking_mode=EXCLUSIVE`, set before the log is first read): SQLite then keeps the
    /// log's index in this process's memory, with no `-shm` file, and takes no file lock per
    /// transaction. Shared, every transaction took and released its locks on the `-shm`
    /// file with `fcntl`, about eight system calls per commit, four commits per message
    /// delivered one at a time. Any other connection to the file waits for it, then fails.
    public init(path: String, exclusive: Bool = false) throws {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(db)
            throw Database.error(rc, "Cannot open database: \(message)")
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
        if exclusive { try execute("PRAGMA locking_mode=EXCLUSIVE") }
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=FULL")
        try execute("PRAGMA foreign_keys=ON")
        try execute("PRAGMA secure_delete=ON")
        // Sorts and temporary tables in RAM, not in unnamed files in /var/tmp that are
        // outside the data directory (and so outside reset and its permissions).
        try execute("PRAGMA temp_store=MEMORY")
    }

    deinit { close() }

    public func close() {
        logSyncer = nil
        for statement in statements.values { sqlite3_finalize(statement.pointer) }
        statements = [:]
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    private var db: OpaquePointer {
        get throws {
            guard let handle else { throw YaOKError(.storage, "Database is closed") }
            return handle
        }
    }

    /// Runs one or more statements that take no parameters and return no rows we need.
    public func execute(_ sql: String) throws {
        try restoreFullSync(writing: true)
        countStatement(sql)
        statementsPrepared += 1  // sqlite3_exec parses `sql` each time
        let rc = sqlite3_exec(try db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw try lastError(rc) }
    }

    /// Runs `sql` with `arguments`, calling `row` for each result row.
    public func query(_ sql: String, _ arguments: [SQLValue] = [], row: (Row) throws -> Void = { _ in }) throws {
        countStatement(sql)
        let statement: OpaquePointer
        let cached: CachedStatement?
        let known = statements[sql]
        if let known, !known.inUse {
            statement = known.pointer
            cached = known
        } else {
            statement = try prepare(sql)
            cached = known == nil && statements.count < Database.maxCachedStatements ? CachedStatement(statement) : nil
            if let cached { statements[sql] = cached }
        }
        cached?.inUse = true
        defer {
            if let cached {
                // Ready for the next call; bound blobs (possibly secrets) are released now.
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
                cached.inUse = false
            } else {
                sqlite3_finalize(statement)
            }
        }
        if !synchronousFull, unsyncedDepth == 0 {
            // SQLite calls BEGIN and SAVEPOINT read-only, but outside a transaction they open
            // one whose writes commit later, no statement of theirs restoring FULL.
            try restoreFullSync(writing: sqlite3_stmt_readonly(statement) == 0 || Self.opensTransaction(sql))
        }
        try bind(arguments, to: statement)
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw try lastError(rc) }
            try row(Row(statement: statement))
        }
    }

    /// Runs a statement and returns the rows it produced, each mapped by `map`.
    public func rows<T>(_ sql: String, _ arguments: [SQLValue] = [], map: (Row) throws -> T) throws -> [T] {
        var out: [T] = []
        try query(sql, arguments) { out.append(try map($0)) }
        return out
    }

    /// Runs `body` in an IMMEDIATE transaction: committed if it returns, rolled back if it throws.
    /// Inside another transaction it is a savepoint, so that the delivery engine can batch
    /// many operations (each its own all-or-nothing unit) into one commit and one disk sync.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        let inside = sqlite3_get_autocommit(try db) == 0
        if !inside, depth > 0 {
            // Called from the body of a transaction that SQLite already rolled back by itself
            // (SQLITE_FULL does, and IOERR, BUSY or NOMEM may), the error caught on the way:
            // going on would write outside any transaction, commit half of a batch meant to be
            // all or nothing, and have what keeps rows in memory take the lost writes as stored.
            rollbacks += 1
            afterRollback?()
            throw YaOKError(.storage, "The transaction was rolled back by the database after an earlier error")
        }
        depth += 1
        defer { depth -= 1 }
        if inside {
            try control("SAVEPOINT nested")
            do {
                let result = try body()
                try control("RELEASE nested")
                return result
            } catch {
                rollbacks += 1
                try? control("ROLLBACK TO nested")
                try? control("RELEASE nested")
                afterRollback?()
                throw error
            }
        }
        // Outside `unsynced` a commit syncs: the connection left at NORMAL by the last
        // `unsynced` is put back at FULL first.
        if unsyncedDepth == 0, !synchronousFull { try setSynchronous(full: true) }
        try control("BEGIN IMMEDIATE")
        do {
            let changesBefore = totalChanges
            let result = try body()
            try control("COMMIT")
            if totalChanges != changesBefore {
                writingCommits += 1
                if synchronousFull { syncingCommits += 1 }
            }
            afterCommit?()
            if checkpointAfterCommit { checkpointNow() }
            return result
        } catch {
            rollbacks += 1
            try? control("ROLLBACK")
            afterRollback?()
            throw error
        }
    }

    /// A transaction's own statement (BEGIN, COMMIT, SAVEPOINT, …), prepared once and kept
    /// with the others: through `sqlite3_exec` each was parsed anew, four to six of them in
    /// every send (~4 % of its instructions under callgrind). Not for a PRAGMA: SQLite
    /// applies many of them when they are prepared, not when run again.
    private func control(_ sql: String) throws {
        try query(sql)
    }

    /// Statements run on this connection (`execute` and `query` calls, the transaction's own
    /// BEGIN/SAVEPOINT/COMMIT included): tests and yaok-bench count them per message, so that
    /// a statement added to a hot path shows as a count, not only as a slower benchmark.
    package private(set) var statementsRun = 0
    /// When set, the SQL of every statement run is appended (tests and yaok-bench list what
    /// one operation runs). Nil in production: nothing is kept.
    package var statementLog: [String]?

    /// Statements parsed on this connection: each `execute` and each `query` whose SQL was
    /// not cached (or was in use). Tests count them: a hot path parses nothing once warm.
    package private(set) var statementsPrepared = 0

    private func countStatement(_ sql: String) {
        statementsRun += 1
        statementLog?.append(sql)
    }

    /// The log's own descriptor for `unsynced` (LogSync.swift), opened at the first.
    private var logSyncer: LogSync?

    package func logSync() throws -> LogSync {
        if let logSyncer { return logSyncer }
        _ = try db  // not after close
        let syncer = try LogSync(logPath: path + "-wal")
        logSyncer = syncer
        return syncer
    }

    /// Pages this connection read from the file or its log since it opened: pages its
    /// cache did not hold (SQLITE_DBSTATUS_CACHE_MISS). Tests count them.
    package var cacheMisses: Int {
        var current: Int32 = 0, highwater: Int32 = 0
        guard let handle, sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_MISS, &current, &highwater, 0) == SQLITE_OK else {
            return 0
        }
        return Int(current)
    }

    /// How many `transaction` bodies are running (nested ones included).
    private var depth = 0

    /// Called after the outermost transaction commits, and after any transaction or
    /// savepoint rolls back: what keeps a copy of rows in memory (the store's ring cache)
    /// takes what a transaction wrote as stored only at its commit, and forgets at a rollback.
    package var afterCommit: (() -> Void)?
    package var afterRollback: (() -> Void)?


    /// Set when something secret was deleted (an erased receiver key, docs/PROTOCOL.md
    /// §13.3): the write-ahead log still holds the page as it was, and a checkpoint cannot
    /// run inside a transaction, so it runs after the outermost commit (or at once outside
    /// one). A checkpoint that fails (a reader in the way) is tried again after the next.
    package var checkpointAfterCommit = false

    package func checkpointSoon() {
        checkpointAfterCommit = true
        if (try? sqlite3_get_autocommit(db)) != 0 { checkpointNow() }
    }

    private func checkpointNow() {
        var busy = 1
        try? query("PRAGMA wal_checkpoint(TRUNCATE)") { busy = $0.int(0) }
        checkpointAfterCommit = busy != 0
        truncatingCheckpoints += 1
    }

    /// TRUNCATE checkpoints run on this connection (`checkpointSoon`): each syncs the log
    /// and the database file, and makes the next commit restart the log (another sync).
    /// Tests count them per message.
    package private(set) var truncatingCheckpoints = 0

    /// Frames in the write-ahead log as the last commit left it, once `checkpointByOwner`
    /// has been called (before that SQLite checkpoints by itself, inside COMMIT, and this
    /// stays 0). A complete checkpoint lets the next commit restart the log from its start.
    package private(set) var walFrames = 0

    /// Takes the checkpoints from SQLite's automatic one, which runs inside the COMMIT that
    /// passes its threshold (so that commit returns only after every page of the log was
    /// copied into the database and synced). The owner then calls `checkpointPassive` when
    /// `walFrames` says, at a moment of its choosing.
    package func checkpointByOwner() throws {
        let context = Unmanaged.passUnretained(self).toOpaque()
        // Replaces the automatic checkpoint's hook (sqlite3_wal_autocheckpoint is one).
        sqlite3_wal_hook(try db, { context, _, _, frames in
            guard let context else { return SQLITE_OK }
            Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().walFrames = Int(frames)
            return SQLITE_OK
        }, context)
    }

    /// A PASSIVE checkpoint: copies what it can of the log into the database without waiting
    /// for readers. Returns whether the whole log was copied (it then restarts at the next
    /// commit).
    @discardableResult
    package func checkpointPassive() throws -> Bool {
        var busy = 1, frames = -1, copied = -2
        try query("PRAGMA wal_checkpoint(PASSIVE)") {
            busy = $0.int(0)
            frames = $0.int(1)
            copied = $0.int(2)
        }
        let complete = busy == 0 && frames == copied
        if complete { walFrames = 0 }
        return complete
    }

    /// How many transactions (or nested savepoints) have rolled back on this connection:
    /// in-memory state that assumed a write stuck can tell that it may not have.
    public private(set) var rollbacks = 0

    /// Outermost transactions that changed rows when they committed: each writes the log,
    /// and is a disk sync unless its loss was tolerated (`transactionSyncedAsNeeded`), while
    /// one that changed nothing writes nothing to the log and syncs nothing. Tests count
    /// them per delivered message.
    public private(set) var writingCommits = 0

    /// Writing commits that synced the log inside their COMMIT (synchronous=FULL).
    private var syncingCommits = 0
    /// Whether commits sync inside COMMIT (the connection's default), or leave it to `LogSync`.
    package private(set) var synchronousFull = true
    /// `unsynced` calls in progress: their commits' syncs are their callers'.
    var unsyncedDepth = 0
    /// `syncsDeferred` calls in progress, and the sync one of their commits owes.
    var deferredSyncDepth = 0
    var owedSync: LogSync?

    /// `PRAGMA synchronous`: FULL (the default) or NORMAL (`unsynced`). Outside transactions
    /// only (SQLite refuses to change it inside one).
    package func setSynchronous(full: Bool) throws {
        let sql = full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"
        countStatement(sql)
        statementsPrepared += 1
        let rc = sqlite3_exec(try db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw try lastError(rc) }
        synchronousFull = full
    }

    /// Whether `sql` is a BEGIN or a SAVEPOINT: its first keyword, after the whitespace and
    /// comments SQLite skips (a comment first would otherwise hide it), in any case.
    private static func opensTransaction(_ sql: String) -> Bool {
        var rest = Substring(sql)
        while true {
            rest = rest.drop { $0.isWhitespace }
            if rest.hasPrefix("--") {
                rest = rest.drop { !$0.isNewline }
            } else if rest.hasPrefix("/*") {
                var body = rest.dropFirst(2)
                while !body.isEmpty, !body.hasPrefix("*/") { body = body.dropFirst() }
                rest = body.dropFirst(2)
            } else {
                break
            }
        }
        let head = rest.prefix(9).uppercased()
        return head.hasPrefix("BEGIN") || head.hasPrefix("SAVEPOINT")
    }

    /// `unsynced` leaves the connection at NORMAL: a statement outside it and outside any
    /// transaction that may write (`writing`: an autocommit write would otherwise go
    /// unsynced) puts FULL back before it runs, as `transaction` does before BEGIN. Reads
    /// leave it (the next group's switch is spared).
    private func restoreFullSync(writing: Bool) throws {
        guard writing, !synchronousFull, unsyncedDepth == 0, sqlite3_get_autocommit(try db) != 0 else { return }
        try setSynchronous(full: true)
    }

    /// Disk syncs of the log made for commits so far: inside COMMIT at synchronous=FULL, and
    /// by `LogSync` (checkpoints' syncs are not counted). Tests count them per operation.
    package var commitSyncs: Int { syncingCommits + (logSyncer?.syncs ?? 0) }

    /// Rows changed inside `lossTolerant` (outermost calls only) since the connection opened.
    package private(set) var lossTolerantChanges: Int64 = 0
    private var lossTolerantDepth = 0

    /// Runs `body`, whose writes may be lost with an OS crash or power loss without harm
    /// (bookkeeping that is derived again: LogSync.swift, `transactionSyncedAsNeeded`), so
    /// they alone never make a commit sync the disk. Every other write does: a write
    /// nobody marked is taken as one that must be durable.
    package func lossTolerant<T>(_ body: () throws -> T) rethrows -> T {
        let before = totalChanges
        lossTolerantDepth += 1
        defer {
            lossTolerantDepth -= 1
            // Nested calls are counted once, by the outermost.
            if lossTolerantDepth == 0 { lossTolerantChanges += totalChanges - before }
        }
        return try body()
    }

    /// Whether a transaction is open on the connection (a `transaction` inside it is a savepoint).
    public var inTransaction: Bool { ((try? sqlite3_get_autocommit(db)) ?? 1) == 0 }

    /// Rows changed by INSERT, UPDATE or DELETE since the connection opened.
    public var totalChanges: Int64 { (try? Int64(sqlite3_total_changes64(db))) ?? 0 }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { (try? Int(sqlite3_changes(db))) ?? 0 }

    public var lastInsertRowID: Int64 { (try? sqlite3_last_insert_rowid(db)) ?? 0 }

    /// PRAGMA user_version: the schema version that migrations advance.
    public var userVersion: Int {
        get throws {
            var version = 0
            try query("PRAGMA user_version") { version = $0.int(0) }
            return version
        }
    }

    public func setUserVersion(_ version: Int) throws {
        try execute("PRAGMA user_version = \(version)")
    }

    private func prepare(_ sql: String) throws -> OpaquePointer {
        statementsPrepared += 1
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(try db, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw try lastError(rc) }
        return statement
    }

    private func bind(_ arguments: [SQLValue], to statement: OpaquePointer) throws {
        for (i, value) in arguments.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(statement, index)
            case .int(let v): rc = sqlite3_bind_int64(statement, index, v)
            case .text(let v): rc = sqlite3_bind_text(statement, index, v, -1, yaok_sqlite_transient())
            case .blob(let v):
                rc = v.withUnsafeBytes {
                    // A zero-length blob must still bind as a blob, not NULL.
                    sqlite3_bind_blob(statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                      Int32($0.count), yaok_sqlite_transient())
                }
            }
            guard rc == SQLITE_OK else { throw try lastError(rc) }
        }
    }

    private func lastError(_ rc: Int32) throws -> YaOKError {
        let handle = try db
        var message = String(cString: sqlite3_errmsg(handle))
        if rc & 0xff == SQLITE_IOERR {
            // "disk I/O error" alone names neither the operation nor the cause: the extended
            // code (SQLITE_IOERR_*) and the system's errno do.
            message += " (SQLite code \(sqlite3_extended_errcode(handle)), errno \(sqlite3_system_errno(handle)))"
        }
        return Database.error(rc, message)
    }

    static func error(_ rc: Int32, _ message: String) -> YaOKError {
        switch rc & 0xff {
        case SQLITE_FULL: return YaOKError(.diskFull, "Not enough storage space: \(message)")
        case SQLITE_CORRUPT, SQLITE_NOTADB: return YaOKError(.corruptStore, "The data store is corrupt: \(message)")
        default: return YaOKError(.storage, "Storage error: \(message)")
        }
    }
}

/// A value bound to or read from SQL.
public enum SQLValue: Equatable, Sendable {
    case null
    case int(Int64)
    case text(String)
    case blob([UInt8])
}

/// One result row, valid only inside the `row` callback.
public struct Row {
    fileprivate let statement: OpaquePointer

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
    public func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    public func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(statement, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
    }
    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let p = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: p, count: count))
    }
    /// A blob's bytes in place, without the copy `blob` makes; valid only inside `body`.
    func withBlob<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let p = sqlite3_column_blob(statement, column) else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: p, count: count))
    }
}
