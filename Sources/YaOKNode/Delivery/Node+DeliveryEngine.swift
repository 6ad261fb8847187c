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
    /// lock (`Database.unsynced`). Returns the section's result, the log sync that makes its
    /// commits durable (throws if the disk cannot confirm them), and what carries out what
    /// the section decided (events to the app, units to links), to be run with the lock
    /// released, after the sync; what it is given runs after the events, before the flush.
    /// A section that throws is carried out at once.
    func withUnlockedEngineUnsynced<R: Sendable>(section: LockSection? = nil,
                                                 _ body: (inout DeliveryEngine, Store, UnlockedKeys) throws -> R) throws
        -> (result: R, sync: LogSync, perform: (_ beforeFlush: () -> Void) -> Void) {
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
            return (result, syncer,
                    { [outcome, traffic] beforeFlush in self.perform(outcome, flush: traffic, beforeFlush: beforeFlush) })
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
    /// after it, and the section that ends the drain notes the sync owed
    /// (`DeliveryEngine.drainSyncOwed`) until it has returned or failed: no flush, on any
    /// thread, takes units or carrier commands meanwhile (`flushOutgoing`), so no other
    /// section's traffic queued meanwhile (which may rest on the batch: an ack of a message
    /// it stored, in the outbox) leaves before it either; this thread flushes after it,
    /// whatever is queued when it clears the owed sync (the other sections' flushes left
    /// theirs to it, posting nothing). A
    /// sync that fails fails the section as a failed batch does: what was queued since the
    /// section began is not sent (the peers retry) and its events did not happen. On another
    /// thread (tests that run the engine themselves) nothing would flush after it: synced inside.
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
                let ran = store.db.syncsDeferred { try body(&s.delivery, store, s.keys) }
                if ran.1 != nil { s.delivery.drainSyncOwed = true }
                return ran
            }
        } catch {
            perform(outcome, flush: traffic)  // the node closed: nothing was run
            throw error
        }
        if let owed, let mark {
            pause?()
            do {
                // While an app thread sends, its next send's sync follows soon and covers
                // this drain's commit too (one sync for both, not two in a row).
                try owed.sync(expectingAnother: sendCommits.sendsAreSyncing)
            } catch {
                // What was queued before the drain began still leaves: a flusher that found
                // the sync owed stopped and left it to this drain's end.
                let before = withState(section: section) { s -> Bool in
                    s.delivery.drainSyncOwed = false
                    guard let store = s.store else { return false }  // closed meanwhile: nothing leaves
                    s.delivery.effects.rollback(to: mark)
                    store.seen.dropFront()
                    return s.delivery.effects.hasTraffic
                }
                perform(([], outcome.closes), flush: before)
                throw error
            }
            // Read with the flag cleared: a section that queued traffic while it was set
            // found it set and left its flush to this one.
            traffic = withState(section: section) { s in
                s.delivery.drainSyncOwed = false
                return s.delivery.effects.hasTraffic
            }
        }
        perform(outcome, flush: traffic)
        return try result.get()
    }

    /// Carries out what a section decided, outside the lock: the links the engine ends are
    /// closed (their transports told), units and carrier commands go to the flush
    /// (`flushOutgoing`: on this thread, or posted to the event thread), events to the app.
    /// `flush`: whether anything waited for the flush when the section ended; when nothing
    /// did, none is run (from an app's thread a posted flush is a wake-up of the event
    /// thread, which then takes the node's lock twice to find nothing: one per `send` while
    /// no link is open). A close queues nothing, and traffic queued
    /// later by another section is flushed by that section's end.
    /// The events are posted before the flush: an answer to a unit the flush hands on (a
    /// receipt's `sent`, an ack's `delivered`) is drained by work posted after them, so
    /// the app never hears of it before what the section said (a message's
    /// MESSAGE_STORED). `beforeFlush`: what must come after the events and before the
    /// flush (a send group's traffic released).
    private func perform(_ outcome: DeliveryEffects.Outcome, flush: Bool, beforeFlush: () -> Void = {}) {
        for (link, reason) in outcome.closes { closeLink(link, reason: reason, notifyTransport: true) }
        for event in outcome.events { events.emit(event) }
        beforeFlush()
        if flush { flushOutgoing() }
    }

    /// Hands queued units to their transports, in the order they were sealed (a link's
    /// counters must arrive in order, or the receiver drops them as replays), then carrier
    /// commands. One flusher at a time (`DeliveryEngine.flushing`), which loops until the
    /// queue is empty. On the event thread it takes everything; on another thread (an app's
    /// `send`) it hands the units to their links itself when every one queued goes to a link
    /// that takes units on any thread (`LinkSender.anyThread`: LAN) — no wake-up of the event
    /// thread between a send's sync and the wire — and posts the flush to the event thread
    /// when anything else is queued (an app's link, a carrier command), or when it has
    /// handed on `appThreadFlushRounds` rounds and more came meanwhile (other threads'
    /// sends: its own caller waits). Nothing is taken while a drain's sync is owed
    /// (`DeliveryEngine.drainSyncOwed`), and nothing is posted for it either: the drain's
    /// end flushes whatever is queued when it clears the owed sync, under the lock that
    /// any section that queued traffic meanwhile saw the sync owed under.
    func flushOutgoing() {
        let onEventThread = loop.isLoopThread
        // A transport may answer inside the call that hands it something (a relay client
        // that accepts at once), and the engine then queues more. Sending that from a nested
        // flush would put it ahead of what this flush still holds (a later message posted
        // before an earlier one), so the nested call returns and this loop sends it next.
        let start = withState(section: .flush) { s -> FlushStep in
            if s.delivery.drainSyncOwed { return .stop }
            // The running flusher sees what is queued now before it stops.
            let limit = s.delivery.flushLimit
            guard !s.delivery.flushing, s.delivery.effects.hasTraffic(before: limit) else { return .stop }
            if !onEventThread, !s.delivery.effects.leavesFromAnyThread(before: limit) { return .post }
            s.delivery.flushing = true
            return .take
        }
        if case .take = start { flushTaken(onEventThread: onEventThread) } else { postFlush(start) }
    }

    /// What a flusher does next.
    private enum FlushStep {
        case take
        case send(units: [(link: Link, unit: [UInt8])], commands: [(carrier: Carrier, command: CarrierCommand)])
        case post
        case stop
    }

    /// How many rounds an app thread's flush hands on before it posts the rest to the
    /// event thread: its own section's traffic, and what a transport answered or another
    /// thread queued meanwhile once; a steady stream of other threads' sends must not keep
    /// it from returning to its app.
    static let appThreadFlushRounds = 2

    /// The loop of the flusher that claimed `flushing`.
    private func flushTaken(onEventThread: Bool) {
        var rounds = 0
        while true {
            let step = withState(section: .flush) { s -> FlushStep in
                let limit = s.delivery.flushLimit
                let next: FlushStep = s.delivery.drainSyncOwed || !s.delivery.effects.hasTraffic(before: limit) ? .stop
                    : onEventThread ? .take
                    : rounds >= Self.appThreadFlushRounds || !s.delivery.effects.leavesFromAnyThread(before: limit) ? .post
                    : .take
                guard case .take = next else {
                    s.delivery.flushing = false
                    return next
                }
                let carriers = s.delivery.carriers
                let taken = s.delivery.effects.takeTraffic(before: limit) { carriers[$0.id]?.carrier === $0 }
                return .send(units: taken.units, commands: taken.commands)
            }
            guard case .send(let units, let commands) = step else { return postFlush(step) }
            rounds += 1
            Self.hand(units)
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

    private func postFlush(_ step: FlushStep) {
        guard case .post = step else { return }
        loop.post { [weak self] in self?.flushOutgoing() }
    }

    /// Hands each link its units in one call (`LinkSender`), in sealing order: a link that
    /// takes them at once writes them in one go.
    private static func hand(_ units: [(link: Link, unit: [UInt8])]) {
        var batches: [(link: Link, units: [[UInt8]])] = []
        var index: [ObjectIdentifier: Int] = [:]
        for (link, unit) in units {
            if let i = index[ObjectIdentifier(link)] {
                batches[i].units.append(unit)
            } else {
                index[ObjectIdentifier(link)] = batches.count
                batches.append((link, [unit]))
            }
        }
        for (link, units) in batches { link.sender.send(units) }
    }
}
