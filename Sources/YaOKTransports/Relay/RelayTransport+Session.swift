import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto
import YaOKNode

/// The relay session (docs/PROTOCOL.md §8.3): login, subscriptions, posts, deliveries,
/// deletes and errors, between the relay's frames and the node's carrier.
extension RelayTransport {
    func handle(_ frames: [RelayFrame], generation: UInt64) {
        var accepted: [MessageID] = []
        for frame in frames {
            guard state.withLock({ $0.generation == generation }) else { return }
            switch frame {
            case .challenge(let nonce, let relay):
                login(nonce: nonce, relay: relay, generation: generation)
            case .ready(let lifetime, let perHour, let remaining):
                sessionReady(lifetime: lifetime, perHour: perHour, remaining: remaining, generation: generation)
            case .subscribed, .pong:
                break
            case .carryFromRelay(let message):
                // The relay's side of the meeting this session opened (§12.9).
                state.withLock { s -> Carrier? in
                    guard s.generation == generation else { return nil }
                    s.carryAnsweredIn = generation
                    return s.carrier
                }?.receiveCarry(message)
            case .accepted(let request):
                if let id = state.withLock({ s -> MessageID? in
                    let id = s.requests.removeValue(forKey: request)
                    if id != nil { s.accepted += 1 }
                    return id
                }) { accepted.append(id) }
            case .deliver(let mailbox, let packet):
                deliver(mailbox: mailbox, packet: packet, generation: generation)
            case .error(let e):
                if e.request == 0 {
                    state.withLock { s in
                        // An earlier relay refuses CARRY as an unknown frame: stop meeting it.
                        if e.code == .malformed, s.carrySentIn == generation, s.carryAnsweredIn != generation {
                            s.carryUnsupported = true
                        }
                    }
                    // The session ends. One that expired after living a good part of its
                    // lifetime logs in again at once; anything else backs off.
                    flushAccepted(&accepted, generation)
                    let lived = state.withLock { s in
                        s.readyAt.map { Double(EventLoop.monotonicNanoseconds() &- $0) / 1e9 } ?? 0
                    }
                    let earned = lived >= min(60, max(1, state.withLock { $0.sessionLifetime } / 2))
                    // The relay answered and closed: "closed" (revoked keeps its own reason).
                    return fail(generation, YaOKError(e.status, "The relay ended the session: \(RelayText.shown(e.message))"),
                                retryAt: e.code == .sessionExpired && earned, reason: e.status == .revoked ? .revoked : .closed)
                }
                refused(e, generation: generation)
            case .auth, .subscribe, .post, .delete, .ping, .carry:
                flushAccepted(&accepted, generation)
                return fail(generation, YaOKError(.malformedPacket, "The relay sent a client's frame"))
            }
        }
        flushAccepted(&accepted, generation)
    }

    /// ACCEPTED frames of one read, confirmed to the node together (one transaction).
    private func flushAccepted(_ ids: inout [MessageID], _ generation: UInt64) {
        guard !ids.isEmpty else { return }
        let carrier = state.withLock { s in s.generation == generation ? s.carrier : nil }
        carrier?.accepted(ids)
        ids = []
    }

    private func login(nonce: [UInt8], relay: [UInt8], generation: UInt64) {
        guard let node = state.withLock({ s in s.phase == .authenticating && s.generation == generation ? s.node : nil }) else {
            return fail(generation, YaOKError(.malformedPacket, "Unexpected CHALLENGE from the relay"))
        }
        let key: SigningKey
        do {
            key = try node.relayPseudonym(for: address.description)
        } catch {
            // Locked: no session until the next unlock.
            return endForLock(generation)
        }
        var failure: Error?
        state.withLock { s in
            guard s.generation == generation else { return }
            s.nonce = nonce
            s.relayIdentifier = relay
            s.pseudonym = key.publicKey
            let signature = key.sign(RelaySignedData.auth(nonce: nonce, binding: s.binding))
            do { try sendLocked(&s, .auth(pseudonym: key.publicKey, signature: signature)) } catch { failure = error }
        }
        if let failure { fail(generation, YaOKError.relay(failure, address: address)) }
    }

