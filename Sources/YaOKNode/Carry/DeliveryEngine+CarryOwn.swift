import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// This node's own carried packets (docs/PROTOCOL.md §12.6): the carried copy of each
/// message sent (made after the send: DeliveryEngine+CarryOwnCopies), its mail opened from carried packets, carried acks both ways, and the
/// claims published when a message is delivered.
extension DeliveryEngine {
    /// The depositor token of this node's own packets (their quota is not a stranger's).
    static let ownDepositor: CarryDepositor = (try? CarryDepositor(Array("own".utf8))) ?? .random()

    /// The policy for own packets: the store's caps, no hourly quota (sending is not abuse;
    /// own packets are taken with `quota: false`, so none is counted either).
    private var ownPolicy: CarryPolicy {
        var p = carry.policy
        p.depositorPacketsPerHour = 1 << 30
        p.depositorBytesPerHour = 1 << 50
        return p
    }

    /// A carried copy of our message to `peer` (sealed for a batch of copies, in its
    /// transaction: DeliveryEngine+CarryOwnCopies), into the carry store (so the first
    /// stranger met takes it; a full store only means no copy, the routed path stays) and
    /// offered on every meeting, its claim remembered for the delivery.
    mutating func keepOwnCarried(_ packet: CarriedPacket, _ content: CarriedContent, to peer: PeerDirectory.Peer,
                                 _ store: Store) throws {
        guard case .taken(let entry, _) = try store.takeOwnCarried(packet, from: Self.ownDepositor, nowMs: now,
                                                                   policy: ownPolicy) else { return }
        try store.rememberOwnCarried(Store.OwnCarried(messageID: content.id.bytes, contactID: peer.contactID,
                                                      packetID: entry.id, claim: content.claim,
                                                      expiresAtMs: entry.expiresAtMs))
        try offerEverywhere(entry.id, store)
    }

    /// Opens a carried packet that contact `contactID` sent us (its tag matched) and applies
    /// it: a message is stored through the one inbound path (exactly once), acknowledged
    /// both ways (a routed ack, and a carried ack sealed into our store), and its claim
    /// published; an ack marks our messages delivered and publishes its claim and theirs.
    /// Returns whether it opened (a packet that fails to open is refused, not stored).
    mutating func openOwnCarried(_ packet: CarriedPacket, from contactID: Int64, _ store: Store, _ keys: UnlockedKeys) throws -> Bool {
        guard let peer = try directory(store, keys)?.byContact[contactID] else { return false }
        let content: CarriedContent
        do {
            content = try openCarried(packet, from: peer, store, keys)
        } catch let error as YaOKError where error.code != .storage && error.code != .diskFull {
            carry.counters.packetsRefused += 1
            return false
        }
        try store.removeCarried(packet.identity)
        switch content.kind {
        case .message(let text):
            if try storeIncoming(text, messageID: content.id, sentAt: content.createdMs, from: peer, keys, store) {
                carry.counters.messagesDeliveredThroughCarriers += 1
                if carry.mode != .off {
                    let ack = try CarriedContent.ack([content.id], createdMs: max(now, content.createdMs))
                    let sealed = try sealCarried(ack, to: peer, store, keys)
                    if case .taken(let entry, _) = try store.takeCarried(sealed.encode(), from: Self.ownDepositor,
                                                                          nowMs: now, policy: ownPolicy, quota: false) {
                        try offerEverywhere(entry.id, store)
                    }
                }
            }
            try queueAck(content.id, to: peer, store, keys)
            try publishClaims([content.claim], store)
        case .ack(let ids):
            var claims = [content.claim]
            try carriedAcknowledged(ids, from: peer, store, keys)
            for id in ids {
                if let own = try store.ownCarried(messageID: id.bytes), own.contactID == contactID { claims.append(own.claim) }
                try markDelivered(id, contactID: contactID, store, keys)
            }
            carry.counters.acksThroughCarriers += 1
            try publishClaims(claims, store)
        }
        return true
    }

    /// Message `id` to `contactID` was acknowledged (by any path): its carried copy is
    /// deleted and its claim published, so the copies strangers carry stop too.
    mutating func ownCarriedDelivered(_ id: MessageID, contactID: Int64, _ store: Store) throws {
        guard let own = try store.ownCarried(messageID: id.bytes), own.contactID == contactID else { return }
        try store.removeCarried(own.packetID)
        try store.forgetOwnCarried(messageID: id.bytes)
        if carry.mode != .off { try publishClaims([own.claim], store) }
    }

    /// After an unlock: the carried packets taken while locked that are ours, opened.
    mutating func openOwnHeldCarried(_ store: Store, _ keys: UnlockedKeys?) throws {
        guard let keys, let tags = try carriedTags(store, keys), tags.count > 0 else { return }
        var after: CarryKey?
        while true {
            let page = try store.carriedPackets(after: after, nowMs: now, limit: 500)
            for packet in page {
                if let contact = tags.sender(of: packet) { _ = try openOwnCarried(packet, from: contact, store, keys) }
            }
            guard page.count == 500, let last = page.last else { break }
            after = CarryKey(expiresAtMs: last.expiresAtMs, id: last.identity)
        }
    }
}
