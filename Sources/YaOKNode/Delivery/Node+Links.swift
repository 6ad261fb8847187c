import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKStore

/// Links: opening, the handshake, receiving units, closing (docs/PROTOCOL.md §5).
extension Node {
    /// A handshake that has not finished after this long closes the link.
    public static let handshakeTimeoutMs: Int64 = 10_000
    /// The longest lifetime accepted from a peer: anything longer is clamped in duplicate
    /// records and refused outright above this (a junk packet cannot pin storage for weeks).
    public static let maxAcceptedLifetimeMinutes: UInt16 = 14 * 24 * 60
    /// Bad packets a link may send (dropped one by one) before it is closed.
    static let maxBadUnitsPerLink = 64

    /// The node's event loop, where transports register their sockets.
    public var eventLoop: EventLoop { loop }

    /// Opens a link over a connection a transport made or accepted. `send` transmits one
    /// unit (≤ `mtu` bytes); it is called on the event thread and must not block (queue the
    /// bytes). `closed` is called on the event thread when the node ends the link (handshake
    /// timeout, protocol violation, node closing), so the transport can drop the connection.
    /// Needs the link key, which the first unlock after opening the node loads: before that,
    /// `locked`.
    ///
    /// `stream`: the connection is a byte stream that carries any packet whole (TCP, §4.6), so
    /// the peer never needs to fragment: a fragment arriving on it closes the link at once
    /// (§4.7) and the link keeps no reassembly buffer. Links over small-MTU radios (BLE, an
    /// app's own) leave it false.
    public func openLink(transport: String, role: Link.Role, mtu: Int, stream: Bool = false,
                         send: @escaping @Sendable ([UInt8]) -> Void,
                         closed: @escaping @Sendable (String) -> Void = { _ in }) throws -> Link {
        guard mtu >= Fragmenter.minimumMTU, mtu <= 1 << 20 else {
            throw YaOKError(.invalidArgument, "MTU must be \(Fragmenter.minimumMTU) to \(1 << 20) bytes")
        }
        guard !transport.isEmpty, transport.utf8.count <= 32 else {
            throw YaOKError(.invalidArgument, "A transport name is 1 to 32 bytes")
        }
        let (link, first) = try withStore { _, s -> (Link, [UInt8]?) in
            guard let key = s.delivery.linkKey, let certificate = s.delivery.linkCertificate else {
                throw YaOKError(.locked, "Links need the node to have been unlocked once since it was opened")
            }
            let id = s.delivery.nextLinkID
            s.delivery.nextLinkID += 1
            let link = Link(id: id, transport: transport, role: role, mtu: mtu, node: self, send: send, closed: closed)
            let channel = try LinkChannel(role: role, key: key, certificate: certificate)
            let first = try channel.start()
            // A stream transport's MTU holds any link packet whole; only small-MTU links fragment.
            let fragmenter = mtu >= Wire.maxPacketLength ? nil : try Fragmenter(mtu: mtu)
            let t = now
            var state = LinkState(link: link, channel: channel, fragmenter: fragmenter, reassembler: stream ? nil : try Reassembler(),
                                  openedAt: t, lastReceived: t, lastSent: t, minuteStart: t)
            state.handshakeTimer = loop.schedule(after: Double(Node.handshakeTimeoutMs) / 1000) { [weak self, weak link] in
                guard let self, let link else { return }
                let pending = self.state.withLock { $0.delivery.links[link.id].map { !$0.isOpen } ?? false }
                if pending { self.closeLink(link, reason: "Handshake timed out", notifyTransport: true) }
            }
            s.delivery.links[id] = state
            return (link, first)
        }
        if let first {
            try withStore { _, s in
                for u in try s.delivery.links[link.id]?.units(for: first) ?? [] { s.delivery.outgoing.append((link, u)) }
            }
            flushOutgoing()
        }
        return link
    }

