import YaOKLoop
import YaOKWire

/// The DELETE rate (issue 17 §2): refs per second, as a token bucket per connection and
/// one per client address (its sessions share it). Only refs the session was delivered
/// reach the disk (`DeliveredRefs`); the others are ignored but still spend budget.
///
/// Refs that arrive while either budget is spent are parked on their connection, not
/// dropped, and reading goes on (issue 20: pausing the whole connection held its POSTs
/// behind its DELETEs, so with many clients behind one address the POSTs crawled while
/// the DELETE backlog was paid off). A connection is paused only once it has
/// `maxParkedDeleteRefs` parked (so memory stays bounded). The address's connections
/// with parked refs wait in a queue; a timer set for when the address's budget is
/// positive again serves them in turn, `deleteRefsPerTurn` each, for as long as the
/// budget lasts (the last turn may take it below zero: the debt is paid back before
/// the next). So an address deletes at its budget, no faster, its connections share it
/// evenly, and none is woken to find the budget gone. Loop thread only.
extension RelayServer {
    /// Parked refs past which a connection is not read (one full DELETE frame).
    static let maxParkedDeleteRefs = 256
    /// Refs one connection is given per turn of its address's queue.
    static let deleteRefsPerTurn = 256
    /// The soonest a queue is looked at again (so a budget refilling by a fraction of a
    /// ref does not wake the loop for each), and the latest.
    static let deleteQueueMinWait = 0.005
    static let deleteQueueMaxWait = 1.0

    /// What `c` may still delete now (may be negative: it went over and waits): the lesser
    /// of its own budget and its address's.
    func deleteBudget(_ c: RelayConnection, now: UInt64) -> Double {
        min(ownDeleteBudget(c, now: now), addressDeleteBudget(c.address, now: now))
    }

    private func ownDeleteBudget(_ c: RelayConnection, now: UInt64) -> Double {
        guard let budget = c.deleteBudget else { return configuration.deleteRefsBurst }
        let refilled = budget + Double(now &- c.deleteBudgetAt) / 1e9 * configuration.deleteRefsPerSecond
        if refilled >= configuration.deleteRefsBurst {
            c.deleteBudget = nil  // full again: nothing to track
            return configuration.deleteRefsBurst
        }
        return refilled
    }

    private func addressDeleteBudget(_ address: UInt32, now: UInt64) -> Double {
        let burst = configuration.deleteRefsBurstPerAddress
        guard let (budget, at) = addressDeleteBudgets[address] else { return burst }
        let refilled = budget + Double(now &- at) / 1e9 * configuration.deleteRefsPerSecondPerAddress
        if refilled >= burst {
            addressDeleteBudgets[address] = nil  // full again: the table holds only addresses in debt
            return burst
        }
        return refilled
    }

    /// Forgets addresses whose budget is full again (their connections may be gone).
    func pruneDeleteBudgets(now: UInt64) {
        for address in Array(addressDeleteBudgets.keys) { _ = addressDeleteBudget(address, now: now) }
    }

    /// A DELETE's refs from `c`'s session: to the disk now if both budgets have credit and
    /// none of its address's connections is waiting (they go first), else parked.
    func takeDeletes(_ c: RelayConnection, _ refs: [StoredPacketRef]) {
        let now = deleteBudgetClock()
        if c.parkedDeleteRefs.isEmpty, deleteBudgetQueues[c.address] == nil, deleteBudget(c, now: now) >= 0 {
            submitDeletes(c, spendDeleteBudget(c, refs, now: now))
            return
        }
        c.parkedDeleteRefs += refs
        parkedDeleteRefs += refs.count
        peakParkedDeleteRefs = max(peakParkedDeleteRefs, parkedDeleteRefs)
        if !c.queuedForDeleteBudget {
            c.queuedForDeleteBudget = true
            deleteBudgetQueues[c.address, default: ConnectionQueue()].append(c.id)
        }
        scheduleDeleteQueue(c.address, now: now, ownWait: ownDeleteWait(c, now: now))
    }

