import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Sending (US-020, US-022): the outbox, receipts, acknowledgements and retries.
extension Node {
    /// How many packets one link takes per pump before the next turn of the loop.
    static let pumpBatch = 256
    /// How many bytes one link or carrier may have unconfirmed. Below the receiver's queue
    /// for one link (`maxQueuedBytesPerLink`) and the LAN transport's write queue (256 KiB),
    /// so pacing by receipts never trips either; above what the slowest link (Bluetooth LE,
    /// about 600 KiB/s) carries in one receipt's round trip, so it never waits idle.
    static let linkWindowBytes = 128 * 1024
    /// A link on which this side has sent nothing for this long gets a keepalive (§5.4), on
    /// every transport: a radio the app brings has no keepalive of its own, and the peer's
    /// transport closes a link it hears nothing on (Bluetooth LE after 90 s).
    public static let linkKeepaliveMs: Int64 = 20_000

    /// Sends `text` to contact `contactID`: encrypts it, stores it and queues it in one
    /// transaction, and returns the message at once, `pending`. It goes out over the first
    /// link to the contact, in the order sent; it is `sent` when a link confirms receipt,
    /// `delivered` when the recipient's acknowledgement returns, and `failed` (retried after
    /// 1, 5, 15 minutes, then hourly until it expires) when an attempt fails.
    /// Errors: `emptyMessage`, `messageTooLarge` ("Message too large (max 10KB)"), `notFound`.
    @discardableResult
    public func send(to contactID: Int64, text: String) throws -> Message {
        try send([(contactID, text)])[0]
    }

    /// Sends several messages in one transaction: one disk sync for all of them (an app
    /// that sends a batch, or forwards a backlog). All or nothing: if one is refused,
    /// none is stored. Same rules and statuses as `send(to:text:)`.
    @discardableResult
    public func send(_ batch: [(contactID: Int64, text: String)]) throws -> [Message] {
        guard !batch.isEmpty else { return [] }
        for item in batch { try MessageText.validate(item.text) }
        var effects = Effects()
        let messages = try withUnlocked { store, keys, s -> [Message] in
            let directory = try peers(store, &s)
            let sealed = try batch.map { item -> (Int64, String, RoutedHeader, [UInt8]) in
                guard let peer = directory?.byContact[item.contactID] else {
                    throw YaOKError(.notFound, try store.conversationExists(item.contactID)
                                    ? "This contact was deleted and can no longer be messaged" : "No such contact")
                }
                // Strictly increasing sender times: the recipient orders by them, so
                // messages sent within one millisecond still show in the order written.
                let t = max(now, s.delivery.lastSentAt + 1)
                s.delivery.lastSentAt = t
                let (header, packet) = try SealedMessage.seal(Array(item.text.utf8), from: keys.identity,
                                                              to: peer.identity.encryptionKey, createdMs: t,
                                                              route: peer.route)
                return (item.contactID, item.text, header, packet)
            }
            let messages = try store.db.transaction {
                try sealed.map { contactID, text, header, packet -> Message in
                    let t = header.createdMs
                    guard let m = try store.insertMessage(conversation: contactID, messageID: header.messageID.bytes,
                                                          direction: .outgoing, status: .pending, text: text,
                                                          senderTimestamp: t, createdAt: t, receivedAt: nil,
                                                          unread: false, cipher: keys.cipher) else {
                        throw YaOKError(.internal, "A fresh message ID collided")
                    }
                    try store.enqueue(.message, packetID: header.messageID, contactID: contactID, packet: packet,
                                      now: t, expiresAt: header.expiresAtMs)
                    return m
                }
            }
            effects.events += messages.map { .messageStored($0) }
            try pump(store, &s, &effects)
            return messages
        }
        perform(effects)
        return messages
    }

    /// Tries a pending, failed or sent message again now; it is `pending` again until a link
    /// or relay confirms it. `sent` is allowed (docs/PROTOCOL.md §6.1): a relay that stored it
    /// may have lost it, and its ack may never come. One whose packet expired is sealed
    /// afresh (same message ID, new time). `notFound` for no such outgoing message;
    /// `invalidArgument` if it was already delivered.
    @discardableResult
    public func retry(_ messageID: MessageID) throws -> Message {
        var effects = Effects()
        let message = try withUnlocked { store, keys, s -> Message in
            guard let message = try store.outgoingMessage(messageID: messageID.bytes, cipher: keys.cipher) else {
                throw YaOKError(.notFound, "No such outgoing message")
            }
            // `sent` too: a relay may have lost what it stored (the ack never came).
            guard message.status != .delivered else {
                throw YaOKError(.invalidArgument, "This message was already \(message.status.name)")
            }
            let t = now
            if let row = try store.outboxRow(messageID) {
                try store.setOutbox(messageID, state: .queued, attempts: row.attempts, nextAttemptAt: t)
            } else {
                guard let peer = try peers(store, &s)?.byContact[message.conversationID] else {
                    throw YaOKError(.notFound, "This contact was deleted and can no longer be messaged")
                }
                let (header, packet) = try SealedMessage.seal(Array(message.text.utf8), from: keys.identity,
                                                              to: peer.identity.encryptionKey,
                                                              createdMs: t, messageID: messageID, route: peer.route)
                try store.enqueue(.message, packetID: messageID, contactID: message.conversationID, packet: packet,
                                  now: t, expiresAt: header.expiresAtMs)
            }
            let updated = try setStatus(messageID, .pending, store, keys, &effects) ?? message
            try pump(store, &s, &effects)
            return updated
        }
        perform(effects)
        return message
    }

