import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// `Node.send` in three steps, so that sealing runs outside the node's lock and one disk
/// sync serves every send that waits for it (docs/ARCHITECTURE.md, "Sending"):
///
/// 1. `planSend`, under the lock: the contacts, strictly increasing sender times, message
///    IDs, the key each message is sealed to (`sealingKey`, §13.5) and a ticket. No write.
/// 2. `seal`, outside it, on the caller's thread: the routed packet, then the message row's
///    encrypted body and MAC and the outbox row's MAC (`SealedSend.rows`). (Its carried copy
///    is made later, off the app's thread: DeliveryEngine+CarryOwnCopies, §12.6.)
/// 3. `commitSends`, under the lock, for every send handed in since the last commit
///    (SendCommitQueue): each key choice is checked against the contact's ring as it is
///    now, the ring's record of what was sealed to which key and the long-term count are
///    written in the same transaction as the rows, and a send whose choice went stale (an
///    announcement arrived in between) is sealed again there (its outbox row MACed again).
///    The rows themselves are only bound and inserted under the lock. So what is stored is exactly
///    what one send at a time under the lock would have stored.

/// The key a send is sealed to: the contact's receiver key with our announcement, or its
/// long-term key (§13.5).
enum SealChoice: Sendable, Equatable {
    case longTerm
    case receiver(ReceiverKey, announce: Announcement)
}

/// One message of a send, planned under the lock.
struct PlannedMessage: Sendable {
    let text: String
    let peer: PeerDirectory.Peer
    let messageID: MessageID
    let createdMs: Int64
    let choice: SealChoice
}

/// One message sealed outside the lock.
struct SealedOutgoing: Sendable {
    let plan: PlannedMessage
    let header: RoutedHeader
    let packet: [UInt8]
}

/// A send (one call: a message or a batch, all or nothing) sealed and waiting for its
/// commit; `keys` are the keys it was planned with (a lock in between refuses it).
struct SealedSend: Sendable {
    let keys: UnlockedKeys
    let messages: [SealedOutgoing]
    /// Each message's rows, sealed here on the caller's thread with the store's cipher, so
    /// that the commit under the lock only binds them (an error is the send's, at its commit).
    let rows: Result<[OutgoingRows], any Error>

    init(keys: UnlockedKeys, messages: [SealedOutgoing]) {
        self.keys = keys
        self.messages = messages
        rows = Result { try messages.map { try OutgoingRows($0, cipher: keys.cipher) } }
    }

    /// Seals `planned` (step 2) with its rows, the messages spread over the processors
    /// (`ConcurrentMap`): each message's seals are independent of the others', and a batch
    /// is sealed in full before its first packet can leave (200 × 10 KB: ~60 of a round's
    /// ~210 ms on one core of two, `yaok-bench bulk`). Concurrent sends already seal on
    /// their callers' threads at once, so nothing here is new to run in parallel.
    init(keys: UnlockedKeys, planned: [PlannedMessage]) throws {
        let each = try ConcurrentMap.map(planned) { plan -> (SealedOutgoing, Result<OutgoingRows, any Error>) in
            let message = try DeliveryEngine.seal(plan, by: keys.identity)
            return (message, Result { try OutgoingRows(message, cipher: keys.cipher) })
        }
        self.keys = keys
        messages = each.map(\.0)
        rows = Result { try each.map { try $0.1.get() } }
    }
}

/// One sealed message's message and outbox rows: functions of what was planned (message
/// ID, text, contact, sender time, status `pending`) and of the packet. A message sealed
/// again at its commit keeps its message row and gets a new outbox row (`resealed`).
struct OutgoingRows: Sendable {
    let message: SealedMessageRow
    let outbox: SealedOutboxRow

    init(_ sealed: SealedOutgoing, cipher: FieldCipher) throws {
        let plan = sealed.plan
        message = try SealedMessageRow(conversation: plan.peer.contactID, messageID: plan.messageID, direction: .outgoing,
                                       status: .pending, text: plan.text, senderTimestamp: plan.createdMs,
                                       createdAt: plan.createdMs, receivedAt: nil, unread: false, cipher: cipher)
        outbox = Self.outbox(sealed, cipher: cipher)
    }

