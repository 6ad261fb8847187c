import Foundation
@testable import YaOKSupport
@testable import YaOKCrypto

/// Two contacts running docs/PROTOCOL.md §13.3's rules over a network the test controls (a
/// virtual clock, delays, loss, duplicates), with an outbox that re-seals unacknowledged
/// messages to the newest key it knows. Acks are modelled as values (their own AEAD is
/// §6.2's, under the static ack key: it authenticates the announcement, it has nothing to
/// hide). Every message packet to either side is recorded, for the seizure tests.
final class FSParty {
    let identity: Identity
    var ring = ReceiverKeyRing()
    var peer: Identity!
    /// Message ID → body, creation, expiry: what the outbox still resends.
    var outbox: [[UInt8]: (body: [UInt8], created: Int64, expires: Int64)] = [:]
    /// Messages stored (a message opened again, a duplicate or a resend, is not stored twice).
    var stored: Set<[UInt8]> = []
    /// Every successful open, duplicates included.
    var opens = 0
    /// Every message ID this party sent.
    var sentIDs: Set<[UInt8]> = []
    var fallbackSends = 0, expiredOpens = 0
    var maxOwnKeys = 0
    /// Where message IDs come from: seeded in tests that must replay a failing run (the
    /// channel's draws follow the IDs, so random IDs make a run unrepeatable).
    var ids: SeededRandom?
    /// When set, what happened to each message ID (sealed to which key, opened or not,
    /// keys erased): to trace a lost message.
    var trace: ((String) -> Void)?

    init(_ name: String) throws { identity = try Identity(name: name) }

    static let lifetimeMs: Int64 = 14 * 86_400_000
}

struct FSMessage {
    let to: ObjectIdentifier
    let messageID: [UInt8]
    let created: Int64
    let sealed: [UInt8]
}

enum FSPacket {
    case message(FSMessage)
    case ack(to: ObjectIdentifier, ids: [[UInt8]], announcement: Announcement)
}

extension FSParty {
    static func headerAD(_ id: [UInt8]) -> [UInt8] { [0x01, 0x01] + id }

    /// Seals `body` (new, or a resend of `messageID`) as §13.5 says: to the peer's newest key,
    /// or to its long-term key while it has announced none (counted: never silent).
    func seal(_ messageID: [UInt8], _ body: [UInt8], created: Int64, now: Int64) throws -> FSPacket {
        let peerLongTerm = peer.publicIdentity.encryptionKey
        let sealed: [UInt8]
        if let key = ring.peerKey {
            sealed = try ForwardSecretEnvelope.seal(body, from: identity, to: peerLongTerm, receiverKey: key,
                                                    announce: try ring.announcement(nowMs: now), messageID: messageID,
                                                    timestamp: created, associatedData: Self.headerAD(messageID))
            ring.sent(messageID: messageID, peerKeyID: key.id, expiresMs: created + Self.lifetimeMs)
            trace?("\(now) \(identity.name) seals \(hex(messageID)) to key \(key.id) release \(ring.releasedPeer)")
        } else {
            fallbackSends += 1
            sealed = try PacketEnvelope.seal(body, from: identity, to: peerLongTerm, messageID: messageID,
                                             timestamp: created, associatedData: Self.headerAD(messageID))
        }
        return .message(FSMessage(to: ObjectIdentifier(peer), messageID: messageID, created: created, sealed: sealed))
    }

    func send(_ text: String, now: Int64) throws -> FSPacket {
        let id = newMessageID()
        sentIDs.insert(id)
        outbox[id] = (Array(text.utf8), now, now + Self.lifetimeMs)
        return try seal(id, Array(text.utf8), created: now, now: now)
    }

    private func newMessageID() -> [UInt8] {
        guard var seeded = ids else { return (0..<16).map { _ in UInt8.random(in: 0...255) } }
        defer { ids = seeded }
        return (0..<16).map { _ in UInt8.random(in: 0...255, using: &seeded) }
    }

    /// Resends every unacknowledged, unexpired message, sealed anew, oldest first (a fixed
    /// order, not the dictionary's, which changes with each process's hash seed).
    func resend(now: Int64) throws -> [FSPacket] {
        outbox = outbox.filter { $0.value.expires > now }
        let order = outbox.sorted {
            $0.value.created != $1.value.created ? $0.value.created < $1.value.created : $0.key.lexicographicallyPrecedes($1.key)
        }
        return try order.map { try seal($0.key, $0.value.body, created: $0.value.created, now: now) }
    }