    /// Messages still on their way (pending or failed), in sending order.
    public func outbox() throws -> [OutboxEntry] {
        try withUnlocked { store, keys, s in
            let linked = Set(s.delivery.links.values.filter(\.isOpen).compactMap(\.contactID))
            let carried = !s.delivery.carriers.isEmpty
            return try store.outboxRows(kind: .message).compactMap { row -> OutboxEntry? in
                guard row.state == .queued,
                      let m = try store.outgoingMessage(messageID: row.packetID.bytes, cipher: keys.cipher) else { return nil }
                return OutboxEntry(messageID: row.packetID, contactID: row.contactID, status: m.status,
                                   attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, expiresAt: row.expiresAt,
                                   waitingForTransport: !carried && !linked.contains(row.contactID))
            }
        }
    }

    // MARK: - The engine (under the node's lock)

    /// Hands every due packet to an open link to its recipient, fails attempts whose
    /// receipt is overdue, expires what is too old, and sets the timer for the next due time.
    func pump(_ store: Store, _ s: inout NodeState, _ effects: inout Effects, sweep: Bool = false) throws {
        let t = now
        // Deadlines and expiry are the timer's work: a send or a receipt only dispatches.
        // Overdue attempts fail while locked too: the timer is set by their deadlines, and
        // one that stayed in flight would hold its link's window and bring the timer back at
        // once, forever. Expiry waits for the keys: the message's status must say `failed`.
        if sweep {
            for id in s.delivery.inflight.overdue(at: t) {
                s.delivery.inflight.remove(id)
                try failAttempt(id, store, &s, &effects)
            }
        }
        if sweep, s.keys != nil {
            for (contactID, count) in s.delivery.invalidTexts.endedDays(now: t) {
                let detail = InvalidTextLog.summary(count, contactID: contactID)
                effects.events.append(.security(try store.appendSecurityEvent(.invalidText, detail, time: t)))
            }
            try checkCarriedAcks(store, &s, &effects, now: t)
            try store.requeueCarried(now: t)
            for row in try store.expiredOutbox(now: t) {
                try store.removeOutbox(row.packetID)
                s.delivery.inflight.remove(row.packetID)
                if row.kind == .message, let keys = s.keys {
                    _ = try setStatus(row.packetID, .failed, store, keys, &effects)
                }
            }
        }
        // When one link is due a keepalive, every link half-way there gets one too: one
        // timer wake-up serves them all, not one per link every 20 s.
        if sweep, s.delivery.links.values.contains(where: { $0.isOpen && t - $0.lastSent >= Node.linkKeepaliveMs }) {
            for (linkID, link) in s.delivery.links where link.isOpen && t - link.lastSent >= Node.linkKeepaliveMs / 2 {
                try sendOnLink(.keepalive, on: linkID, &s, &effects)
            }
        }
        // A contact's open links, oldest first: the next one takes over when one's window is
        // full (two links to one contact: over the LAN and Bluetooth, or both directions).
        var linksByContact: [Int64: [UInt64]] = [:]
        for (linkID, link) in s.delivery.links.sorted(by: { $0.key < $1.key }) where link.isOpen {
            if let contact = link.contactID { linksByContact[contact, default: []].append(linkID) }
        }
        let served = Set(linksByContact.keys)
        for (contact, linkIDs) in linksByContact.sorted(by: { $0.key < $1.key }) {
            var sent = 0
            var used = Set<UInt64>()
            // IDs first: rows in flight are still due, and loading (and MAC-checking) their
            // packets at every pump would cost more than sending.
            for due in try store.dueOutboxIDs(contactID: contact, now: t, limit: Node.pumpBatch + s.delivery.inflight.count)
            where s.delivery.inflight[due] == nil {
                guard sent < Node.pumpBatch,
                      let linkID = linkIDs.first(where: { s.delivery.inflight.bytes(on: $0) < Node.linkWindowBytes })
                else { break }
                guard let row = try store.outboxRow(due) else { continue }
                try sendOnLink(.packet(row.packet), on: linkID, &s, &effects)
                s.delivery.inflight.add(row.packetID, link: linkID, deadline: t + RetrySchedule.attemptTimeoutMs,
                                        bytes: row.packet.count)
                sent += 1
                used.insert(linkID)
            }
            for linkID in used { if let link = s.delivery.links[linkID] { noteActivity(link.link.transport, &s) } }
        }
        try pumpCarriers(served: served, store, &s)
        scheduleDeliveryTimer(store, &s)
    }

