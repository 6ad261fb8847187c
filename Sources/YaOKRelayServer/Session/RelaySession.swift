import YaOKSupport
import YaOKWire
import YaOKCrypto

/// One client's session, as a state machine over decoded frames (docs/PROTOCOL.md §8.3),
/// with no I/O: the connection feeds it frame payloads and carries out the actions it
/// returns (send, store, delete, end). So the protocol's rules are tested without sockets.
///
/// CHALLENGE (sent by the connection) → AUTH → READY, then SUBSCRIBE / POST / DELETE /
/// PING in any order. Loop thread only.
final class RelaySession {
    enum Phase: Equatable { case awaitingAuth, ready, ended }

    /// A checked POST, to be committed; its rate-limit slot was taken at `takenAtMs`.
    struct Post: Equatable {
        let request: UInt32
        let post: RelayPost
        let kind: RateLimiter.Kind
        let takenAtMs: Int64
    }

    enum Action: Equatable {
        case send(RelayFrame)
        /// Send this ERROR (request 0), then close.
        case end(RelayErrorFrame)
        case store(Post)
        /// Only refs to mailboxes subscribed in this session.
        case delete([StoredPacketRef])
        /// Mailboxes this SUBSCRIBE added (their backlog is to be delivered).
        case subscribed([MailboxID])
        case authenticated(pseudonym: [UInt8])
        /// A meeting payload for the relay's carrier (§12.9).
        case carry(CarryLinkMessage)
    }

    /// What the session consults: the time, revocations, the shared rate limiter.
    struct Context {
        var nowMs: Int64
        var isRevoked: ([UInt8]) -> Bool
        var limiter: RateLimiter
        var configuration: RelayConfiguration
    }

    let nonce: [UInt8]
    /// The relay's identifier (§8.2), stated in CHALLENGE: clients derive mailboxes from it.
    let relay: [UInt8]
    /// The TLS exporter value of this connection (§8.1): every signature covers it.
    let binding: [UInt8]
    private(set) var phase = Phase.awaitingAuth
    private(set) var pseudonym: [UInt8]?
    /// The mailboxes subscribed in this session, with their delivery cursors (which the
    /// server moves as it delivers: `RelayServer+Delivery`).
    var subscriptions = SubscriptionTable()
    /// Mailbox proofs received in this session, duplicates and resent frames included:
    /// past `maxSubscriptions` the session ends, so SUBSCRIBE cannot be replayed forever.
    private(set) var proofsReceived = 0
    /// SUBSCRIBE signatures checked (each an Ed25519 verification on the loop thread).
    private(set) var verifications = 0

    init(nonce: [UInt8], binding: [UInt8], relay: [UInt8]) {
        self.nonce = nonce
        self.binding = binding
        self.relay = relay
    }

    /// The first frame, sent as soon as TLS is up.
    var challenge: RelayFrame { .challenge(nonce: nonce, relay: relay) }

    /// Handles one frame payload.
    func receive(_ payload: [UInt8], _ context: Context) -> [Action] {
        guard phase != .ended else { return [] }
        let frame: RelayFrame
        do {
            frame = try RelayFrame.decode(payload)
        } catch {
            return end(.malformed, "Bad frame: \(error)")
        }
        switch (phase, frame) {
        case (.awaitingAuth, .auth(let key, let signature)):
            return authenticate(key, signature, context)
        case (.awaitingAuth, _):
            return end(.malformed, "Only AUTH is accepted before READY")
        case (.ready, .subscribe(let proofs)):
            return subscribe(proofs, context)
        case (.ready, .post(let request, let mailbox, let signature, let packet)):
            let action = post(request, mailbox, packet, context)
            // The signature is checked last, only for a POST about to be stored: refusals
            // (a bad header, the rate limit) cost the loop thread no verification.
            if case .store(let p) = action, !Self.postIsSigned(mailbox: mailbox, signature: signature, packet: packet) {
                context.limiter.release(pseudonym ?? [], p.kind, takenAtMs: p.takenAtMs)
                return end(.authFailed, "A POST signature does not verify (mailbox \(mailbox))")
            }
            return [action]
        case (.ready, .delete(let refs)):
            let own = refs.filter { subscriptions.contains($0.mailbox) }
            return own.isEmpty ? [] : [.delete(own)]
        case (.ready, .carry(let message)):
            if context.configuration.refusesCarryAsUnknownForTesting { return end(.malformed, "Bad frame: Unknown relay frame type 0x06") }
            return [.carry(message)]
        case (.ready, .ping(let request)):
            return [.send(.pong(request: request))]
        case (.ready, _):
            return end(.malformed, "Unexpected frame from a client")
        case (.ended, _):
            return []
        }
    }

    /// Ends the session with ERROR `code` on request 0.
    func end(_ code: RelayErrorFrame.Code, _ message: String) -> [Action] {
        phase = .ended
        return [.end(RelayErrorFrame(request: 0, code: code, message: message))]
    }