    /// Closes a link: from the transport (`Link.close`) or from the node (then the
    /// transport's `closed` callback runs). In-flight packets count as failed attempts.
    func closeLink(_ link: Link, reason: String, notifyTransport: Bool) {
        var effects = Effects()
        let removed = (try? withStore { store, s -> Bool in
            guard let state = s.delivery.links.removeValue(forKey: link.id) else { return false }
            state.channel.close()
            if let timer = state.handshakeTimer { loop.cancel(timer) }
            // With another link to the contact still open, what was in flight goes over it now
            // (not a failed attempt that waits a minute); else it is a failed attempt.
            let another = state.contactID.map { c in s.delivery.links.values.contains { $0.isOpen && $0.contactID == c } } ?? false
            for id in s.delivery.inflight.ids(on: link.id) {
                s.delivery.inflight.remove(id)
                if s.keys != nil, !another { try? failAttempt(id, store, &s, &effects) }
            }
            if let contact = state.contactID { updatePresence(contact, store, &s, &effects) }
            if another { try? pump(store, &s, &effects) }
            return true
        }) ?? false
        guard removed else { return }
        if notifyTransport { effects.closes.append((link, reason)) }
        perform(effects)
    }

    /// Whether `link`'s handshake has completed (its peer is authenticated). Takes the
    /// node's lock: a transport asks outside its own.
    func linkIsAuthenticated(_ link: Link) -> Bool {
        state.withLock { $0.delivery.links[link.id]?.isOpen ?? false }
    }

    /// What one link may have waiting for the event thread (bytes, and units: a flood of
    /// tiny frames costs more than its bytes), and all links together. A small-MTU link
    /// legitimately queues a thousand fragments for one large message.
    static let maxQueuedBytesPerLink = 1 << 20
    static let maxQueuedUnitsPerLink = 16_384
    static let maxQueuedBytesTotal = 32 << 20

    /// Queues a received unit and makes sure a drain runs on the event thread. Returns false
    /// when the unit was refused: the link is closed, or it overran its share of the queue
    /// (it is then closed: a peer that floods one link cannot starve the others).
    @discardableResult
    func linkReceived(_ link: Link, _ unit: [UInt8]) -> Bool {
        enum Outcome { case queued(post: Bool), refused, overrun }
        let outcome = state.withLock { s -> Outcome in
            guard s.store != nil, var state = s.delivery.links[link.id] else { return .refused }
            guard state.queued < Node.maxQueuedUnitsPerLink, state.queuedBytes + unit.count <= Node.maxQueuedBytesPerLink,
                  s.delivery.inboundBytes + unit.count <= Node.maxQueuedBytesTotal else { return .overrun }
            state.queued += 1
            state.queuedBytes += unit.count
            s.delivery.inboundBytes += unit.count
            s.delivery.links[link.id] = state
            s.delivery.inbound.append((link.id, unit))
            defer { s.delivery.drainPosted = true }
            return .queued(post: !s.delivery.drainPosted)
        }
        switch outcome {
        case .queued(let post):
            if post { loop.post { [weak self] in self?.drainInbound() } }
            return true
        case .refused:
            return false
        case .overrun:
            loop.post { [weak self, link] in
                self?.closeLink(link, reason: "The link sent faster than it could be processed", notifyTransport: true)
            }
            return false
        }
    }

