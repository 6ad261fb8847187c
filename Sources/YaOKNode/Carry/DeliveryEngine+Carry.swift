import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Meetings (docs/PROTOCOL.md §12): when a link opens, the two nodes reconcile their carry
/// stores (§11), offer what the other lacks, hand over what is asked for (binary
/// spray-and-wait, §10.5: DeliveryEngine+CarryHandOver) and spread purge claims. The link
/// hooks are two calls: `carryLinkOpened` when a handshake completes and `receiveCarry` for
/// the carry payloads.
extension DeliveryEngine {
    /// Starts the meeting on a link whose handshake just completed: nothing when carrying is
    /// off. The initiator sends the first reconciliation message.
    mutating func carryLinkOpened(_ linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard carry.mode != .off, let link = links[linkID], link.isOpen else { return }
        try sweepCarryIfDue(store)
        // Copies of messages sent a moment ago, made now (one batch, the oldest owed): the
        // snapshot below holds them; the rest follow on the timer, offered as they are made.
        // (A store failure leaves them owed for the timer's batch; the meeting goes on.)
        _ = try? makeOwnCopies(store, keys)
        let carries = carry.mode == .anyone || link.link.peerIsContact == true
        var session = CarrySession(carries: carries)
        // Not carrying on this link: reconcile as an empty store (the peer learns nothing of
        // ours, and can still offer us our own mail).
        let keysHeld = carries ? try store.carriedKeys(nowMs: now, limit: carry.limits.maxPackets + 1) : []
        let items = try keysHeld.map {
            try ReconciliationItem(expiry: UInt64($0.expiresAtMs / CarriedPacket.hourMs), id: $0.id,
                                   idLength: CarryLinkMessage.identityLength)
        }
        var reconciler = try Reconciler(store: try ReconciliationSet(items, idLength: CarryLinkMessage.identityLength),
                                        role: link.link.role,
                                        parameters: try .standard(idLength: CarryLinkMessage.identityLength),
                                        hash: ReconciliationBLAKE2b())
        let first = link.link.role == .initiator ? try reconciler.initiate() : nil
        session.reconciler = reconciler
        carry.sessions[linkID] = session
        if case .send(let bytes)? = first { try sendReconcile(bytes, on: linkID) }
    }

    /// A relay session became ready (§12.9): this node opens a meeting with it, as the
    /// initiator, in modes `anyone` and `contacts` (the relay is a service the user chose,
    /// and it takes only wait-phase copies); not in `off`.
    mutating func carryRelayOpened(_ carrier: Carrier, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard carry.mode != .off else { return }
        try sweepCarryIfDue(store)
        _ = try? makeOwnCopies(store, keys)  // as for a link: the snapshot holds them
        var session = CarrySession(carries: true)
        session.toRelay = true
        let keysHeld = try store.carriedKeys(nowMs: now, limit: carry.limits.maxPackets + 1)
        let items = try keysHeld.map {
            try ReconciliationItem(expiry: UInt64($0.expiresAtMs / CarriedPacket.hourMs), id: $0.id,
                                   idLength: CarryLinkMessage.identityLength)
        }
        var reconciler = try Reconciler(store: try ReconciliationSet(items, idLength: CarryLinkMessage.identityLength),
                                        role: .initiator,
                                        parameters: try .standard(idLength: CarryLinkMessage.identityLength),
                                        hash: ReconciliationBLAKE2b())
        let first = try reconciler.initiate()
        session.reconciler = reconciler
        carry.sessions[carrier.id] = session
        carry.relayMeetings[carrier.id] = carrier
        if case .send(let bytes) = first { try sendOnLink(.carry(.reconcile(bytes)), on: carrier.id) }
    }

    /// The link closed: its meeting ends; the app hears of it if anything happened.
    mutating func carryLinkClosed(_ linkID: UInt64, _ store: Store) {
        guard let session = carry.sessions.removeValue(forKey: linkID), session.activity else { return }
        emitCarryActivity(store)
    }

