import YaOKSupport

/// One node's forward-secrecy state for one contact (docs/PROTOCOL.md §13.3): its own
/// receiver keys for that contact, the contact's newest receiver key, and which of its own
/// sent messages are still unsettled under which of the contact's keys (to compute the
/// release it announces). Pure state: the store persists it in the vault, the node drives it.
public struct ReceiverKeyRing: Sendable {
    /// A superseded key is erased this long after it was superseded: the longest a packet
    /// lives (14 days, §10) plus a day for clocks that disagree.
    public static let retentionMs: Int64 = 15 * 86_400_000
    /// At most this many own keys per contact. Past it the oldest superseded keys are erased
    /// early; the newest used key and the newest minted one never are, so a conversation
    /// never stops at the cap (§13.3).
    public static let cap = 32
    /// Unsettled sent messages remembered for the release (the outbox's own bound, §6.1).
    public static let maxPending = 4096

    public struct OwnKey: Sendable {
        public let pair: ReceiverKeyPair
        public let createdMs: Int64
        /// When a message sealed to a newer own key first opened: from then on the peer
        /// seals nothing new to this one.
        public var supersededMs: Int64?

        public init(pair: ReceiverKeyPair, createdMs: Int64, supersededMs: Int64?) {
            self.pair = pair
            self.createdMs = createdMs
            self.supersededMs = supersededMs
        }
    }

    public private(set) var own: [OwnKey] = []
    /// The highest own ID ever minted (IDs are never reused, even after erasure).
    public private(set) var lastID: UInt32 = 0
    /// The contact's newest receiver key this node has heard of (nil: fall back, §13.5).
    public private(set) var peerKey: ReceiverKey?
    /// Sent messages not yet acknowledged: message ID → (peer key ID sealed to, expiry).
    public private(set) var pending = PendingSends()
    /// The highest peer key ID this node has announced as released (never goes back).
    public private(set) var releasedPeer: UInt32 = 0
    /// Which stored state this ring was read as or written to (the store's, none of the
    /// protocol's): a ring saved with the version the store last gave for its contact needs
    /// only what it touched since written back; any other is compared with the disk whole.
    package var storeVersion: UInt64?

    public init() {}

    /// Restores a ring from the store.
    public init(own: [OwnKey], lastID: UInt32, peerKey: ReceiverKey?,
                pending: [[UInt8]: (keyID: UInt32, expiresMs: Int64)], releasedPeer: UInt32) {
        self.own = own.sorted { $0.pair.key.id < $1.pair.key.id }
        self.lastID = lastID
        self.peerKey = peerKey
        self.pending = PendingSends(pending)
        self.releasedPeer = releasedPeer
    }

    /// Lets go of the unsettled sends (the store's kept copy, while a caller changes them).
    package mutating func forgetPending() { pending = PendingSends() }

    /// The ring as it is now, to go back to (`rollBack(to:)`) if what follows is abandoned (a
    /// send refused in a group commit). The unsettled sends are not copied (up to 4,096: a
    /// copy per send was half of a group's time under the node's lock): only the ones
    /// changed from here on are remembered, until `keepChanges` or the roll-back.
    package struct Checkpoint: Sendable {
        fileprivate let rest: ReceiverKeyRing
    }

    package mutating func checkpoint() -> Checkpoint {
        pending.beginJournal()
        var rest = self
        rest.pending = PendingSends()  // this copy lets go of them: `self` still holds the only one
        return Checkpoint(rest: rest)
    }

    /// The changes since `checkpoint()` stay.
    package mutating func keepChanges() { pending.endJournal() }

    /// Back to the ring as it was at `checkpoint` (taken of this ring, with no other taken since).
    package mutating func rollBack(to checkpoint: Checkpoint) {
        var sends = pending
        self = checkpoint.rest  // lets go of this ring's reference: `sends` holds the only one
        sends.rollBack()
        pending = sends
    }

    /// The store holds this ring as it is now, as `version`.
    package mutating func markStored(version: UInt64) {
        pending.markStored()
        storeVersion = version
    }

