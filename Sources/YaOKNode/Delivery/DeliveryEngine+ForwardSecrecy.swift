import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Forward secrecy in the engine (docs/PROTOCOL.md §13): sealing to receiver keys and
/// announcing them when `forwardSecrecy` is on; opening what was sealed to them, and
/// settling by acks what was sent under them, whatever it says (turned off, nothing sealed
/// while it was on is lost). The contact's key ring is read from the store, changed and
/// written back within the engine's transaction, so a rolled-back batch leaves it as it was.
extension DeliveryEngine {
    /// Seals a message to `peer`: to its newest receiver key when it has announced one, else
    /// to its card's prekey while that is at most 7 days past its day (§13.4), else to its
    /// long-term key (§13.5), counted per contact in the store so diagnostics can
    /// say so, also after a restart.
    mutating func sealMessage(_ body: [UInt8], to peer: PeerDirectory.Peer, createdMs: Int64,
                              messageID: MessageID = .random(),
                              lifetimeMinutes: UInt16 = SealedMessage.defaultLifetimeMinutes,
                              _ store: Store, _ keys: UnlockedKeys) throws -> (header: RoutedHeader, packet: [UInt8]) {
        if forwardSecrecy {
            var ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
            if let (key, announce) = try sealingKey(to: peer, &ring) {
                let sealed = try SealedMessage.sealForwardSecret(body, from: keys.identity, receiverKey: key,
                                                                 announce: announce,
                                                                 createdMs: createdMs, messageID: messageID,
                                                                 lifetimeMinutes: lifetimeMinutes, route: peer.route)
                ring.sent(messageID: sealed.header.messageID.bytes, peerKeyID: key.id, expiresMs: sealed.header.expiresAtMs)
                try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
                return sealed
            }
            try store.countLongTermSeal(contactID: peer.contactID, cipher: keys.cipher)
        }
        return try SealedMessage.seal(body, from: keys.identity, to: peer.identity.encryptionKey, createdMs: createdMs,
                                      messageID: messageID, lifetimeMinutes: lifetimeMinutes, route: peer.route)
    }

    /// The one choice of the key a message to `peer` is sealed to (§13.5): its newest
    /// receiver key with our announcement (which may mint our first key and moves the
    /// release in `ring`), or nil for its long-term key. `sealMessage` and the planned sends
    /// of `Node.send` (DeliveryEngine+SendPlan) both ask it.
    func sealingKey(to peer: PeerDirectory.Peer, _ ring: inout ReceiverKeyRing) throws -> (key: ReceiverKey, announce: Announcement)? {
        guard let key = ring.sealingKey(nowMs: now) else { return nil }
        return (key, try ring.announcement(nowMs: now))
    }

    /// Opens a message from `peer`: as §13.2 when its selector names a receiver key we hold
    /// for `peer` or one of our prekeys (§13.4) (then the ring learns the announcement, and may mint), else as §3.1.
    mutating func openMessage(_ header: RoutedHeader, _ payload: [UInt8], from peer: PeerDirectory.Peer,
                              _ store: Store, _ keys: UnlockedKeys) throws -> Envelope.Opened {
        // Whatever `forwardSecrecy` says: off stops sealing and announcing, not opening
        // what contacts sealed to keys announced while it was on (§13.5: nothing is lost).
        do {
            var ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
            var openingKeys = ring.openingKeys
            // The prekeys (§13.4) only when no per-contact key matches: reading them costs a
            // row and an X25519 base multiplication each, for the rare first messages.
            if !SealedMessage.isForwardSecret(payload, receiverKeys: openingKeys) {
                openingKeys += try store.prekeys(cipher: keys.cipher)
            }
            if SealedMessage.isForwardSecret(payload, receiverKeys: openingKeys) {
                let opened = try SealedMessage.openForwardSecret(header, payload: payload, by: keys.identity,
                                                                 matchedSender: peer.identity.encryptionKey,
                                                                 receiverKeys: openingKeys)
                try ring.opened(with: opened.openedWith, announced: opened.announced, nowMs: now)
                ring.enforceCap()
                try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
                return opened.envelope(senderKey: peer.identity.encryptionKey)
            }
        }
        return try SealedMessage.open(header, payload: payload, by: keys.identity, matchedSender: peer.identity.encryptionKey)
    }

