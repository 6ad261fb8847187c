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
///
/// A batch goes in three steps, as a send does (DeliveryEngine+SendPlan): planned under the
/// node's lock (which messages, their text, the key each is sealed to), sealed (~50 µs a
/// copy), committed under the lock (each flag taken, the copy stored, the key choice checked
/// again). The timers seal with the lock released (`Node.makeOwnCopyBatch`): a batch sealed
/// under it held every app thread's send waiting (~13 ms for 256). (The event thread seals, so
/// its other work, the links' traffic and timers, still waits for a batch's sealing.)
/// Inside another section (a meeting's start, an unlock) the three run under its lock
/// (`makeOwnCopies`).

/// One own carried copy, planned under the lock.
struct PlannedOwnCopy: Sendable {
    let content: CarriedContent
    let peer: PeerDirectory.Peer
    let choice: SealChoice
}

/// A contact's key ring while a batch's copies are committed: saved once, after the last
/// (`commitOwnCopies`); `minted`: a key of ours was minted for a copy (the save syncs).
struct OwnCopyRing {
    var ring: ReceiverKeyRing
    var minted = false
}

/// A batch of own copies between its steps.
struct OwnCopyBatch: Sendable {
    /// The keys it was planned with: a lock before its commit leaves the flags owed.
    let keys: UnlockedKeys
    /// The messages it settles, copied or not (their flags are taken at the commit).
    let messages: [MessageID]
    /// Messages of the window still waiting for their group's sync (UnsyncedSends).
    let waiting: [MessageID]
    let planned: [PlannedOwnCopy]

    /// Step 2: every planned copy sealed. A copy that cannot be sealed for itself is none
    /// (its flag is taken all the same, or it would fail every batch; its routed packet goes
    /// its way); a failure of the node's (memory, `failsTheBatch`) fails the batch, its flags
    /// still owed.
    func seal(_ sealer: ((PlannedOwnCopy, Identity) throws -> CarriedPacket)? = nil) throws -> [CarriedPacket?] {
        try planned.map { plan in
            do {
                if let sealer { return try sealer(plan, keys.identity) }  // tests
                return try DeliveryEngine.sealCarried(plan.content, as: plan.choice, to: plan.peer, by: keys.identity)
            } catch where !OwnCopyBatch.failsTheBatch(error) {
                return nil
            }
        }
    }

    /// Whether `error` is the node's (the store, the disk, memory) rather than one message's:
    /// then the batch fails and is tried again later, nothing taken.
    static func failsTheBatch(_ error: any Error) -> Bool { DeliveryEngine.isNodesOwnFailure(error) }
}

extension DeliveryEngine {
    /// Makes the copies owed, up to `OwnCopyQueue.batchLimit` in one transaction (the rest
    /// at the next turn: their timer is then due at once), all three steps under the
    /// caller's lock. Nothing while locked: sealing needs the keys, and the flags wait in
    /// the store. Returns how many messages were settled.
    @discardableResult
    mutating func makeOwnCopies(_ store: Store, _ keys: UnlockedKeys?) throws -> Int {
        guard let keys, let batch = try planOwnCopies(store, keys) else { return 0 }
        let sealed: [CarriedPacket?]
        do {
            sealed = try batch.seal()
        } catch {
            carry.ownCopies.since = now  // tried again after the delay, not at once
            throw error
        }
        return try commitOwnCopies(batch, sealed: sealed, store, keys)
    }

