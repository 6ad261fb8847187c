import YaOKSupport
import YaOKLoop
import YaOKWire

/// What comes back from the disk: ACCEPTED after the commit, live pushes of what was
/// stored, backlog pages, revocations (loop thread).
extension RelayServer {
    func apply(_ round: DiskThread.Round) {
        var touched = Set<UInt64>()
        for (token, write, outcome) in round.writes {
            if case .delete(let refs) = write {
                deleteCommitted(token: token, refs: refs, outcome: outcome, touched: &touched)
                continue
            }
            guard case .post(let post) = write, let pending = pendingPosts.removeValue(forKey: token) else { continue }
            let c = connections[pending.connection]
            c?.pendingPosts -= 1
            pendingPostBytes -= post.packet.count
            if let c { touched.insert(c.id) }
            let request = pending.post.request
            func giveBackSlot() {
                limiter.release(pending.pseudonym, pending.post.kind, takenAtMs: pending.post.takenAtMs)
                addressLimiter.release(pending.address, pending.post.kind, takenAtMs: pending.post.takenAtMs)
                addressBytes.release(pending.address, post.packet.count, takenAtMs: pending.post.takenAtMs)
            }
            switch outcome {
            case .success(.stored(let sequence)):
                storedBytes += post.packet.count
                c?.posts += 1
                counters.withLock { $0.accepted += 1 }
                c?.output.append(.accepted(request: request))
                fanOut(post, sequence: sequence, touched: &touched)
            case .success(.duplicate):
                // The slot stays taken: a re-post costs the disk a lookup, and given back it
                // let one session re-post thousands of times a second (issue 17 §2).
                c?.posts += 1
                c?.output.append(.accepted(request: request))
            case .success(.rateLimited(let seconds)):
                // Over the limit counted across every relay (a shared store). The slot
                // stays taken here too: given back, the signed POST could be sent again
                // and again, each costing a verification and a commit.
                counters.withLock { $0.rateLimited += 1 }
                let minutes = (seconds + 59) / 60
                c?.output.append(.error(RelayErrorFrame(request: request, code: .rateLimited,
                                                        retryAfterSeconds: UInt32(clamping: seconds),
                                                        message: "Rate limit reached. Try again in \(minutes) minute\(minutes == 1 ? "" : "s").")))
            case .success(.mailboxFull):
                // Counted too, as a duplicate is.
                counters.withLock { $0.rejected += 1 }
                c?.output.append(.error(RelayErrorFrame(request: request, code: .mailboxFull,
                                                        message: "Mailbox full: it holds \(configuration.mailboxQuotaPackets) packets or \(configuration.mailboxQuotaBytes) bytes")))
            case .success(.overQuota(let prefix)):
                // The address (or its /24) holds its share of the storage: room comes back
                // as its packets are deleted or expire, so "later", as for a full store.
                // The slots stay taken, as for a full mailbox.
                counters.withLock { $0.quotaRefused += 1 }
                let quotas = configuration.storedQuotas
                c?.output.append(.error(RelayErrorFrame(request: request, code: .unavailable, message: prefix
                    ? "This IP address's /24 holds its share of the relay's storage (\(quotas.prefix) bytes): post again later"
                    : "This IP address holds its share of the relay's storage (\(quotas.address) bytes): post again later")))
            case .success(.deleted):
                break
            case .failure(let error):
                // The one refusal after the signature check that gives the slot back: the
                // relay's own failure, which a client cannot cause.
                giveBackSlot()
                counters.withLock { $0.storageErrors += 1 }
                c?.output.append(.error(RelayErrorFrame(request: request, code: .unavailable,
                                                        message: "Storage failed, post again later: \(error.message)")))
            }
        }
        storedBytes = max(0, storedBytes - round.expiredBytes)
        // A shared store: the database's total (every relay's posts and deletes), not only ours.
        if let total = round.storedBytes { storedBytes = total }
        for (token, result) in round.reads {
            guard let id = pendingReads.removeValue(forKey: token), let c = connections[id] else { continue }
            touched.insert(id)
            switch result {
            case .success(let pages):
                for page in pages { deliver(page, to: c) }
            case .failure:
                counters.withLock { $0.storageErrors += 1 }
                // Read again at the next tick, not at once (the store may stay broken).
                for mailbox in c.reading { c.markNeedsRead(mailbox) }
                c.reading.removeAll()
            }
        }
        if let list = round.revoked {
            revoked = list
            for pseudonym in list {
                guard let ids = sessionsByPseudonym[pseudonym] else { continue }
                for id in ids {
                    guard let c = connections[id] else { continue }
                    counters.withLock { $0.revokedSessions += 1 }
                    endSession(c, RelayErrorFrame(request: 0, code: .revoked, message: "This pseudonym has been revoked by the relay's operator"))
                }
            }
        }
        for id in touched {
            guard let c = connections[id] else { continue }
            flush(c)
            if connections[id] != nil {
                if c.reading.isEmpty && !c.needsRead.isEmpty { pump(c) }
                updateInterest(c)
            }
        }
    }

