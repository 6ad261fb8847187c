import YaOKSupport

/// Erasure of deleted secrets from the files (docs/PROTOCOL.md §13.3, "Erasure"): with
/// `secure_delete` SQLite zeroes what a DELETE frees, but in the page it writes to the
/// write-ahead log; the log still holds the page as it was, and so does the database file
/// until the log is copied back. A TRUNCATE checkpoint copies every page into the file and
/// empties the log, leaving no older copy anywhere.
///
/// That checkpoint syncs the log and the file, and the next commit restarts the log and
/// syncs again: run after every erasure it was three of the receiver's five disk syncs per
/// message in a one-at-a-time exchange (each round trip mints a key and erases one, §13.3
/// rules 3 and 4). An owner with an event loop (the node) therefore sets
/// `erasureScheduler` and runs the checkpoint itself, once for all the erasures of a short
/// interval (`erasePendingPages`); the store runs it at once without one, and always when
/// its owner locks (`detach`) and when it closes or opens.
extension Store {
    /// Called after a secret's row was deleted (or inside the transaction deleting it).
    package func eraseFreedPages() {
        guard let erasureScheduler else {
            db.checkpointSoon()
            return
        }
        guard !erasurePending else { return }  // the scheduled checkpoint covers it too
        erasurePending = true
        erasureScheduler()
    }

    /// Runs the checkpoint an erasure waits for, if one does: at once, or after the
    /// outermost commit when called inside a transaction. One that a reader kept from
    /// completing is tried again after each later commit (Database) and, with a scheduler,
    /// when it next calls. Returns whether one still waits.
    @discardableResult
    package func erasePendingPages() -> Bool {
        guard erasurePending else { return false }
        db.checkpointSoon()
        erasurePending = db.checkpointAfterCommit && !db.inTransaction
        if erasurePending, let erasureScheduler { erasureScheduler() }
        return erasurePending
    }
}
