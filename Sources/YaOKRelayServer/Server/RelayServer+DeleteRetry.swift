import YaOKSupport
import YaOKLoop
import YaOKWire

/// DELETEs the store did not take (the database away, the disk full) are kept and tried
/// again until it takes them (docs/PROTOCOL.md §8.5, "DELETEs are always taken"): dropping
/// one would leave the packet stored, and it would come back in the recipient's next
/// session. Loop thread only.
extension RelayServer {
    /// A DELETE's outcome came back from the disk (a session's, or a retry's).
    func deleteCommitted(token: UInt64, refs: [StoredPacketRef], outcome: Result<RelayStoreOutcome, YaOKError>,
                         touched: inout Set<UInt64>) {
        switch outcome {
        case .success(.deleted(let n, let bytes)):
            counters.withLock { $0.deleted += Int64(n) }
            storedBytes = max(0, storedBytes - bytes)
        case .success:
            break
        case .failure:
            counters.withLock { $0.storageErrors += 1 }
            keepForRetry(refs)
        }
        if token == deleteRetryToken { deleteRetryToken = nil }
        if let pending = pendingDeletes.removeValue(forKey: token) {
            pendingDeleteRefs -= pending.refs
            if let c = connections[pending.connection] {
                c.pendingDeleteRefs -= pending.refs
                touched.insert(c.id)
            }
        }
    }

    /// Keeps refs to delete later, at most `maxRetainedDeleteRefs`: past it the oldest
    /// are forgotten (counted), and those packets are delivered again in a later session,
    /// where the client deletes them again.
    private func keepForRetry(_ refs: [StoredPacketRef]) {
        lastDeleteFailure = EventLoop.monotonicNanoseconds()
        retainedDeletes.append(contentsOf: refs)
        let over = retainedDeletes.count - configuration.maxRetainedDeleteRefs
        if over > 0 {
            retainedDeletes.removeFirst(over)
            forgottenDeleteRefs += over
        }
    }

    /// Called each tick: sends the kept refs to the disk again, one batch at a time,
    /// `deleteRetrySeconds` after the last failure.
    func retryDeletes() {
        guard deleteRetryToken == nil, !retainedDeletes.isEmpty, !stopped,
              EventLoop.monotonicNanoseconds() &- lastDeleteFailure >= Self.nanoseconds(configuration.deleteRetrySeconds)
        else { return }
        let batch = Array(retainedDeletes.prefix(RelayServer.deleteRetryBatch))
        retainedDeletes.removeFirst(batch.count)
        let token = takeToken()
        deleteRetryToken = token
        disk.submit(DiskThread.Write(token: token, write: .delete(batch)))
    }

    /// Refs per retried DELETE.
    static let deleteRetryBatch = 4096

    /// Refs waiting to be deleted again (for tests and stats).
    var retainedDeleteRefs: Int { retainedDeletes.count }
}
