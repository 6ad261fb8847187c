import Glibc
import YaOKSupport

/// Group commit for `Node.send` (docs/ARCHITECTURE.md, "Sending"): each send is planned
/// under the node's lock and given a ticket, sealed outside it (on the caller's thread, so
/// both cores seal), then handed here. One caller at a time, the *committer*, takes every
/// sealed send that is next in ticket order and commits them all in one transaction (one
/// disk sync), then wakes their callers with their own result; the others wait. A send
/// still returns only once its rows are durable (or with the error that kept them out), so
/// a killed process loses nothing that was reported sent.
///
/// Tickets commit in the order they were taken, which is the order of the sender times
/// and of the outbox: a ticket still sealing holds back those after it. Every ticket taken
/// must be handed in exactly once (`commit`), sealed or failed, or the ones after it wait
/// for ever.
///
/// Two stages: a group is written (one at a time, under the node's lock) and then made
/// durable (its `sync`, with no lock held), and the next group writes while the one before
/// it syncs, so a sync's time is not lost to the senders behind it. One sync makes every
/// group written before it began durable: the groups written during a sync share the next
/// one (a group already covered does not sync again). Groups are announced (their events
/// out, their callers answered) in the order they were written, each once durable.
///
/// A committer first waits for the tickets taken (`taken`) before it began and still
/// sealing: they are on their way (sealing is a fraction of a sync), and committing without
/// them makes more, smaller groups, each with its own write and sync (measured with 4
/// threads on a tmpfs: 1.8 sends a group instead of 2.9, 432 µs of CPU a message instead of
/// 327, slower; on disk the same within the noise). Tickets taken while it waits are not
/// waited for (a steady stream of senders cannot hold a commit back); they go in the next
/// group.
///
/// A pthread mutex and condition (not `Locked`, which has no condition) so that
/// ThreadSanitizer sees the hand-over.
final class SendCommitQueue<Item: Sendable, Output: Sendable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Sends handed in and not committed yet, by ticket (nil: it failed before the commit).
    private var handedIn: [UInt64: Item?] = [:]
    /// The results of committed tickets whose callers have not picked them up yet.
    private var results: [UInt64: Result<Output, any Error>] = [:]
    /// The lowest ticket not committed yet.
    private var next: UInt64 = 0
    /// One past the highest ticket taken so far (`taken`).
    private var issued: UInt64 = 0
    private var committing = false
    /// Groups written so far; groups a completed sync made durable (the first this many);
    /// groups announced so far.
    private var groupsWritten = 0, groupsSynced = 0, groupsAnnounced = 0
    /// Groups whose sync has returned, made durable or failed, or that wrote nothing (the
    /// first this many; `sendsAreSyncing`: after a failed sync no sync is coming for them,
    /// and the queue outlives the store it wrote).
    private var groupsSyncEnded = 0
    /// The log each group written and not announced yet wrote to (`Written.log`), by turn.
    private var groupLogs: [Int: ObjectIdentifier] = [:]

    /// What `commitGroup` returns once the group is written: one result per send, what
    /// makes it and every group written before it to the same log durable (the disk sync),
    /// the log it wrote (a sync covers only groups written to its own log: `Node.reset`
    /// swaps the store between two groups, and a group written to the new store must not
    /// count as covered by the old log's sync), and what tells the app once it is durable
    /// (events), run in the order groups were written.
    struct Written {
        let results: [Result<Output, any Error>]
        let sync: () throws -> Void
        let log: ObjectIdentifier
        let announce: () -> Void
    }
    /// Groups committed, the sends in them and the syncs they took, for the benchmark; and
    /// the time spent writing groups (the node's lock included), syncing, and announcing.
    private var groups = 0, sends = 0, syncs = 0
    private var writeNanos: UInt64 = 0, syncNanos: UInt64 = 0, announceNanos: UInt64 = 0

    init() {
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

    /// How many sends are handed in and wait for their commit (for tests that line up a
    /// group).
    var waiting: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return handedIn.values.count { $0 != nil }
    }

    /// How many groups were committed, holding how many sends, with how many disk syncs,
    /// and the seconds spent in each stage (yaok-bench prints them).
    var statistics: SendCommitStatistics {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return SendCommitStatistics(groups: groups, sends: sends, syncs: syncs, writeSeconds: Double(writeNanos) / 1e9,
                                    syncSeconds: Double(syncNanos) / 1e9, announceSeconds: Double(announceNanos) / 1e9)
    }

    /// Whether sends are on their way to the disk: a ticket taken and not committed, a
    /// group writing, or one written and not durable yet (its sync running or to come). A
    /// drain that commits meanwhile lets their sync cover it (`LogSync.sync(expectingAnother:)`):
    /// while an app sends back to back, each send's sync follows the one before closely.
    /// A ticket whose sealing failed is not on its way: it waits only for the next
    /// committer to pass over it, and no sync comes for it (each drain until the next send
    /// waited out its patience).
    var sendsAreSyncing: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let sealingOrSealed = next < issued && (next..<issued).contains { ticket in
            if case .some(.none) = handedIn[ticket] { false } else { true }
        }
        return sealingOrSealed || committing || groupsWritten > max(groupsSynced, groupsSyncEnded)
    }

    /// Records that `ticket` was taken: a committer that starts from now on waits for it.
    /// Called when the ticket is taken (under the node's lock, so in ticket order).
    func taken(_ ticket: UInt64) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        issued = max(issued, ticket + 1)
    }

    /// Hands in ticket `ticket`'s send and returns its result once committed. A failed
    /// `sealed` only releases the ticket (the ones after it go on) and is returned as is.
    /// `commitGroup` is run by whichever caller commits, with the sealed sends in ticket
    /// order, and returns one result per send, in that order (a thrown error is every one's),
    /// with its `finish` (the sync; its error is every successful send's), which runs once
    /// the groups written before it have finished, while the next group may write.
    func commit(ticket: UInt64, _ sealed: Result<Item, any Error>,
                commitGroup: ([Item]) throws -> Written) -> Result<Output, any Error> {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        let item: Item
        switch sealed {
        case .success(let sealedItem): item = sealedItem
        case .failure(let error):
            // Nothing to commit: the ticket is passed over by the next committer.
            handedIn[ticket] = .some(nil)
            pthread_cond_broadcast(condition)
            return .failure(error)
        }
        handedIn[ticket] = .some(item)
        pthread_cond_broadcast(condition)
        while true {
            if let result = results.removeValue(forKey: ticket) { return result }
            if !committing, handedIn[next] != nil {
                runOneGroup(commitGroup)
                continue
            }
            pthread_cond_wait(condition, mutex)
        }
    }

    /// Takes the handed-in run of tickets from `next`, commits it with the mutex released,
    /// records the results and wakes every waiter. Called with the mutex held.
    private func runOneGroup(_ commitGroup: ([Item]) throws -> Written) {
        committing = true
        let sealing = issued
        while (next..<sealing).contains(where: { handedIn[$0] == nil }) { pthread_cond_wait(condition, mutex) }
        var tickets: [UInt64] = []
        var items: [Item] = []
        while let entry = handedIn.removeValue(forKey: next) {
            if let item = entry {
                tickets.append(next)
                items.append(item)
            }
            next += 1
        }
        pthread_mutex_unlock(mutex)
        let writeStart = Self.nanoseconds()
        var outcome: [Result<Output, any Error>] = []
        var written: Written?
        if !items.isEmpty {
            do {
                let done = try commitGroup(items)
                written = done
                outcome = done.results.count == items.count ? done.results
                    : Array(repeating: .failure(YaOKError(.internal, "A group commit returned \(done.results.count) results for \(items.count) sends")), count: items.count)
            } catch {
                outcome = Array(repeating: .failure(error), count: items.count)
            }
        }
        pthread_mutex_lock(mutex)
        if !items.isEmpty {
            groups += 1
            sends += items.count
            writeNanos += Self.nanoseconds() - writeStart
        }
        // Written: the next group may write while this one waits for its turn and syncs.
        let turn = groupsWritten
        groupsWritten += 1
        if let written { groupLogs[turn] = written.log }
        committing = false
        pthread_cond_broadcast(condition)
        while groupsAnnounced != turn { pthread_cond_wait(condition, mutex) }
        groupLogs[turn] = nil
        if let written {
            if groupsSynced <= turn {
                // Not covered by a sync yet: this one covers every group written so far to
                // the same log (groups that wrote nothing need no sync).
                var covers = turn + 1
                while covers < groupsWritten, (groupLogs[covers] ?? written.log) == written.log { covers += 1 }
                syncs += 1
                pthread_mutex_unlock(mutex)
                let syncStart = Self.nanoseconds()
                let synced = Result { try written.sync() }
                let syncEnd = Self.nanoseconds()
                pthread_mutex_lock(mutex)
                syncNanos += syncEnd - syncStart
                groupsSyncEnded = max(groupsSyncEnded, covers)
                switch synced {
                case .success: groupsSynced = max(groupsSynced, covers)
                case .failure(let error): outcome = outcome.map { $0.flatMap { _ in .failure(error) } }
                }
            }
            pthread_mutex_unlock(mutex)
            let announceStart = Self.nanoseconds()
            written.announce()
            let announceEnd = Self.nanoseconds()
            pthread_mutex_lock(mutex)
            announceNanos += announceEnd - announceStart
        } else {
            // Nothing written (the write failed): no sync is coming for it, nor for any group
            // before it (all announced). Ended too: after a failed sync `groupsSynced` stays
            // behind, and this group counted as syncing until a later sync succeeded.
            if groupsSynced == turn { groupsSynced = turn + 1 }
            groupsSyncEnded = max(groupsSyncEnded, turn + 1)
        }
        for (ticket, result) in zip(tickets, outcome) { results[ticket] = result }
        groupsAnnounced += 1
        pthread_cond_broadcast(condition)
    }

    private static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

/// What the group commit of `Node.send` did so far (yaok-bench prints it): groups, the
/// sends in them, the disk syncs they took, and the seconds spent writing groups (the
/// node's lock included), syncing and announcing them.
package struct SendCommitStatistics: Sendable {
    package let groups: Int, sends: Int, syncs: Int
    package let writeSeconds: Double, syncSeconds: Double, announceSeconds: Double
}
