import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKNode

/// The group commit's queue on its own: a committer waits for the tickets still sealing
/// when it starts (so concurrent senders share a sync), and only for those.
@Suite struct SendCommitQueueTests {
    typealias Queue = SendCommitQueue<Int, Int>
    /// The one log every group writes to, but in the test of two.
    static let log = ObjectIdentifier(Queue.self)

    /// Commits `item` under `ticket` on a thread of its own; records each group it commits.
    private func handIn(_ queue: Queue, _ ticket: UInt64, _ item: Int, groups: Locked<[[Int]]>,
                        results: Locked<[Int: Int]>) -> Thread {
        let thread = Thread {
            let result = queue.commit(ticket: ticket, .success(item)) { items in
                groups.withLock { $0.append(items) }
                return .init(results: items.map { .success($0 * 10) }, sync: {}, log: Self.log, announce: {})
            }
            if case .success(let value) = result { results.withLock { $0[item] = value } }
        }
        thread.start()
        return thread
    }

    @Test func aCommitterWaitsForTheTicketsStillSealing() {
        let queue = Queue()
        let groups = Locked<[[Int]]>([]), results = Locked<[Int: Int]>([:])
        queue.taken(0)
        queue.taken(1)
        let first = handIn(queue, 0, 1, groups: groups, results: results)
        // Ticket 1 is still sealing: ticket 0's committer waits for it, its send handed in.
        #expect(eventually { queue.waiting == 1 })
        #expect(groups.withLock { $0 }.isEmpty)
        let second = handIn(queue, 1, 2, groups: groups, results: results)
        #expect(eventually { first.isFinished && second.isFinished })
        #expect(groups.withLock { $0 } == [[1, 2]])
        #expect(results.withLock { $0 } == [1: 10, 2: 20])
    }

    @Test func ticketsTakenWhileItWaitsGoInTheNextGroup() {
        let queue = Queue()
        let groups = Locked<[[Int]]>([]), results = Locked<[Int: Int]>([:])
        queue.taken(0)
        queue.taken(1)
        let first = handIn(queue, 0, 1, groups: groups, results: results)
        #expect(eventually { queue.waiting == 1 })
        queue.taken(2)  // after the committer began: not waited for
        let second = handIn(queue, 1, 2, groups: groups, results: results)
        #expect(eventually { first.isFinished && second.isFinished })
        #expect(groups.withLock { $0 } == [[1, 2]])
        let third = handIn(queue, 2, 3, groups: groups, results: results)
        #expect(eventually { third.isFinished })
        #expect(groups.withLock { $0 } == [[1, 2], [3]])
    }

    @Test func aTicketThatFailedToSealIsNotWaitedForAgain() {
        let queue = Queue()
        let groups = Locked<[[Int]]>([]), results = Locked<[Int: Int]>([:])
        queue.taken(0)
        queue.taken(1)
        let first = handIn(queue, 0, 1, groups: groups, results: results)
        #expect(eventually { queue.waiting == 1 })
        struct SealFailed: Error {}
        let failed = queue.commit(ticket: 1, .failure(SealFailed())) { _ in .init(results: [], sync: {}, log: Self.log, announce: {}) }
        #expect((try? failed.get()) == nil)
        #expect(eventually { first.isFinished })
        #expect(groups.withLock { $0 } == [[1]])
    }
    /// Two stages: the next groups are written while the one before them syncs, one sync
    /// then covers them all, and groups are announced in the order they were written.
    @Test func groupsWrittenDuringASyncShareTheNextOne() {
        let queue = Queue()
        let written = Locked<[[Int]]>([]), syncs = Locked<[Int]>([]), announced = Locked<[Int]>([])
        let syncing = Locked(false)
        let release = DispatchSemaphore(value: 0)
        func group(_ ticket: UInt64, _ item: Int, slowSync: Bool = false) -> Thread {
            let thread = Thread {
                _ = queue.commit(ticket: ticket, .success(item)) { items in
                    written.withLock { $0.append(items) }
                    return .init(results: items.map { .success($0) }, sync: {
                        syncs.withLock { $0.append(item) }
                        if slowSync {
                            syncing.withLock { $0 = true }
                            release.wait()  // a slow disk
                        }
                    }, log: Self.log, announce: { announced.withLock { $0.append(item) } })
                }
            }
            thread.start()
            return thread
        }
        queue.taken(0)
        let first = group(0, 1, slowSync: true)
        #expect(eventually { syncing.withLock { $0 } })
        queue.taken(1)
        let second = group(1, 2)
        #expect(eventually { written.withLock { $0 }.count == 2 })  // written during the first's sync
        queue.taken(2)
        let third = group(2, 3)
        #expect(eventually { written.withLock { $0 } == [[1], [2], [3]] })
        #expect(announced.withLock { $0 }.isEmpty && !second.isFinished && !third.isFinished)
        release.signal()
        #expect(eventually { first.isFinished && second.isFinished && third.isFinished })
        #expect(announced.withLock { $0 } == [1, 2, 3])
        #expect(syncs.withLock { $0 } == [1, 2])  // the second's sync covered the third
        #expect(queue.statistics.syncs == 2)
    }

