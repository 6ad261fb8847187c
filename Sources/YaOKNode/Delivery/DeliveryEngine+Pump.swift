import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The pump: due packets out over links and carriers, receipts and acknowledgements in,
/// failed attempts retried, expiry, keepalives, and the one delivery timer.
extension DeliveryEngine {
    /// Hands every due packet to an open link to its recipient, fails attempts whose
    /// receipt is overdue, expires what is too old, and sets the timer for the next due time.
    mutating func pump(_ store: Store, _ keys: UnlockedKeys?, sweep: Bool = false) throws {
        let t = now
        // Deadlines and expiry are the timer's work: a send or a receipt only dispatches.
        // Overdue attempts fail while locked too: the timer is set by their deadlines, and
        // one that stayed in flight would hold its link's window and bring the timer back at
        // once, forever. Expiry waits for the keys: the message's status must say `failed`.
        if sweep {
            for id in inflight.overdue(at: t) {
                inflight.remove(id)
                try failAttempt(id, store, keys)
            }
        }
        if sweep, keys != nil {
            for (contactID, count) in invalidTexts.endedDays(now: t) {
                let detail = InvalidTextLog.summary(count, contactID: contactID)
                effects.events.append(.security(try store.appendSecurityEvent(.invalidText, detail, time: t)))
            }
            try checkCarriedAcks(store, keys, now: t)
            try sweepCarryIfDue(store)
            if let keys { try expireReceiverKeysIfDue(store, keys) }
            try store.requeueCarried(now: t)
            for id in try store.expiredOutboxIDs(now: t) {
                guard let row = try checkedOutboxRow(id, store, keys) else { continue }
                try store.removeOutbox(row.packetID)
                inflight.remove(row.packetID)
                if row.kind == .message, let keys = keys {
                    _ = try setStatus(row.packetID, .failed, store, keys)
                }
            }
        }
        // A prekey's ID is its day, so it is erased on time while locked too (§13.4 rule 5):
        // every packet sealed to it has expired by then, so no held packet needs it.
        if sweep, keys == nil { try store.expirePrekeys(nowMs: t) }
        // When one link is due a keepalive, every link half-way there gets one too: one
        // timer wake-up serves them all, not one per link every 20 s.
        if sweep, links.values.contains(where: { $0.isOpen && t - $0.lastSent >= Node.linkKeepaliveMs }) {
            for (linkID, link) in links where link.isOpen && t - link.lastSent >= Node.linkKeepaliveMs / 2 {
                try sendOnLink(.keepalive, on: linkID)
            }
        }
        // Meetings held for a contact's proof that did not come (DeliveryEngine+MeetingWait).
        if sweep { try takeHeldMeetings(dueBy: t, store, keys) }
        // A contact's open links, oldest first: the next one takes over when one's window is
        // full (two links to one contact: over the LAN and Bluetooth, or both directions).
        var linksByContact: [Int64: [UInt64]] = [:]
        for (linkID, link) in links.sorted(by: { $0.key < $1.key }) where link.isOpen {
            if let contact = link.contactID { linksByContact[contact, default: []].append(linkID) }
        }
        let served = Set(linksByContact.keys)
        // Sends written and not synced yet wait for their sync (UnsyncedSends).
        let unsynced = linksByContact.isEmpty && carriers.isEmpty ? [] : unsyncedSends.held
        if !unsynced.isEmpty { heldRead?() }
        for (contact, linkIDs) in linksByContact.sorted(by: { $0.key < $1.key }) {
            var sent = 0
            var used = Set<UInt64>()
            // IDs first: rows in flight are still due, and loading (and MAC-checking) their
            // packets at every pump would cost more than sending.
            for due in try store.dueOutboxIDs(contactID: contact, now: t,
                                              limit: Node.pumpBatch + inflight.count + takenAcks.count + unsynced.count)
            where inflight[due] == nil && !takenAcks.contains(due) {
                if unsynced.contains(due), unsyncedSends.passOver(due) { continue }
                guard sent < Node.pumpBatch,
                      let linkID = linkIDs.first(where: { inflight.bytes(on: $0) < Node.linkWindowBytes })
                else { break }
                guard let row = try checkedOutboxRow(due, store, keys) else { continue }
                try sendOnLink(.packet(row.packet), on: linkID)
                inflight.add(row.packetID, link: linkID, deadline: t + RetrySchedule.attemptTimeoutMs,
                             bytes: row.packet.count, kind: row.kind)
                sent += 1
                used.insert(linkID)
            }
            for linkID in used { if let link = links[linkID] { noteActivity(link.link.transport) } }
        }
        try pumpCarriers(served: served, unsynced: unsynced, store, keys)
        scheduleTimer(store)
        scheduleOwnCopies(unlocked: keys != nil)
    }