    /// A link confirmed it took packet `id`.
    func confirmReceipt(_ id: MessageID, _ store: Store, _ s: inout NodeState, _ effects: inout Effects) throws {
        s.delivery.inflight.remove(id)
        guard let row = try store.outboxRow(id) else { return }
        switch row.kind {
        case .ack:
            try store.removeOutbox(id)
        case .message:
            guard row.state == .queued else { return }
            try store.setOutbox(id, state: .sent, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt)
            if let keys = s.keys { _ = try setStatus(id, .sent, store, keys, &effects) }
        }
    }

    /// The recipient acknowledged message `id`: delivered, and off the outbox.
    func markDelivered(_ id: MessageID, contactID: Int64, _ store: Store, _ s: inout NodeState,
                       _ effects: inout Effects) throws {
        guard let keys = s.keys,
              let message = try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher),
              message.conversationID == contactID else { return }  // an ack only counts from the recipient
        try store.removeOutbox(id)
        s.delivery.inflight.remove(id)
        if message.status != .delivered { _ = try setStatus(id, .delivered, store, keys, &effects) }
    }

    /// An attempt failed (no receipt in time, or the link closed first): retry later.
    func failAttempt(_ id: MessageID, _ store: Store, _ s: inout NodeState, _ effects: inout Effects) throws {
        guard let row = try store.outboxRow(id), row.state == .queued else { return }
        let attempts = row.attempts + 1
        try store.setOutbox(id, state: .queued, attempts: attempts, nextAttemptAt: now + RetrySchedule.delay(afterAttempts: attempts))
        if row.kind == .message, let keys = s.keys { _ = try setStatus(id, .failed, store, keys, &effects) }
    }

    @discardableResult
    func setStatus(_ id: MessageID, _ status: MessageStatus, _ store: Store, _ keys: UnlockedKeys,
                   _ effects: inout Effects) throws -> Message? {
        try store.setStatus(messageID: id.bytes, status, now: now)
        guard let m = try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher) else { return nil }
        effects.events.append(.messageStatusChanged(m))
        return m
    }

    /// One timer per node, at the earliest of: the next retry, the next receipt deadline.
    /// The clock is injectable (`Options.clock`), so the timer only wakes the engine; what
    /// is due is decided by the clock, and tests call `runDeliveryTimers()` instead.
    private func scheduleDeliveryTimer(_ store: Store, _ s: inout NodeState) {
        // An hourly sweep at the latest, for expiry.
        let t = now
        let keepalive = s.delivery.links.values.filter(\.isOpen).map { $0.lastSent + Node.linkKeepaliveMs }.min()
        let deadlines = [try? store.nextOutboxAttempt(after: t), s.delivery.inflight.earliestDeadline, keepalive,
                         s.delivery.carriers.values.map(\.pausedUntil).filter { $0 > t }.min(),
                         t + 3_600_000].compactMap { $0 }
        guard let due = deadlines.min() else { return }
        if let current = s.delivery.timerDue, current <= due, s.delivery.timer != nil { return }
        if let timer = s.delivery.timer { loop.cancel(timer) }
        s.delivery.timerDue = due
        let seconds = Double(max(due - now, 0)) / 1000 + 0.001
        s.delivery.timer = loop.schedule(after: min(seconds, 3600)) { [weak self] in self?.runDeliveryTimers() }
    }

    /// What the timer runs: retries and deadlines due now by the node's clock.
    package func runDeliveryTimers() {
        var effects = Effects()
        try? withStore { store, s in
            s.delivery.timer = nil
            s.delivery.timerDue = nil
            try pump(store, &s, &effects, sweep: true)
        }
        perform(effects)
    }
}

/// The one place the 10 KB limit and the empty-text rule are checked (AC-020-04, -05).
public enum MessageText {
    public static let maxBytes = Envelope.maxBodyLength

    public static func validate(_ text: String) throws {
        guard !text.isEmpty, !text.trimmingWhitespace().isEmpty else { throw YaOKError(.emptyMessage, "Message is empty") }
        guard text.utf8.count <= maxBytes else { throw YaOKError(.messageTooLarge) }
    }
}

extension Node {
    /// One message we sent, with its current status. `notFound` if there is none.
    public func outgoingMessage(_ id: MessageID) throws -> Message {
        try withUnlocked { store, keys, _ in
            guard let m = try store.outgoingMessage(messageID: id.bytes, cipher: keys.cipher) else {
                throw YaOKError(.notFound, "No such outgoing message")
            }
            return m
        }
    }
}

extension Node {
    /// One stored message of conversation `conversationID`, incoming or outgoing (what a
    /// `messageReceived` event names). `notFound` if there is none.
    public func message(_ conversationID: Int64, _ id: MessageID) throws -> Message {
        try withUnlocked { store, keys, _ in
            guard let m = try store.message(conversation: conversationID, messageID: id.bytes, cipher: keys.cipher) else {
                throw YaOKError(.notFound, "No such message")
            }
            return m
        }
    }
}