    private func sessionReady(lifetime: UInt32, perHour: UInt32, remaining: UInt32, generation: UInt64) {
        // Without a contact there is nothing to receive or send: the login showed that the
        // relay and its pin are right, and no session is held (the relay would end one that
        // neither subscribes nor posts, §8.3) until the node says contacts changed.
        if let node = state.withLock({ s in s.generation == generation && s.phase == .authenticating ? s.node : nil }),
           (try? node.hasRelayWork()) == false {
            return idleWithoutContacts(generation)
        }
        guard let node = state.withLock({ s -> Node? in
            guard s.generation == generation, s.phase == .authenticating else { return nil }
            if let t = s.connectTimer { s.loop?.cancel(t) }
            s.connectTimer = nil
            s.phase = .connected
            s.readyAt = EventLoop.monotonicNanoseconds()
            s.sessionLifetime = Double(lifetime)
            s.certificateRejectionLogged = false
            s.lastError = nil
            s.lastSync = Clock.milliseconds()
            s.rate = (perHour, remaining)
            s.sessionUsed = false
            scheduleTickLocked(&s)
            return s.node
        }) else { return fail(generation, YaOKError(.malformedPacket, "Unexpected READY from the relay")) }
        publishConnection()
        let carrier: Carrier
        do {
            carrier = try node.openCarrier(transport: name, route: address.description, relay: state.withLock { $0.relayIdentifier }, callbacks: CarrierCallbacks(
                post: { [weak self] posts in self?.post(posts, generation: generation) },
                release: { [weak self] ids in self?.release(ids, generation: generation) },
                mailboxesChanged: { [weak self] in self?.subscribe(generation: generation) },
                closed: { [weak self] reason in self?.carrierClosedByNode(reason, generation: generation) },
                carry: { [weak self] message in self?.carry(message, generation: generation) }))
        } catch {
            return endForLock(generation)
        }
        let stale = state.withLock { s -> Bool in
            guard s.generation == generation else { return true }
            s.carrier = carrier
            return false
        }
        if stale { return carrier.close(reason: "The relay session ended") }
        subscribe(generation: generation)
    }

    /// Subscribes to every incoming mailbox not yet subscribed in this session (§8.3: up to
    /// 64 per frame, 4,096 per session).
    func subscribe(generation: UInt64) {
        guard let (node, nonce, binding, pseudonym, relay) = state.withLock({ s in
            s.generation == generation && s.phase == .connected ? s.node.map { ($0, s.nonce, s.binding, s.pseudonym, s.relayIdentifier) } : nil
        }) else { return }
        guard let keys = try? node.incomingMailboxes(relay: relay) else { return }
        let signed = RelaySignedData.subscribe(nonce: nonce, binding: binding, pseudonym: pseudonym)
        var failure: Error?
        state.withLock { s in
            guard s.generation == generation else { return }
            let fresh = keys.filter { key in (try? MailboxID(bytes: key.publicKey)).map { !s.subscribed.contains($0) } ?? false }
            let room = max(0, 4_096 - s.subscribed.count)
            do {
                for chunk in Array(fresh.prefix(room)).chunked(RelayFrame.maxSubscribePerFrame) {
                    let proofs = try chunk.map { try MailboxProof(mailbox: MailboxID(bytes: $0.publicKey), signature: $0.sign(signed)) }
                    for p in proofs { s.subscribed.insert(p.mailbox) }
                    s.sessionUsed = true
                    try sendLocked(&s, .subscribe(proofs))
                }
            } catch { failure = error }
        }
        if let failure { fail(generation, YaOKError.relay(failure, address: address)) }
    }

    private func post(_ posts: [CarrierPost], generation: UInt64) {
        // Signed outside the lock: the proof that we may post to each mailbox (§8.3).
        let signatures = posts.map { $0.mailboxKey.sign(RelaySignedData.post(packet: $0.packet)) }
        var failure: Error?
        state.withLock { s in
            guard s.generation == generation, s.phase == .connected else { return }
            do {
                for (p, signature) in zip(posts, signatures) {
                    let request = s.nextRequest
                    s.nextRequest = s.nextRequest == UInt32.max ? 1 : s.nextRequest + 1
                    s.requests[request] = p.packetID
                    s.posted += 1
                    s.sessionUsed = true
                    try sendLocked(&s, .post(request: request, mailbox: p.mailbox, signature: signature, packet: p.packet))
                }
            } catch { failure = error }
        }
        if let failure { fail(generation, YaOKError.relay(failure, address: address)) }
    }

