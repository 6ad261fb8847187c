import Glibc
import YaOKSupport
import YaOKLoop
import YaOKWire

/// Subscription caps beyond the session's own 4,096 proofs (issue 17 §2): per client
/// address, per /24 and in all, so that a few addresses cannot make the relay hold
/// millions of cursors, and one /24 cannot lock newcomers out (at the total, the /24
/// holding the most gives way, as with connection slots); and memory given back once
/// sessions close. Loop thread only.
extension RelayServer {
    /// Whether `added` more subscriptions fit for `c`'s address, its /24 and in all (at
    /// the total, after evicting sessions of the /24 holding the most, if that is another
    /// /24 holding more than `c`'s would); if not, ends its session (ERROR notSubscribed)
    /// and returns false.
    func admitSubscriptions(_ c: RelayConnection, _ added: Int) -> Bool {
        func refuse(_ message: String) -> Bool {
            endSession(c, RelayErrorFrame(request: 0, code: .notSubscribed, message: message))
            return false
        }
        let address = subscriptionsByAddress[c.address, default: 0]
        if address + added > configuration.maxSubscriptionsPerAddress {
            return refuse("More than \(configuration.maxSubscriptionsPerAddress) subscriptions from this IP address")
        }
        let prefix = c.address >> 8
        let inPrefix = subscriptionsByPrefix[prefix, default: 0]
        if inPrefix + added > configuration.maxSubscriptionsPerPrefix {
            return refuse("More than \(configuration.maxSubscriptionsPerPrefix) subscriptions from this /24")
        }
        while totalSubscriptions + added > configuration.maxTotalSubscriptions {
            guard evictSubscriptions(for: prefix, holding: inPrefix + added) else {
                return refuse("The relay holds its most subscriptions: try again later")
            }
        }
        subscriptionsByAddress[c.address] = address + added
        subscriptionsByPrefix[prefix] = inPrefix + added
        totalSubscriptions += added
        c.countedSubscriptions += added
        return true
    }

    /// Closes the session with the most subscriptions in the /24 holding the most, if that
    /// /24 is not `prefix` and holds more than `held` (what `prefix` would hold); returns
    /// whether one was closed. Runs only at the total (a scan of the /24s and connections).
    private func evictSubscriptions(for prefix: UInt32, holding held: Int) -> Bool {
        guard let (victimPrefix, victimHeld) = subscriptionsByPrefix.max(by: { $0.value < $1.value }),
              victimPrefix != prefix, victimHeld > held,
              let victim = connections.values.filter({ $0.address >> 8 == victimPrefix && $0.countedSubscriptions > 0 })
                  .max(by: { $0.countedSubscriptions < $1.countedSubscriptions })
        else { return false }
        evictedConnections += 1
        evictedForSubscriptions += 1
        finish(victim, "evicted: the relay holds its most subscriptions and \(Self.dottedQuad(victimPrefix << 8))/24 holds \(victimHeld)")
        return true
    }

    /// A connection closed: its subscriptions no longer count.
    func uncountSubscriptions(_ c: RelayConnection) {
        let n = c.countedSubscriptions
        guard n > 0 else { return }
        c.countedSubscriptions = 0
        totalSubscriptions -= n
        if let count = subscriptionsByAddress[c.address] {
            subscriptionsByAddress[c.address] = count > n ? count - n : nil
        }
        if let count = subscriptionsByPrefix[c.address >> 8] {
            subscriptionsByPrefix[c.address >> 8] = count > n ? count - n : nil
        }
    }

    /// Swift dictionaries keep their capacity when emptied: after a flood of subscriptions
    /// has gone, the mailbox index is copied into a right-sized one (called each tick;
    /// the copy runs only when less than a quarter of the capacity is used).
    func compactSubscriptionIndex() {
        guard subscribers.compact() else { return }
        // glibc keeps freed heap for reuse: hand it back to the system, so that a flood's
        // memory is returned once it has gone (and shows so in the relay's RSS).
        _ = malloc_trim(0)
    }

    /// Passes `c`'s decoded frames to its session in order, checking the relay's SUBSCRIBE
    /// signature budget (a token bucket that carries debt, all connections together)
    /// before each SUBSCRIBE: with no credit left the rest stay held and it returns false.
    /// So the checks stay within the budget plus one frame's proofs (64), however many
    /// frames one read holds.
    func receiveHeldFrames(_ c: RelayConnection) -> Bool {
        while let frame = c.heldFrames.first {
            guard !c.isClosing, connections[c.id] != nil else {
                c.heldFrames = []
                return true
            }
            let now = verificationClock()
            if frame.first == Self.subscribeFrameType, !verificationBudget.allows(now: now) { return false }
            c.heldFrames.removeFirst()
            let before = c.session?.verifications ?? 0
            receive(c, frame)
            let verified = (c.session?.verifications ?? 0) - before
            if verified > 0 {
                verificationBudget.spend(verified, now: now)
                verificationsChecked += verified
            }
        }
        return true
    }

    /// SUBSCRIBE's frame type (PROTOCOL.md §8.3).
    static let subscribeFrameType: UInt8 = 0x02

    /// Stops reading `c` until the budget has credit again (others are served meanwhile).
    func deferForVerifications(_ c: RelayConnection) {
        guard !c.deferredForVerifications else { return }
        c.deferredForVerifications = true
        deferredReads += 1
        updateInterest(c)
        let id = c.id
        let wait = max(configuration.verificationWindowSeconds, verificationBudget.secondsToCredit())
        loop.schedule(after: wait) { [weak self] in
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
