import Glibc
import YaOKSupport
import YaOKLoop
import YaOKWire

/// Subscription caps beyond the session's own 4,096 proofs (issue 17 §2): per client
/// address and in all, so that a few addresses cannot make the relay hold millions of
/// cursors; and memory given back once sessions close. Loop thread only.
extension RelayServer {
    /// Whether `added` more subscriptions fit for `c`'s address and in all; if not, ends
    /// its session (ERROR notSubscribed) and returns false.
    func admitSubscriptions(_ c: RelayConnection, _ added: Int) -> Bool {
        let address = subscriptionsByAddress[c.address, default: 0]
        if address + added > configuration.maxSubscriptionsPerAddress {
            endSession(c, RelayErrorFrame(request: 0, code: .notSubscribed,
                                          message: "More than \(configuration.maxSubscriptionsPerAddress) subscriptions from this IP address"))
            return false
        }
        if totalSubscriptions + added > configuration.maxTotalSubscriptions {
            endSession(c, RelayErrorFrame(request: 0, code: .notSubscribed,
                                          message: "The relay holds its most subscriptions: try again later"))
            return false
        }
        subscriptionsByAddress[c.address] = address + added
        totalSubscriptions += added
        return true
    }

    /// A connection closed: its subscriptions no longer count.
    func uncountSubscriptions(_ c: RelayConnection) {
        let n = c.cursors.count
        guard n > 0 else { return }
        totalSubscriptions -= n
        if let count = subscriptionsByAddress[c.address] {
            subscriptionsByAddress[c.address] = count > n ? count - n : nil
        }
    }

    /// Swift dictionaries keep their capacity when emptied: after a flood of subscriptions
    /// has gone, the mailbox index is copied into a right-sized one (called each tick;
    /// the copy runs only when less than a quarter of the capacity is used).
    func compactSubscriptionIndex() {
        let capacity = subscribers.capacity
        guard capacity > 1024, subscribers.count < capacity / 4 else { return }
        var compact = [MailboxID: Set<UInt64>](minimumCapacity: subscribers.count)
        for (mailbox, ids) in subscribers { compact[mailbox] = ids }
        subscribers = compact
        // glibc keeps freed heap for reuse: hand it back to the system, so that a flood's
        // memory is returned once it has gone (and shows so in the relay's RSS).
        _ = malloc_trim(0)
    }

    /// Whether this window's signature budget is spent (a new window starts a new budget).
    func verificationBudgetSpent() -> Bool {
        let now = EventLoop.monotonicNanoseconds()
        if now &- verificationWindowStart >= Self.nanoseconds(configuration.verificationWindowSeconds) {
            verificationWindowStart = now
            verificationsInWindow = 0
        }
        return verificationsInWindow >= configuration.verificationsPerWindow
    }

    /// Stops reading `c` until the next window (others are served meanwhile).
    func deferForVerifications(_ c: RelayConnection) {
        guard !c.deferredForVerifications else { return }
        c.deferredForVerifications = true
        deferredReads += 1
        updateInterest(c)
        let id = c.id
        loop.schedule(after: configuration.verificationWindowSeconds) { [weak self] in
            guard let self, let c = self.connections[id] else { return }
            c.deferredForVerifications = false
            self.updateInterest(c)
            self.loop.post { [weak self] in self?.ready(id, []) }
        }
    }
}

/// glibc's malloc_trim(3) (malloc.h, which the Glibc module does not export): returns
/// freed heap memory to the system. `int malloc_trim(size_t pad)`.
@_silgen_name("malloc_trim")
private func malloc_trim(_ pad: Int) -> Int32
