import YaOKSupport
import YaOKLoop
import YaOKStore

/// How the node runs its delivery engine: one locked section at a time, with what each
/// decided carried out after the lock is released.
extension Node {
    /// One section of the delivery engine: `body` runs under the node's lock with the
    /// engine, the open store and the keys (nil while locked). When it ends, returned or
    /// thrown, what it decided is carried out outside the lock (`perform`). A throw does not
    /// undo decisions: outside a batch each store write committed when made, so what was
    /// decided happened; a batch undoes its own (`DeliveryEngine.batch`).
    /// `section`: what `lockStatistics` counts it as (nil: by the thread).
    func withEngine<R: Sendable>(section: LockSection? = nil,
                                 _ body: (inout DeliveryEngine, Store, UnlockedKeys?) throws -> R) throws -> R {
        var outcome: DeliveryEffects.Outcome = ([], [])
        var traffic = false
        defer { perform(outcome, flush: traffic) }
        return try withStore(section: section) { store, s in
            defer {
                outcome = s.delivery.effects.takeOutcome()
                traffic = s.delivery.effects.hasTraffic
            }
            return try body(&s.delivery, store, s.keys)
        }
    }

    /// `withEngine` for what needs the keys: `locked` without them. Counts as activity for
    /// auto-lock, as `withUnlocked`.
    func withUnlockedEngine<R: Sendable>(_ body: (inout DeliveryEngine, Store, UnlockedKeys) throws -> R) throws -> R {
        var outcome: DeliveryEffects.Outcome = ([], [])
        var traffic = false
        defer { perform(outcome, flush: traffic) }
        return try withUnlocked { store, keys, s in
            defer {
                outcome = s.delivery.effects.takeOutcome()
                traffic = s.delivery.effects.hasTraffic
            }
            return try body(&s.delivery, store, keys)
        }
    }

    /// As `withUnlockedEngine`, but the section's commits do not sync the disk under the
    /// lock (`Database.unsynced`). Returns the section's result, the sync that makes its
    /// commits durable (throws if the disk cannot confirm them), and what carries out what
    /// the section decided (events to the app, units to links), to be run with the lock
    /// released, after the sync. A section that throws is carried out at once.
    func withUnlockedEngineUnsynced<R: Sendable>(section: LockSection? = nil,
                                                 _ body: (inout DeliveryEngine, Store, UnlockedKeys) throws -> R) throws
        -> (result: R, sync: () throws -> Void, perform: () -> Void) {
        var outcome: DeliveryEffects.Outcome = ([], [])
        var traffic = false
        do {
            let (result, syncer) = try withUnlocked(section: section) { store, keys, s in
                defer {
                    outcome = s.delivery.effects.takeOutcome()
                    traffic = s.delivery.effects.hasTraffic
                }
                return try store.db.unsynced { try body(&s.delivery, store, keys) }
            }
            return (result, { try syncer.sync() }, { [outcome, traffic] in self.perform(outcome, flush: traffic) })
        } catch {
            perform(outcome, flush: traffic)
            throw error
        }
    }

    /// `withEngine` for the event thread's inbound drain: a batch that must be durable before
    /// what it decided leaves (`DeliveryEngine.batch`) commits under the lock but syncs the
    /// disk after the lock is released (`Database.syncsDeferred`), so that app threads
    /// plan, seal and write their sends meanwhile instead of waiting out the sync. Nothing the
    /// section decided leaves before the sync: its events are emitted and its closes done
    /// after it, and units and carrier commands only ever leave through the event thread's
    /// flush (`flushOutgoing`), which this thread runs only once the sync has returned, so
    /// no other section's traffic queued meanwhile (which may rest on the batch: an ack of
    /// a message it stored, in the outbox) leaves before it either. A sync that fails fails
    /// the section as a failed batch does: what was queued since the section began is not
    /// sent (the peers retry) and its events did not happen. On another thread (tests that
    /// run the engine themselves) another thread could flush meanwhile: synced inside.
    func withEngineSyncedAfter<R: Sendable>(section: LockSection? = nil,
                                            _ body: (inout DeliveryEngine, Store, UnlockedKeys?) throws -> R) throws -> R {
        guard loop.isLoopThread else { return try withEngine(section: section, body) }
        var outcome: DeliveryEffects.Outcome = ([], [])
        var traffic = false
        var mark: DeliveryEffects.Mark?
        var pause: (@Sendable () -> Void)?
        let result: Result<R, any Error>
        let owed: LogSync?
        do {
            (result, owed) = try withStore(section: section) { store, s in
                mark = s.delivery.effects.mark
                pause = s.delivery.drainSyncing
                defer {
                    outcome = s.delivery.effects.takeOutcome()
                    traffic = s.delivery.effects.hasTraffic
                }
                return store.db.syncsDeferred { try body(&s.delivery, store, s.keys) }
            }
        } catch {
            perform(outcome, flush: traffic)  // the node closed: nothing was run
            throw error
        }
        if let owed, let mark {
            pause?()
            do {
                try owed.sync()
            } catch {
                _ = try? withStore(section: section) { store, s in
                    s.delivery.effects.rollback(to: mark)
                    store.seen.dropFront()
                }
                perform(([], outcome.closes), flush: false)
                throw error
            }
        }
        perform(outcome, flush: traffic)
        return try result.get()
    }

    /// Carries out what a section decided, outside the lock: the links the engine ends are
    /// closed (their transports told), units and carrier commands go to the event thread's
    /// flush, events to the app. `flush`: whether anything waited for the flush when the
    /// section ended; when nothing did, none is posted (from an app's thread each post is a
    /// wake-up of the event thread, which then takes the node's lock twice to find nothing:
    /// one per `send` while no link is open). A close queues nothing, and traffic queued
    /// later by another section is flushed by that section's end.
    private func perform(_ outcome: DeliveryEffects.Outcome, flush: Bool) {
        for (link, reason) in outcome.closes { closeLink(link, reason: reason, notifyTransport: true) }
        if flush { flushOutgoing() }
        for event in outcome.events { events.emit(event) }
    }

    /// Hands queued units to their transports, in the order they were sealed (a link's
    /// counters must arrive in order, or the receiver drops them as replays), then carrier
    /// commands. Always on the event thread, the only one that drains the queue: a call from
    /// another thread (an app's `send`) posts the flush there instead of racing it.
    func flushOutgoing() {
        guard loop.isLoopThread else {
            loop.post { [weak self] in self?.flushOutgoing() }
            return
        }
        // A transport may answer inside the call that hands it something (a relay client
        // that accepts at once), and the engine then queues more. Sending that from a nested
        // flush would put it ahead of what this flush still holds (a later message posted
        // before an earlier one), so the nested call returns and this loop sends it next.
        guard withState(section: .flush, { s in
            defer { s.delivery.flushing = true }
            return !s.delivery.flushing
        }) else { return }
        while true {
            let (units, commands) = withState(section: .flush) { s in
                let carriers = s.delivery.carriers
                let taken = s.delivery.effects.takeTraffic { carriers[$0.id]?.carrier === $0 }
                if taken.units.isEmpty && taken.commands.isEmpty { s.delivery.flushing = false }
                return taken
            }
            if units.isEmpty && commands.isEmpty { return }
            for (link, unit) in units { link.sendUnit(unit) }
            for (carrier, command) in commands {
                switch command {
                case .post(let posts): carrier.callbacks.post(posts)
                case .release(let ids): carrier.callbacks.release(ids)
                case .mailboxesChanged: carrier.callbacks.mailboxesChanged()
                case .carry(let message): carrier.callbacks.carry(message)
                }
            }
        }
    }
}