    /// One carry payload from a link. Ignored when carrying is off (no meeting). A message
    /// that does not fit the meeting (a packet not asked for, an answer for nothing) is
    /// refused or ignored; only storage failures propagate.
    mutating func receiveCarry(_ message: CarryLinkMessage, on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard carry.sessions[linkID] != nil else { return }
        switch message {
        case .reconcile(let bytes): try receiveReconcile(bytes, on: linkID, store, keys)
        case .offer(let entries): try receiveOffer(entries, on: linkID, store, keys)
        case .request(let ids):
            // Only what was offered, each once: a peer cannot grow the queue by asking again.
            if var session = carry.sessions[linkID] {
                for id in ids where session.offered.contains(id) && session.queued.insert(id).inserted { session.queue.append(id) }
                carry.sessions[linkID] = session
            }
            try handOverQueued(on: linkID, store)
        case .carried(let packet): try receiveCarried(packet, on: linkID, store, keys)
        case .taken(let ids): try receiveAnswer(ids, taken: true, on: linkID, store)
        case .refused(let ids): try receiveAnswer(ids, taken: false, on: linkID, store)
        case .purge(let record): try receivePurge(record, on: linkID, store)
        }
        noteCarryActivity(on: linkID, store)
    }

    // MARK: - Reconciliation

    private mutating func receiveReconcile(_ bytes: [UInt8], on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard var session = carry.sessions[linkID], var reconciler = session.reconciler, !reconciler.isFinished else { return }
        let step: Reconciler.Step
        do {
            step = try reconciler.receive(bytes)
        } catch let error as YaOKError {
            // A message the reconciler refuses ends the exchange (§11), not the link.
            session.reconciler = nil
            carry.sessions[linkID] = session
            throw error
        }
        var out: [[UInt8]] = []
        if reconciler.role == .initiator {
            while let list = reconciler.takeHaveWant() { out.append(list) }
        }
        switch step {
        case .send(let b), .finish(let b): out.append(b)
        case .finished, .budgetExhausted, .idle: break
        }
        session.reconciler = reconciler
        carry.sessions[linkID] = session
        for b in out { try sendReconcile(b, on: linkID) }
        try offer(reconciler.have, on: linkID, store)
    }

    private mutating func sendReconcile(_ bytes: [UInt8], on linkID: UInt64) throws {
        carry.counters.reconciliationBytesSent += bytes.count
        try sendOnLink(.carry(.reconcile(bytes)), on: linkID)
    }

    // MARK: - Offers and requests

    /// Offers the packets in `ids` that this side holds and has not offered on this link,
    /// oldest expiry first, in offers of at most 255.
    mutating func offer(_ ids: [[UInt8]], on linkID: UInt64, _ store: Store) throws {
        guard let session = carry.sessions[linkID], session.carries else { return }
        let settled = recognitionSettled(on: linkID)
        let peer = links[linkID]?.contactID
        var fresh: [CarriedPacket] = []
        for id in ids where !session.offered.contains(id) && !session.settled.contains(id) {
            // Our own copy of a message to this very peer: the message goes over the link
            // itself (routed, §6); its copy is for the strangers who may meet them first.
            // Who the peer is may not be known yet (a meeting for anyone starts on the peer's
            // probe, before its proof): then own copies wait for it (`offerHeldOwnCopies`).
            if !settled || peer != nil, let recipient = try store.ownCarriedRecipient(packetID: id) {
                guard settled else { carry.sessions[linkID]?.heldOwn.insert(id); continue }
                if recipient == peer { continue }
            }
            if let packet = try store.carriedPacket(id), packet.expiresAtMs > now { fresh.append(packet) }
        }
        guard !fresh.isEmpty else { return }
        fresh.sort { a, b in
            a.expiresAtMs != b.expiresAtMs ? a.expiresAtMs < b.expiresAtMs : a.identity.lexicographicallyPrecedes(b.identity)
        }
        let entries = fresh.map {
            // A packet that may travel no further hop can still go to its recipient: shown as
            // waiting (budget 1).
            CarryOffer(identity: $0.identity, routingTag: $0.routingTag, copyBudget: $0.hopLimit == 0 ? 1 : $0.copyBudget,
                       claimHash: $0.claimHash)
        }
        carry.sessions[linkID]?.offered.formUnion(entries.map(\.identity))
        for start in stride(from: 0, to: entries.count, by: CarryLinkMessage.maxEntries) {
            let chunk = Array(entries[start..<min(start + CarryLinkMessage.maxEntries, entries.count)])
            try sendOnLink(.carry(.offer(chunk)), on: linkID)
        }
    }

