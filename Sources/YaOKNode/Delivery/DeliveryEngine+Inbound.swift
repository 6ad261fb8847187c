import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The engine's inbound pipeline for routed packets (docs/PROTOCOL.md §6): time → duplicate →
/// (held while locked) → routing tag (which contact sent it) → open → store → ack →
/// receipt → event.
extension Node {
    /// New seen-packet records one link may cause per minute; beyond it packets are still
    /// delivered, only not remembered (a retransmission is then caught by the message ID).
    static let recordsPerLinkPerMinute = 2_000

    /// Packets a locked node holds at most (all links together), and bytes: past either,
    /// arrivals get no receipt, so their senders keep them and try again later.
    static let maxHeldPackets = 2_000
    static let maxHeldBytes = 24 << 20
    /// Rejected messages (unknown sender, failed authentication) one link may cause before
    /// it is closed; each link logs at most `maxRejectionsLoggedPerLink` of them.
    static let maxRejectionsPerLink = 32
    static let maxRejectionsLoggedPerLink = 3
}

extension DeliveryEngine {
    /// One routed packet from a link. A receipt goes back only when the packet was taken:
    /// stored or applied, held while locked, or already taken before (a duplicate). A packet
    /// refused (stranger, tampered, not for us, outside its time window) gets none, so an
    /// honest sender keeps it and tries again — e.g. once the recipient has added them.
    mutating func receiveRouted(_ bytes: [UInt8], on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        let (header, range) = try RoutedHeader.parse(bytes)
        do {
            try header.checkTime(nowMs: now)
        } catch {
            // A clock far off on either side: drop this packet only (the link is fine), and
            // say so in diagnostics. No receipt: the sender tries again.
            lastClockSkew = (linkID, header.createdMs - now)
            return
        }
        guard header.lifetimeMinutes <= Node.maxAcceptedLifetimeMinutes else {
            throw YaOKError(.malformedPacket, "Packet lifetime \(header.lifetimeMinutes) minutes exceeds the accepted maximum")
        }
        let payload = Array(bytes[range])
        let digest = PacketDigest.of(header, payload: payload)
        let seen = store.seen
        // Only what was opened and stored is ever recorded, so a stranger's junk under a
        // genuine packet's ID costs the genuine packet nothing.
        if try seen.contains(digest.value) {
            try sendReceipt([header.messageID], on: linkID)
            return
        }
        guard keys != nil else {
            // Locked: keep it as it came, confirm receipt, open it on unlock — within bounds,
            // since a locked node cannot tell contacts from strangers.
            let (count, bytesHeld) = try store.heldTotals()
            guard count < Node.maxHeldPackets, bytesHeld + bytes.count <= Node.maxHeldBytes else { return }
            _ = try store.hold(bytes, digest: digest.bytes, now: now)
            try sendReceipt([header.messageID], on: linkID)
            return
        }
        guard try process(header, payload, on: linkID, store, keys) else {
            // Refused for good (not ours, tampered): a relay may delete it (§8.3).
            release([header.messageID], on: linkID)
            return
        }
        try record(digest, header, on: linkID, seen)
        try sendReceipt([header.messageID], on: linkID)
    }

    /// Opens and applies one routed packet with the keys. Returns whether it was taken
    /// (stored or applied) and should be remembered; rejects are logged and dropped.
    mutating func process(_ header: RoutedHeader, _ payload: [UInt8], on linkID: UInt64?, _ store: Store, _ keys: UnlockedKeys?) throws -> Bool {
        guard let keys, try directory(store, keys) != nil else { return false }
        // The routing tag names the sender (docs/PROTOCOL.md §4.3): only a contact and we can
        // compute it. None matches → someone else's packet, or a stranger's: dropped (no
        // forwarding yet), not logged, as nothing in it can be checked.
        let senders = peers?.senders(of: header) ?? []
        guard !senders.isEmpty else {
            // Dropped without a word, but counted: a link that sends nothing else is closed.
            _ = countRejection(on: linkID)
            return false
        }
        switch header.type {
        case .message:
            for peer in senders {
                let opened: Envelope.Opened
                do {
                    opened = try openMessage(header, payload, from: peer, store, keys)
                } catch let error as YaOKError {
                    guard peer.contactID == senders.last?.contactID else { continue }  // a tag shared by accident
                    try reject(on: linkID, store, .tamperedMessage,
                               "A message failed authentication and was rejected (\(error.code))")
                    return false
                }
                return try take(opened, from: peer, header, keys, on: linkID, store)
            }
            return false
        case .ack:
            for peer in senders {
                guard let ids = try openAck(header, payload, from: peer, store, keys) else { continue }
                for id in ids { try markDelivered(id, contactID: peer.contactID, store, keys) }
                return true
            }
            return false
        default:
            return false
        }
    }