    // MARK: - Frames

    private func authenticate(_ key: [UInt8], _ signature: [UInt8], _ context: Context) -> [Action] {
        let signed = RelaySignedData.auth(nonce: nonce, binding: binding)
        guard SigningKey.verify(signature: signature, message: signed, publicKey: key) else {
            return end(.authFailed, "The AUTH signature does not verify")
        }
        guard !context.isRevoked(key) else {
            return end(.revoked, "This pseudonym has been revoked by the relay's operator")
        }
        phase = .ready
        pseudonym = key
        let c = context.configuration
        let remaining = context.limiter.remaining(key, nowMs: context.nowMs)
        return [.authenticated(pseudonym: key),
                .send(.ready(sessionLifetimeSeconds: UInt32(clamping: Int(c.sessionLifetimeSeconds.rounded(.up))),
                             ratePerHour: UInt32(clamping: c.ratePerHour), remaining: UInt32(clamping: remaining)))]
    }

    private func subscribe(_ proofs: [MailboxProof], _ context: Context) -> [Action] {
        guard let pseudonym else { return end(.malformed, "SUBSCRIBE before AUTH") }
        let signed = RelaySignedData.subscribe(nonce: nonce, binding: binding, pseudonym: pseudonym)
        // Every proof counts against the session's budget, even one for a mailbox already
        // subscribed: a client resending a valid frame runs out instead of costing the
        // loop thread signature checks forever.
        let limit = context.configuration.maxSubscriptions
        proofsReceived += proofs.count
        guard proofsReceived <= limit else {
            return end(.notSubscribed, "More than \(limit) mailbox proofs in one session")
        }
        var added: [MailboxID] = []
        var addedKeys = Set<MailboxKey>()
        for proof in proofs {
            // Already subscribed (earlier or in this frame): no signature to check.
            let key = MailboxKey(proof.mailbox)
            guard !subscriptions.contains(key), !addedKeys.contains(key) else { continue }
            verifications += 1
            guard SigningKey.verify(signature: proof.signature, message: signed, publicKey: proof.mailbox.bytes) else {
                return end(.notSubscribed, "A SUBSCRIBE signature does not verify (mailbox \(proof.mailbox))")
            }
            addedKeys.insert(key)
            added.append(proof.mailbox)
        }
        subscriptions.insert(Array(addedKeys))
        var actions: [Action] = [.send(.subscribed(count: UInt16(added.count)))]
        if !added.isEmpty { actions.insert(.subscribed(added), at: 0) }
        return actions
    }

    /// Whether a POST proves the right to post to `mailbox` (§8.3): the mailbox key's
    /// signature of the packet. One Ed25519 verification; the relay learns no more than the
    /// mailbox it already sees. A client that sends a bad one is not following the protocol,
    /// so its session ends: each forged POST costs the sender a new TLS connection and login.
    static func postIsSigned(mailbox: MailboxID, signature: [UInt8], packet: [UInt8]) -> Bool {
        SigningKey.verify(signature: signature, message: RelaySignedData.post(packet: packet), publicKey: mailbox.bytes)
    }

    private func post(_ request: UInt32, _ mailbox: MailboxID, _ packet: [UInt8], _ context: Context) -> Action {
        func refuse(_ code: RelayErrorFrame.Code, _ message: String, retryAfter: Int = 0) -> Action {
            .send(.error(RelayErrorFrame(request: request, code: code, retryAfterSeconds: UInt32(clamping: retryAfter), message: message)))
        }
        let header: RoutedHeader
        do {
            header = try RoutedHeader.parse(packet).header
        } catch {
            return refuse(.malformed, "\(error)")
        }
        guard Int(header.lifetimeMinutes) <= context.configuration.maxPacketLifetimeMinutes else {
            return refuse(.malformed, "Lifetime \(header.lifetimeMinutes) min exceeds \(context.configuration.maxPacketLifetimeMinutes)")
        }
        do {
            try header.checkTime(nowMs: context.nowMs)
        } catch {
            return refuse(.expired, "\(error)")
        }
        guard let pseudonym else { return refuse(.malformed, "POST before AUTH") }
        let kind: RateLimiter.Kind = header.type == .message ? .message : .ack
        switch context.limiter.take(pseudonym, kind, nowMs: context.nowMs) {
        case .limited(let seconds):
            let minutes = (seconds + 59) / 60
            return refuse(.rateLimited, "Rate limit reached. Try again in \(minutes) minute\(minutes == 1 ? "" : "s").",
                          retryAfter: seconds)
        case .allowed:
            let post = RelayPost(mailbox: mailbox, messageID: header.messageID, expiresAtMs: header.expiresAtMs, packet: packet)
            return .store(Post(request: request, post: post, kind: kind, takenAtMs: context.nowMs))
        }
    }
}