    /// Seals a carried packet to `peer` (§13.6): like `sealMessage`, to its newest receiver
    /// key when it has announced one, else to its long-term key (§10.4; a message was
    /// counted once, by `sealMessage`). A message stays unsettled under that key until the
    /// carried copy's expiry, 14 days, not only the routed copy's; an ack is never
    /// acknowledged, so it holds back no release.
    mutating func sealCarried(_ content: CarriedContent, to peer: PeerDirectory.Peer,
                              _ store: Store, _ keys: UnlockedKeys) throws -> CarriedPacket {
        guard forwardSecrecy else { return try Self.sealCarried(content, as: .longTerm, to: peer, by: keys.identity) }
        var ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
        let choice = try sealChoice(to: peer, &ring)
        let packet = try Self.sealCarried(content, as: choice, to: peer, by: keys.identity)
        if case .receiver = choice {
            Self.recordCarried(content, packet, as: choice, in: &ring)
            try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
        }
        return packet
    }

    /// Seals `content` to `peer` as `choice` says: pure computation, also outside the
    /// node's lock (the own carried copies: DeliveryEngine+CarryOwnCopies).
    static func sealCarried(_ content: CarriedContent, as choice: SealChoice, to peer: PeerDirectory.Peer,
                            by identity: Identity) throws -> CarriedPacket {
        switch choice {
        case .longTerm:
            return try CarriedSeal.seal(content, from: identity, route: peer.route)
        case .receiver(let key, let announce):
            return try CarriedSeal.sealForwardSecret(content, from: identity, route: peer.route, receiverKey: key,
                                                     announce: announce)
        }
    }

    /// The ring told of a carried message sealed to a receiver key: unsettled under it until
    /// the packet's expiry (or the later one it already had).
    static func recordCarried(_ content: CarriedContent, _ packet: CarriedPacket, as choice: SealChoice,
                              in ring: inout ReceiverKeyRing) {
        guard case .receiver(let key, _) = choice, case .message = content.kind else { return }
        let expires = max(packet.expiresAtMs, ring.pending[content.id.bytes]?.expiresMs ?? .min)
        ring.sent(messageID: content.id.bytes, peerKeyID: key.id, expiresMs: expires)
    }

    /// Opens a carried packet from `peer` (its tag matched): as §13.6 when its selector
    /// names a receiver key we hold for `peer` (the ring learns the announcement, as for a
    /// routed message), else as §10.4.
    mutating func openCarried(_ packet: CarriedPacket, from peer: PeerDirectory.Peer,
                              _ store: Store, _ keys: UnlockedKeys) throws -> CarriedContent {
        do {  // whatever the option says, as openMessage
            var ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
            var openingKeys = ring.openingKeys
            if !CarriedSeal.isForwardSecret(packet, receiverKeys: openingKeys) {
                openingKeys += try store.prekeys(cipher: keys.cipher)  // as for a routed message
            }
            if CarriedSeal.isForwardSecret(packet, receiverKeys: openingKeys) {
                let opened = try CarriedSeal.openForwardSecret(packet, by: keys.identity,
                                                               senderKey: peer.identity.encryptionKey,
                                                               receiverKeys: openingKeys)
                try ring.opened(with: opened.openedWith, announced: opened.announced, nowMs: now)
                ring.enforceCap()
                try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
                return opened.content
            }
        }
        return try CarriedSeal.open(packet, by: keys.identity, senderKey: peer.identity.encryptionKey)
    }

    /// A carried ack from `peer` settled `ids` (§10.7): they stop holding back the release,
    /// and when that moves it, the release-only ack goes back as after a routed ack (§13.3
    /// rule 6), rather than waiting for our next packet to the contact.
    mutating func carriedAcknowledged(_ ids: [MessageID], from peer: PeerDirectory.Peer,
                                      _ store: Store, _ keys: UnlockedKeys) throws {
        // Whatever the option says, as a routed ack (`openAck`): messages sealed to a
        // receiver key while it was on stop holding back the release (they held it until
        // their expiry when the option was off by the time their carried ack came). Off, a
        // ring that holds none of `ids` is not written (nor read to change).
        if !forwardSecrecy {
            let ring = try store.receiverKeyRing(contactID: peer.contactID, cipher: keys.cipher)
            guard ids.contains(where: { ring.pending[$0.bytes] != nil }) else { return }
        }
        var ring = try store.receiverKeyRingToChange(contactID: peer.contactID, cipher: keys.cipher)
        try ring.acknowledged(ids.map(\.bytes), announced: nil, nowMs: now)
        let release = try releaseIfSettled(ids, &ring, to: peer)
        try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
        try enqueue(release, to: peer, store)
    }

