import Glibc
import YaOKSupport
import YaOKWire

/// The relay's one thread for disk work, with group commit: each round it takes every
/// POST and DELETE queued while the previous commit ran and commits them in one
/// transaction (one fsync for all), then serves the backlog reads queued meanwhile (they
/// see that commit), then hands all results to `deliver` in that order. About every
/// second it also saves the counters, reads the revocation list and, less often, deletes
/// expired packets. The network thread never waits for the disk.
final class DiskThread: @unchecked Sendable {
    /// A write with who asked for it (`token` comes back with the outcome).
    struct Write: Sendable {
        let token: UInt64
        let write: RelayStoreWrite
    }

    struct Read: Sendable {
        let token: UInt64
        let requests: [RelayPageRequest]
    }

    /// What one round produced.
    struct Round: Sendable {
        /// One per write, in order; all `.failure` when the transaction failed.
        var writes: [(token: UInt64, write: RelayStoreWrite, outcome: Result<RelayStoreOutcome, YaOKError>)] = []
        var reads: [(token: UInt64, pages: Result<[RelayPage], YaOKError>)] = []
        /// Set when the list was read this round.
        var revoked: Set<[UInt8]>?
        /// Bytes of the expired packets swept this round.
        var expiredBytes = 0
        /// A shared store's total, read again at each sweep: other relays' posts and
        /// deletes change it too, which this relay's own arithmetic never sees.
        var storedBytes: Int?
    }

    private struct Queue {
        var writes: [Write] = []
        var reads: [Read] = []
        var stopping = false
        /// Read the revocation list at the next round (another relay revoked someone).
        var revocations = false
    }

    private let store: RelayStore
    private let quota: MailboxQuota
    private let configuration: RelayConfiguration
    private let counters: @Sendable () -> RelayCounters
    private let deliver: @Sendable (Round) -> Void
    private let queue = Locked(Queue())
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var thread: pthread_t?
    /// Rounds committed (for tests: proof that many writes shared one commit).
    let commits = Locked(0)

    /// `counters` is read on this thread when saving; `deliver` is called on this thread.
    init(store: RelayStore, configuration: RelayConfiguration,
         counters: @escaping @Sendable () -> RelayCounters, deliver: @escaping @Sendable (Round) -> Void) {
        self.store = store
        self.configuration = configuration
        let stored = configuration.storedQuotas
        quota = MailboxQuota(packets: configuration.mailboxQuotaPackets, bytes: configuration.mailboxQuotaBytes,
                             addressBytes: stored.address, prefixBytes: stored.prefix)
        self.counters = counters
        self.deliver = deliver
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func start() throws {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<DiskThread>.fromOpaque(raw).takeRetainedValue().run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<DiskThread>.fromOpaque(context).release()
            throw YaOKError(.internal, "Cannot start the relay's disk thread (pthread_create: \(rc))")
        }
        self.thread = thread
    }

    func submit(_ write: Write) {
        queue.withLock { $0.writes.append(write) }
        signal()
    }

    func submit(_ read: Read) {
        queue.withLock { $0.reads.append(read) }
        signal()
    }

    /// Reads the revocation list at once rather than at the next maintenance.
    func refreshRevocations() {
        queue.withLock { $0.revocations = true }
        signal()
    }