    private func deliver(mailbox: MailboxID, packet: [UInt8], generation: UInt64) {
        let carrier = state.withLock { s -> Carrier? in
            // Only what we subscribed to; a relay pushing anything else is ignored.
            guard s.generation == generation, s.subscribed.contains(mailbox),
                  let (header, _) = try? RoutedHeader.parse(packet) else { return nil }
            // Bounded: a relay could deliver packets we never release (their time is off);
            // forgetting them only means they are not deleted in this session.
            if s.delivered.count >= 65_536 { s.delivered.removeAll(keepingCapacity: true) }
            s.delivered[header.messageID] = mailbox
            s.fetched += 1
            s.lastSync = Clock.milliseconds()
            return s.carrier
        }
        guard let carrier else { return }
        if !carrier.receive(packet) {
            // The node is behind: what it could not queue stays at the relay; a new session
            // (after a pause) delivers it again.
            fail(generation, YaOKError(.relayUnavailable, "Receiving faster than the node stores; reconnecting"))
        }
    }

    /// A meeting payload for the relay (§12.9), in a CARRY frame.
    private func carry(_ message: CarryLinkMessage, generation: UInt64) {
        var failure: Error?
        state.withLock { s in
            guard s.generation == generation, !s.carryUnsupported else { return }
            s.carrySentIn = generation
            do { try sendLocked(&s, .carry(message)) } catch { failure = error }
        }
        if let failure { fail(generation, YaOKError.relay(failure, address: address)) }
    }

    private func release(_ ids: [MessageID], generation: UInt64) {
        var failure: Error?
        state.withLock { s in
            guard s.generation == generation else { return }
            let refs = ids.compactMap { id in s.delivered.removeValue(forKey: id).map { StoredPacketRef(mailbox: $0, messageID: id) } }
            do {
                for chunk in refs.chunked(RelayFrame.maxDeletePerFrame) { try sendLocked(&s, .delete(Array(chunk))) }
            } catch { failure = error }
        }
        if let failure { fail(generation, YaOKError.relay(failure, address: address)) }
    }

    private func refused(_ e: RelayErrorFrame, generation: UInt64) {
        let (id, carrier) = state.withLock { s -> (MessageID?, Carrier?) in
            if e.code == .rateLimited, let rate = s.rate { s.rate = (rate.perHour, 0) }
            return (s.requests.removeValue(forKey: e.request), s.carrier)
        }
        guard let id, let carrier else { return }
        carrier.refused(id, error: YaOKError(e.status, RelayText.shown(e.message)),
                        retryAfterMs: e.retryAfterSeconds > 0 ? Int64(e.retryAfterSeconds) * 1000 : nil)
    }

    /// Ends a session that has nothing to do (no contact) and waits, with no retry, for
    /// `contactsChanged`. Not an error: the login succeeded.
    private func idleWithoutContacts(_ generation: UInt64) {
        state.withLock { s in
            guard s.generation == generation else { return }
            closeConnectionLocked(&s)
            s.generation &+= 1
            s.phase = .idle
            s.failures = 0
            s.readyAt = nil
            s.nextRetryAt = nil
            s.lastError = nil
            s.lastSync = Clock.milliseconds()
            s.certificateRejectionLogged = false
        }
        publishConnection()
    }

    /// The node closed the carrier: locked (wait for the unlock) or closing.
    private func carrierClosedByNode(_ reason: String, generation: UInt64) {
        state.withLock { s in
            guard s.generation == generation else { return }
            s.carrier = nil
        }
        endForLock(generation)
    }

    /// Ends the session without a retry until the node is unlocked again.
    private func endForLock(_ generation: UInt64) {
        let carrier = state.withLock { s -> Carrier? in
            guard s.generation == generation else { return nil }
            closeConnectionLocked(&s)
            s.generation &+= 1
            s.phase = s.running ? .locked : .stopped
            defer { s.carrier = nil }
            return s.carrier
        }
        carrier?.close(reason: "Locked")
        publishConnection()
    }
}

/// Text from a relay, as shown to a person: control characters (terminal escapes) and bidi
/// overrides removed, so a relay cannot rewrite a terminal or disguise what it says.
enum RelayText {
    static func shown(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { scalar in
            let v = scalar.value
            return !(v < 0x20 || (0x7F...0x9F).contains(v) || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v))
        }))
    }
}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
