import Glibc
import YaOKSupport
import YaOKStore

/// An exclusive lock on a data directory (flock on `DIR/yaok.lock`), so that one node at a
/// time opens it: two nodes on one store would share data but not events, outbox timers or
/// links. flock locks belong to the open file, so a second open in the same process is
/// refused as well as one in another process; the kernel drops the lock if the process dies.
final class DirectoryLock: Sendable {
    private let fd: Locked<Int32>

    init(directory: String) throws {
        try Store.makeDirectory(directory)
        let path = directory + "/yaok.lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw YaOKError(errno == ENOSPC ? .diskFull : .storage, "Cannot open \(path): \(String(cString: strerror(errno)))")
        }
        // A process being spawned anywhere in this process holds a copy of every descriptor
        // between its fork and its exec (O_CLOEXEC acts only at exec), so a lock released
        // a moment ago can still look held: retry briefly before calling the directory busy.
        var attempts = 0
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            attempts += 1
            guard code == EWOULDBLOCK || code == EINTR, attempts < 50 else {
                Glibc.close(descriptor)
                throw code == EWOULDBLOCK ? YaOKError(.busy)
                    : YaOKError(.storage, "Cannot lock \(path): \(String(cString: strerror(code)))")
            }
            usleep(5_000)
        }
        fd = Locked(descriptor)
    }

    /// Unlocks (closing the descriptor releases the flock). Idempotent.
    func release() {
        fd.withLock { d in
            if d >= 0 { Glibc.close(d) }
            d = -1
        }
    }

    deinit { release() }
}