    /// Whether this side knows who the peer of `linkID` is (PROTOCOL.md §5.9, "settled": a
    /// contact's proof verified, or the peer's probe held none of our contacts' markers). A
    /// relay's meeting is settled: a relay is never a message's recipient.
    func recognitionSettled(on linkID: UInt64) -> Bool {
        guard let link = links[linkID] else { return carry.relayMeetings[linkID] != nil }
        return link.peer != nil || link.probeUnmatched
    }

    /// Recognition settled on `linkID` after its meeting began: the own copies held back
    /// meanwhile are offered now, but those to the peer (`offer`).
    mutating func offerHeldOwnCopies(on linkID: UInt64, _ store: Store) throws {
        guard let held = carry.sessions[linkID]?.heldOwn, !held.isEmpty else { return }
        carry.sessions[linkID]?.heldOwn = []
        try offer(Array(held), on: linkID, store)
    }

    /// Offers a packet that just entered the store (an own message or ack) on every meeting
    /// in progress: they reconciled before it existed.
    mutating func offerEverywhere(_ id: [UInt8], _ store: Store) throws {
        for linkID in carry.sessions.keys.sorted() { try offer([id], on: linkID, store) }
    }

    /// Answers an offer. A packet whose claim this node remembers was delivered: the peer
    /// gets the claim (a purge aimed at a holder, §10.6), not a request. Else it asks for
    /// what is ours (its tag is one our contacts send us under: only this node can tell,
    /// and it never shows its tags), and, when this link carries, what may still spread
    /// (budget ≥ 2) and is not held. A wait-phase packet (budget 1) is asked for only when
    /// it is ours; from a relay, only ours is asked for (§12.9).
    private mutating func receiveOffer(_ entries: [CarryOffer], on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard let session = carry.sessions[linkID] else { return }
        let tags = try carriedTags(store, keys)
        var wanted: [[UInt8]] = []
        var claims: [[UInt8]] = []
        // Packets to carry are asked for only within this link's hourly quota (§10.9): what
        // the store would refuse is not worth the bytes. One's own mail is always asked for.
        let used = try store.carryQuotaUsed(session.depositor, nowMs: now).packets
        var quotaLeft = carry.policy.depositorPacketsPerHour - used - session.asked.count
        for e in entries where !session.asked.contains(e.identity) && !session.settled.contains(e.identity) {
            if let claim = try store.rememberedClaim(hash: e.claimHash, nowMs: now) {
                claims.append(claim)
                continue
            }
            // A peer that offers without end gets asked for a bounded number at a time.
            guard session.asked.count + wanted.count < CarrySession.maxAsked else { continue }
            let ours = tags?.sender(tag: e.routingTag) != nil
            // A relay offers only wait-phase copies (§12.9): one it offers as spreading is not
            // asked for, so a hostile relay cannot fill its clients' stores with copies that
            // evict their wait-phase ones first (§10.9).
            let spread = session.carries && !session.toRelay && Int(e.copyBudget) >= session.minSpreadBudget && quotaLeft > 0
            guard ours || spread, try store.carriedEntry(e.identity) == nil else { continue }
            if !ours { quotaLeft -= 1 }
            wanted.append(e.identity)
        }
        try sendClaims(claims, on: linkID)
        guard !wanted.isEmpty else { return }
        carry.sessions[linkID]?.asked.formUnion(wanted)
        try sendOnLink(.carry(.request(wanted)), on: linkID)
    }

    // MARK: - Purge

