import YaOKSupport
import YaOKLoop
import YaOKWire

/// Carrying out what a session asks for (loop thread).
extension RelayServer {
    func receive(_ c: RelayConnection, _ payload: [UInt8]) {
        guard let session = c.session else { return }
        let context = RelaySession.Context(nowMs: Clock.milliseconds(), isRevoked: { [revoked] in revoked.contains($0) },
                                           limiter: limiter, configuration: configuration)
        for action in session.receive(payload, context) {
            perform(action, c, session)
        }
    }

    private func perform(_ action: RelaySession.Action, _ c: RelayConnection, _ session: RelaySession) {
        switch action {
        case .send(let frame):
            if case .error(let e) = frame {
                counters.withLock { e.code == .rateLimited ? ($0.rateLimited += 1) : ($0.rejected += 1) }
            }
            c.output.append(frame)
        case .end(let error):
            counters.withLock { error.code == .revoked ? ($0.revokedSessions += 1) : ($0.rejected += 1) }
            endSession(c, error)
        case .authenticated(let pseudonym):
            c.readyAt = EventLoop.monotonicNanoseconds()
            sessionsByPseudonym[pseudonym, default: []].insert(c.id)
        case .subscribed(let mailboxes):
            for mailbox in mailboxes {
                subscribers[mailbox, default: []].insert(c.id)
                c.cursors[mailbox] = 0
                c.markNeedsRead(mailbox)
            }
            pump(c)
        case .store(let post):
            let token = takeToken()
            pendingPosts[token] = (c.id, post, session.pseudonym ?? [])
            c.pendingPosts += 1
            var stored = post.post
            if store.isShared, let pseudonym = session.pseudonym {
                // The limiter here saw only this relay's share; the store counts them all.
                stored.charge = RelayRateCharge(pseudonym: pseudonym, isAck: post.kind == .ack,
                                                limit: post.kind == .ack ? limiter.ackLimit : limiter.messageLimit)
            }
            disk.submit(DiskThread.Write(token: token, write: .post(stored)))
        case .delete(let refs):
            disk.submit(DiskThread.Write(token: takeToken(), write: .delete(refs)))
        }
    }

    func takeToken() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }
}