    /// Stores an opened message from contact `peer` (once) and acknowledges it (every
    /// time). The text is stored exactly as sent (docs/PROTOCOL.md §3, "Message text"); a
    /// body that is not UTF-8 is taken too, each ill-formed part replaced by U+FFFD, and the
    /// security log says so: refusing it would leave an honest but broken sender retrying
    /// for a week, and dropping it after an ack would lose it without a trace.
    private mutating func take(_ opened: Envelope.Opened, from peer: PeerDirectory.Peer, _ header: RoutedHeader,
                      _ keys: UnlockedKeys, on linkID: UInt64?, _ store: Store) throws -> Bool {
        try storeIncoming(opened.body, messageID: header.messageID, sentAt: header.createdMs, from: peer, keys, store)
        // New or a retransmission: either way the sender gets (again) our ack.
        try queueAck(header.messageID, to: peer, store, keys)
        return true
    }

    /// Queues our end-to-end ack of `messageID` to `peer` (a routed ack, §6.2).
    mutating func queueAck(_ messageID: MessageID, to peer: PeerDirectory.Peer, _ store: Store, _ keys: UnlockedKeys) throws {
        let t = now
        for (ackHeader, ackPacket) in try acks([messageID], to: peer, store, keys) {
            try store.enqueue(.ack, packetID: ackHeader.messageID, contactID: peer.contactID, packet: ackPacket,
                              now: t, expiresAt: ackHeader.expiresAtMs)
        }
    }

    /// Stores a message from contact `peer`, once: the one inbound path for routed and
    /// carried messages, so a message that arrives both ways (same message ID in the same
    /// conversation) is delivered once. Returns whether it was new.
    @discardableResult
    mutating func storeIncoming(_ opened: [UInt8], messageID: MessageID, sentAt: Int64, from peer: PeerDirectory.Peer,
                                _ keys: UnlockedKeys, _ store: Store) throws -> Bool {
        var body = opened
        defer { Sodium.wipe(&body) }
        let valid = String(validating: body, as: UTF8.self)
        let text = valid ?? String(decoding: body, as: UTF8.self)
        let t = now
        guard try store.insertMessage(conversation: peer.contactID, messageID: messageID.bytes,
                                      direction: .incoming, status: .delivered, text: text,
                                      senderTimestamp: sentAt, createdAt: t, receivedAt: t,
                                      unread: true, repaired: valid == nil, cipher: keys.cipher) != nil else { return false }
        effects.events.append(.messageReceived(contactID: peer.contactID, messageID: messageID))
        if valid == nil {
            let (summary, logThis, last) = invalidTexts.record(contactID: peer.contactID, now: t)
            if let summary {
                let detail = InvalidTextLog.summary(summary, contactID: peer.contactID)
                effects.events.append(.security(try store.appendSecurityEvent(.invalidText, detail, time: t)))
            }
            if logThis {
                let detail = "A message from contact \(peer.contactID) (ID \(Hex.encode(messageID.bytes))) "
                    + "was not valid UTF-8: stored with U+FFFD in place of the invalid bytes"
                    + (last ? " (more from this contact today are counted, then logged as one summary)" : "")
                effects.events.append(.security(try store.appendSecurityEvent(.invalidText, detail, time: t)))
            }
        }
        return true
    }

    private mutating func record(_ digest: PacketDigest, _ header: RoutedHeader, on linkID: UInt64, _ seen: DuplicateFilter) throws {
        if var link = links[linkID] {
            if now - link.minuteStart >= 60_000 {
                link.minuteStart = now
                link.recordsThisMinute = 0
            }
            guard link.recordsThisMinute < Node.recordsPerLinkPerMinute else { return }
            link.recordsThisMinute += 1
            links[linkID] = link
        }
        try seen.record(digest.value, expiresAtMs: header.expiresAtMs, nowMs: now)
    }

