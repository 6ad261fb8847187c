import YaOKSupport
import YaOKWire
import YaOKCrypto

/// Contacts as the delivery engine needs them: by X25519 key, with the pair's route key
/// and ack keys both ways, and the tags they send us under, per UTC day.
struct PeerDirectory {
    struct Peer {
        let contactID: Int64
        let identity: PublicIdentity
        /// The pair key of our routing tags (docs/PROTOCOL.md §4.3), both directions.
        let route: RoutePair
        /// Acks we send to them / they send to us.
        let outgoingAckKey: SecureBytes
        let incomingAckKey: SecureBytes
    }
    var byKey: [[UInt8]: Peer] = [:]
    var byContact: [Int64: Peer] = [:]
    /// UTC day → the tag each contact sends us under that day → the contact(s). Filled
    /// lazily for the days packets carry; a packet that passed the time checks is at most
    /// 14 days old and 15 minutes ahead, so a handful of days are ever live.
    var incomingTags: [UInt32: [RoutingTag: [Int64]]] = [:]
    static let maxCachedDays = 32
    /// Relay mailboxes we post to, per relay identifier and contact (§8.2): derived on
    /// first use.
    var outgoingMailboxes: [[UInt8]: [Int64: (id: MailboxID, key: SigningKey)]] = [:]

    /// The mailbox we post to for `contactID` at `relay` (nil: no such contact).
    mutating func outgoingMailbox(_ contactID: Int64, relay: [UInt8]) -> (id: MailboxID, key: SigningKey)? {
        if let known = outgoingMailboxes[relay]?[contactID] { return known }
        guard let peer = byContact[contactID], let key = try? peer.route.outgoingMailbox(relay: relay),
              let id = try? MailboxID(bytes: key.publicKey) else { return nil }
        // A handful of relays at most; one that changed its identifier leaves a stale entry.
        if outgoingMailboxes[relay] == nil, outgoingMailboxes.count >= 8 { outgoingMailboxes.removeAll() }
        outgoingMailboxes[relay, default: [:]][contactID] = (id, key)
        return (id, key)
    }

    /// The contacts whose tag `header` carries for its creation day: the packet's sender,
    /// if it is for us (two contacts sharing a tag is a 2⁻⁶⁴ accident; both are returned).
    /// Empty for a packet for someone else, and for a stranger's: the two look alike.
    mutating func senders(of header: RoutedHeader) -> [Peer] {
        let day = RoutingTag.day(ofMs: header.createdMs)
        if incomingTags[day] == nil {
            if incomingTags.count >= Self.maxCachedDays, let oldest = incomingTags.keys.min() {
                incomingTags[oldest] = nil
            }
            var table: [RoutingTag: [Int64]] = [:]
            for peer in byContact.values { table[peer.route.incomingTag(day: day), default: []].append(peer.contactID) }
            incomingTags[day] = table
        }
        return (incomingTags[day]?[header.routingTag] ?? []).sorted().compactMap { byContact[$0] }
    }

    /// The contact a link's peer is: matched by both keys, never by the X25519 key alone,
    /// since anybody can sign a link certificate that pairs someone else's X25519 key with
    /// their own Ed25519 key (docs/PROTOCOL.md §5.1).
    func contact(for peer: PublicIdentity) -> Int64? {
        guard let match = byKey[peer.encryptionKey], match.identity == peer else { return nil }
        return match.contactID
    }
}
