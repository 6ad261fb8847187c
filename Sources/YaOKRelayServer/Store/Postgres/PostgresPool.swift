import Glibc
import YaOKSupport

/// A bounded pool of connections to one PostgreSQL server, shared by the relay's threads
/// (the disk thread, its read helpers, maintenance). At most `size` connections exist;
/// a caller beyond that waits up to `waitSeconds` for one to come back, then gets
/// `relayUnavailable` (the client's POST is refused, never left hanging).
///
/// A database that goes away: a connection that fails is dropped, the next attempt to
/// connect waits out a backoff (0.1 s doubling to 5 s) during which callers fail at once
/// with the last error, and `health` says so (stats, diagnostics).
final class PostgresPool: @unchecked Sendable {
    struct Health: Sendable, Equatable {
        var reachable = true
        /// The last connection or statement failure that looked like a lost server.
        var lastError = ""
        /// Times the server went away and came back.
        var outages: Int64 = 0
        var reconnects: Int64 = 0
        var serverVersion = 0
    }

    let conninfo: String
    let size: Int
    let waitSeconds: Double
    /// Told when the database goes away or comes back (the relay prints it).
    let log: @Sendable (String) -> Void

    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var health = Health()
        var retryAtNs: UInt64 = 0
        var backoffNs: UInt64 = 100_000_000
        var pids = Set<Int32>()
    }

    private let state = Locked(State())
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init(conninfo: String, size: Int, waitSeconds: Double = 5, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.conninfo = conninfo
        self.size = max(1, size)
        self.waitSeconds = waitSeconds
        self.log = log
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    var health: Health { state.withLock { $0.health } }

    /// Server pids of this pool's connections (NOTIFYs from them are this relay's own).
    var backendPIDs: Set<Int32> { state.withLock { $0.pids } }

    /// Runs `body` with a connection. A connection left broken is closed, not returned.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try acquire()
        do {
            let value = try body(connection)
            release(connection)
            return value
        } catch let error as PostgresError {
            release(connection)
            if error.isUnavailable { noteLost(error.description) }
            // A deadlock or serialization failure stays itself: the caller runs it again.
            if error.isRetryable { throw error }
            throw error.yaokError
        } catch let error as YaOKError {
            release(connection)
            if error.code == .relayUnavailable { noteLost(error.message) }
            throw error
        } catch {
            release(connection)
            throw error
        }
    }

    /// Closes every idle connection (those in use close when they come back).
    func close() {
        state.withLock { s in
            s.open -= s.idle.count
            for c in s.idle { s.pids.remove(c.backendPID) }
            s.idle.removeAll()
        }
    }

    private func acquire() throws -> PostgresConnection {
        let deadline = Self.now() + UInt64(waitSeconds * 1e9)
        while true {
            enum Step { case take(PostgresConnection), connect, wait, refuse(String) }
            let step: Step = state.withLock { s in
                if let c = s.idle.popLast() { return .take(c) }
                guard s.open < self.size else { return .wait }
                if !s.health.reachable && Self.now() < s.retryAtNs {
                    return .refuse(s.health.lastError)
                }
                s.open += 1
                return .connect
            }
            switch step {
            case .take(let c):
                return c
            case .refuse(let last):
                throw YaOKError(.relayUnavailable, "The database is unavailable (\(last)); retrying with backoff")
            case .connect:
                do {
                    let c = try PostgresConnection(conninfo: conninfo)
                    noteConnected(c)
                    return c
                } catch let error as YaOKError {
                    state.withLock { $0.open -= 1 }
                    signal()
                    noteLost(error.message)
                    throw error
                }
            case .wait:
                guard Self.now() < deadline else {
                    throw YaOKError(.relayUnavailable, "All \(size) database connections are busy")
                }
                pthread_mutex_lock(mutex)
                var ts = timespec()
                clock_gettime(CLOCK_REALTIME, &ts)
                ts.tv_nsec += 20_000_000
                if ts.tv_nsec >= 1_000_000_000 { ts.tv_sec += 1; ts.tv_nsec -= 1_000_000_000 }
                _ = pthread_cond_timedwait(condition, mutex, &ts)
                pthread_mutex_unlock(mutex)
            }
        }
    }

    private func release(_ connection: PostgresConnection) {
        state.withLock { s in
            if connection.broken {
                s.open -= 1
                s.pids.remove(connection.backendPID)
            } else {
                s.idle.append(connection)
            }
        }
        signal()
    }

    private func noteConnected(_ c: PostgresConnection) {
        let cameBack = state.withLock { s -> Bool in
            s.pids.insert(c.backendPID)
            s.health.serverVersion = c.serverVersion
            s.backoffNs = 100_000_000
            guard !s.health.reachable else { return false }
            s.health.reachable = true
            s.health.reconnects += 1
            return true
        }
        if cameBack { log("database reachable again") }
    }

    /// The server looks gone: drop idle connections (they are as dead), back off.
    private func noteLost(_ message: String) {
        let first = state.withLock { s -> Bool in
            let first = s.health.reachable
            if first { s.health.outages += 1 }
            s.health.reachable = false
            s.health.lastError = message
            s.open -= s.idle.count
            for c in s.idle { s.pids.remove(c.backendPID) }
            s.idle.removeAll()
            s.retryAtNs = Self.now() + s.backoffNs
            s.backoffNs = min(s.backoffNs * 2, 5_000_000_000)
            return first
        }
        if first { log("database unavailable: \(message); reconnecting with backoff") }
    }

    private func signal() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