    /// Step 1: the next batch planned (nil: nothing owed, or all waiting for their sync).
    /// Writes nothing, but for a ring that had to mint our first key to announce it (kept at
    /// once, as `planSend` does).
    mutating func planOwnCopies(_ store: Store, _ keys: UnlockedKeys) throws -> OwnCopyBatch? {
        do {
            try scanOwnCopiesLeft(store)
            if let inside = carry.ownCopies.settledInside, !store.db.inTransaction {
                if store.db.rollbacks == inside.rollbacks { carry.ownCopies.remove(inside.messages) }
                carry.ownCopies.settledInside = nil
            }
            guard !carry.ownCopies.messages.isEmpty else { return nil }
            let window = carry.ownCopies.messages.prefix(OwnCopyQueue.batchLimit)
            // Messages whose group commit is written and not synced yet wait for it, as their
            // routed packets do (UnsyncedSends): a copy offered to the recipient meanwhile could
            // bring its ack to the app before the message's MESSAGE_STORED.
            let held = unsyncedSends.held
            let taken = held.isEmpty ? Array(window) : window.filter { !held.contains($0) }
            let waiting = held.isEmpty ? [] : window.filter { held.contains($0) }
            guard !taken.isEmpty else {
                carry.ownCopies.since = now  // the usual delay, not at once: the timer would spin
                return nil
            }
            var rings: [Int64: ReceiverKeyRing] = [:]
            let planned = try taken.compactMap { id in try planOwnCopy(id, &rings, store, keys) }
            return OwnCopyBatch(keys: keys, messages: taken, waiting: waiting, planned: planned)
        } catch {
            // Tried again at the next batch, not at once (a failing disk would spin the timer).
            carry.ownCopies.since = now
            throw error
        }
    }

    /// Flags a process that ended before making its copies left (nothing is lost: the
    /// routed message went its way, and the copy comes now). Ahead of this process's own
    /// sends, which are in the list already and after them in the outbox. Once, at the
    /// first batch that has the keys.
    private mutating func scanOwnCopiesLeft(_ store: Store) throws {
        guard !carry.ownCopies.scanned else { return }
        carry.ownCopies.prepend(try store.messagesOwingCarriedCopy(), at: now)
        carry.ownCopies.scanned = true
    }

    /// One copy planned: while its flag is owed, carrying is on, the contact exists and the
    /// message is not delivered, its content (a fresh claim) and the key it is sealed to
    /// (§13.6: the contact's newest receiver key, as a send now would). A message row that
    /// cannot be read for itself (not the store failing) gets no copy.
    private mutating func planOwnCopy(_ id: MessageID, _ rings: inout [Int64: ReceiverKeyRing], _ store: Store,
                                      _ keys: UnlockedKeys) throws -> PlannedOwnCopy? {
        do {
            guard carry.mode != .off, let (contactID, message) = try store.owedCarriedCopyMessage(id, cipher: keys.cipher),
                  let peer = try directory(store, keys)?.byContact[contactID], message.status != .delivered else { return nil }
            let content = try CarriedContent(kind: .message(text: Array(message.text.utf8)), id: id,
                                             createdMs: message.senderTimestamp, claim: PurgeClaim.random())
            var choice = SealChoice.longTerm
            if forwardSecrecy {
                var ring = try rings[contactID] ?? store.receiverKeyRing(contactID: contactID, cipher: keys.cipher)
                let minted = ring.lastID
                choice = try sealChoice(to: peer, &ring)
                if ring.lastID != minted { try store.saveReceiverKeyRing(ring, contactID: contactID, cipher: keys.cipher) }
                rings[contactID] = ring
            }
            return PlannedOwnCopy(content: content, peer: peer, choice: choice)
        } catch where !OwnCopyBatch.failsTheBatch(error) {
            return nil
        }
    }