    /// Takes a packet; returns what goes back (an ack, or a release-only ack).
    func receive(_ packet: FSPacket, from sender: FSParty, now: Int64) throws -> [FSPacket] {
        let before = Set(ring.own.map(\.pair.key.id))
        defer {
            ring.expire(nowMs: now)
            maxOwnKeys = max(maxOwnKeys, ring.own.count)
            let gone = before.subtracting(ring.own.map(\.pair.key.id))
            if !gone.isEmpty { trace?("\(now) \(identity.name) erased keys \(gone.sorted()) (own now \(ring.own.map(\.pair.key.id)))") }
        }
        switch packet {
        case .ack(_, let ids, let announcement):
            for id in ids { outbox[id] = nil }
            trace?("\(now) \(identity.name) ack \(ids.map(hex)) announcing key \(announcement.key.id) release \(announcement.release)")
            try ring.acknowledged(ids, announced: announcement, nowMs: now)
            // Nothing else to send and the release moved: tell the peer (§13.3 rule 6).
            if outbox.isEmpty, ring.releaseAdvances(nowMs: now) {
                return [.ack(to: ObjectIdentifier(sender.identity), ids: [], announcement: try ring.announcement(nowMs: now))]
            }
            return []
        case .message(let m):
            if let opened = try openForwardSecret(m, from: sender, now: now) {
                try ring.opened(with: opened.openedWith, announced: opened.announced, nowMs: now)
                trace?("\(now) \(identity.name) opened \(hex(m.messageID)) with key \(opened.openedWith); heard key \(opened.announced.key.id) release \(opened.announced.release)")
            } else if let fallback = try? PacketEnvelope.open(m.sealed, by: identity, senderKey: sender.identity.publicIdentity.encryptionKey,
                                                              messageID: m.messageID, timestamp: m.created,
                                                              associatedData: Self.headerAD(m.messageID)) {
                _ = fallback
                trace?("\(now) \(identity.name) opened \(hex(m.messageID)) with the long-term key")
            } else {
                trace?("\(now) \(identity.name) cannot open \(hex(m.messageID)) (selector \(hex(Array(m.sealed[0..<4])))) own \(ring.own.map(\.pair.key.id))")
                return []
            }
            opens += 1
            stored.insert(m.messageID)
            return [.ack(to: ObjectIdentifier(sender.identity), ids: [m.messageID], announcement: try ring.announcement(nowMs: now))]
        }
    }

    /// nil when no retained key's selector matches (then §3.1 is tried); an `expired`
    /// outcome is counted.
    private func openForwardSecret(_ m: FSMessage, from sender: FSParty, now: Int64) throws -> ForwardSecretEnvelope.Opened? {
        guard m.sealed.count >= ForwardSecretEnvelope.minLength else { return nil }
        let ephemeral = Array(m.sealed[4..<36])
        let matches = ring.openingKeys.contains { ForwardSecretEnvelope.selector(receiverKey: $0.key.publicKey, ephemeral: ephemeral) == Array(m.sealed[0..<4]) }
        guard matches else { return nil }
        do {
            return try ForwardSecretEnvelope.open(m.sealed, by: identity, senderKey: sender.identity.publicIdentity.encryptionKey,
                                                  receiverKeys: ring.openingKeys, messageID: m.messageID,
                                                  timestamp: m.created, associatedData: Self.headerAD(m.messageID))
        } catch let error as YaOKError where error.code == .expired {
            expiredOpens += 1
            return nil
        }
    }
}

/// What an attacker holding `identity`'s long-term secret and `keys` (a seized or copied
/// ring) opens among `recorded` packets from `sender`.
func openedBySeizure(_ recorded: [FSMessage], identity: Identity, keys: [ReceiverKeyPair], sender: Identity) -> Int {
    recorded.filter { m in
        let senderKey = sender.publicIdentity.encryptionKey
        if (try? ForwardSecretEnvelope.open(m.sealed, by: identity, senderKey: senderKey, receiverKeys: keys,
                                            messageID: m.messageID, timestamp: m.created,
                                            associatedData: FSParty.headerAD(m.messageID))) != nil { return true }
        return (try? PacketEnvelope.open(m.sealed, by: identity, senderKey: senderKey, messageID: m.messageID,
                                         timestamp: m.created, associatedData: FSParty.headerAD(m.messageID))) != nil
    }.count
}

private func hex(_ bytes: [UInt8]) -> String { bytes.prefix(4).map { String(format: "%02x", $0) }.joined() }
