import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Links in the engine: opening and closing, the handshake, units in and out, presence,
/// and the contact directory links are matched against (docs/PROTOCOL.md §5).
extension DeliveryEngine {
    /// Adds a link over a new connection and returns its first handshake packet's units
    /// (the initiator's; none for a responder) queued in `effects`. Needs the link key,
    /// which the first unlock after opening the node loads: before that, `locked`.
    mutating func openLink(transport: String, role: Link.Role, mtu: Int, stream: Bool, node: Node,
                           sender: LinkSender, closed: @escaping @Sendable (String) -> Void) throws -> Link {
        guard linkKey != nil else {
            throw YaOKError(.locked, "Links need the node to have been unlocked once since it was opened")
        }
        let id = nextLinkID
        nextLinkID += 1
        let link = Link(id: id, transport: transport, role: role, mtu: mtu, node: node, sender: sender, closed: closed)
        let channel = try LinkChannel(role: role)
        let first = try channel.start()
        // A stream transport's MTU holds any link packet whole; only small-MTU links fragment.
        let fragmenter = mtu >= Wire.maxPacketLength ? nil : try Fragmenter(mtu: mtu)
        let t = now
        var state = LinkState(link: link, channel: channel, fragmenter: fragmenter, reassembler: stream ? nil : try Reassembler(),
                              openedAt: t, lastReceived: t, lastSent: t, minuteStart: t)
        state.handshakeTimer = callerRunsTimers ? nil : loop.schedule(after: Double(Node.handshakeTimeoutMs) / 1000) { [weak node, weak link] in
            guard let node, let link else { return }
            let pending = node.state.withLock { $0.delivery.links[link.id].map { !$0.isOpen } ?? false }
            if pending { node.closeLink(link, reason: "Handshake timed out", notifyTransport: true) }
        }
        if let first { effects.units += try state.units(for: first).map { (link, $0) } }
        links[id] = state
        effects.events.append(.linkOpened(LinkEventInfo(linkID: id, transport: transport)))
        return link
    }

    /// Removes a link (closed by its transport or by the node). What was in flight on it
    /// goes over another open link to the contact now if there is one (not a failed attempt
    /// that waits a minute); else each is a failed attempt. False: it was not open.
    mutating func closeLink(_ link: Link, reason: String, _ store: Store, _ keys: UnlockedKeys?) throws -> Bool {
        guard let state = links.removeValue(forKey: link.id) else { return false }
        effects.events.append(.linkClosed(LinkEventInfo(linkID: link.id, transport: link.transport), reason: reason))
        carryLinkClosed(link.id, store)
        link.notePeer(.unknown)
        state.channel.close()
        if let timer = state.handshakeTimer { loop.cancel(timer) }
        let another = state.contactID.map { c in links.values.contains { $0.isOpen && $0.contactID == c } } ?? false
        for id in inflight.ids(on: link.id) {
            inflight.remove(id)
            if keys != nil, !another { try? failAttempt(id, store, keys) }
        }
        if let contact = state.contactID { updatePresence(contact, store, keys) }
        if another { try? pump(store, keys) }
        return true
    }

    /// Queues a unit from a link or a packet from a carrier for the next drain, within the
    /// caps (`Node.maxQueued…`). nil: refused (closed, or the carrier's queue is full);
    /// false: the link overran its share (the caller closes it); true: queued.
    mutating func queueInbound(_ unit: [UInt8], from id: UInt64) -> (accepted: Bool, postDrain: Bool)? {
        if var c = carriers[id] {
            guard c.queued < Node.maxQueuedPacketsPerCarrier, c.queuedBytes + unit.count <= Node.maxQueuedBytesPerCarrier,
                  inboundBytes + unit.count <= Node.maxQueuedBytesTotal else { return nil }
            c.queued += 1
            c.queuedBytes += unit.count
            carriers[id] = c
        } else {
            guard var state = links[id] else { return nil }
            guard state.queued < Node.maxQueuedUnitsPerLink, state.queuedBytes + unit.count <= Node.maxQueuedBytesPerLink,
                  inboundBytes + unit.count <= Node.maxQueuedBytesTotal else { return (false, false) }
            state.queued += 1
            state.queuedBytes += unit.count
            links[id] = state
        }
        inboundBytes += unit.count
        inbound.append((id, unit))
        defer { drainPosted = true }
        return (true, !drainPosted)
    }