    /// A purge record from the peer: every claim is checked against the packets it names
    /// (§10.6) and remembered (§10.9). On a link where this node does not carry (contacts
    /// mode, a stranger) only claims of packets held are remembered: a stranger's claim of a
    /// packet never held would be a value it planted, answered back at a later meeting,
    /// which would recognise this node across days (§12.1, §12.8).
    private mutating func receivePurge(_ record: PurgeRecord, on linkID: UInt64, _ store: Store) throws {
        let carries = carry.sessions[linkID]?.carries ?? false
        let purged = try store.purgeCarried(record, nowMs: now, policy: carry.policy, rememberUnheld: carries)
        carry.counters.packetsPurged += purged.count
        if !purged.isEmpty { carry.sessions[linkID]?.activity = true }
    }

    private mutating func sendClaims(_ claims: [[UInt8]], on linkID: UInt64) throws {
        for start in stride(from: 0, to: claims.count, by: PurgeRecord.maxClaims) {
            let record = try PurgeRecord(claims: Array(claims[start..<min(start + PurgeRecord.maxClaims, claims.count)]))
            try sendOnLink(.carry(.purge(record)), on: linkID)
        }
    }

    /// Publishes claims this node made or opened (§10.6, §10.7): purges its own copies,
    /// remembers them, and tells every meeting in progress at once (the ones that start
    /// later get them with the remembered claims).
    mutating func publishClaims(_ claims: [[UInt8]], _ store: Store) throws {
        guard !claims.isEmpty else { return }
        let record = try PurgeRecord(claims: claims)
        carry.counters.packetsPurged += try store.purgeCarried(record, nowMs: now, policy: carry.policy, own: true).count
        for linkID in carry.sessions.keys.sorted() { try sendClaims(record.claims, on: linkID) }
    }

    // MARK: - Tags, sweep, activity

    /// The carried tags our contacts send us under (unlocked only), advanced to today.
    mutating func carriedTags(_ store: Store, _ keys: UnlockedKeys?) throws -> CarriedTagTable<Int64>? {
        guard keys != nil, let directory = try directory(store, keys) else { return nil }
        let t = now
        var tags = carry.tags ?? CarriedTagTable(routes: directory.byContact.mapValues(\.route), nowMs: t)
        tags.advance(nowMs: t)
        carry.tags = tags
        return tags
    }

    /// Expired packets, claims, quota rows and own-copy records, at most hourly (the timer's
    /// sweep and the first meeting after opening).
    mutating func sweepCarryIfDue(_ store: Store) throws {
        let t = now
        guard carry.lastSweep == .min || t - carry.lastSweep >= 3_600_000 || t < carry.lastSweep else { return }
        carry.lastSweep = t
        _ = try store.sweepCarried(nowMs: t)
        try store.forgetExpiredOwnCarried(nowMs: t)
    }

    /// A `carryActivity` event for a link where something happened, at most once a minute
    /// per link (the rest is told at the next one, or when the link closes).
    private mutating func noteCarryActivity(on linkID: UInt64, _ store: Store) {
        guard let session = carry.sessions[linkID], session.activity,
              session.lastActivityEvent == .min || now - session.lastActivityEvent >= 60_000 else { return }
        let t = now
        carry.sessions[linkID]?.activity = false
        carry.sessions[linkID]?.lastActivityEvent = t
        emitCarryActivity(store)
    }

    mutating func emitCarryActivity(_ store: Store) {
        guard let statistics = try? carryStatistics(store) else { return }
        effects.events.append(.carryActivity(statistics))
    }

    func carryStatistics(_ store: Store) throws -> CarryStatistics {
        let usage = try store.carryUsage()
        let c = carry.counters
        return CarryStatistics(mode: carry.mode, limits: carry.limits, packetsHeld: usage.packets, bytesHeld: usage.bytes,
                               packetsTaken: c.packetsTaken, packetsHandedOn: c.packetsHandedOn,
                               messagesDeliveredThroughCarriers: c.messagesDeliveredThroughCarriers,
                               acksThroughCarriers: c.acksThroughCarriers, packetsPurged: c.packetsPurged,
                               packetsRefused: c.packetsRefused)
    }
}