    /// Processes every queued unit in one transaction.
    func drainInbound() {
        var effects = Effects()
        do {
            try withStore { store, s in
                let batch = s.delivery.inbound
                s.delivery.inbound = []
                s.delivery.drainPosted = false
                for id in s.delivery.links.keys {
                    s.delivery.links[id]?.queued = 0
                    s.delivery.links[id]?.queuedBytes = 0
                }
                for id in s.delivery.carriers.keys {
                    s.delivery.carriers[id]?.queued = 0
                    s.delivery.carriers[id]?.queuedBytes = 0
                }
                s.delivery.inboundBytes = 0
                let queued = s.delivery.outgoing.count
                let carrierQueued = s.delivery.carrierOut.count
                let eventsBefore = effects.events.count
                var rolledBack = true
                // A batch that is rolled back took nothing: its receipts must not go out, its
                // events did not happen, and the duplicate front must forget what it recorded
                // (else a retry of a packet that was never stored would pass as a duplicate).
                defer {
                    if rolledBack {
                        if s.delivery.outgoing.count > queued {
                            s.delivery.outgoing.removeLast(s.delivery.outgoing.count - queued)
                        }
                        if s.delivery.carrierOut.count > carrierQueued {
                            s.delivery.carrierOut.removeLast(s.delivery.carrierOut.count - carrierQueued)
                        }
                        effects.events.removeSubrange(eventsBefore...)
                        store.seen.dropFront()
                    }
                }
                try store.db.transaction {
                    for (linkID, unit) in batch {
                        do {
                            if s.delivery.carriers[linkID] != nil {
                                try receiveFromCarrier(unit, on: linkID, store, &s, &effects)
                                continue
                            }
                            try receiveUnit(unit, on: linkID, store, &s, &effects)
                        } catch let error as YaOKError where error.code == .diskFull || error.code == .storage {
                            throw error  // nothing was taken: no receipt, the sender retries
                        } catch {
                            if let link = s.delivery.links[linkID]?.link {
                                effects.closes.append((link, "\(error)"))
                            }
                        }
                    }
                }
                rolledBack = false
                try pump(store, &s, &effects)
            }
        } catch {
            // The batch was not taken (disk full, storage error): no receipt went out, so
            // the senders try again.
        }
        for (link, reason) in effects.closes { closeLink(link, reason: reason, notifyTransport: true) }
        effects.closes = []
        perform(effects)
    }

    /// One unit: a fragment, a handshake packet or a link packet. Once the handshake is
    /// complete, a unit that cannot be taken (malformed, a bad fragment, a handshake packet
    /// again) is dropped and counted, and the link stays up (§5.2, §5.3: lossy radios corrupt
    /// and replay, and anyone in range can inject); only a link that keeps sending them is
    /// closed. Before that, any of them ends the handshake.
    private func receiveUnit(_ unit: [UInt8], on linkID: UInt64, _ store: Store, _ s: inout NodeState,
                             _ effects: inout Effects) throws {
        guard let link = s.delivery.links[linkID] else { return }
        // A stream never needs fragments (§4.7): one is a broken or hostile peer, before or
        // after the handshake, and nothing of it is kept.
        if link.reassembler == nil, unit.count >= 2, unit[0] == Wire.version, unit[1] == PacketType.fragment.rawValue {
            throw YaOKError(.linkFailed, "A fragment arrived on a stream link, which carries packets whole")
        }
        if link.peer == nil {
            try takeUnit(unit, on: linkID, store, &s, &effects)
        } else {
            do {
                try takeUnit(unit, on: linkID, store, &s, &effects)
            } catch let error as YaOKError where error.code != .diskFull && error.code != .storage {
                return try countBadUnit(on: linkID, error, &s)
            }
        }
        // Only what was taken shows the link alive: noise must not keep a dead link open.
        s.delivery.links[linkID]?.lastReceived = now
        noteActivity(link.link.transport, &s)
    }

    /// Counts a unit dropped as bad; a link that sends more than `maxBadUnitsPerLink` of
    /// them within a minute is closed (a slow trickle of noise over days is not).
    private func countBadUnit(on linkID: UInt64, _ error: YaOKError, _ s: inout NodeState) throws {
        guard var link = s.delivery.links[linkID] else { return }
        let t = now
        if t - link.badUnitsSince >= 60_000 {
            link.badUnits = 0
            link.badUnitsSince = t
        }
        link.badUnits += 1
        s.delivery.links[linkID] = link
        if link.badUnits > Node.maxBadUnitsPerLink {
            throw YaOKError(.linkFailed, "The link sent \(Node.maxBadUnitsPerLink) bad packets within a minute: closed (last: \(error))")
        }
    }