    private init(message: SealedMessageRow, outbox: SealedOutboxRow) {
        self.message = message
        self.outbox = outbox
    }

    /// These rows for `sealed`, the same message sealed again.
    func resealed(_ sealed: SealedOutgoing, cipher: FieldCipher) -> OutgoingRows {
        OutgoingRows(message: message, outbox: Self.outbox(sealed, cipher: cipher))
    }

    private static func outbox(_ sealed: SealedOutgoing, cipher: FieldCipher) -> SealedOutboxRow {
        SealedOutboxRow(.message, packetID: sealed.plan.messageID, contactID: sealed.plan.peer.contactID,
                        packet: sealed.packet, expiresAt: sealed.header.expiresAtMs, cipher: cipher)
    }
}

extension DeliveryEngine {
    /// Step 1, under the lock: plans `batch` and takes its ticket (the last thing, so that a
    /// refused batch takes none). Writes nothing, but for a ring that had to mint our first
    /// key to announce it: that one is kept at once (a key too many is harmless; one
    /// announced and not kept would make the contact's replies unreadable).
    mutating func planSend(_ batch: [(contactID: Int64, text: String)], _ store: Store,
                           _ keys: UnlockedKeys) throws -> (ticket: UInt64, messages: [PlannedMessage]) {
        let contacts = try directory(store, keys)
        var rings: [Int64: ReceiverKeyRing] = [:]
        let planned = try batch.map { item -> PlannedMessage in
            guard let peer = contacts?.byContact[item.contactID] else {
                throw YaOKError(.notFound, try store.conversationExists(item.contactID)
                                ? "This contact was deleted and can no longer be messaged" : "No such contact")
            }
            var choice = SealChoice.longTerm
            if forwardSecrecy {
                var ring = try rings[peer.contactID] ?? store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
                let minted = ring.lastID
                choice = try sealChoice(to: peer, &ring)
                if ring.lastID != minted { try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher) }
                rings[peer.contactID] = ring
            }
            // Strictly increasing sender times: the recipient orders by them, so
            // messages sent within one millisecond still show in the order written.
            let t = max(now, lastSentAt + 1)
            lastSentAt = t
            return PlannedMessage(text: item.text, peer: peer, messageID: .random(), createdMs: t, choice: choice)
        }
        defer { nextSendTicket += 1 }
        return (nextSendTicket, planned)
    }

    /// `sealingKey` as a `SealChoice`.
    func sealChoice(to peer: PeerDirectory.Peer, _ ring: inout ReceiverKeyRing) throws -> SealChoice {
        guard let (key, announce) = try sealingKey(to: peer, &ring) else { return .longTerm }
        return .receiver(key, announce: announce)
    }

    /// Step 2, outside the lock: seals `plan`'s routed packet as `choice` says. Pure
    /// computation on the caller's thread.
    static func seal(_ plan: PlannedMessage, as choice: SealChoice, by identity: Identity) throws -> SealedOutgoing {
        let body = Array(plan.text.utf8)
        let peer = plan.peer
        let routed: (header: RoutedHeader, packet: [UInt8])
        switch choice {
        case .longTerm:
            routed = try SealedMessage.seal(body, from: identity, to: peer.identity.encryptionKey, createdMs: plan.createdMs,
                                            messageID: plan.messageID, route: peer.route)
        case .receiver(let key, let announce):
            routed = try SealedMessage.sealForwardSecret(body, from: identity, receiverKey: key, announce: announce,
                                                         createdMs: plan.createdMs, messageID: plan.messageID,
                                                         route: peer.route)
        }
        return SealedOutgoing(plan: plan, header: routed.header, packet: routed.packet)
    }

    static func seal(_ plan: PlannedMessage, by identity: Identity) throws -> SealedOutgoing {
        try seal(plan, as: plan.choice, by: identity)
    }

    /// Step 3, under the lock, by the committer: every send of `sends` (in ticket order) in
    /// one transaction, each all or nothing within it (a savepoint: a send refused for
    /// itself leaves the others), then one pump. A send alone in its group (one sender at a
    /// time: nearly always) has no savepoint: refused, it rolls the whole transaction back,
    /// which holds nothing else (a savepoint costs SQLite a copy of every page the send
    /// changes, ~4 % of a send's instructions). Returns each send's result; throws when
    /// the store fails (a write or the commit), and then nothing of any send was stored
    /// (every caller gets the error: none is told a message was sent).
    mutating func commitSends(_ sends: [SealedSend], _ store: Store, _ keys: UnlockedKeys) throws -> [Result<[Message], any Error>] {
        var results: [Result<[Message], any Error>] = []
        var owingCopies: [(id: MessageID, contactID: Int64)] = []
        let alone = sends.count == 1
        do {
            try batch(store) { engine in
                var rings = SendRings()
                for send in sends {
                    guard send.keys === keys else {
                        results.append(.failure(YaOKError(.locked, "The node was locked while the message was sealed")))
                        continue
                    }
                    let mark = engine.effects.mark
                    // A send that fails leaves the rings as they were (alone, it fails the group).
                    let saved = alone ? [:] : rings.checkpoint()
                    do {
                        let sealed = Array(zip(send.messages, try send.rows.get()))
                        let messages = alone
                            ? try sealed.map { try engine.commitOne($0, $1, &rings, store, keys) }
                            : try store.db.transaction { try sealed.map { try engine.commitOne($0, $1, &rings, store, keys) } }
                        rings.keepChanges()
                        if engine.carry.mode != .off { owingCopies += messages.map { ($0.messageID, $0.conversationID) } }
                        engine.effects.events += messages.map { .messageStored($0) }
                        results.append(.success(messages))
                    } catch let error as YaOKError where error.code == .storage || error.code == .diskFull {
                        // The store failed, not this send: SQLite may have rolled the whole
                        // transaction back (SQLITE_FULL does), so the group fails with it.
                        throw error
                    } catch {
                        if alone { throw RefusedAlone(error: error) }  // its writes roll back with the batch
                        engine.effects.rollback(to: mark)
                        rings.rollBack(to: saved)
                        results.append(.failure(error))
                    }
                }
                // Every ring read, changed or not: the store let go of its copy's sends while the
                // group held it (receiverKeyRingToChange), and a ring unchanged writes nothing.
                // No savepoint: an error here fails the whole group.
                for (contactID, ring) in rings.byContact.sorted(by: { $0.key < $1.key }) {
                    try store.saveReceiverKeyRing(ring, contactID: contactID, cipher: keys.cipher, savepoint: false)
                }
                if let fault = engine.sendCommitFault { throw fault }
            }
        } catch let refused as RefusedAlone {
            results = [.failure(refused.error)]
        }
        // Their carried copies are made by the engine's next batch (the timer the pump sets).
        carry.ownCopies.append(owingCopies, at: now)
        // Stored: the sends succeeded whatever the pump does now (a store error there is
        // retried by the delivery timer; telling the callers "failed" would make them send
        // a second copy).
        try? pump(store, keys)
        // Not durable until the group's sync (Node.writeSendGroup): other sections' pumps
        // leave them alone until then; this pump's units go out after it.
        unsyncedSends.hold(results.flatMap { (try? $0.get())?.map(\.messageID) ?? [] })
        return results
    }

    /// One message of a group: the key choice checked (sealed again under the lock if it
    /// went stale), the ring told or the long-term seal counted, its rows (sealed outside
    /// the lock) written.
    private mutating func commitOne(_ sealed: SealedOutgoing, _ sealedRows: OutgoingRows, _ rings: inout SendRings,
                                    _ store: Store, _ keys: UnlockedKeys) throws -> Message {
        let plan = sealed.plan
        let contactID = plan.peer.contactID
        var message = sealed
        var rows = sealedRows
        // Its own carried copy is owed (§12.6): flagged on the outbox row, made later.
        let carried = carry.mode != .off
        if forwardSecrecy {
            // Taken out of the group's rings while it changes, so that telling it of one more
            // message does not copy the up to 4,096 it remembers (put back below).
            var ring = try rings.byContact.removeValue(forKey: contactID)
                ?? store.receiverKeyRingToChange(contactID: contactID, cipher: keys.cipher)
            // Back in the group's rings whatever happens: a refused send rolls it back there.
            defer { rings.byContact[contactID] = ring }
            let choice = try sealChoice(to: plan.peer, &ring)
            if choice != plan.choice {
                let start = EventLoop.monotonicNanoseconds()
                message = try Self.seal(plan, as: choice, by: keys.identity)
                rows = rows.resealed(message, cipher: keys.cipher)
                reseals.count += 1
                reseals.nanos += EventLoop.monotonicNanoseconds() - start
            }
            switch choice {
            case .receiver(let key, _):
                ring.sent(messageID: plan.messageID.bytes, peerKeyID: key.id, expiresMs: message.header.expiresAtMs)
                if carried {
                    // Unsettled under that key until the carried copy's expiry too (§13.6),
                    // from now: the copy made later changes nothing here when sealed to
                    // the same key, so the batch writes no ring for it.
                    let copyExpires = Int64(try CarriedPacket.expiryHour(createdMs: plan.createdMs,
                                                                         lifetimeMs: CarriedSeal.defaultLifetimeMs))
                        * CarriedPacket.hourMs
                    let expires = max(copyExpires, ring.pending[plan.messageID.bytes]?.expiresMs ?? .min)
                    ring.sent(messageID: plan.messageID.bytes, peerKeyID: key.id, expiresMs: expires)
                }
            case .longTerm:
                try store.countLongTermSeal(contactID: contactID, cipher: keys.cipher)
            }
        }
        guard let stored = try store.insertMessage(rows.message) else {
            throw YaOKError(.internal, "A fresh message ID collided")
        }
        // Due now, every one: the sender times run ahead of the clock by a millisecond a
        // message, and queued at those times a batch of n went out one a millisecond, the
        // delivery timer bringing the next (LAN batches capped at ~1,000 messages/s).
        try store.enqueue(rows.outbox, now: now, owesCarriedCopy: carried)
        return stored
    }
}