    /// Step 3: the batch's copies stored in one transaction, each only if its flag is still
    /// owed to the same contact (taken here: exactly once, however batches interleave) and
    /// carrying is on; a key choice gone stale meanwhile (an announcement heard, a release
    /// moved) is sealed again here. The flags of the batch's messages without a copy are
    /// taken too. Returns how many messages were settled.
    mutating func commitOwnCopies(_ batch: OwnCopyBatch, sealed: [CarriedPacket?], _ store: Store,
                                  _ keys: UnlockedKeys) throws -> Int {
        // Inside an outer transaction (a meeting that starts in the inbound drain's batch),
        // which may still roll back the copies and the cleared flags with them: the queue
        // keeps the messages until the next batch of its own, which takes them off unless
        // a rollback happened meanwhile (`OwnCopyQueue.settledInside`; else that batch
        // finds their flags gone, and its take is a no-op).
        let nested = store.db.inTransaction
        do {
            // Loss-tolerant (no disk sync of its own, Database.transactionSyncedAsNeeded): the
            // copies and the cleared flags go or stay together, and an OS crash or power loss
            // that takes them back leaves the flags owed, so the copies are made again (a
            // stranger that took one meanwhile carries a second copy of the message, which
            // its recipient stores once). But for a key minted here (`commitOwnCopy`).
            try self.batch(store) { engine in
                var copied: Set<MessageID> = []
                var rings: [Int64: OwnCopyRing] = [:]
                for (plan, packet) in zip(batch.planned, sealed) {
                    guard let packet else { continue }
                    try engine.commitOwnCopy(plan, packet, &rings, store, keys)
                    copied.insert(plan.content.id)
                }
                // No savepoint for a ring's save: an error fails the whole batch.
                for (contactID, entry) in rings.sorted(by: { $0.key < $1.key }) {
                    if entry.minted {
                        // Our first key for the contact, minted here (its first announcement
                        // heard while the batch sealed): a copy announces it and may leave at
                        // once, so the key is durable first, as every key announced (the
                        // batch syncs).
                        try store.saveReceiverKeyRing(entry.ring, contactID: contactID, cipher: keys.cipher, savepoint: false)
                    } else {
                        try store.db.lossTolerant {
                            try store.saveReceiverKeyRing(entry.ring, contactID: contactID, cipher: keys.cipher, savepoint: false)
                        }
                    }
                }
                try store.db.lossTolerant {
                    for id in batch.messages where !copied.contains(id) { _ = try store.takeOwedCarriedCopy(id) }
                }
            }
        } catch {
            carry.ownCopies.since = now
            throw error
        }
        guard !nested else {
            let before = carry.ownCopies.settledInside
            carry.ownCopies.settledInside = ((before?.messages ?? []).union(batch.messages), before?.rollbacks ?? store.db.rollbacks)
            return batch.messages.count
        }
        carry.ownCopies.remove(Set(batch.messages))
        // Those waiting for their sync: the next batch after the usual delay, not at once
        // (the timer would spin while the sync runs).
        if !carry.ownCopies.messages.isEmpty, !batch.waiting.isEmpty { carry.ownCopies.since = now }
        return batch.messages.count
    }

    /// One copy of a batch (its transaction): stored as `keepOwnCarried` does (offered on
    /// every meeting in progress; a full store means no copy, as at sending). The key rings
    /// the copies record themselves in are read once per contact and saved once, after the
    /// batch's last copy (`rings`): a ring read, opened, sealed and written again per copy
    /// held the node's lock ~8 ms for a batch of 256.
    private mutating func commitOwnCopy(_ plan: PlannedOwnCopy, _ packet: CarriedPacket, _ rings: inout [Int64: OwnCopyRing],
                                        _ store: Store, _ keys: UnlockedKeys) throws {
        let id = plan.content.id
        guard let contactID = try store.db.lossTolerant({ try store.takeOwedCarriedCopy(id) }),
              contactID == plan.peer.contactID, carry.mode != .off,
              let peer = try directory(store, keys)?.byContact[contactID], peer.identity == plan.peer.identity else { return }
        // A copy the carry store refuses for its time (expired: a process back after the
        // copy's lifetime; or expiring too far ahead: sent while the clock was ahead) is
        // none, as one that cannot be sealed: its refusal inside the batch's transaction
        // would fail the whole batch, every time, and no copy behind it would be made. (Its
        // expiry is the content's, whatever key a new seal below chooses.)
        guard (try? packet.checkTime(nowMs: now)) != nil else { return }
        var packet = packet
        if forwardSecrecy {
            // Taken out of `rings` while changed: left in, it would share the ring's storage
            // and every copy would copy the contact's whole list of unsettled sends.
            var entry = try rings.removeValue(forKey: contactID)
                ?? OwnCopyRing(ring: store.receiverKeyRing(contactID: contactID, cipher: keys.cipher))
            let minted = entry.ring.lastID
            let choice = try sealChoice(to: peer, &entry.ring)
            if choice != plan.choice { packet = try Self.sealCarried(plan.content, as: choice, to: peer, by: keys.identity) }
            Self.recordCarried(plan.content, packet, as: choice, in: &entry.ring)
            if entry.ring.lastID != minted { entry.minted = true }
            rings[contactID] = entry
        } else if plan.choice != .longTerm {
            packet = try Self.sealCarried(plan.content, as: .longTerm, to: peer, by: keys.identity)
        }
        try store.db.lossTolerant { try keepOwnCarried(packet, plan.content, to: peer, store) }
    }