    /// A packet was stored: DELIVER it now to each caught-up subscriber with room in its
    /// output; the others read it from the store when their turn comes. With a shared
    /// store every subscriber reads it from the store: another relay may yet commit a
    /// packet with a lower sequence number (taken before ours, committed after), and a
    /// push would move the cursor past it.
    private func fanOut(_ post: RelayPost, sequence: Int64, touched: inout Set<UInt64>) {
        let key = MailboxKey(post.mailbox)
        for id in subscribers.candidates(key) {
            guard let c = connections[id], c.cursors.contains(key) else { continue }
            touched.insert(id)
            if store.isShared {
                c.markNeedsRead(post.mailbox)
            } else if c.canPushLive(post.mailbox, highWater: configuration.writeQueueHighWater) {
                if let cursor = c.cursors[post.mailbox], sequence > cursor {
                    c.output.append(.deliver(mailbox: post.mailbox, packet: post.packet))
                    c.setCursor(post.mailbox, sequence)
                    counters.withLock { $0.delivered += 1 }
                }
            } else {
                c.markNeedsRead(post.mailbox)
            }
        }
    }

    private func deliver(_ page: RelayPage, to c: RelayConnection) {
        c.reading.remove(MailboxKey(page.mailbox))
        guard var cursor = c.cursors[page.mailbox] else { return }
        var sent: Int64 = 0
        for stored in page.packets where stored.sequence > cursor {
            c.output.append(.deliver(mailbox: page.mailbox, packet: stored.packet))
            cursor = stored.sequence
            sent += 1
        }
        c.setCursor(page.mailbox, cursor)
        if sent > 0 { counters.withLock { $0.delivered += sent } }
        if !page.complete { c.markNeedsRead(page.mailbox) }
    }

    /// Another relay process wrote to the shared store (loop thread).
    func storeChanged(_ change: RelayStoreChange) {
        switch change {
        case .stored(let mailboxes):
            var touched = Set<UInt64>()
            for mailbox in mailboxes {
                let key = MailboxKey(mailbox)
                for id in subscribers.candidates(key) {
                    guard let c = connections[id], c.cursors.contains(key) else { continue }
                    c.markNeedsRead(mailbox)
                    touched.insert(id)
                }
            }
            for id in touched { if let c = connections[id] { pump(c) } }
        case .resync:
            for c in connections.values where !c.cursors.isEmpty {
                for key in c.cursors.keys { c.markNeedsRead(key) }
                pump(c)
            }
        case .revoked:
            disk.refreshRevocations()
        }
    }

    /// Asks the disk for the next backlog page, if none is in flight and the output is short.
    func pump(_ c: RelayConnection) {
        guard c.reading.isEmpty, !c.needsRead.isEmpty, !c.isClosing,
              c.output.count < configuration.writeQueueLowWater else { return }
        let mailboxes = c.takeNeedsRead(RelayFrame.maxSubscribePerFrame)
        c.reading = Set(mailboxes)
        let token = takeToken()
        pendingReads[token] = c.id
        let cursors = c.cursors
        disk.submit(DiskThread.Read(token: token, requests: mailboxes.compactMap { key in
            key.mailboxID.map { RelayPageRequest(mailbox: $0, after: cursors[key] ?? 0) }
        }))
    }
}