    /// Processes every queued unit in one batch (one transaction, one disk sync), then pumps.
    /// A unit that breaks the protocol closes its link; a storage failure rolls the whole
    /// batch back (`batch`), so nothing was taken and no receipt goes out: the senders retry.
    mutating func drainInbound(_ store: Store, _ keys: UnlockedKeys?) throws {
        let queued = inbound
        inbound = []
        drainPosted = false
        for id in links.keys {
            links[id]?.queued = 0
            links[id]?.queuedBytes = 0
        }
        for id in carriers.keys {
            carriers[id]?.queued = 0
            carriers[id]?.queuedBytes = 0
        }
        inboundBytes = 0
        try batch(store) { engine in
            for (id, unit) in queued {
                do {
                    if engine.carriers[id] != nil {
                        try engine.receiveFromCarrier(unit, on: id, store, keys)
                    } else {
                        try engine.receiveUnit(unit, on: id, store, keys)
                    }
                } catch let error as YaOKError where error.code == .diskFull || error.code == .storage {
                    throw error  // nothing was taken: no receipt, the sender retries
                } catch {
                    if let link = engine.links[id]?.link { engine.effects.closes.append((link, "\(error)")) }
                }
            }
        }
        try pump(store, keys)
    }

    /// One unit: a fragment, a handshake packet or a link packet. Once the handshake is
    /// complete, a unit that cannot be taken (malformed, a bad fragment, a handshake packet
    /// again) is dropped and counted, and the link stays up (§5.2, §5.3: lossy radios corrupt
    /// and replay, and anyone in range can inject); only a link that keeps sending them is
    /// closed. Before that, any of them ends the handshake.
    private mutating func receiveUnit(_ unit: [UInt8], on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard let link = links[linkID] else { return }
        // A stream never needs fragments (§4.7): one is a broken or hostile peer, before or
        // after the handshake, and nothing of it is kept.
        if link.reassembler == nil, unit.count >= 2, unit[0] == Wire.version, unit[1] == PacketType.fragment.rawValue {
            throw YaOKError(.linkFailed, "A fragment arrived on a stream link, which carries packets whole")
        }
        if !link.isOpen {
            try takeUnit(unit, on: linkID, store, keys)
        } else {
            do {
                try takeUnit(unit, on: linkID, store, keys)
            } catch let error as YaOKError where error.code != .diskFull && error.code != .storage {
                return try countBadUnit(on: linkID, error)
            }
        }
        // Only what was taken shows the link alive: noise must not keep a dead link open.
        let t = now
        links[linkID]?.lastReceived = t
        noteActivity(link.link.transport)
    }

    /// Counts a unit dropped as bad; a link that sends more than `maxBadUnitsPerLink` of
    /// them within a minute is closed (a slow trickle of noise over days is not).
    mutating func countBadUnit(on linkID: UInt64, _ error: YaOKError) throws {
        guard var link = links[linkID] else { return }
        let t = now
        if t - link.badUnitsSince >= 60_000 {
            link.badUnits = 0
            link.badUnitsSince = t
        }
        link.badUnits += 1
        links[linkID] = link
        if link.badUnits > Node.maxBadUnitsPerLink {
            throw YaOKError(.linkFailed, "The link sent \(Node.maxBadUnitsPerLink) bad packets within a minute: closed (last: \(error))")
        }
    }