    /// Finishes what is queued (one last commit), saves the counters, and ends the thread.
    func stop() {
        queue.withLock { $0.stopping = true }
        signal()
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    private func signal() {
        pthread_mutex_lock(mutex)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    // MARK: - The thread

    private func run() {
        var nextMaintenance = Self.now()
        var nextSweep = Self.now()
        var lastCountersSaved = RelayCounters()
        lastCountersSaved.connected = -1
        var countersSavedAt: UInt64 = 0
        var lastRevoked: Set<[UInt8]>?
        while true {
            let (writes, reads, stopping) = waitForWork(until: nextMaintenance)
            var round = Round()
            commit(writes, into: &round)
            // Every read of the round at once (PostgreSQL: one round trip for all of them).
            if !reads.isEmpty {
                let pages = Result {
                    try store.packets(reads: reads.map(\.requests), maxPackets: configuration.backlogPagePackets,
                                      maxBytes: configuration.backlogPageBytes, nowMs: Clock.milliseconds())
                }.mapError(Self.yaokError)
                for (i, read) in reads.enumerated() {
                    round.reads.append((read.token, pages.map { $0[i] }))
                }
            }
            let now = Self.now()
            if queue.withLock({ q -> Bool in defer { q.revocations = false }; return q.revocations }) {
                nextMaintenance = min(nextMaintenance, now)
            }
            if now >= nextMaintenance || stopping {
                nextMaintenance = now + UInt64(configuration.maintenanceSeconds * 1e9)
                let snapshot = counters()
                // Saved unchanged too, at least every 2 s (every tick on a shared store), as
                // the relay's sign of life: `stats` takes counters older than 5 s for a
                // stopped relay's (before, an idle relay with 50 sessions showed "connected
                // clients: 0 (the relay is not running)").
                if snapshot != lastCountersSaved || store.isShared || now &- countersSavedAt >= 2_000_000_000,
                   (try? store.saveCounters(snapshot, nowMs: Clock.milliseconds())) != nil {
                    lastCountersSaved = snapshot
                    countersSavedAt = now
                }
                round.revoked = try? store.revokedPseudonyms()
                // A new revocation deleted what that pseudonym stored (by another process,
                // `yaok-relay revoke`): the stored bytes are read again.
                if let list = round.revoked, list != lastRevoked {
                    if lastRevoked != nil { round.storedBytes = try? store.storedBytes() }
                    lastRevoked = list
                }
                if now >= nextSweep {
                    nextSweep = now + UInt64(configuration.sweepSeconds * 1e9)
                    round.expiredBytes = (try? store.deleteExpired(nowMs: Clock.milliseconds()))?.bytes ?? 0
                    // Read again each sweep on any store: a purge by `revoke` of a pseudonym
                    // already on the list (or another relay's writes) is counted within 10 s.
                    round.storedBytes = try? store.storedBytes()
                }
            }
            if !round.writes.isEmpty || !round.reads.isEmpty || round.revoked != nil || round.expiredBytes > 0
                || round.storedBytes != nil { deliver(round) }
            // After the hand-back: the ACCEPTEDs and DELIVERs go out while the checkpoint
            // copies the WAL, and the POSTs they free queue for the next round. A failure
            // (a full disk) leaves the WAL to grow until one succeeds; commits report their own.
            try? store.checkpointIfDue()
            if stopping && queue.withLock({ $0.writes.isEmpty && $0.reads.isEmpty }) { return }
        }
    }

    /// One transaction for every write of the round.
    private func commit(_ writes: [Write], into round: inout Round) {
        guard !writes.isEmpty else { return }
        do {
            let outcomes = try store.commit(writes.map(\.write), nowMs: Clock.milliseconds(), quota: quota)
            commits.withLock { $0 += 1 }
            for (write, outcome) in zip(writes, outcomes) {
                round.writes.append((write.token, write.write, .success(outcome)))
            }
        } catch {
            let failure = Self.yaokError(error)
            for write in writes { round.writes.append((write.token, write.write, .failure(failure))) }
        }
    }

    /// Blocks until there is work, the deadline passes, or a stop is asked for.
    private func waitForWork(until deadline: UInt64) -> ([Write], [Read], Bool) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            let taken = queue.withLock { q -> ([Write], [Read], Bool)? in
                guard !q.writes.isEmpty || !q.reads.isEmpty || q.stopping || q.revocations else { return nil }
                defer {
                    q.writes.removeAll(keepingCapacity: true)
                    q.reads.removeAll(keepingCapacity: true)
                }
                return (q.writes, q.reads, q.stopping)
            }
            if let taken { return taken }
            let now = Self.now()
            if now >= deadline { return ([], [], false) }
            var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            _ = pthread_cond_timedwait(condition, mutex, &ts)
        }
    }

    private static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    private static func yaokError(_ error: Error) -> YaOKError {
        error as? YaOKError ?? YaOKError(.storage, "\(error)")
    }
}