/// A send alone in its group refused for itself (not for the store): thrown out of the
/// group's transaction so that it rolls back, in place of the savepoint of a larger group.
private struct RefusedAlone: Error {
    let error: any Error
}

/// The rings of the contacts a group commit sealed to: read once, told of every message,
/// written once at the end of the group.
private struct SendRings {
    var byContact: [Int64: ReceiverKeyRing] = [:]

    /// Every ring as it is now (ReceiverKeyRing.checkpoint: each ring's sends stay its own,
    /// uncopied), for `rollBack(to:)` when the next send is refused.
    mutating func checkpoint() -> [Int64: ReceiverKeyRing.Checkpoint] {
        var saved: [Int64: ReceiverKeyRing.Checkpoint] = [:]
        for contactID in Array(byContact.keys) { saved[contactID] = byContact[contactID]?.checkpoint() }
        return saved
    }

    mutating func keepChanges() {
        for contactID in Array(byContact.keys) { byContact[contactID]?.keepChanges() }
    }

    /// Back to the rings of `saved`; a ring read since is dropped (unchanged on disk, and the
    /// store reads it again when next asked).
    mutating func rollBack(to saved: [Int64: ReceiverKeyRing.Checkpoint]) {
        for contactID in Array(byContact.keys) {
            if let checkpoint = saved[contactID] { byContact[contactID]?.rollBack(to: checkpoint) } else { byContact[contactID] = nil }
        }
    }
}