    /// A link confirmed it took packet `id`. Loss-tolerant (no disk sync of its own): lost
    /// with an OS crash, the message is only queued again and sent again, the recipient
    /// answers its known bytes with a receipt only (§4.8), and its ack, sent once it stored
    /// the message whatever we recorded, makes it `delivered`.
    mutating func confirmReceipt(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard let row = try handedOn(id, store, keys) else { return }
        try store.db.lossTolerant {
            try store.setOutbox(id, state: .sent, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt)
            if let keys { _ = try setStatus(id, .sent, store, keys) }
        }
    }

    /// Packet `id` was taken by the link or carrier it was in flight on: it is no longer in
    /// flight, an ack is done with (off the outbox), and a message still queued is returned
    /// for the caller to mark (`sent` by a link, carried by a relay). nil: nothing left to do.
    mutating func handedOn(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys?) throws -> OutboxSchedule? {
        let flight = inflight.remove(id)
        // The kind was checked against the row's MAC when the pump loaded the packet to send
        // it; the scheduling is not MACed (it changes while locked), so it is read alone,
        // without loading and checking the packet again (16 KiB for a 10 KB message).
        let kind: OutboxRow.Kind
        let row: OutboxSchedule
        if let known = flight?.kind {
            guard let schedule = try store.outboxSchedule(id) else { return nil }
            (kind, row) = (known, schedule)
        } else {
            // Not in flight (a receipt after the link's attempt ended): read with its check.
            guard let full = try checkedOutboxRow(id, store, keys) else { return nil }
            (kind, row) = (full.kind, OutboxSchedule(state: full.state, attempts: full.attempts, nextAttemptAt: full.nextAttemptAt))
        }
        switch kind {
        case .ack:
            // Off the outbox with the next commit that writes (`takenAcks`): a receipt for
            // an ack alone then costs no disk sync.
            takenAcks.insert(id)
            return nil
        case .message:
            return row.state == .queued ? row : nil
        }
    }

    /// The recipient acknowledged message `id`: delivered, and off the outbox. A message
    /// whose row fails its check (changed outside Ya OK, or damaged on disk) is left as it
    /// is (an altered row is never authenticated again): thrown, that error failed the whole
    /// batch the ack came in, and a held ack (or a carried one) failed every unlock's
    /// opening of what arrived while locked, for as long as it was kept.
    mutating func markDelivered(_ id: MessageID, contactID: Int64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard let keys, let message = try checkedOutgoingMessage(id, store, keys),
              message.conversationID == contactID else { return }  // an ack only counts from the recipient
        try store.removeOutbox(id)
        inflight.remove(id)
        try ownCarriedDelivered(id, contactID: contactID, store)
        guard message.status != .delivered else { return }
        // The message as just read, with its new status: reading it back would open its
        // body again (up to 16 KiB decrypted and checked, for the event alone), and the
        // row is rewritten from that read, not read and checked again.
        try store.setStatus(of: message, .delivered, now: now)
        effects.events.append(.messageStatusChanged(message.with(status: .delivered, now: now)))
    }