    private func takeUnit(_ unit: [UInt8], on linkID: UInt64, _ store: Store, _ s: inout NodeState,
                          _ effects: inout Effects) throws {
        let packet: [UInt8]
        switch try Packet.decode(unit) {
        case .fragment(let fragment):
            guard let whole = try s.delivery.links[linkID]?.reassembler?.receive(fragment, nowMs: now) else { return }
            packet = whole
        default:
            packet = unit
        }
        switch try Packet.decode(packet) {
        case .handshake(let payload):
            try receiveHandshake(payload, on: linkID, store, &s, &effects)
        case .link:
            // A bad link packet, or a bad packet inside one, is dropped and the link stays up
            // (§5.3: lossy radios corrupt and replay); only a link that keeps sending them
            // is closed. Storage failures propagate: the batch rolls back, nothing is confirmed.
            do {
                guard let payload = try s.delivery.links[linkID]?.channel.open(packet) else { return }
                try receiveLinkPayload(payload, on: linkID, store, &s, &effects)
            } catch let error as YaOKError where error.code != .diskFull && error.code != .storage {
                try countBadUnit(on: linkID, error, &s)
            }
        case .routed, .fragment:
            throw YaOKError(.linkFailed, "Only handshake and link packets travel on a link")
        }
    }

    private func receiveHandshake(_ payload: [UInt8], on linkID: UInt64, _ store: Store, _ s: inout NodeState,
                                  _ effects: inout Effects) throws {
        guard var link = s.delivery.links[linkID] else { return }
        let (reply, peer) = try link.channel.receiveHandshake(payload)
        if let reply { s.delivery.outgoing += try link.units(for: reply).map { (link.link, $0) } }
        if let peer {
            link.peer = peer
            if let timer = link.handshakeTimer { loop.cancel(timer) }
            link.handshakeTimer = nil
            link.contactID = try peers(store, &s)?.contact(for: peer)
            s.delivery.links[linkID] = link
            // §5.2: a responder confirms completion at once, so the initiator knows m3 arrived
            // (and a transport that counts units sees two on each side: BLE, LAN).
            if link.link.role == .responder { try sendOnLink(.keepalive, on: linkID, &s, &effects) }
            if let contact = link.contactID {
                try store.makeOutboxDue(contactID: contact, now: now)
                // What a relay holds for them goes over the direct link too (the relay may
                // never deliver it); the recipient drops the copy it may get twice.
                try store.requeueCarried(now: now, contactID: contact)
                updatePresence(contact, store, &s, &effects)
            }
        } else {
            s.delivery.links[linkID] = link
        }
    }

    private func receiveLinkPayload(_ payload: LinkPayload, on linkID: UInt64, _ store: Store,
                                    _ s: inout NodeState, _ effects: inout Effects) throws {
        switch payload {
        case .packet(let bytes):
            try receiveRouted(bytes, on: linkID, store, &s, &effects)
        case .receipt(let ids):
            // Only the link a packet is in flight on can confirm it.
            for id in ids where s.delivery.inflight[id]?.link == linkID { try confirmReceipt(id, store, &s, &effects) }
        case .keepalive:
            break
        }
    }

    /// Sends `units` of a link payload on `linkID` (sealed, fragmented).
    func sendOnLink(_ payload: LinkPayload, on linkID: UInt64, _ s: inout NodeState,
                    _ effects: inout Effects) throws {
        guard var link = s.delivery.links[linkID], link.isOpen else { return }
        let packet = try link.channel.seal(payload)
        link.lastSent = now
        s.delivery.outgoing += try link.units(for: packet).map { (link.link, $0) }
        s.delivery.links[linkID] = link
    }

    /// Marks the contact online over the best open link, or offline with its last-seen time.
    func updatePresence(_ contactID: Int64, _ store: Store, _ s: inout NodeState, _ effects: inout Effects) {
        let transport = s.delivery.links.values.first { $0.contactID == contactID && $0.isOpen }?.link.transport
        let display = transport.map { name in s.delivery.transports[name]?.transport.displayName ?? name }
        let previous = s.online[contactID]
        guard previous != display else { return }
        s.online[contactID] = display
        try? store.setLastSeen(contactID, time: now, transport: display ?? previous ?? "")
        effects.events.append(.contactsChanged(contactID: contactID))
    }