    /// The peers of the meetings in progress, for `OwnCopyQueue.due` (nil: a stranger, or
    /// a relay).
    var ownCopyMeetings: [Int64?] { carry.sessions.keys.map { links[$0]?.contactID } }

    /// Whether the app's sends keep the copies waiting now (OwnCopyQueue.quietMs): the
    /// timers then make no batch.
    var ownCopiesWaitForPause: Bool { carry.ownCopies.waitsForPause(at: now, meetings: ownCopyMeetings) }

    /// Arms the copies' timer for the next batch due (nothing while locked: the batch needs
    /// the keys, and an unlock runs one). With `callerRunsTimers` only the due time is kept,
    /// and the tests run `runDeliveryTimers` or `makeOwnCarriedCopies`.
    mutating func scheduleOwnCopies(unlocked: Bool) {
        guard unlocked, let due = carry.ownCopies.due(meetings: ownCopyMeetings) else { return }
        guard !callerRunsTimers else { carry.ownCopies.timerDue = due; return }
        if let current = carry.ownCopies.timerDue, current <= due, carry.ownCopies.timer != nil { return }
        if let timer = carry.ownCopies.timer { loop.cancel(timer) }
        carry.ownCopies.timerDue = due
        let seconds = Double(max(due - now, 0)) / 1000 + 0.001
        carry.ownCopies.timer = loop.schedule(after: min(seconds, 1)) { [weak node] in node?.runOwnCopyTimer() }
    }
}

extension Node {
    /// The copies' timer fired: one batch, sealed with the lock released (the next is armed
    /// if more are owed), unless the app is still sending (`OwnCopyQueue.quietMs`).
    func runOwnCopyTimer() {
        let waits = (try? withEngine { engine, _, _ -> Bool in
            engine.carry.ownCopies.timer = nil
            engine.carry.ownCopies.timerDue = nil
            return engine.ownCopiesWaitForPause
        }) ?? false
        // Sends since the timer was armed moved the batch later (armed again below).
        if !waits { _ = try? makeOwnCopyBatch() }
        _ = try? withEngine { engine, _, keys in engine.scheduleOwnCopies(unlocked: keys != nil) }
    }

    /// One batch of own copies in three sections: planned under the lock, sealed outside it
    /// (on the calling thread: the event thread, for the timers), committed under it.
    /// Returns how many messages were settled (0: nothing owed, or the node locked).
    @discardableResult
    func makeOwnCopyBatch() throws -> Int {
        guard let (batch, pause) = try withEngine({ engine, store, keys -> (OwnCopyBatch, (@Sendable () -> Void)?)? in
            guard let keys, let batch = try engine.planOwnCopies(store, keys) else { return nil }
            return (batch, engine.ownCopySealing)
        }) else { return 0 }
        let sealed: [CarriedPacket?]
        do {
            sealed = try batch.seal()
        } catch {
            // Tried again after the delay, not at once (the timer would spin while it lasts).
            _ = try? withEngine { engine, _, _ in engine.carry.ownCopies.since = engine.now }
            throw error
        }
        pause?()
        return try withEngine { engine, store, keys in
            // Locked meanwhile: the flags stay owed for the batch after the unlock.
            guard let keys, keys === batch.keys else { return 0 }
            return try engine.commitOwnCopies(batch, sealed: sealed, store, keys)
        }
    }

    /// Makes the own carried copies still owed now, as the engine's timer would (tests,
    /// yaok-bench). Returns how many messages were settled.
    @discardableResult
    package func makeOwnCarriedCopies() throws -> Int {
        var made = 0
        while true {
            let n = try makeOwnCopyBatch()
            made += n
            if n < OwnCopyQueue.batchLimit { return made }
        }
    }
}