    /// The own key pairs a message from this contact may be sealed to (the node adds its
    /// prekeys, which are not per contact, §13.4).
    public var openingKeys: [ReceiverKeyPair] { own.map(\.pair) }

    /// The key to seal the next message to at `nowMs` (§13.5): the contact's newest announced
    /// key, or the prekey of its card while that is at most 7 days past its day; nil: the
    /// long-term key (counted and shown, never silent).
    public func sealingKey(nowMs: Int64) -> ReceiverKey? {
        guard let peerKey else { return nil }
        return !peerKey.isPrekey || Prekey.isFresh(peerKey, nowMs: nowMs) ? peerKey : nil
    }

    /// The prekey of the contact's (version 2) card: taken when the contact has announced
    /// nothing (none yet, or only a prekey) and it is usable at `nowMs` while the held one
    /// is not, or both are usable (or both not) and it is newer. A prekey dated ahead by a
    /// wrong clock must not block a correct one, and must not displace one either: a card
    /// made by a clock set ahead would otherwise send the first messages to the long-term
    /// key again. Returns whether it was taken.
    @discardableResult
    public mutating func learnPrekey(_ key: ReceiverKey, nowMs: Int64) -> Bool {
        guard key.isPrekey else { return false }
        if let held = peerKey {
            let usable = Prekey.isFresh(key, nowMs: nowMs), heldUsable = Prekey.isFresh(held, nowMs: nowMs)
            let replaces = held.isPrekey && (usable && !heldUsable
                || usable == heldUsable && Self.order(key.id) > Self.order(held.id))
            guard replaces, key != held else { return false }
        }
        peerKey = key
        return true
    }

    /// What to put in the next message or ack to the contact: the newest own key (minted
    /// on first use) and the release (§13.3).
    public mutating func announcement(nowMs: Int64) throws -> Announcement {
        if own.isEmpty { try mint(nowMs: nowMs) }
        return Announcement(key: own[own.count - 1].pair.key, release: release(nowMs: nowMs))
    }

    /// A message sent sealed to `peerKeyID`, expiring at `expiresMs`: unsettled until acked.
    /// A resend sealed to a newer key keeps the message under the oldest contact key any of
    /// its copies went to: those copies are still in flight (up to 14 days, duplicated,
    /// carried) and must stay openable, so the release may not pass their key (§13.3 rule 2).
    /// Moving it to the newest key let each resend release the key of the copies before it:
    /// a message whose every copy was late enough never opened (issue 19, disorder seed 2).
    public mutating func sent(messageID: [UInt8], peerKeyID: UInt32, expiresMs: Int64) {
        if let earlier = pending[messageID], Self.isContactKey(earlier.keyID),
           !Self.isContactKey(peerKeyID) || earlier.keyID < peerKeyID {
            pending[messageID] = (earlier.keyID, expiresMs)
            return
        }
        if pending[messageID] == nil, pending.count >= Self.maxPending,
           let oldest = pending.min(by: { $0.value.expiresMs < $1.value.expiresMs }) {
            pending[oldest.key] = nil  // bounded memory; see §13.3 rule 2 on what forgetting costs
        }
        pending[messageID] = (peerKeyID, expiresMs)
    }

    /// A per-contact key (the release counts only these; 0 is "none", prekeys age out by day).
    static func isContactKey(_ id: UInt32) -> Bool { id != 0 && !ReceiverKey.isPrekey(id: id) }

    /// The contact acknowledged these messages (§6.2), announcing `announced` in the ack.
    public mutating func acknowledged(_ messageIDs: [[UInt8]], announced: Announcement?, nowMs: Int64) throws {
        for id in messageIDs { pending[id] = nil }
        if let announced { try heard(announced, nowMs: nowMs) }
    }