    /// A link receipt, or for a carrier the release of what it delivered.
    private mutating func sendReceipt(_ ids: [MessageID], on linkID: UInt64) throws {
        if carriers[linkID] != nil { return release(ids, on: linkID) }
        try sendOnLink(.receipt(ids), on: linkID)
    }

    /// A rejected message: logged (a few per link, so a stranger cannot flood the security
    /// log), and a link that keeps sending them is closed.
    private mutating func reject(on linkID: UInt64?, _ store: Store, _ kind: SecurityEventKind, _ detail: String) throws {
        let rejections = countRejection(on: linkID)
        guard rejections <= Node.maxRejectionsLoggedPerLink else { return }
        let suffix = rejections == Node.maxRejectionsLoggedPerLink ? " (further rejections on this link are not logged)" : ""
        let event = try store.appendSecurityEvent(kind, detail + suffix, time: now)
        effects.events.append(.security(event))
    }

    /// Counts a refused packet against its link (closed at `maxRejectionsPerLink`); returns
    /// the link's count so far (1 for a packet from no link, e.g. held while locked).
    private mutating func countRejection(on linkID: UInt64?) -> Int {
        if let linkID, let count = countCarrierRejection(linkID) { return count }
        guard let linkID, var link = links[linkID] else { return 1 }
        link.rejections += 1
        links[linkID] = link
        if link.rejections == Node.maxRejectionsPerLink {
            effects.closes.append((link.link, "The link kept sending packets that were refused"))
        }
        return link.rejections
    }

    /// Opens what arrived while locked, one batch of at most `heldBatch` packets (one
    /// transaction; a failure leaves them held for the next try), after first matching the
    /// links that came up while locked and bringing statuses in line. Returns whether more
    /// may be waiting. Does nothing while locked.
    mutating func openHeld(_ store: Store, _ keys: UnlockedKeys?) throws -> Bool {
        guard keys != nil else { return false }
        // Links that came up while locked could not be matched to contacts: match them now.
        contactsChanged(store, keys)
        try reconcileStatuses(store, keys)
        let held = try store.heldPackets(limit: Self.heldBatch)
        try batch(store) { engine in
            for (id, bytes) in held {
                if let (header, range) = try? RoutedHeader.parse(bytes) {
                    let payload = Array(bytes[range])
                    if (try? header.checkTime(nowMs: engine.now)) != nil,
                       try engine.process(header, payload, on: nil, store, keys) {
                        try store.seen.record(PacketDigest.of(header, payload: payload).value,
                                              expiresAtMs: header.expiresAtMs, nowMs: engine.now)
                    }
                }
                try store.removeHeld(id)
            }
            if held.count < Self.heldBatch { try engine.openOwnHeldCarried(store, keys) }
        }
        // Own carried copies a killed process (or a lock) left owed are made now.
        if held.count < Self.heldBatch { _ = try? makeOwnCopies(store, keys) }
        try pump(store, keys, sweep: true)
        return held.count == Self.heldBatch
    }

    static let heldBatch = 200

    /// Receipts and failures that arrived while locked changed the outbox but not the
    /// messages' statuses (those rows are sealed under keys a locked node lacks): bring the
    /// statuses in line with the outbox after an unlock. Row by row, each checked: one that
    /// fails its check is taken out (DeliveryEngine+DamagedOutbox), and a message row that
    /// fails its own is left as it is; either, throwing, would stop the unlock before any
    /// held packet was opened, at every unlock while it stayed.
    mutating func reconcileStatuses(_ store: Store, _ keys: UnlockedKeys?) throws {
        guard let keys else { return }
        for id in try store.outboxIDs(kind: .message) {
            guard let row = try checkedOutboxRow(id, store, keys), row.kind == .message,
                  let m = try checkedOutgoingMessage(id, store, keys) else { continue }
            let expected: MessageStatus = row.state == .sent ? .sent : (row.attempts > 0 ? .failed : .pending)
            if m.status != expected, m.status != .delivered { _ = try setStatus(row.packetID, expected, store, keys) }
        }
    }
}