    func noteActivity(_ transport: String, _ s: inout NodeState) {
        s.delivery.transports[transport]?.lastActivity = now
    }

    /// The contact directory (nil while locked), built on first use after an unlock.
    func peers(_ store: Store, _ s: inout NodeState) throws -> PeerDirectory? {
        if let peers = s.delivery.peers { return peers }
        guard let keys = s.keys else { return nil }
        var directory = PeerDirectory()
        for record in try store.contactRecords(cipher: keys.cipher) {
            let key = record.publicIdentity.encryptionKey
            guard let route = try? RoutePair(own: keys.identity, peerKey: key),
                  let outgoing = try? DeliveryAck.key(own: keys.identity, peerKey: key, ownIsAcker: true),
                  let incoming = try? DeliveryAck.key(own: keys.identity, peerKey: key, ownIsAcker: false) else { continue }
            let peer = PeerDirectory.Peer(contactID: record.id, identity: record.publicIdentity, route: route,
                                          outgoingAckKey: outgoing, incomingAckKey: incoming)
            directory.byKey[key] = peer
            directory.byContact[record.id] = peer
        }
        s.delivery.peers = directory
        s.delivery.contactDigests = ContactKeyDigests(directory.byContact.values.map(\.identity))
        return directory
    }

    /// Contacts changed: rebuild the directory and re-check which open links are contacts.
    func contactsChangedForDelivery(_ store: Store, _ s: inout NodeState, _ effects: inout Effects) {
        s.delivery.peers = nil
        guard let directory = try? peers(store, &s) else { return }
        for (id, link) in s.delivery.links where link.isOpen {
            let contact = link.peer.flatMap { directory.contact(for: $0) }
            guard contact != link.contactID else { continue }
            s.delivery.links[id]?.contactID = contact
            for c in [link.contactID, contact].compactMap({ $0 }) { updatePresence(c, store, &s, &effects) }
            if let contact { try? store.makeOutboxDue(contactID: contact, now: now) }
        }
        notifyCarriersOfContacts(&s)
    }

    /// Hands queued units to their transports, in the order they were sealed (a link's
    /// counters must arrive in order, or the receiver drops them as replays). Always on the
    /// event thread, the only one that drains the queue: a call from another thread (an
    /// app's `send`) posts the flush there instead of racing it.
    func flushOutgoing() {
        guard loop.isLoopThread else {
            loop.post { [weak self] in self?.flushOutgoing() }
            return
        }
        // A transport may answer inside the call that hands it something (a relay client
        // that accepts at once), and the engine then queues more. Sending that from a nested
        // flush would put it ahead of what this flush still holds (a later message posted
        // before an earlier one), so the nested call returns and this loop sends it next.
        guard state.withLock({ s in
            defer { s.delivery.flushing = true }
            return !s.delivery.flushing
        }) else { return }
        while true {
            let (units, commands) = state.withLock { s in
                let taken = (s.delivery.outgoing, s.delivery.carrierOut)
                s.delivery.outgoing = []
                s.delivery.carrierOut = []
                if taken.0.isEmpty && taken.1.isEmpty { s.delivery.flushing = false }
                return taken
            }
            if units.isEmpty && commands.isEmpty { return }
            for (link, unit) in units { link.sendUnit(unit) }
            flushCarrierCommands(commands)
        }
    }

    /// Runs what a locked section decided, outside the lock: units to transports, events
    /// to the app, closes to transports.
    func perform(_ effects: Effects) {
        flushOutgoing()
        for event in effects.events { events.emit(event) }
        for (link, reason) in effects.closes { link.closedByNode(reason) }
    }
}

/// What a locked section hands to `perform`.
struct Effects {
    var events: [NodeEvent] = []
    var closes: [(Link, String)] = []
}

extension LinkState {
    /// A packet as the link's units: itself, or its fragments on a small-MTU link.
    mutating func units(for packet: [UInt8]) throws -> [[UInt8]] {
        guard var f = fragmenter else { return [packet] }
        defer { fragmenter = f }
        return try f.split(packet)
    }
}
