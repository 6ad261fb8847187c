import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// The delivery engine's state, protected by the node's lock with everything else.
struct DeliveryState {
    var links: [UInt64: LinkState] = [:]
    var nextLinkID: UInt64 = 1
    /// Packets handed to a link or carrier and not yet confirmed by a receipt.
    var inflight = InFlight()
    /// The node's link key and certificate: loaded at the first unlock and kept while locked
    /// (not wiped by `lock`), so links go on in a locked phone (docs/ARCHITECTURE.md).
    var linkKey: LinkKey?
    var linkCertificate: LinkCertificate?
    /// Contacts by X25519 key with their route and ack keys, and the incoming routing tags
    /// of the days seen: built when unlocked, dropped on lock and whenever contacts change.
    var peers: PeerDirectory?
    /// The contacts as digests, built with `peers` and kept while locked (nil until the
    /// first unlock of this process).
    var contactDigests: ContactKeyDigests?
    var timer: EventLoop.TimerID?
    var timerDue: Int64?
    var transports: [String: TransportEntry] = [:]
    /// Units received and not processed yet: drained in one transaction per loop turn, so
    /// a burst costs one disk sync, not one per packet.
    var inbound: [(link: UInt64, unit: [UInt8])] = []
    var drainPosted = false
    var inboundBytes = 0
    /// Units sealed and not yet handed to their transports, in sealing order (flushed on the
    /// event thread only, so that no two threads reorder a link's packets).
    var outgoing: [(link: Link, unit: [UInt8])] = []
    /// A flush is handing units and commands to transports (event thread): a flush started
    /// from inside it (a transport that answers at once) leaves the new ones to it.
    var flushing = false
    /// Store-and-forward sessions (relays), by the same ID space as links.
    var carriers: [UInt64: CarrierState] = [:]
    /// What carriers are to be told, in order, flushed with `outgoing`.
    var carrierOut: [(carrier: Carrier, command: CarrierCommand)] = []
    /// Packets refused from carriers, per transport and hour: logged a few times per hour
    /// per relay, not per session (a relay that reconnects often must not flood the log).
    var carrierRejections: [String: (count: Int, since: Int64)] = [:]
    /// Messages relays stored, and relays that missed their acknowledgement window.
    var ackWatch = CarrierAckWatch()
    /// The identifier each configured relay stated: two that state one are noticed (§8.4).
    var statedIdentifiers = StatedRelayIdentifiers()
    /// `invalid_text` events logged per contact today (a contact must not flood the log).
    var invalidTexts = InvalidTextLog()
    /// The sender time of the last message sent (they strictly increase).
    var lastSentAt: Int64 = 0
    /// The last packet dropped for its time: the link and how far its creation time was
    /// from our clock (positive: ahead), for diagnostics ("a contact's clock is off").
    var lastClockSkew: (link: UInt64, ms: Int64)?
    /// Why held packets could not be opened at the last try (storage), for diagnostics.
    var heldError: String?
}

/// One link's protocol state.
struct LinkState {
    let link: Link
    var channel: LinkChannel
    var fragmenter: Fragmenter?
    /// nil on a stream link (`Node.openLink(stream:)`), which refuses fragments.
    var reassembler: Reassembler?
    /// The peer's identity once the handshake completed, and its contact id if it is one.
    var peer: PublicIdentity?
    var contactID: Int64?
    let openedAt: Int64
    var lastReceived: Int64
    /// When this side last sent a link packet (a keepalive follows `Node.linkKeepaliveMs`
    /// after it: the peer's transport closes a link it hears nothing on).
    var lastSent: Int64
    var handshakeTimer: EventLoop.TimerID?
    /// Seen-packet records this link caused in the current minute (a per-link cap).
    var recordsThisMinute = 0
    /// Packets dropped as bad since `badUnitsSince` (a link that sends too many of them within
    /// a minute is closed).
    var badUnits = 0
    var badUnitsSince: Int64 = 0
    /// Messages rejected from this link (stranger, tampered): logged a few times, then closed.
    var rejections = 0
    /// Units received and not yet processed (capped per link: see `Node.linkReceived`).
    var queued = 0
    var queuedBytes = 0
    var minuteStart: Int64

    var isOpen: Bool { peer != nil }
}

/// One carrier's state (Delivery/Carrier.swift).
struct CarrierState {
    let carrier: Carrier
    /// No posts before this wall-clock time (the service said it is rate limited).
    var pausedUntil: Int64 = 0
    /// Packets fetched and not yet processed (capped like a link's queue).
    var queued = 0
    var queuedBytes = 0
}

enum CarrierCommand {
    case post([CarrierPost])
    case release([MessageID])
    case mailboxesChanged
}

struct TransportEntry {
    let transport: Transport
    var phase: TransportState.Phase = .disabled
    var error: String?
    var lastActivity: Int64?
}

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
