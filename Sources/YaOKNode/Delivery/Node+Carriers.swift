import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Store-and-forward carriers: relay sessions (Carrier.swift, docs/PROTOCOL.md §8).
extension Node {
    /// Packets fetched from a carrier and not processed yet, at most (then `receive` is
    /// refused and the transport stops reading until the node catches up).
    static let maxQueuedPacketsPerCarrier = 4_096
    static let maxQueuedBytesPerCarrier = 16 << 20
    /// How long a message a relay stored waits for the recipient's acknowledgement before it
    /// is posted again (the relay keeps one copy of a re-post); a direct link to the
    /// recipient sends it at once.
    static let carriedAckTimeoutMs: Int64 = 3_600_000
    /// The longest wait a relay may impose with a rate limit (its window is an hour).
    static let maxCarrierPauseMs: Int64 = 3_600_000

    /// Opens a carrier for a session that is ready (logged in). Needs the node unlocked:
    /// mailboxes are derived from the identity keys, and a lock ends the session. Due packets
    /// for contacts with no direct link are posted to it at once. `route`: where the user
    /// configured the service (a relay's "host:port"), what the node tracks it by; `relay`:
    /// the identifier the relay stated (§8.2), which names its mailboxes.
    public func openCarrier(transport: String, route: String, relay: [UInt8], callbacks: CarrierCallbacks) throws -> Carrier {
        var effects = Effects()
        let carrier = try withUnlocked { store, _, s -> Carrier in
            let id = s.delivery.nextLinkID
            s.delivery.nextLinkID += 1
            let carrier = Carrier(id: id, transport: transport, route: route, relay: relay, node: self, callbacks: callbacks)
            s.delivery.carriers[id] = CarrierState(carrier: carrier)
            noteStatedIdentifier(carrier, &s, &effects)
            noteActivity(transport, &s)
            try pump(store, &s, &effects)
            return carrier
        }
        perform(effects)
        return carrier
    }

    /// The keys of the mailboxes our contacts post to for us at `relay` (§8.2), one per
    /// contact, to subscribe with. Needs the node unlocked.
    public func incomingMailboxes(relay: [UInt8]) throws -> [SigningKey] {
        try withUnlocked { store, _, s in
            guard let directory = try peers(store, &s) else { return [] }
            return try directory.byContact.keys.sorted().compactMap { try directory.byContact[$0]?.route.incomingMailbox(relay: relay) }
        }
    }

    /// Whether a relay session would have anything to do: a contact, whose mailbox we
    /// subscribe to and to whom we post (without one there is nothing to receive or send,
    /// and a relay transport holds no session, §8.3). Needs the node unlocked.
    public func hasRelayWork() throws -> Bool {
        try withUnlocked { store, _, s in !(try peers(store, &s)?.byContact.isEmpty ?? true) }
    }

    /// The relay-only key this node logs in to `relay` ("host:port") with: random, made the
    /// first time and kept sealed in the store (§8.2). Needs the node unlocked.
    public func relayPseudonym(for relay: String) throws -> SigningKey {
        try withUnlocked { store, keys, _ in try store.relayPseudonym(relay, cipher: keys.cipher) }
    }

