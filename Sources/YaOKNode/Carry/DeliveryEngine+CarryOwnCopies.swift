import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Making the own carried copies of messages sent (docs/PROTOCOL.md §12.6, "Sending"). A
/// send commits only its message and outbox row, the row flagged as owing a copy; here the
/// copies are sealed and stored, many sends' in one transaction: on a timer of their own
/// (`OwnCopyQueue.delayMs` after sending, `meetingDelayMs` while a meeting is in progress;
/// also whenever the delivery timer fires), before a meeting starts (so that it offers a
/// message sent a moment ago), after an unlock (what a killed process left), never on the
/// app's thread inside `send`.
extension DeliveryEngine {
    /// Makes the copies owed, up to `OwnCopyQueue.batchLimit` in one transaction (the rest
    /// at the next turn: their timer is then due at once). Nothing while locked: sealing needs
    /// the keys, and the flags wait in the store. Returns how many messages were settled.
    @discardableResult
    mutating func makeOwnCopies(_ store: Store, _ keys: UnlockedKeys?) throws -> Int {
        guard let keys else { return 0 }
        if !carry.ownCopies.scanned {
            // Flags a process that ended before making its copies left (nothing is lost: the
            // routed message went its way, and the copy comes now). Ahead of this process's
            // own sends, which are in the list already and after them in the outbox.
            let queued = Set(carry.ownCopies.messages)
            let left = try store.messagesOwingCarriedCopy().filter { !queued.contains($0) }
            if !left.isEmpty {
                carry.ownCopies.messages = left + carry.ownCopies.messages
                carry.ownCopies.since = min(carry.ownCopies.since ?? now, now)
            }
            carry.ownCopies.scanned = true
        }
        guard !carry.ownCopies.messages.isEmpty else { return 0 }
        let window = carry.ownCopies.messages.prefix(OwnCopyQueue.batchLimit)
        // Messages whose group commit is written and not synced yet wait for it, as their
        // routed packets do (UnsyncedSends): a copy offered to the recipient meanwhile could
        // bring its ack to the app before the message's MESSAGE_STORED.
        let held = unsyncedSends.held
        let taken = held.isEmpty ? Array(window) : window.filter { !held.contains($0) }
        // Inside an outer transaction (a meeting that starts in the inbound drain's batch),
        // which may still roll back the copies and the cleared flags with them: the queue
        // keeps the messages until a batch of their own commits (for those made, a flag
        // gone makes that batch's take a no-op).
        let nested = store.db.inTransaction
        do {
            try batch(store) { engine in
                for id in taken { try engine.makeOwnCopy(id, store, keys) }
            }
        } catch {
            // Tried again at the next batch, not at once (a failing disk would spin the timer).
            carry.ownCopies.since = now
            throw error
        }
        guard !nested else { return taken.count }
        let waiting = held.isEmpty ? [] : window.filter { held.contains($0) }
        carry.ownCopies.messages.removeFirst(window.count)
        carry.ownCopies.messages.insert(contentsOf: waiting, at: 0)
        // Those waiting for their sync: the next batch after the usual delay, not at once
        // (the timer would spin while the sync runs).
        carry.ownCopies.since = carry.ownCopies.messages.isEmpty ? nil : waiting.isEmpty ? carry.ownCopies.since : now
        return taken.count
    }

    /// Arms the copies' timer for the next batch due (nothing while locked: the batch needs
    /// the keys, and an unlock runs one). With `callerRunsTimers` only the due time is kept,
    /// and the tests run `runDeliveryTimers` or `makeOwnCarriedCopies`.
    mutating func scheduleOwnCopies(unlocked: Bool) {
        guard unlocked, let due = carry.ownCopies.due(meeting: !carry.sessions.isEmpty) else { return }
        guard !callerRunsTimers else { carry.ownCopies.timerDue = due; return }
        if let current = carry.ownCopies.timerDue, current <= due, carry.ownCopies.timer != nil { return }
        if let timer = carry.ownCopies.timer { loop.cancel(timer) }
        carry.ownCopies.timerDue = due
        let seconds = Double(max(due - now, 0)) / 1000 + 0.001
        carry.ownCopies.timer = loop.schedule(after: min(seconds, 1)) { [weak node] in node?.runOwnCopyTimer() }
    }

    /// One owed copy: the flag taken (so it is made once however often batches run), then,
    /// while carrying is on and the contact still exists, the copy sealed as a send now
    /// would seal it (§13.6: to the contact's newest receiver key, the message unsettled
    /// under it until the copy's expiry) and stored (`keepOwnCarried`: offered on every
    /// meeting in progress). A full store means no copy, as at sending.
    private mutating func makeOwnCopy(_ id: MessageID, _ store: Store, _ keys: UnlockedKeys) throws {
        guard let contactID = try store.takeOwedCarriedCopy(id), carry.mode != .off,
              let peer = try directory(store, keys)?.byContact[contactID],
              let message = try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher),
              message.status != .delivered else { return }
        try sealOwnCarried(Array(message.text.utf8), messageID: id, createdMs: message.senderTimestamp, to: peer,
                           store, keys)
    }
}

extension Node {
    /// The copies' timer fired: one batch (the next is armed if more are owed).
    func runOwnCopyTimer() {
        _ = try? withEngine { engine, store, keys in
            engine.carry.ownCopies.timer = nil
            engine.carry.ownCopies.timerDue = nil
            defer { engine.scheduleOwnCopies(unlocked: keys != nil) }
            try engine.makeOwnCopies(store, keys)
        }
    }

    /// Makes the own carried copies still owed now, as the engine's timer would (tests,
    /// yaok-bench). Returns how many messages were settled.
    @discardableResult
    package func makeOwnCarriedCopies() throws -> Int {
        try withUnlockedEngine { engine, store, keys in
            var made = 0
            while true {
                let n = try engine.makeOwnCopies(store, keys)
                made += n
                if n < OwnCopyQueue.batchLimit { return made }
            }
        }
    }
}
