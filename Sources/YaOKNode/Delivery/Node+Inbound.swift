import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The inbound pipeline for routed packets (docs/PROTOCOL.md §6): time → duplicate →
/// (held while locked) → routing tag (which contact sent it) → open → store → ack →
/// receipt → event.
extension Node {
    /// New seen-packet records one link may cause per minute; beyond it packets are still
    /// delivered, only not remembered (a retransmission is then caught by the message ID).
    static let recordsPerLinkPerMinute = 2_000

    func receiveRouted(_ bytes: [UInt8], on linkID: UInt64, _ store: Store, _ s: inout NodeState,
                       _ effects: inout Effects) throws {
        let (header, range) = try RoutedHeader.parse(bytes)
        try header.checkTime(nowMs: now)
        guard header.lifetimeMinutes <= Node.maxAcceptedLifetimeMinutes else {
            throw YaOKError(.malformedPacket, "Packet lifetime \(header.lifetimeMinutes) minutes exceeds the accepted maximum")
        }
        let payload = Array(bytes[range])
        let digest = PacketDigest.of(header, payload: payload)
        let seen = store.seen
        // Only what was opened and stored is ever recorded, so a stranger's junk under a
        // genuine packet's ID costs the genuine packet nothing.
        if try seen.contains(digest.value) {
            try sendReceipt([header.messageID], on: linkID, &s, &effects)
            return
        }
        guard s.keys != nil else {
            // Locked: keep it as it came, confirm receipt, open it on unlock.
            _ = try store.hold(bytes, digest: digest.bytes, now: now)
            try sendReceipt([header.messageID], on: linkID, &s, &effects)
            return
        }
        if try process(header, payload, store, &s, &effects) {
            try record(digest, header, on: linkID, seen, &s)
        }
        try sendReceipt([header.messageID], on: linkID, &s, &effects)
    }

    /// Opens and applies one routed packet with the keys. Returns whether it was taken
    /// (stored or applied) and should be remembered; rejects are logged and dropped.
    func process(_ header: RoutedHeader, _ payload: [UInt8], _ store: Store, _ s: inout NodeState,
                 _ effects: inout Effects) throws -> Bool {
        guard let keys = s.keys, try peers(store, &s) != nil else { return false }
        // The routing tag names the sender (docs/PROTOCOL.md §4.3): only a contact and we can
        // compute it. None matches → someone else's packet, or a stranger's: dropped (no
        // forwarding yet), not logged, as nothing in it can be checked.
        let senders = s.delivery.peers?.senders(of: header) ?? []
        switch header.type {
        case .message:
            for peer in senders {
                let opened: Envelope.Opened
                do {
                    opened = try SealedMessage.open(header, payload: payload, by: keys.identity,
                                                    matchedSender: peer.identity.encryptionKey)
                } catch let error as YaOKError {
                    guard peer.contactID == senders.last?.contactID else { continue }  // a tag shared by accident
                    try logAndEmit(store, .tamperedMessage, "A message failed authentication and was rejected (\(error.code))", &effects)
                    return false
                }
                return try take(opened, from: peer, header, keys, store, &effects)
            }
            return false
        case .ack:
            for peer in senders {
                guard let ids = DeliveryAck.open(header, payload: payload, key: peer.incomingAckKey) else { continue }
                for id in ids { try markDelivered(id, contactID: peer.contactID, store, &s, &effects) }
                return true
            }
            return false
        default:
            return false
        }
    }

    /// Stores an opened message from contact `peer` (once) and acknowledges it (every
    /// time). False for a text that is not UTF-8 (rejected and logged).
    private func take(_ opened: Envelope.Opened, from peer: PeerDirectory.Peer, _ header: RoutedHeader,
                      _ keys: UnlockedKeys, _ store: Store, _ effects: inout Effects) throws -> Bool {
        var body = opened.body
        defer { Sodium.wipe(&body) }
        guard let text = String(validating: body, as: UTF8.self), !text.isEmpty else {
            try logAndEmit(store, .tamperedMessage, "A message whose text is not UTF-8 was rejected", &effects)
            return false
        }
        let sentAt = header.createdMs
        let t = now
        if try store.insertMessage(conversation: peer.contactID, messageID: header.messageID.bytes,
                                   direction: .incoming, status: .delivered, text: text,
                                   senderTimestamp: sentAt, createdAt: t, receivedAt: t,
                                   unread: true, cipher: keys.cipher) != nil {
            effects.events.append(.messageReceived(contactID: peer.contactID, messageID: header.messageID))
        }
        // New or a retransmission: either way the sender gets (again) our ack.
        let (ackHeader, ackPacket) = try DeliveryAck.seal([header.messageID], key: peer.outgoingAckKey,
                                                          route: peer.route, createdMs: t)
        try store.enqueue(.ack, packetID: ackHeader.messageID, contactID: peer.contactID, packet: ackPacket,
                          now: t, expiresAt: ackHeader.expiresAtMs)
        return true
    }

    private func record(_ digest: PacketDigest, _ header: RoutedHeader, on linkID: UInt64, _ seen: DuplicateFilter,
                        _ s: inout NodeState) throws {
        if var link = s.delivery.links[linkID] {
            if now - link.minuteStart >= 60_000 {
                link.minuteStart = now
                link.recordsThisMinute = 0
            }
            guard link.recordsThisMinute < Node.recordsPerLinkPerMinute else { return }
            link.recordsThisMinute += 1
            s.delivery.links[linkID] = link
        }
        try seen.record(digest.value, expiresAtMs: header.expiresAtMs, nowMs: now)
    }

    private func sendReceipt(_ ids: [MessageID], on linkID: UInt64, _ s: inout NodeState, _ effects: inout Effects) throws {
        try sendOnLink(.receipt(ids), on: linkID, &s, &effects)
    }

    private func logAndEmit(_ store: Store, _ kind: SecurityEventKind, _ detail: String, _ effects: inout Effects) throws {
        let event = try store.appendSecurityEvent(kind, detail, time: now)
        effects.events.append(.security(event))
    }

    /// Opens what arrived while locked, in batches, after an unlock.
    func processHeld() {
        var effects = Effects()
        let more = (try? withStore { store, s -> Bool in
            guard s.keys != nil else { return false }
            // Links that came up while locked could not be matched to contacts: match them now.
            contactsChangedForDelivery(store, &s, &effects)
            let batch = try store.heldPackets(limit: 200)
            try store.db.transaction {
                for (id, bytes) in batch {
                    if let (header, range) = try? RoutedHeader.parse(bytes) {
                        let payload = Array(bytes[range])
                        if (try? header.checkTime(nowMs: now)) != nil,
                           try process(header, payload, store, &s, &effects) {
                            try store.seen.record(PacketDigest.of(header, payload: payload).value,
                                                                     expiresAtMs: header.expiresAtMs,
                                                                     nowMs: now)
                        }
                    }
                    try store.removeHeld(id)
                }
            }
            try pump(store, &s, &effects, sweep: true)
            return batch.count == 200
        }) ?? false
        perform(effects)
        if more { loop.post { [weak self] in self?.processHeld() } }
    }
}