    func carrierAccepted(_ carrier: Carrier, _ ids: [MessageID]) {
        var effects = Effects()
        try? withStore { store, s in
            guard s.delivery.carriers[carrier.id] != nil else { return }
            let t = now
            try store.db.transaction {
                for id in ids where s.delivery.inflight[id]?.link == carrier.id {
                    s.delivery.inflight.remove(id)
                    guard let row = try store.outboxRow(id) else { continue }
                    switch row.kind {
                    case .ack:
                        try store.removeOutbox(id)
                    case .message:
                        guard row.state == .queued else { continue }
                        // Sent, but not done with: without the recipient's ack by the deadline
                        // it goes again (a relay may lose what it stored).
                        try store.markCarried(id, until: t + Node.carriedAckTimeoutMs)
                        s.delivery.ackWatch.carried(id, route: carrier.route, deadline: t + Node.carriedAckTimeoutMs)
                        if let keys = s.keys, let m = try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher),
                           m.status != .sent, m.status != .delivered {
                            _ = try setStatus(id, .sent, store, keys, &effects)
                        }
                    }
                }
            }
            noteActivity(carrier.transport, &s)
            try pump(store, &s, &effects)
        }
        perform(effects)
    }

    func carrierRefused(_ carrier: Carrier, _ id: MessageID, error: YaOKError, retryAfterMs: Int64?) {
        var effects = Effects()
        try? withStore { store, s in
            guard s.delivery.inflight[id]?.link == carrier.id else { return }
            s.delivery.inflight.remove(id)
            guard s.keys != nil else { return }
            if error.code == .rateLimited {
                // Not a failure: the message waits, still pending, and nothing more goes to
                // this carrier until the service says it may (AC-042-04).
                let wait = min(max(retryAfterMs ?? 60_000, 1_000), Node.maxCarrierPauseMs)
                let until = now + wait
                if var c = s.delivery.carriers[carrier.id], c.pausedUntil < until {
                    c.pausedUntil = until
                    s.delivery.carriers[carrier.id] = c
                    let minutes = (wait + 59_999) / 60_000
                    effects.events.append(.transportNotice(TransportNotice(
                        transport: carrier.transport,
                        message: "Rate limit reached. Try again in \(minutes) \(minutes == 1 ? "minute" : "minutes").",
                        retryAfterMs: wait)))
                }
                if let row = try store.outboxRow(id), row.state == .queued {
                    try store.setOutbox(id, state: .queued, attempts: row.attempts, nextAttemptAt: until)
                }
            } else {
                try failAttempt(id, store, &s, &effects)
            }
            try pump(store, &s, &effects)
        }
        perform(effects)
    }

    func carrierReceived(_ carrier: Carrier, _ packet: [UInt8]) -> Bool {
        let post = state.withLock { s -> Bool? in
            guard s.store != nil, var c = s.delivery.carriers[carrier.id],
                  c.queued < Node.maxQueuedPacketsPerCarrier, c.queuedBytes + packet.count <= Node.maxQueuedBytesPerCarrier,
                  s.delivery.inboundBytes + packet.count <= Node.maxQueuedBytesTotal else { return nil }
            c.queued += 1
            c.queuedBytes += packet.count
            s.delivery.carriers[carrier.id] = c
            s.delivery.inboundBytes += packet.count
            s.delivery.inbound.append((carrier.id, packet))
            defer { s.delivery.drainPosted = true }
            return !s.delivery.drainPosted
        }
        guard let post else { return false }
        if post { loop.post { [weak self] in self?.drainInbound() } }
        return true
    }

    /// Closes a carrier: from its transport (`Carrier.close`) or from the node (locked,
    /// closing; then the transport's `closed` callback runs). Packets in flight on it go
    /// back to the outbox as they were, due at once: the session ending is not their
    /// failure (a relay session expires every hour), and posting again is idempotent.
    func closeCarrier(_ carrier: Carrier, reason: String, notifyTransport: Bool) {
        var effects = Effects()
        let removed = (try? withStore { store, s -> Bool in
            guard s.delivery.carriers.removeValue(forKey: carrier.id) != nil else { return false }
            for id in s.delivery.inflight.ids(on: carrier.id) { s.delivery.inflight.remove(id) }
            s.delivery.carrierOut.removeAll { $0.carrier === carrier }
            if s.keys != nil { try pump(store, &s, &effects) }
            return true
        }) ?? false
        guard removed else { return }
        perform(effects)
        if notifyTransport { carrier.callbacks.closed(reason) }
    }

    /// Ends every carrier's session (the node locked or is closing).
    func closeCarriers(reason: String) {
        let carriers = state.withLock { s in s.delivery.carriers.values.map(\.carrier) }
        for c in carriers { closeCarrier(c, reason: reason, notifyTransport: true) }
    }

    /// Due packets of contacts that no direct link serves go to the first carrier that is
    /// not paused (direct links are preferred: AC-042-05).
    func pumpCarriers(served: Set<Int64>, _ store: Store, _ s: inout NodeState) throws {
        let t = now
        let open = s.delivery.carriers.values.filter { $0.pausedUntil <= t }.map(\.carrier).sorted { $0.id < $1.id }
        guard s.keys != nil, let first = open.first else { return }
        // Rows already in flight are due too: ask for enough to get past them, IDs first
        // (their packets are loaded only to be sent).
        let due = try store.dueOutboxIDs(contactID: nil, excluding: served, now: t,
                                         limit: Node.pumpBatch + s.delivery.inflight.count)
        var posts: [UInt64: [CarrierPost]] = [:]
        var count = 0
        for id in due where s.delivery.inflight[id] == nil {
            guard count < Node.pumpBatch else { break }
            // A message whose ack did not come through one relay goes through another if
            // one is connected (Node+CarrierAckWatch.swift): by configured route, not by the
            // identifier a relay states (a liar can state an honest relay's).
            let carrier = CarrierAckWatch.pick(open, avoiding: s.delivery.ackWatch.missedAt[id] ?? []) ?? first
            guard s.delivery.inflight.bytes(on: carrier.id) < Node.linkWindowBytes else { continue }
            guard let row = try store.outboxRow(id), !served.contains(row.contactID),
                  let mailbox = s.delivery.peers?.outgoingMailbox(row.contactID, relay: carrier.relay) else { continue }
            posts[carrier.id, default: []].append(CarrierPost(mailbox: mailbox.id, mailboxKey: mailbox.key,
                                                              packetID: row.packetID, packet: row.packet))
            count += 1
            s.delivery.inflight.add(row.packetID, link: carrier.id, deadline: t + RetrySchedule.attemptTimeoutMs,
                                    bytes: row.packet.count)
        }
        for carrier in open {
            guard let batch = posts[carrier.id] else { continue }
            s.delivery.carrierOut.append((carrier, .post(batch)))
            noteActivity(carrier.transport, &s)
        }
    }

    /// A routed packet from a carrier, inside the inbound batch's transaction. The carrier
    /// is told to delete it when it was taken (or was already), and when it can never be
    /// (not for us, tampered): a relay would otherwise bring it back every session. Packets
    /// refused for a passing reason (our clock, our storage) stay for a later session.
    func receiveFromCarrier(_ bytes: [UInt8], on carrierID: UInt64, _ store: Store, _ s: inout NodeState,
                            _ effects: inout Effects) throws {
        do {
            try receiveRouted(bytes, on: carrierID, store, &s, &effects)
        } catch let error as YaOKError where error.code != .diskFull && error.code != .storage {
            // Malformed (a relay checks headers, so only a faulty one sends these): it can
            // never be taken.
            if let (header, _) = try? RoutedHeader.parse(bytes) { release([header.messageID], on: carrierID, &s) }
        }
    }

    /// Queues a release of `ids` to carrier `carrierID` (a carrier's "receipt").
    func release(_ ids: [MessageID], on carrierID: UInt64, _ s: inout NodeState) {
        guard let carrier = s.delivery.carriers[carrierID]?.carrier else { return }
        s.delivery.carrierOut.append((carrier, .release(ids)))
    }

    /// Counts a refused packet from a carrier against its transport's hour; returns the
    /// count so far this hour (the caller logs only the first few).
    func countCarrierRejection(_ carrierID: UInt64, _ s: inout NodeState) -> Int? {
        guard let transport = s.delivery.carriers[carrierID]?.carrier.transport else { return nil }
        let t = now
        var entry = s.delivery.carrierRejections[transport] ?? (0, t)
        if t - entry.since >= 3_600_000 { entry = (0, t) }
        entry.count += 1
        s.delivery.carrierRejections[transport] = entry
        return entry.count
    }

    /// Contacts changed: carriers subscribe again, and running transports hear of it (a
    /// relay transport that held no session for want of a contact connects). Transports
    /// are told from the loop, after this locked section.
    func notifyCarriersOfContacts(_ s: inout NodeState) {
        for c in s.delivery.carriers.values { s.delivery.carrierOut.append((c.carrier, .mailboxesChanged)) }
        let running = s.delivery.transports.values.filter { $0.phase == .running }.map(\.transport)
        guard !running.isEmpty else { return }
        loop.post { for t in running { t.contactsChanged() } }
    }

    /// Hands queued carrier commands to their transports (event thread, after `outgoing`).
    func flushCarrierCommands(_ commands: [(carrier: Carrier, command: CarrierCommand)]) {
        for (carrier, command) in commands {
            switch command {
            case .post(let posts): carrier.callbacks.post(posts)
            case .release(let ids): carrier.callbacks.release(ids)
            case .mailboxesChanged: carrier.callbacks.mailboxesChanged()
            }
        }
    }
}