    private mutating func takeUnit(_ unit: [UInt8], on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        let packet: [UInt8]
        switch try Packet.decode(unit) {
        case .fragment(let fragment):
            let t = now
            guard let whole = try links[linkID]?.reassembler?.receive(fragment, nowMs: t) else { return }
            packet = whole
        default:
            packet = unit
        }
        switch try Packet.decode(packet) {
        case .handshake(let payload):
            try receiveHandshake(payload, on: linkID, store, keys)
        case .link:
            // A bad link packet, or a bad packet inside one, is dropped and the link stays up
            // (§5.3: lossy radios corrupt and replay); only a link that keeps sending them
            // is closed. Storage failures propagate: the batch rolls back, nothing is confirmed.
            do {
                guard let payload = try links[linkID]?.channel.open(packet) else { return }
                try receiveLinkPayload(payload, on: linkID, store, keys)
            } catch let error as YaOKError where error.code != .diskFull && error.code != .storage {
                try countBadUnit(on: linkID, error)
            }
        case .routed, .fragment:
            throw YaOKError(.linkFailed, "Only handshake and link packets travel on a link")
        }
    }

    private mutating func receiveHandshake(_ payload: [UInt8], on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard var link = links[linkID] else { return }
        // The contact link keys are built with the directory (at unlock, kept while locked).
        if contactLinkKeys == nil, keys != nil { _ = try directory(store, keys) }
        let known = contactLinkKeys ?? []
        let (reply, ready) = try link.channel.receiveHandshake(payload, contacts: { known })
        if let reply { effects.units += try link.units(for: reply).map { (link.link, $0) } }
        guard ready else {
            links[linkID] = link
            return
        }
        // Ready (§5.9): the link carries payloads; who the peer is, is settled by the probes.
        link.ready = true
        if let timer = link.handshakeTimer { loop.cancel(timer) }
        link.handshakeTimer = nil
        links[linkID] = link
        tellPeerStanding(link)
        // The probe goes first, so that the peer can recognise us as soon as it can.
        if let probe = link.channel.recognition?.probe() {
            try sendOnLink(.contactProbe(try ContactProbeBody(decoding: probe.dropFirst())), on: linkID)
        }
        // §5.2: a responder confirms completion at once, so the initiator knows m3 arrived
        // (and a transport that counts units sees two on each side: BLE, LAN).
        if link.link.role == .responder { try sendOnLink(.keepalive, on: linkID) }
    }

    /// The hook for what runs on any link, stranger or contact (the meeting, §12): once
    /// recognition has settled on this side (a contact's proof verified, or the peer's probe
    /// named none of our contacts), or earlier if the peer's meeting already began (its first
    /// carry payload). Settled first, so that carrying "for contacts only" knows who the peer
    /// is (PROTOCOL.md §5.9, "Ready, settled and recognised"). Once per link.
    mutating func startMeeting(_ linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard carry.sessions[linkID] == nil else { return }
        try carryLinkOpened(linkID, store, keys)
    }

    /// The peer's probe (§5.9): our proofs for the contacts whose markers it holds.
    private mutating func receiveContactProbe(_ probe: ContactProbeBody, on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard let link = links[linkID], let recognition = link.channel.recognition else { return }
        let proofs = try recognition.receiveProbe(probe.bytes[...])
        for proof in proofs { try sendOnLink(.contactProof(try ContactProofBody(decoding: proof.dropFirst())), on: linkID) }
        if !proofs.isEmpty, link.peer == nil { links[linkID]?.sentProof = true }
        if proofs.isEmpty, link.peer == nil {
            links[linkID]?.probeUnmatched = true
            if let updated = links[linkID] { tellPeerStanding(updated) }
        }
        // Carrying for anyone needs no answer to the proofs: the meeting starts now. Waiting
        // for them would leave this side without a meeting whenever a stranger's random bits
        // hold one of our contacts' markers (2^-16 per contact and link, so one link in 256
        // for a node with 256 contacts): the peer refuses the proof and says nothing, and a
        // waiting initiator never sends the first reconciliation message (§5.9).
        if proofs.isEmpty || carry.mode == .anyone { try startMeeting(linkID, store, keys) }
        if proofs.isEmpty { try offerHeldOwnCopies(on: linkID, store) }
    }

