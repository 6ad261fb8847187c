import Glibc

/// A value guarded by a pthread mutex. Used instead of the standard library's
/// `Synchronization.Mutex` because ThreadSanitizer cannot see that Mutex's futex-based
/// locking on Linux and reports every guarded access as a race; pthread mutexes are
/// intercepted by TSan, so the thread-sanitizer stage of `scripts/test` checks real races.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Not reentrant: calling withLock on
    /// the same instance from inside `body` deadlocks. Do not store a bare closure as
    /// `Value`: each inout access re-abstracts it and wraps it in one more thunk (box it in a
    /// final class instead).
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