    /// An attempt failed (no receipt in time, or the link closed first): retry later.
    mutating func failAttempt(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard let row = try checkedOutboxRow(id, store, keys), row.state == .queued else { return }
        let attempts = row.attempts + 1
        try store.setOutbox(id, state: .queued, attempts: attempts, nextAttemptAt: now + RetrySchedule.delay(afterAttempts: attempts))
        if row.kind == .message, let keys = keys { _ = try setStatus(id, .failed, store, keys) }
    }

    @discardableResult
    mutating func setStatus(_ id: MessageID, _ status: MessageStatus, _ store: Store, _ keys: UnlockedKeys) throws -> Message? {
        guard let m = try store.setStatus(messageID: id.bytes, status, now: now, returning: true) else { return nil }
        effects.events.append(.messageStatusChanged(m))
        return m
    }

    /// One timer per node, at the earliest of: the next retry, the next receipt deadline.
    /// (Own carried copies have their own: DeliveryEngine+CarryOwnCopies.) The clock is injectable (`Options.clock`), so the timer only wakes the engine; what
    /// is due is decided by the clock, and tests call `runDeliveryTimers()` instead.
    /// `retryAt`: after a store failure (`retryAfterStoreFailure`), then, or at a deadline
    /// still ahead that comes sooner: a receipt deadline or keepalive made in the failing
    /// section would otherwise wait out the retry. Deadlines already past (what failed is
    /// still due) wait for `retryAt`: taking them would fire the timer again at once, in a
    /// loop while the store fails.
    private mutating func scheduleTimer(_ store: Store, retryAt: Int64? = nil) {
        // An hourly sweep at the latest, for expiry.
        let t = now
        let keepalive = links.values.filter(\.isOpen).map { $0.lastSent + Node.linkKeepaliveMs }.min()
        let deadlines = [try? store.nextOutboxAttempt(after: t), inflight.earliestDeadline, keepalive,
                         carriers.values.map(\.pausedUntil).filter { $0 > t }.min(), nextHeldMeetingDue,
                         t + 3_600_000].compactMap { $0 }
        let ahead = deadlines.filter { $0 > t }.min()
        guard let due = retryAt.map({ min($0, ahead ?? $0) }) ?? deadlines.min() else { return }
        guard !callerRunsTimers else { timerDue = due; return }
        if let current = timerDue, current <= due, timer != nil { return }
        if let timer = timer { loop.cancel(timer) }
        timerDue = due
        let seconds = Double(max(due - now, 0)) / 1000 + 0.001
        timer = loop.schedule(after: min(seconds, 3600)) { [weak node] in node?.runDeliveryTimers() }
    }

    /// The timer fired (or a test called `Node.runDeliveryTimers`, which first makes a batch
    /// of the own carried copies owed, outside this section): sweep and pump.
    mutating func timerFired(_ store: Store, _ keys: UnlockedKeys?) throws {
        timer = nil
        timerDue = nil
        do {
            try pump(store, keys, sweep: true)
        } catch {
            // The sweep stopped at a store error before it set the next timer.
            retryAfterStoreFailure(store)
            throw error
        }
        // The sweep erases expired keys and prekeys: their checkpoint runs now, not later.
        store.erasePendingPages()
    }

    /// Work on the event thread (a sweep, a carrier's answer) stopped at a store error (a
    /// full disk, an I/O error), with no caller to hand it to: the timer sweeps and pumps
    /// again in `Node.failedSweepRetryMs`. Without it, retries, expiry and keepalives would
    /// wait for the next send or link (or the hourly sweep: what failed is still due, which
    /// the next deadline does not count). Not at once either: it would likely fail again, in
    /// a loop.
    mutating func retryAfterStoreFailure(_ store: Store) {
        scheduleTimer(store, retryAt: now + Node.failedSweepRetryMs)
    }
}