    /// Forgets the refs a closing connection had parked (its client is delivered those
    /// packets again in a later session and deletes them then).
    func dropParkedDeletes(_ c: RelayConnection) {
        parkedDeleteRefs -= c.parkedDeleteRefs.count
        c.parkedDeleteRefs = []
    }

    /// Seconds until `c`'s own budget is positive again (0 if it is).
    private func ownDeleteWait(_ c: RelayConnection, now: UInt64) -> Double {
        let budget = ownDeleteBudget(c, now: now), rate = configuration.deleteRefsPerSecond
        return budget >= 0 ? 0 : (rate > 0 ? -budget / rate : Self.deleteQueueMaxWait)
    }

    /// Sets the address's timer (if not set) for when its budget is positive again and
    /// the first of its waiting connections (`ownWait`: the soonest of them) has credit of
    /// its own: so connections held by their own budget do not wake the loop for nothing.
    private func scheduleDeleteQueue(_ address: UInt32, now: UInt64, ownWait: Double) {
        guard !deleteBudgetTimers.contains(address) else { return }
        deleteBudgetTimers.insert(address)
        let budget = addressDeleteBudget(address, now: now)
        let rate = configuration.deleteRefsPerSecondPerAddress
        let untilPositive = budget >= 0 ? 0 : (rate > 0 ? -budget / rate : Self.deleteQueueMaxWait)
        let wait = min(Self.deleteQueueMaxWait, max(Self.deleteQueueMinWait, untilPositive, ownWait))
        loop.schedule(after: wait) { [weak self] in self?.serveDeleteQueue(address) }
    }

    /// The timer: serves the address's waiting connections in turn while its budget has
    /// credit (each at most once a call, and only if its own budget has credit too), then
    /// sets the timer again if any still wait.
    func serveDeleteQueue(_ address: UInt32) {
        deleteBudgetTimers.remove(address)
        let now = deleteBudgetClock()
        deleteQueueWakes += 1
        guard var queue = deleteBudgetQueues.removeValue(forKey: address) else { return }
        var turns = queue.count
        var soonest = Double.infinity  // the soonest own credit among those served or passed over
        while turns > 0, addressDeleteBudget(address, now: now) >= 0, let id = queue.popFirst() {
            turns -= 1
            guard let c = connections[id], !c.parkedDeleteRefs.isEmpty else {
                connections[id]?.queuedForDeleteBudget = false
                continue
            }
            guard ownDeleteBudget(c, now: now) >= 0 else {
                soonest = min(soonest, ownDeleteWait(c, now: now))
                queue.append(id)
                continue
            }
            let n = min(c.parkedDeleteRefs.count, Self.deleteRefsPerTurn)
            let refs = Array(c.parkedDeleteRefs.prefix(n))
            c.parkedDeleteRefs.removeFirst(n)
            parkedDeleteRefs -= n
            submitDeletes(c, spendDeleteBudget(c, refs, now: now))
            if c.parkedDeleteRefs.isEmpty {
                c.queuedForDeleteBudget = false
            } else {
                soonest = min(soonest, ownDeleteWait(c, now: now))
                queue.append(id)
            }
            updateInterest(c)  // read again if the parked refs had paused it
        }
        guard !queue.isEmpty else { return }
        deleteBudgetQueues[address] = queue
        // Those not reached this time (the address's budget ran out) may have credit of their own.
        scheduleDeleteQueue(address, now: now, ownWait: turns > 0 ? 0 : soonest)
    }

    /// Takes `refs.count` from both budgets and keeps only the refs `c` was delivered in
    /// this session (§8.5); the others are counted in `ignoredDeleteRefs`.
    func spendDeleteBudget(_ c: RelayConnection, _ refs: [StoredPacketRef], now: UInt64) -> [StoredPacketRef] {
        c.deleteBudget = ownDeleteBudget(c, now: now) - Double(refs.count)
        c.deleteBudgetAt = now
        addressDeleteBudgets[c.address] = (addressDeleteBudget(c.address, now: now) - Double(refs.count), now)
        deleteRefsTaken += refs.count
        c.deleteRefsTaken += refs.count
        let known = refs.filter { c.output.delivered.take($0) }
        ignoredDeleteRefs += refs.count - known.count
        return known
    }
}