    /// A peer's proof (§5.9): verified, it makes the link that contact's (recognised), with
    /// everything an authenticated contact link had; else `senderAuthFailed` (counted as a
    /// bad unit by the caller; the link stays a stranger link).
    private mutating func receiveContactProof(_ proof: ContactProofBody, on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard var link = links[linkID], let recognition = link.channel.recognition else { return }
        let replies = try recognition.receiveProof(proof.mac[...])
        for reply in replies { try sendOnLink(.contactProof(try ContactProofBody(decoding: reply.dropFirst())), on: linkID) }
        guard link.peer == nil, let peer = recognition.contact else { return }
        link = links[linkID] ?? link
        link.peer = peer
        link.contactID = try directory(store, keys)?.contact(for: peer)
        links[linkID] = link
        tellPeerStanding(link)
        if let contact = link.contactID {
            try store.makeOutboxDue(contactID: contact, now: now)
            // What a relay holds for them goes over the direct link too (the relay may
            // never deliver it); the recipient drops the copy it may get twice.
            try store.requeueCarried(now: now, contactID: contact)
            updatePresence(contact, store, keys)
        }
        try startMeeting(linkID, store, keys)
        try takeHeldMeeting(on: linkID, store, keys)
        try offerHeldOwnCopies(on: linkID, store)
    }

    private mutating func receiveLinkPayload(_ payload: LinkPayload, on linkID: UInt64, _ store: Store, _ keys: UnlockedKeys?) throws {
        switch payload {
        case .packet(let bytes):
            // Routed traffic only between recognised contacts (§5.9): a stranger link carries
            // carried packets (§12), never routed ones.
            guard links[linkID]?.peer != nil else {
                throw YaOKError(.senderAuthFailed, "A routed packet on a link whose peer is no recognised contact")
            }
            try receiveRouted(bytes, on: linkID, store, keys)
        case .receipt(let ids):
            // Only the link a packet is in flight on can confirm it.
            for id in ids where inflight[id]?.link == linkID { try confirmReceipt(id, store, keys) }
        case .keepalive:
            break
        case .contactProbe(let probe):
            try receiveContactProbe(probe, on: linkID, store, keys)
        case .contactProof(let proof):
            try receiveContactProof(proof, on: linkID, store, keys)
        case .carry(let message):
            if holdMeetingPayload(message, on: linkID) { return }
            // Payloads held before this one go first (a 17th, or no longer for contacts only).
            try takeHeldMeeting(on: linkID, store, keys)
            try startMeeting(linkID, store, keys)
            try receiveCarry(message, on: linkID, store, keys)
        }
    }

    /// Sends `units` of a link payload on `linkID` (sealed, fragmented).
    mutating func sendOnLink(_ payload: LinkPayload, on linkID: UInt64) throws {
        // A relay's meeting (§12.9): its payloads go in the carrier's CARRY frames.
        if let carrier = carry.relayMeetings[linkID] {
            if case .carry(let message) = payload { effects.carrierCommands.append((carrier, .carry(message))) }
            return
        }
        guard var link = links[linkID], link.isOpen else { return }
        let packet = try link.channel.seal(payload)
        link.lastSent = now
        effects.units += try link.units(for: packet).map { (link.link, $0) }
        links[linkID] = link
    }

    /// Marks the contact online over the best open link, or offline with its last-seen time.
    mutating func updatePresence(_ contactID: Int64, _ store: Store, _ keys: UnlockedKeys?) {
        let transport = links.values.first { $0.contactID == contactID && $0.isOpen }?.link.transport
        let display = transport.map { name in transports[name]?.transport.displayName ?? name }
        let previous = online[contactID]
        guard previous != display else { return }
        online[contactID] = display
        try? store.setLastSeen(contactID, time: now, transport: display ?? previous ?? "")
        effects.events.append(.contactsChanged(contactID: contactID))
    }

    mutating func noteActivity(_ transport: String) {
        let t = now
        transports[transport]?.lastActivity = t
    }

