import YaOKLoop

/// The DELETE rate of a session (issue 17 §2): refs per second, as a token bucket per
/// connection. Over budget, the connection is not read from until it is positive again
/// (`readPaused`); nothing is dropped. Loop thread only.
extension RelayServer {
    /// What `c` may still delete now (may be negative: it went over and waits).
    func deleteBudget(_ c: RelayConnection, now: UInt64 = EventLoop.monotonicNanoseconds()) -> Double {
        guard let budget = c.deleteBudget else { return configuration.deleteRefsBurst }
        let refilled = budget + Double(now &- c.deleteBudgetAt) / 1e9 * configuration.deleteRefsPerSecond
        if refilled >= configuration.deleteRefsBurst {
            c.deleteBudget = nil  // full again: nothing to track
            return configuration.deleteRefsBurst
        }
        return refilled
    }

    /// Takes `refs` from the budget.
    func spendDeleteBudget(_ c: RelayConnection, _ refs: Int) {
        let now = EventLoop.monotonicNanoseconds()
        c.deleteBudget = deleteBudget(c, now: now) - Double(refs)
        c.deleteBudgetAt = now
        deleteRefsTaken += refs
    }
}