    /// A sync covers only the groups written to its own log: after `Node.reset` swapped the
    /// store, a group written to the new one while a group of the old one waited for its
    /// turn was counted as covered by the old log's sync, and its sends returned before their
    /// rows were durable.
    @Test func aSyncCoversOnlyGroupsWrittenToItsLog() {
        final class Log: Sendable {}
        let oldLog = Log(), newLog = Log()
        let queue = Queue()
        let written = Locked(0), syncs = Locked<[Int]>([])
        let syncing = Locked(false)
        let release = DispatchSemaphore(value: 0)
        func group(_ ticket: UInt64, _ item: Int, _ log: Log, slowSync: Bool = false) -> Thread {
            let thread = Thread {
                _ = queue.commit(ticket: ticket, .success(item)) { items in
                    written.withLock { $0 += 1 }
                    return .init(results: items.map { .success($0) }, sync: {
                        syncs.withLock { $0.append(item) }
                        if slowSync {
                            syncing.withLock { $0 = true }
                            release.wait()
                        }
                    }, log: ObjectIdentifier(log), announce: {})
                }
            }
            thread.start()
            return thread
        }
        queue.taken(0)
        let first = group(0, 1, oldLog, slowSync: true)
        #expect(eventually { syncing.withLock { $0 } })
        queue.taken(1)
        let second = group(1, 2, oldLog)
        #expect(eventually { written.withLock { $0 } == 2 })
        queue.taken(2)
        let third = group(2, 3, newLog)  // the store was swapped meanwhile
        #expect(eventually { written.withLock { $0 } == 3 })
        release.signal()
        #expect(eventually { first.isFinished && second.isFinished && third.isFinished })
        #expect(syncs.withLock { $0 } == [1, 2, 3])  // the old log's sync did not cover the third
    }

    /// A failed sync is its group's callers' error, and after it no sync is coming for the
    /// group: drains do not wait for one (the queue outlives the store; after a failed sync
    /// and a reset every drain waited out its patience).
    @Test func aFailedSyncIsEveryCallersError() {
        let queue = Queue()
        struct SyncFailed: Error {}
        queue.taken(0)
        let result = queue.commit(ticket: 0, .success(1)) { items in
            .init(results: items.map { .success($0) }, sync: { throw SyncFailed() }, log: Self.log, announce: {})
        }
        #expect((try? result.get()) == nil)
        #expect(!queue.sendsAreSyncing)
    }

    /// A group whose write failed after a group whose sync failed: no sync is coming for
    /// either. The failed write moved only `groupsSynced`, and only when it had reached the
    /// group (the failed sync had left it behind), so the group counted as syncing until
    /// the next send's sync succeeded, and every drain until then waited out its patience.
    @Test func aFailedWriteAfterAFailedSyncIsNotSyncing() {
        let queue = Queue()
        struct SyncFailed: Error {}
        struct WriteFailed: Error {}
        queue.taken(0)
        let first = queue.commit(ticket: 0, .success(1)) { items in
            .init(results: items.map { .success($0) }, sync: { throw SyncFailed() }, log: Self.log, announce: {})
        }
        #expect((try? first.get()) == nil)
        queue.taken(1)
        let second = queue.commit(ticket: 1, .success(2)) { _ in throw WriteFailed() }
        #expect((try? second.get()) == nil)
        #expect(!queue.sendsAreSyncing)
    }

    /// `sendsAreSyncing` (a drain that commits meanwhile waits for their sync,
    /// `LogSync.sync(expectingAnother:)`): from the ticket taken until the group's sync
    /// has returned, and not after a group whose write failed (no sync comes for it).
    @Test func sendsAreSyncingFromTheTicketUntilTheSyncReturns() {
        let queue = Queue()
        #expect(!queue.sendsAreSyncing)
        queue.taken(0)
        #expect(queue.sendsAreSyncing)  // sealing
        let inSync = Locked(false)
        let release = DispatchSemaphore(value: 0)
        let sender = Thread {
            _ = queue.commit(ticket: 0, .success(1)) { items in
                .init(results: items.map { .success($0) }, sync: {
                    inSync.withLock { $0 = true }
                    release.wait()
                }, log: Self.log, announce: {})
            }
        }
        sender.start()
        #expect(eventually { inSync.withLock { $0 } })
        #expect(queue.sendsAreSyncing)  // written, its sync running
        release.signal()
        #expect(eventually { sender.isFinished })
        #expect(!queue.sendsAreSyncing)

        struct WriteFailed: Error {}
        queue.taken(1)
        let failed = queue.commit(ticket: 1, .success(2)) { _ in throw WriteFailed() }
        #expect((try? failed.get()) == nil)
        #expect(!queue.sendsAreSyncing)  // nothing written: no sync to wait for
    }

    /// A ticket whose sealing failed is handed in and nothing of it goes to the disk: no sync
    /// is coming for it, so a drain meanwhile must not wait for one. It counted as "taken,
    /// not committed" until the next send's committer passed over it, and every drain until
    /// then waited out its 0.5 ms patience for a sync that never came.
    @Test func aTicketWhoseSealingFailedIsNotSyncing() {
        struct SealFailed: Error {}
        let queue = Queue()
        queue.taken(0)
        #expect(queue.sendsAreSyncing)  // sealing
        let result = queue.commit(ticket: 0, .failure(SealFailed())) { _ in
            Issue.record("nothing to commit")
            return .init(results: [], sync: {}, log: Self.log, announce: {})
        }
        #expect((try? result.get()) == nil)
        #expect(!queue.sendsAreSyncing)
        // The next send passes over it and commits as ever.
        queue.taken(1)
        #expect(queue.sendsAreSyncing)
        let next = queue.commit(ticket: 1, .success(3)) { items in
            .init(results: items.map { .success($0 * 10) }, sync: {}, log: Self.log, announce: {})
        }
        #expect((try? next.get()) == 30)
        #expect(!queue.sendsAreSyncing)
    }
}
