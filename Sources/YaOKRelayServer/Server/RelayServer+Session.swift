import Glibc
import YaOKSupport
import YaOKLoop
import YaOKWire
import YaOKCrypto

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
        case .carry(let message):
            carryReceived(message, c)
        case .authenticated(let pseudonym):
            c.readyAt = EventLoop.monotonicNanoseconds()
            uncountPending(c)
            configuration.sessionLog?("session \(Hex.encode(pseudonym)) from \(Self.dottedQuad(c.address)) ready")
            replaceOlderSessions(of: pseudonym, keeping: c.id)
            sessionsByPseudonym[pseudonym, default: []].insert(c.id)
        case .subscribed(let mailboxes):
            c.active = true
            guard admitSubscriptions(c, mailboxes.count) else { return }
            for mailbox in mailboxes {
                subscribers.insert(MailboxKey(mailbox), session: c.id)
                c.markNeedsRead(mailbox)
            }
            pump(c)
        case .store(let post):
            c.active = true
            let pseudonym = session.pseudonym ?? []
            // The POST's signature has been checked: every refusal from here on keeps its
            // rate-limit slot, so that re-sending one signed packet that is refused (the
            // address's limit, storage full) costs a verification only until the
            // pseudonym's limit is used up, after which it is refused before the check.
            func refuse(_ code: RelayErrorFrame.Code, _ message: String, retryAfter: Int = 0) {
                perform(.send(.error(RelayErrorFrame(request: post.request, code: code,
                                                     retryAfterSeconds: UInt32(clamping: retryAfter), message: message))), c, session)
            }
            if let reason = Self.oversizedAck(post) {
                return refuse(.malformed, reason)
            }
            if let reason = storageFull(adding: post.post.packet.count) {
                return refuse(.unavailable, reason)
            }
            let address = Self.addressKey(c.address)
            if case .limited(let seconds) = addressLimiter.take(address, post.kind, nowMs: post.takenAtMs) {
                let minutes = (seconds + 59) / 60
                return refuse(.rateLimited, "Rate limit of this IP address reached. Try again in \(minutes) minute\(minutes == 1 ? "" : "s").",
                              retryAfter: seconds)
            }
            if case .limited(let seconds) = addressBytes.take(address, post.post.packet.count, nowMs: post.takenAtMs) {
                addressLimiter.release(address, post.kind, takenAtMs: post.takenAtMs)
                let minutes = (seconds + 59) / 60
                return refuse(.rateLimited, "Byte limit of this IP address or its /24 reached. Try again in \(minutes) minute\(minutes == 1 ? "" : "s").",
                              retryAfter: seconds)
            }
            let token = takeToken()
            pendingPosts[token] = (c.id, post, pseudonym, address)
            pendingPostBytes += post.post.packet.count
            c.pendingPosts += 1
            var stored = post.post
            stored.poster = session.pseudonym
            stored.address = address  // the store keeps keyed hashes of it and its /24 (stored-byte quotas)
            if store.isShared, let pseudonym = session.pseudonym {
                // The limiter here saw only this relay's share; the store counts them all.
                stored.charge = RelayRateCharge(pseudonym: pseudonym, isAck: post.kind == .ack,
                                                limit: post.kind == .ack ? limiter.ackLimit : limiter.messageLimit)
            }
            disk.submit(DiskThread.Write(token: token, write: .post(stored)))
        case .delete(let refs):
            takeDeletes(c, refs)
        }
    }

    /// Sends the refs `c` was delivered (already paid for from the DELETE budgets) to the disk.
    func submitDeletes(_ c: RelayConnection, _ refs: [StoredPacketRef]) {
        guard !refs.isEmpty else { return }  // none it was delivered: no disk work
        let token = takeToken()
        pendingDeletes[token] = (c.id, refs.count)
        c.pendingDeleteRefs += refs.count
        pendingDeleteRefs += refs.count
        peakPendingDeleteRefs = max(peakPendingDeleteRefs, pendingDeleteRefs)
        disk.submit(DiskThread.Write(token: token, write: .delete(refs)))
    }

    /// Why a POST of `size` bytes cannot be stored now, if it cannot: the stored bytes
    /// (with those at the disk) would pass `maxStoredBytes`, or the data directory's file
    /// system has less than `minFreeDiskBytes` free (looked at most once a second).
    func storageFull(adding size: Int) -> String? {
        if storedBytes + pendingPostBytes + size > configuration.maxStoredBytes {
            return "The relay's storage is full: post again later"
        }
        if let directory = configuration.dataDirectory {
            let now = EventLoop.monotonicNanoseconds()
            if lastDiskCheck.map({ now &- $0 >= 1_000_000_000 }) ?? true {
                lastDiskCheck = now
                var fs = statvfs()
                if statvfs(directory, &fs) == 0 {
                    diskLow = UInt64(fs.f_bavail) * UInt64(fs.f_frsize) < UInt64(max(0, configuration.minFreeDiskBytes))
                }
            }
            if diskLow { return "The relay's storage is full (its disk is nearly full): post again later" }
        }
        return nil
    }

    /// The longest ack a node makes (§4.2, §6.2): the routed header, the nonce, the count,
    /// 255 message IDs and the AEAD tag, 4,158 bytes (one ID: 94). Acks have ten times the
    /// message rate: without this cap each could be a 17,408-byte packet of junk.
    static let maxAckPacketBytes = RoutedHeader.length + Sodium.aeadNonceLength + 1
        + DeliveryAck.maxIDs * MessageID.length + Sodium.aeadTagLength

    /// Why an ack POST is refused for its size, if it is.
    static func oversizedAck(_ post: RelaySession.Post) -> String? {
        guard post.kind == .ack, post.post.packet.count > maxAckPacketBytes else { return nil }
        return "An ack packet is at most \(maxAckPacketBytes) bytes (this one: \(post.post.packet.count))"
    }

    /// An IPv4 address (host byte order) as text.
    static func dottedQuad(_ address: UInt32) -> String {
        "\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF)"
    }

    /// The per-address rate limiter's key: the IPv4 address's four bytes.
    static func addressKey(_ address: UInt32) -> [UInt8] {
        withUnsafeBytes(of: address.bigEndian) { Array($0) }
    }

    func takeToken() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }
}
