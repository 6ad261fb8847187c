import YaOKLoop
import YaOKWire
import YaOKCrypto

/// One link's protocol state.
struct LinkState {
    let link: Link
    var channel: LinkChannel
    var fragmenter: Fragmenter?
    /// nil on a stream link (`Node.openLink(stream:)`), which refuses fragments.
    var reassembler: Reassembler?
    /// Ready: the anonymous handshake completed (§5.8), the link carries payloads. Nothing
    /// about the peer is known from that alone.
    var ready = false
    /// Recognised: the contact whose proof verified on this link (§5.9), and its contact id
    /// once the contacts could be read (nil while locked, matched at unlock). A ready link
    /// without it is a stranger link: no routed traffic either way.
    var peer: PublicIdentity?
    var contactID: Int64?
    /// The peer's probe held no marker of any contact of ours: a stranger, unless a proof
    /// still arrives (it had us past its probe's capacity).
    var probeUnmatched = false
    /// This side sent a proof for the peer's probe and has not verified one from the peer:
    /// the peer is probably a contact whose own proof is on its way (§5.9).
    var sentProof = false
    /// The peer's meeting payloads held, in order, until its proof verifies or
    /// `heldMeetingUntil` (carrying for contacts only: `DeliveryEngine+MeetingWait`).
    var heldMeeting: [CarryLinkMessage] = []
    var heldMeetingBytes = 0
    var heldMeetingUntil: Int64?
    /// What the last YAOK_EVENT_LINK_AUTHENTICATED said about the peer (nil: none sent yet).
    var announced: (isContact: Bool, contactID: Int64?)?
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

    var isOpen: Bool { ready }
}

extension LinkState {
    /// A packet as the link's units: itself, or its fragments on a small-MTU link.
    mutating func units(for packet: [UInt8]) throws -> [[UInt8]] {
        guard var f = fragmenter else { return [packet] }
        defer { fragmenter = f }
        return try f.split(packet)
    }
}