    /// The contact directory (nil while locked), built on first use after an unlock.
    /// `previous`: the directory before a change of contacts, whose derived keys are reused
    /// for the contacts that stay (four X25519s a contact: rebuilding them all made adding
    /// the 200th contact cost 40 ms instead of one contact's work).
    mutating func directory(_ store: Store, _ keys: UnlockedKeys?, reusing previous: PeerDirectory? = nil) throws -> PeerDirectory? {
        if let peers { return peers }
        guard let keys else { return nil }
        var directory = PeerDirectory()
        for record in try store.contactRecords(cipher: keys.cipher) {
            let key = record.publicIdentity.encryptionKey
            let peer: PeerDirectory.Peer
            if let known = previous?.byKey[key], known.identity == record.publicIdentity {
                peer = PeerDirectory.Peer(contactID: record.id, identity: known.identity, route: known.route,
                                          outgoingAckKey: known.outgoingAckKey, incomingAckKey: known.incomingAckKey)
            } else {
                guard let route = try? RoutePair(own: keys.identity, peerKey: key),
                      let outgoing = try? DeliveryAck.key(own: keys.identity, peerKey: key, ownIsAcker: true),
                      let incoming = try? DeliveryAck.key(own: keys.identity, peerKey: key, ownIsAcker: false) else { continue }
                peer = PeerDirectory.Peer(contactID: record.id, identity: record.publicIdentity, route: route,
                                          outgoingAckKey: outgoing, incomingAckKey: incoming)
            }
            directory.byKey[key] = peer
            directory.byContact[record.id] = peer
        }
        peers = directory
        carry.tags = nil
        contactDigests = ContactKeyDigests(directory.byContact.values.map(\.identity))
        // One X25519 per new contact; in contact-id order, so a probe holds the oldest 256.
        let kept = Dictionary((previous == nil ? [] : contactLinkKeys ?? []).map { ($0.peer.encryptionKey, $0) },
                              uniquingKeysWith: { first, _ in first })
        contactLinkKeys = directory.byContact.sorted { $0.key < $1.key }.compactMap { entry in
            let identity = entry.value.identity
            if let known = kept[identity.encryptionKey], known.peer == identity { return known }
            return try? ContactLinkKey(own: keys.identity, peer: identity)
        }
        return directory
    }

    /// Tells a ready link whether its peer is a contact (`Link.peerIsContact`): true once
    /// recognised (§5.9) and still a contact — by the directory, or while locked by the
    /// digests kept from the last unlock; false once the peer's probe held none of our
    /// markers (or the recognised peer was deleted); nil until then.
    private mutating func tellPeerStanding(_ link: LinkState) {
        guard link.ready else { return }
        let isContact: Bool?
        if let peer = link.peer {
            isContact = link.contactID != nil ? true : (peers != nil ? false : contactDigests?.contains(peer))
        } else {
            isContact = link.probeUnmatched ? false : nil
        }
        link.link.notePeer(.authenticated(isContact: isContact))
        // YAOK_EVENT_LINK_AUTHENTICATED once recognition settles, and again when it changes
        // (the contact was deleted, or the peer was matched at unlock).
        guard let isContact, link.announced?.isContact != isContact || link.announced?.contactID != link.contactID else { return }
        links[link.link.id]?.announced = (isContact, link.contactID)
        effects.events.append(.linkAuthenticated(LinkEventInfo(linkID: link.link.id, transport: link.link.transport),
                                                 isContact: isContact, contactID: link.contactID))
    }

    /// Contacts changed: rebuild the directory and re-check which open links are contacts.
    mutating func contactsChanged(_ store: Store, _ keys: UnlockedKeys?) {
        let previous = peers
        peers = nil
        guard let directory = try? directory(store, keys, reusing: previous) else { return }
        for (id, link) in links where link.isOpen {
            let contact = link.peer.flatMap { directory.contact(for: $0) }
            links[id]?.contactID = contact
            if let updated = links[id] { tellPeerStanding(updated) }
            guard contact != link.contactID else { continue }
            for c in [link.contactID, contact].compactMap({ $0 }) { updatePresence(c, store, keys) }
            if let contact { try? store.makeOutboxDue(contactID: contact, now: now) }
        }
        notifyCarriersOfContacts()
    }
}
