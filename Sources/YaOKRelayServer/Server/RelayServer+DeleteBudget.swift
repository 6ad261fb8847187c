import YaOKLoop
import YaOKWire

/// The DELETE rate (issue 17 §2): refs per second, as a token bucket per connection and
/// one per client address (its sessions share it). Over either budget, the connection is
/// not read from until both are positive again (`readPaused`); nothing is dropped. Only
/// refs the session was delivered reach the disk (`DeliveredRefs`); the others are
/// ignored but still spend budget. Loop thread only.
extension RelayServer {
    /// What `c` may still delete now (may be negative: it went over and waits): the lesser
    /// of its own budget and its address's.
    func deleteBudget(_ c: RelayConnection, now: UInt64 = EventLoop.monotonicNanoseconds()) -> Double {
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

    /// Whether `c` waits on a budget that refills with time (the tick looks at it again).
    func waitsOnDeleteBudget(_ c: RelayConnection) -> Bool {
        c.deleteBudget != nil || addressDeleteBudgets[c.address] != nil
    }

    /// Takes `refs.count` from both budgets and keeps only the refs `c` was delivered in
    /// this session (§8.5); the others are counted in `ignoredDeleteRefs`.
    func spendDeleteBudget(_ c: RelayConnection, _ refs: [StoredPacketRef]) -> [StoredPacketRef] {
        let now = EventLoop.monotonicNanoseconds()
        c.deleteBudget = ownDeleteBudget(c, now: now) - Double(refs.count)
        c.deleteBudgetAt = now
        addressDeleteBudgets[c.address] = (addressDeleteBudget(c.address, now: now) - Double(refs.count), now)
        deleteRefsTaken += refs.count
        let known = refs.filter { c.output.delivered.take($0) }
        ignoredDeleteRefs += refs.count - known.count
        return known
    }
}
