import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Forward secrecy in the engine (docs/PROTOCOL.md §13), when `forwardSecrecy` is on: the
/// contact's key ring is read from the store, changed and written back within the engine's
/// transaction, so a rolled-back batch leaves it as it was.
extension DeliveryEngine {
    /// Seals a message to `peer`: to its newest receiver key when it has announced one,
    /// else to its long-term key (§13.5), counted per contact so diagnostics can say so.
    mutating func sealMessage(_ body: [UInt8], to peer: PeerDirectory.Peer, createdMs: Int64,
                              messageID: MessageID = .random(),
                              lifetimeMinutes: UInt16 = SealedMessage.defaultLifetimeMinutes,
                              _ store: Store, _ keys: UnlockedKeys) throws -> (header: RoutedHeader, packet: [UInt8]) {
        if forwardSecrecy {
            var ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
            if let key = ring.peerKey {
                let sealed = try SealedMessage.sealForwardSecret(body, from: keys.identity, receiverKey: key,
                                                                 announce: try ring.announcement(nowMs: now),
                                                                 createdMs: createdMs, messageID: messageID,
                                                                 lifetimeMinutes: lifetimeMinutes, route: peer.route)
                ring.sent(messageID: sealed.header.messageID.bytes, peerKeyID: key.id, expiresMs: sealed.header.expiresAtMs)
                try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
                return sealed
            }
            longTermSeals[peer.contactID, default: 0] += 1
        }
        return try SealedMessage.seal(body, from: keys.identity, to: peer.identity.encryptionKey, createdMs: createdMs,
                                      messageID: messageID, lifetimeMinutes: lifetimeMinutes, route: peer.route)
    }

    /// Opens a message from `peer`: as §13.2 when its selector names a receiver key we hold
    /// for `peer` (then the ring learns the announcement, and may mint), else as §3.1.
    mutating func openMessage(_ header: RoutedHeader, _ payload: [UInt8], from peer: PeerDirectory.Peer,
                              _ store: Store, _ keys: UnlockedKeys) throws -> Envelope.Opened {
        if forwardSecrecy {
            var ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
            if SealedMessage.isForwardSecret(payload, receiverKeys: ring.openingKeys) {
                let opened = try SealedMessage.openForwardSecret(header, payload: payload, by: keys.identity,
                                                                 matchedSender: peer.identity.encryptionKey,
                                                                 receiverKeys: ring.openingKeys)
                try ring.opened(with: opened.openedWith, announced: opened.announced, nowMs: now)
                ring.enforceCap()
                try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
                return opened.envelope(senderKey: peer.identity.encryptionKey)
            }
        }
        return try SealedMessage.open(header, payload: payload, by: keys.identity, matchedSender: peer.identity.encryptionKey)
    }

    /// The acks for `messageIDs` (none: a release-only ack) to `peer`: §6.2's while the
    /// contact has announced nothing (with one release-only ack beside it, which tells a
    /// contact of this version our key and which an older one drops, §13.5), else one ack
    /// with our announcement.
    mutating func acks(_ messageIDs: [MessageID], to peer: PeerDirectory.Peer, _ store: Store,
                       _ keys: UnlockedKeys) throws -> [(header: RoutedHeader, packet: [UInt8])] {
        let t = now
        guard forwardSecrecy else {
            return [try DeliveryAck.seal(messageIDs, key: peer.outgoingAckKey, route: peer.route, createdMs: t)]
        }
        var ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
        let announcement = try ring.announcement(nowMs: t)
        try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
        if ring.peerKey != nil {
            return [try ForwardSecretAck.seal(messageIDs, announcement: announcement, key: peer.outgoingAckKey,
                                              route: peer.route, createdMs: t)]
        }
        var out: [(header: RoutedHeader, packet: [UInt8])] = []
        if !messageIDs.isEmpty {
            out.append(try DeliveryAck.seal(messageIDs, key: peer.outgoingAckKey, route: peer.route, createdMs: t))
        }
        out.append(try ForwardSecretAck.seal([], announcement: announcement, key: peer.outgoingAckKey,
                                             route: peer.route, createdMs: t))
        return out
    }

    /// Opens an ack from `peer` in either form; with an announcement the ring takes it, and
    /// when it settles the last of our messages and moves the release, a release-only ack
    /// goes back (§13.3 rule 6). nil: not an ack from `peer`.
    mutating func openAck(_ header: RoutedHeader, _ payload: [UInt8], from peer: PeerDirectory.Peer,
                          _ store: Store, _ keys: UnlockedKeys?) throws -> [MessageID]? {
        if let ids = DeliveryAck.open(header, payload: payload, key: peer.incomingAckKey) { return ids }
        guard forwardSecrecy, let keys,
              let (ids, announcement) = ForwardSecretAck.open(header, payload: payload, key: peer.incomingAckKey) else { return nil }
        var ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
        try ring.acknowledged(ids.map(\.bytes), announced: announcement, nowMs: now)
        ring.enforceCap()
        try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
        if !ids.isEmpty, ring.pending.isEmpty, ring.releaseAdvances(nowMs: now) {
            for ack in try acks([], to: peer, store, keys) {
                try store.enqueue(.ack, packetID: ack.header.messageID, contactID: peer.contactID, packet: ack.packet,
                                  now: now, expiresAt: ack.header.expiresAtMs)
            }
        }
        return ids
    }

    /// §13.3 rule 5, at most hourly (the delivery sweep, which at an unlock runs after the
    /// held packets were opened): erases every contact's receiver keys past their retention.
    mutating func expireReceiverKeysIfDue(_ store: Store, _ keys: UnlockedKeys) throws {
        let t = now
        guard lastKeyExpiry == .min || t - lastKeyExpiry >= 3_600_000 || t < lastKeyExpiry else { return }
        lastKeyExpiry = t
        for contactID in try store.contactsWithReceiverKeys() {
            var ring = try store.receiverKeyRing(contactID: contactID, cipher: keys.cipher)
            if !ring.expire(nowMs: t).isEmpty {
                try store.saveReceiverKeyRing(ring, contactID: contactID, cipher: keys.cipher)
            }
        }
    }
}