    /// §13.3 rule 6: an ack settled `ids` and left none of our messages to `peer` unsettled;
    /// if the release would advance, a release-only ack (routed) tells the contact so. Made
    /// on the caller's `ring`, which it writes once with what the ack changed (the ring's
    /// state was written twice at each ack that released, each a sealed row).
    private func releaseIfSettled(_ ids: [MessageID], _ ring: inout ReceiverKeyRing,
                                  to peer: PeerDirectory.Peer) throws -> [(header: RoutedHeader, packet: [UInt8])] {
        // Off announces nothing, so there is no release to send: a §6.2 ack has 1 to 255 IDs,
        // and making an empty one threw, which refused the contact's ack every time it came
        // (the message never delivered) when its last message sealed while on settled.
        guard forwardSecrecy, !ids.isEmpty, ring.pending.isEmpty, ring.releaseAdvances(nowMs: now) else { return [] }
        return try Self.acks([], to: peer, ring: &ring, createdMs: now)
    }

    private func enqueue(_ acks: [(header: RoutedHeader, packet: [UInt8])], to peer: PeerDirectory.Peer, _ store: Store) throws {
        for ack in acks {
            try store.enqueue(.ack, packetID: ack.header.messageID, contactID: peer.contactID, packet: ack.packet,
                              now: now, expiresAt: ack.header.expiresAtMs)
        }
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
        let out = try Self.acks(messageIDs, to: peer, ring: &ring, createdMs: t)
        try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
        return out
    }

    /// The acks of `acks(_:to:_:_:)` made on `ring`, which takes their announcement (and
    /// may mint); the caller writes it.
    static func acks(_ messageIDs: [MessageID], to peer: PeerDirectory.Peer, ring: inout ReceiverKeyRing,
                     createdMs t: Int64) throws -> [(header: RoutedHeader, packet: [UInt8])] {
        let announcement = try ring.announcement(nowMs: t)
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
        guard let keys,  // whatever the option says, as openMessage
              let (ids, announcement) = ForwardSecretAck.open(header, payload: payload, key: peer.incomingAckKey) else { return nil }
        var ring = try store.receiverKeyRingToChange(contactID: peer.contactID, cipher: keys.cipher)
        try ring.acknowledged(ids.map(\.bytes), announced: announcement, nowMs: now)
        ring.enforceCap()
        let release = try releaseIfSettled(ids, &ring, to: peer)
        try store.saveReceiverKeyRing(ring, contactID: peer.contactID, cipher: keys.cipher)
        try enqueue(release, to: peer, store)
        return ids
    }

    /// §13.3 rule 5, at most hourly (the delivery sweep, which at an unlock runs after the
    /// held packets were opened): erases every contact's receiver keys past their retention,
    /// and the prekeys 23 days after their day (§13.4).
    mutating func expireReceiverKeysIfDue(_ store: Store, _ keys: UnlockedKeys) throws {
        let t = now
        guard lastKeyExpiry == .min || t - lastKeyExpiry >= 3_600_000 || t < lastKeyExpiry else { return }
        lastKeyExpiry = t
        try store.expirePrekeys(nowMs: t)
        for contactID in try store.contactsWithReceiverKeys() {
            var ring: ReceiverKeyRing
            do {
                ring = try store.receiverKeyRing(contactID: contactID, cipher: keys.cipher)
            } catch let error as YaOKError where error.code == .corruptStore {
                try noteDamagedRing(contactID, store)
                continue
            }
            if !ring.expire(nowMs: t).isEmpty {
                try store.saveReceiverKeyRing(ring, contactID: contactID, cipher: keys.cipher)
            }
        }
    }

    /// A ring that fails its check (a row changed in the file, or damaged on disk) is left
    /// as it is, and the expiry goes on with the next contact: stopping there, as it did,
    /// kept every later contact's keys past their retention, hour after hour. Its keys
    /// cannot be read, so none is used either. Logged once per contact while the node runs,
    /// not every hour.
    private mutating func noteDamagedRing(_ contactID: Int64, _ store: Store) throws {
        guard damagedRingsLogged.insert(contactID).inserted else { return }
        let detail = "The forward-secrecy keys of contact \(contactID) failed their integrity check (changed outside Ya OK, or damaged on disk): left as they are, not expired"
        effects.events.append(.security(try store.appendSecurityEvent(.receiverKeysDamaged, detail, time: now)))
    }
}
