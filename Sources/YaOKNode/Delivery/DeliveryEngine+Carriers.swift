import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Store-and-forward carriers in the engine: relay sessions (Carrier.swift, docs/PROTOCOL.md
/// §8). Node+Carriers.swift is the API transports call.
extension DeliveryEngine {
    /// Adds a carrier for a ready session and posts what is due to it.
    mutating func openCarrier(transport: String, route: String, relay: [UInt8], callbacks: CarrierCallbacks,
                              node: Node, _ store: Store, _ keys: UnlockedKeys?) throws -> Carrier {
        let id = nextLinkID
        nextLinkID += 1
        let carrier = Carrier(id: id, transport: transport, route: route, relay: relay, node: node, callbacks: callbacks)
        carriers[id] = CarrierState(carrier: carrier)
        noteStatedIdentifier(carrier)
        noteActivity(transport)
        try pump(store, keys)
        try carryRelayOpened(carrier, store, keys)
        return carrier
    }

    /// The carrier stored `ids` durably: acks are done with, messages `sent` and watched for
    /// the recipient's acknowledgement (CarrierAckWatch).
    mutating func carrierAccepted(_ carrier: Carrier, _ ids: [MessageID], _ store: Store, _ keys: UnlockedKeys?) throws {
        guard carriers[carrier.id] != nil else { return }
        let t = now
        try batch(store) { engine in
            for id in ids where engine.inflight[id]?.link == carrier.id {
                guard try engine.handedOn(id, store, keys) != nil else { continue }
                // Sent, but not done with: without the recipient's ack by the deadline it
                // goes again (a relay may lose what it stored).
                try store.markCarried(id, until: t + Node.carriedAckTimeoutMs)
                engine.ackWatch.carried(id, route: carrier.route, deadline: t + Node.carriedAckTimeoutMs)
                // A message whose row fails its check is left as it is (DeliveryEngine+DamagedOutbox):
                // thrown, it undid the whole batch, and the others were posted again at every pump.
                if let keys, let m = try engine.checkedOutgoingMessage(id, store, keys),
                   m.status != .sent, m.status != .delivered {
                    _ = try engine.setStatus(id, .sent, store, keys)
                }
            }
        }
        noteActivity(carrier.transport)
        try pump(store, keys)
    }

    /// The carrier refused packet `id`: a rate limit pauses it, anything else is a failed attempt.
    mutating func carrierRefused(_ carrier: Carrier, _ id: MessageID, error: YaOKError, retryAfterMs: Int64?,
                                 _ store: Store, _ keys: UnlockedKeys?) throws {
        guard inflight[id]?.link == carrier.id else { return }
        inflight.remove(id)
        guard keys != nil else { return }
        if error.code == .rateLimited {
            // Not a failure: the message waits, still pending, and nothing more goes to
            // this carrier until the service says it may (AC-042-04).
            let wait = min(max(retryAfterMs ?? 60_000, 1_000), Node.maxCarrierPauseMs)
            let until = now + wait
            if var c = carriers[carrier.id], c.pausedUntil < until {
                c.pausedUntil = until
                carriers[carrier.id] = c
                let minutes = (wait + 59_999) / 60_000
                effects.events.append(.transportNotice(TransportNotice(
                    transport: carrier.transport,
                    message: "Rate limit reached. Try again in \(minutes) \(minutes == 1 ? "minute" : "minutes").",
                    retryAfterMs: wait)))
            }
            if let row = try checkedOutboxRow(id, store, keys), row.state == .queued {
                try store.setOutbox(id, state: .queued, attempts: row.attempts, nextAttemptAt: until)
            }
        } else {
            try failAttempt(id, store, keys)
        }
        try pump(store, keys)
    }

    /// A carrier's answer (`accepted`, `refused`) or meeting payload could not be taken: an
    /// error (a full disk, an I/O error) undid its writes, and the transport that brought it
    /// can do nothing with it. Packets `ids` still in flight on the carrier go back to the
    /// outbox as they were (posting again is idempotent: the relay keeps one copy), rather
    /// than wait out their attempt; the timer pumps again soon (`retryAfterStoreFailure`);
    /// and the app hears of it, once a session, in words a person can read.
    mutating func carrierWorkFailed(_ carrier: Carrier, _ ids: [MessageID], _ error: any Error, _ store: Store) {
        for id in ids where inflight[id]?.link == carrier.id { inflight.remove(id) }
        retryAfterStoreFailure(store)
        guard var c = carriers[carrier.id], !c.storeFailureNoticed else { return }
        c.storeFailureNoticed = true
        carriers[carrier.id] = c
        effects.events.append(.transportNotice(TransportNotice(
            transport: carrier.transport,
            message: "Could not record the relay's answer (\(error)): trying again in \(Node.failedSweepRetryMs / 1000) seconds.",
            retryAfterMs: Node.failedSweepRetryMs)))
    }

    /// Removes a carrier; what was in flight on it goes back to the outbox as it was, due at
    /// once. False: it was not open.
    mutating func closeCarrier(_ carrier: Carrier, _ store: Store, _ keys: UnlockedKeys?) throws -> Bool {
        guard carriers.removeValue(forKey: carrier.id) != nil else { return false }
        carry.relayMeetings[carrier.id] = nil
        carryLinkClosed(carrier.id, store)
        for id in inflight.ids(on: carrier.id) { inflight.remove(id) }
        // Its commands still queued are dropped by the flush (`DeliveryEffects.takeTraffic`),
        // not here: a mark counts what was queued before it (`DeliveryEffects.Mark`).
        if keys != nil { try pump(store, keys) }
        return true
    }

    /// Due packets of contacts that no direct link serves go to the first carrier that is
    /// not paused (direct links are preferred: AC-042-05).
    mutating func pumpCarriers(served: Set<Int64>, unsynced: Set<MessageID>, _ store: Store, _ keys: UnlockedKeys?) throws {
        let t = now
        let open = carriers.values.filter { $0.pausedUntil <= t }.map(\.carrier).sorted { $0.id < $1.id }
        guard keys != nil, let first = open.first else { return }
        // Rows already in flight are due too: ask for enough to get past them, IDs first
        // (their packets are loaded only to be sent).
        let due = try store.dueOutboxIDs(contactID: nil, excluding: served, now: t,
                                         limit: Node.pumpBatch + inflight.count + takenAcks.count + unsynced.count)
        var posts: [UInt64: [CarrierPost]] = [:]
        var count = 0
        for id in due where inflight[id] == nil && !takenAcks.contains(id) {
            if unsynced.contains(id), unsyncedSends.passOver(id) { continue }
            guard count < Node.pumpBatch else { break }
            // A message whose ack did not come through one relay goes through another if
            // one is connected (CarrierAckWatch.swift): by configured route, not by the
            // identifier a relay states (a liar can state an honest relay's).
            let carrier = CarrierAckWatch.pick(open, avoiding: ackWatch.missedAt[id] ?? []) ?? first
            guard inflight.bytes(on: carrier.id) < Node.linkWindowBytes else { continue }
            guard let row = try checkedOutboxRow(id, store, keys), !served.contains(row.contactID),
                  let mailbox = peers?.outgoingMailbox(row.contactID, relay: carrier.relay) else { continue }
            posts[carrier.id, default: []].append(CarrierPost(mailbox: mailbox.id, mailboxKey: mailbox.key,
                                                              packetID: row.packetID, packet: row.packet))
            count += 1
            inflight.add(row.packetID, link: carrier.id, deadline: t + RetrySchedule.attemptTimeoutMs,
                         bytes: row.packet.count, kind: row.kind)
        }
        for carrier in open {
            guard let batch = posts[carrier.id] else { continue }
            effects.carrierCommands.append((carrier, .post(batch)))
            noteActivity(carrier.transport)
        }
    }

    /// A routed packet from a carrier, inside the inbound batch's transaction. The carrier
    /// is told to delete it when it was taken (or was already), and when it can never be
    /// (not for us, tampered): a relay would otherwise bring it back every session. Packets
    /// refused for a passing reason (our clock, our storage) stay for a later session.
    mutating func receiveFromCarrier(_ bytes: [UInt8], on carrierID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        do {
            try receiveRouted(bytes, on: carrierID, store, keys)
        } catch let error as YaOKError where error.code != .diskFull && error.code != .storage {
            // Malformed (a relay checks headers, so only a faulty one sends these): it can
            // never be taken.
            if let (header, _) = try? RoutedHeader.parse(bytes) { release([header.messageID], on: carrierID) }
        }
    }

    /// Queues a release of `ids` to carrier `carrierID` (a carrier's "receipt").
    mutating func release(_ ids: [MessageID], on carrierID: UInt64) {
        guard let carrier = carriers[carrierID]?.carrier else { return }
        effects.carrierCommands.append((carrier, .release(ids)))
    }

    /// Counts a refused packet from a carrier against its transport's hour; returns the
    /// count so far this hour (the caller logs only the first few).
    mutating func countCarrierRejection(_ carrierID: UInt64) -> Int? {
        guard let transport = carriers[carrierID]?.carrier.transport else { return nil }
        let t = now
        var entry = carrierRejections[transport] ?? (0, t)
        if t - entry.since >= 3_600_000 { entry = (0, t) }
        entry.count += 1
        carrierRejections[transport] = entry
        return entry.count
    }

    /// Contacts changed: carriers subscribe again, and running transports hear of it (a
    /// relay transport that held no session for want of a contact connects). Transports
    /// are told from the loop, after this locked section.
    mutating func notifyCarriersOfContacts() {
        for c in carriers.values { effects.carrierCommands.append((c.carrier, .mailboxesChanged)) }
        let running = transports.values.filter { $0.phase == .running }.map(\.transport)
        guard !running.isEmpty else { return }
        loop.post { for t in running { t.contactsChanged() } }
    }
}