    /// A message from the contact opened with own key `openedWith`, announcing `announced`.
    /// Marks older own keys superseded, mints a new key when the newest was used (that is
    /// what heals, §13.3), and takes the announcement.
    public mutating func opened(with keyID: UInt32, announced: Announcement, nowMs: Int64) throws {
        // A prekey is the node's, not this contact's: it supersedes no per-contact key; the
        // ack's announcement (minted on first use) moves the contact onto per-contact keys.
        guard !ReceiverKey.isPrekey(id: keyID) else { return try heard(announced, nowMs: nowMs) }
        for index in own.indices where own[index].pair.key.id < keyID && own[index].supersededMs == nil {
            own[index].supersededMs = nowMs
        }
        if let newest = own.last, newest.pair.key.id == keyID { try mint(nowMs: nowMs) }
        try heard(announced, nowMs: nowMs)
    }

    /// Erases own keys past their retention, then the oldest superseded ones over the cap.
    /// Returns the IDs erased (the store deletes their rows).
    @discardableResult
    public mutating func expire(nowMs: Int64) -> [UInt32] {
        var erased: [UInt32] = []
        own.removeAll { key in
            guard let superseded = key.supersededMs, nowMs - superseded >= Self.retentionMs else { return false }
            erased.append(key.pair.key.id)
            return true
        }
        erased += enforceCap()
        for (id, entry) in pending where entry.expiresMs <= nowMs { pending[id] = nil }
        return erased
    }

    /// The cap alone (rule 5's second half): what a node runs after each open, while the
    /// retention waits for the sweep, so that packets held while locked open before any
    /// key is erased by time (§13.1, locked nodes).
    @discardableResult
    public mutating func enforceCap() -> [UInt32] {
        var erased: [UInt32] = []
        while own.count > Self.cap, let index = own.firstIndex(where: { $0.supersededMs != nil }) {
            erased.append(own.remove(at: index).pair.key.id)
        }
        return erased
    }

    private mutating func heard(_ announced: Announcement, nowMs: Int64) throws {
        if peerKey.map({ Self.order(announced.key.id) > Self.order($0.id) }) ?? true { peerKey = announced.key }
        // The contact has settled everything it sealed to own keys up to `release`: erase
        // them, but never the newest (it may be the only key the contact knows).
        let newest = own.last?.pair.key.id
        own.removeAll { $0.pair.key.id <= announced.release && $0.pair.key.id != newest && !$0.pair.key.isPrekey }
    }

    /// True when the next announcement would release more of the contact's keys than the
    /// last one did: the node then sends a release-only ack (§13.3 rule 6) if it has nothing
    /// else to send the contact.
    public func releaseAdvances(nowMs: Int64) -> Bool { releaseCandidate(nowMs: nowMs) > releasedPeer }

    private mutating func release(nowMs: Int64) -> UInt32 {
        releasedPeer = max(releasedPeer, releaseCandidate(nowMs: nowMs))
        return releasedPeer
    }

    /// The highest contact key ID below the one in use and below every key with an
    /// unsettled sent message under it (0 while the contact's newest key is a prekey).
    private func releaseCandidate(nowMs: Int64) -> UInt32 {
        guard let current = peerKey, !current.isPrekey else { return 0 }
        let live = pending.lowestKey(unexpiredAt: nowMs) { $0 != 0 && !ReceiverKey.isPrekey(id: $0) }
        return min(live ?? current.id, current.id) - 1
    }

    private mutating func mint(nowMs: Int64) throws {
        guard lastID < ReceiverKey.prekeyBit - 1 else { throw YaOKError(.internal, "Receiver key IDs exhausted") }
        lastID += 1
        own.append(OwnKey(pair: try ReceiverKeyPair.generate(id: lastID), createdMs: nowMs, supersededMs: nil))
    }

    /// Per-contact keys are newer than any prekey; among each kind, higher IDs are newer.
    static func order(_ id: UInt32) -> UInt64 {
        id & ReceiverKey.prekeyBit != 0 ? UInt64(id & ~ReceiverKey.prekeyBit) : UInt64(id) + (1 << 32)
    }
}
