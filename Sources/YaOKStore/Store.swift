import Glibc
import YaOKSupport
import YaOKWire
import YaOKCrypto

/// One node's persistent state: the SQLite database `yaok.db` (WAL) in the node's data
/// directory, migrated to the latest schema on open. Not thread-safe: the Node serialises
/// every call. Methods that touch encrypted columns take the unlocked `FieldCipher`.
package final class Store {
    static let fileName = "yaok.db"
    /// Every file SQLite may create next to the database: reset deletes them all.
    static let fileSuffixes = ["", "-wal", "-shm", "-journal"]

    package let db: Database
    let directory: String
    /// Digests of packets opened and stored (docs/PROTOCOL.md §4.8).
    package let seen: DuplicateFilter

    // Integrity state (Store+Integrity.swift), in memory only: a file attacker cannot touch it.
    /// The unlocked node's cipher, between `attach` and `detach`: writes of authenticated
    /// columns MAC with it, reads verify with it.
    var attached: FieldCipher?
    /// The last security event this store wrote or verified, and its chain value: an event
    /// removed from the file while the app runs is found at the next append or check.
    var logAnchor: (id: Int64, chain: [UInt8])?
    /// `db.rollbacks` when the anchor was set.
    var anchorRollbacks = 0
    /// What the append path found (the file's last event is not the anchor), reported at
    /// the next check.
    var logFindings: [String] = []
    /// A PIN vault was saved into a store with no log seal (setup): the next attach starts
    /// the seal instead of reporting it missing.
    var startingLog = false
    /// The forward-secrecy rings as stored, decoded (Store+ReceiverKeys): kept while the
    /// node is unlocked, in step with the transactions.
    let ringCache = ReceiverKeyRingCache()
    /// Outgoing texts as sealed into their rows, while unlocked (SentTextCache): a row read
    /// back whose body is what was sealed is not opened again.
    let sentTexts = SentTextCache()
    /// Message bodies decrypted so far (tests: which reads open a body).
    package internal(set) var bodiesOpened = 0
    /// Set by an owner that runs the erasure checkpoint itself, coalesced (Store+Erasure):
    /// called when a first erasure waits for it. nil: every erasure checkpoints at once.
    package var erasureScheduler: (() -> Void)?
    /// A secret's row was deleted and its old page may still be in the log or the file.
    package internal(set) var erasurePending = false

    /// A store shared with other connections (the relay's carry store, tools, tests).
    package convenience init(directory: String) throws {
        try self.init(directory: directory, exclusive: false)
    }

    /// `exclusive`: the store is its file's only user while open (`Database(path:exclusive:)`):
    /// the node's, which its directory lock already guards. The relay's carry store stays
    /// shared: its tests and `scripts/test-relay-carry` read it beside the running relay.
    package init(directory: String, exclusive: Bool) throws {
        self.directory = directory
        try Store.makeDirectory(directory)
        let path = directory + "/" + Store.fileName
        // Only the owner may read the files, though nothing secret is in them in clear.
        try Store.createPrivateFile(path)
        db = try Database(path: path, exclusive: exclusive)
        // A page cache of up to 16 MiB (SQLite's default is 2 MiB): a batch of 10 KB messages
        // writes ~50 KB of pages per message (the body, its outbox packet and the carried
        // copy, each padded to 16 KiB), which the pump and the status updates read again
        // moments later; with 2 MiB two pages in three came back from the file through
        // pread (`yaok-bench bulk`: 90 → 31 preads per message). Pages are allocated as used.
        try db.execute("PRAGMA cache_size=-16384")
        db.afterCommit = { [ringCache] in ringCache.committedTransaction() }
        // A text kept for a row rolled back would never match a read, only take room.
        db.afterRollback = { [ringCache, sentTexts] in
            ringCache.removeAll()
            sentTexts.removeAll()
        }
        for suffix in Store.fileSuffixes { _ = chmod(path + suffix, 0o600) }
        try Schema.migrate(db)
        seen = try DuplicateFilter(database: db)
        // A process that ended between an erasure and its checkpoint (Store+Erasure) left
        // the old pages in the log: they go now, before anything else reads the store.
        db.checkpointSoon()
    }

    package func close() {
        ringCache.removeAll()
        erasePendingPages()
        db.close()
    }

    /// Removes the database files. Only call after `close()`.
    package static func deleteFiles(in directory: String) throws {
        for suffix in fileSuffixes {
            let path = directory + "/" + fileName + suffix
            if unlink(path) != 0 && errno != ENOENT {
                throw YaOKError(.storage, "Cannot delete \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// mkdir -p with mode 0700 for the directories it creates.
    /// Creates the database file 0600 before SQLite opens it (no moment in which it is
    /// readable by others; SQLite gives its -wal and -shm files the same mode), and refuses
    /// a symbolic link in its place. A file that exists is not opened here: closing any
    /// descriptor of a file drops every POSIX lock the process holds on it, so opening and
    /// closing a database that a connection of this process has open (a relay's `stats`
    /// read in the relay's own tests) took that connection's locks away.
    package static func createPrivateFile(_ path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 {
            Glibc.close(fd)
            return
        }
        let failure = errno
        var info = stat()
        guard failure == EEXIST, lstat(path, &info) == 0 else {
            throw YaOKError(failure == ENOSPC ? .diskFull : .storage, "Cannot open \(path): \(String(cString: strerror(failure)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw YaOKError(.storage, "Cannot open \(path): not a regular file")
        }
    }

    package static func makeDirectory(_ path: String) throws {
        guard !path.isEmpty else { throw YaOKError(.invalidArgument, "The data directory must not be empty") }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part + "/"
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw YaOKError(.storage, "Cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        // The data directory itself is the owner's alone, even one that existed before
        // (another local user could otherwise replace the database or plant links in it).
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw YaOKError(.storage, "\(path) is not a directory")
        }
        guard info.st_uid == geteuid() else {
            throw YaOKError(.storage, "\(path) belongs to another user: a data directory must be the owner's own")
        }
        if info.st_mode & 0o077 != 0, chmod(path, 0o700) != 0 {
            throw YaOKError(.storage, "Cannot make \(path) private (chmod 0700): \(String(cString: strerror(errno)))")
        }
    }
}
