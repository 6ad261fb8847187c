import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

/// A node carrying for contacts only must know who the peer is before its meeting starts:
/// the meeting's mode is fixed when it starts (`CarrySession.carries`). A contact whose probe
/// left this node out (it holds more than 256 cards) and that carries for anyone starts its
/// meeting on this node's probe, before it has the proof this node sent it, so its first
/// meeting payloads arrive before its own proof. Taken at once, they would start a stranger's
/// meeting with a contact, reconciled as an empty store, for the whole link. So while this
/// side has sent a proof and verified none, the peer's meeting payloads are held, in order,
/// until the peer's proof verifies (a contact's meeting) or `Node.proofWaitMs` after the
/// first (a stranger's: a false positive of the filter is never answered, §5.9). PROTOCOL.md
/// §5.9, "Ready, settled and recognised".
extension DeliveryEngine {
    /// Holds `message` instead of taking it, when the rule above applies; false to take it
    /// (after the payloads held: `takeHeldMeeting`). Past `Node.maxHeldMeetingPayloads`, or
    /// `Node.maxHeldMeetingBytes` in all, the meeting starts as a stranger's now (the peer
    /// sends one reconciliation message, a few offers and claims before an answer: more is
    /// no contact waiting for its proof to land).
    mutating func holdMeetingPayload(_ message: CarryLinkMessage, on linkID: UInt64) -> Bool {
        guard carry.mode == .contactsOnly, carry.sessions[linkID] == nil, var link = links[linkID],
              link.peer == nil, link.sentProof, link.heldMeeting.count < Node.maxHeldMeetingPayloads else { return false }
        // Its size as it came (the body; a body that does not encode again is not held).
        guard let size = try? message.encodeBody().count,
              link.heldMeetingBytes + size <= Node.maxHeldMeetingBytes else { return false }
        link.heldMeetingBytes += size
        link.heldMeeting.append(message)
        if link.heldMeetingUntil == nil { link.heldMeetingUntil = now + Node.proofWaitMs }
        links[linkID] = link
        return true
    }

    /// Starts the meeting on `linkID` if it has payloads held (its mode as recognition left
    /// it), and takes them in order. A payload refused counts as a bad unit of the link, as
    /// it would have when it arrived; storage failures propagate.
    mutating func takeHeldMeeting(on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard var link = links[linkID], link.heldMeetingUntil != nil else { return }
        let held = link.heldMeeting
        link.heldMeeting = []
        link.heldMeetingBytes = 0
        link.heldMeetingUntil = nil
        links[linkID] = link
        try startMeeting(linkID, store, keys)
        for message in held {
            do {
                try receiveCarry(message, on: linkID, store, keys)
            } catch let error as YaOKError where error.code != .diskFull && error.code != .storage {
                try countBadUnit(on: linkID, error)
            }
        }
    }

    /// Held meetings due by `t` start now, as a stranger's: the timer's part (the peer's proof
    /// did not come in time), or all of them (`.max`) when carrying is no longer for contacts
    /// only (`Node.setCarry`: nothing waits for a proof; off, the payloads go unread). A link
    /// that sent too many bad payloads is closed, as on receipt; storage failures propagate.
    mutating func takeHeldMeetings(dueBy t: Int64, _ store: Store, _ keys: UnlockedKeys?) throws {
        for (linkID, link) in links.sorted(by: { $0.key < $1.key }) {
            guard let until = link.heldMeetingUntil, until <= t else { continue }
            do {
                try takeHeldMeeting(on: linkID, store, keys)
            } catch let error as YaOKError where error.code != .diskFull && error.code != .storage {
                effects.closes.append((link.link, "\(error)"))
            }
        }
    }

    /// When the next held meeting is due (the delivery timer's deadlines).
    var nextHeldMeetingDue: Int64? { links.values.compactMap(\.heldMeetingUntil).min() }
}

extension Node {
    /// How long a side carrying for contacts only holds the meeting payloads of a peer whose
    /// proof it expects (`DeliveryEngine+MeetingWait`): the proof comes one round trip after
    /// this side's reached the peer, well under a second on any transport; a false positive's
    /// never comes.
    static let proofWaitMs: Int64 = 3_000
    static let maxHeldMeetingPayloads = 16
    /// And at most this many bytes of them per link: one reconciliation message (16 KiB at
    /// most) and a few offers (12.7 KB at most each) fit; 16 carried packets (~17 KB each)
    /// of a peer that may be no contact at all do not.
    static let maxHeldMeetingBytes = 64 * 1024
}
