import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKWire
import YaOKCrypto

/// Readiness, the TLS handshake, reading frames, writing, and closing (loop thread).
extension RelayServer {
    /// Reads of this size, at most `readsPerWake` per readiness event (the rest comes at
    /// the next one), so one busy client cannot starve the others.
    static let readSize = 16 * 1024
    static let readsPerWake = 4

    func ready(_ id: UInt64, _ events: EventLoop.IOEvents) {
        guard let c = connections[id] else { return }
        if c.channel == nil {
            do {
                c.channel = try security.makeChannel(c.fd)
            } catch {
                finish(c, "cannot start TLS: \(error)")
                return
            }
        }
        if !c.handshakeDone {
            advanceHandshake(c)
            guard connections[id] != nil, c.handshakeDone else { return }
        }
        if !c.output.isEmpty { flush(c) }
        guard connections[id] != nil else { return }
        if c.isClosing {
            // Nothing more is read; a hang-up ends it at once.
            if events.contains(.hangup) || events.contains(.error) { finish(c, "peer closed") }
            return
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) || c.interest.contains(.readable) {
            readSome(c)
        }
        if connections[id] != nil { updateInterest(c) }
    }

    private func advanceHandshake(_ c: RelayConnection) {
        guard let channel = c.channel else { return }
        do {
            switch try channel.handshake() {
            case .wantRead:
                c.wantsWrite = false
                updateInterest(c)
            case .wantWrite:
                c.wantsWrite = true
                updateInterest(c)
            case .done:
                c.handshakeDone = true
                c.wantsWrite = false
                let session = RelaySession(nonce: Sodium.randomBytes(RelayFrame.nonceLength), binding: try channel.binding(),
                                           relay: relayIdentifier)
                c.session = session
                c.output.append(session.challenge)
                flush(c)
                if connections[c.id] != nil { updateInterest(c) }
            }
        } catch {
            // Garbage before TLS, a refused version, a peer that went away: nothing to say.
            finish(c, "TLS handshake failed: \(error)")
        }
    }

    private func readSome(_ c: RelayConnection) {
        guard let channel = c.channel else { return }
        for _ in 0..<Self.readsPerWake {
            guard connections[c.id] != nil, !c.isClosing, !stopped, !readPaused(c) else { return }
            // Frames held back from the last read (the signature budget ran out) go first.
            guard receiveHeldFrames(c) else { return deferForVerifications(c) }
            guard connections[c.id] != nil, !c.isClosing, !readPaused(c) else { return }
            let result: ChannelRead
            do {
                result = try channel.read(maxBytes: Self.readSize)
            } catch {
                finish(c, "read failed: \(error)")
                return
            }
            switch result {
            case .wantRead:
                return
            case .wantWrite:
                c.wantsWrite = true
                return
            case .closed:
                finish(c, "peer closed")
                return
            case .data(let bytes):
                c.lastReceived = EventLoop.monotonicNanoseconds()
                let frames: [[UInt8]]
                do {
                    frames = try c.decoder.feed(bytes)
                } catch {
                    endSession(c, RelayErrorFrame(request: 0, code: .malformed, message: "\(error)"))
                    counters.withLock { $0.rejected += 1 }
                    return
                }
                c.heldFrames = frames[...]
                let done = receiveHeldFrames(c)
                flush(c)
                guard done else { return deferForVerifications(c) }
            }
        }
        // The bound stopped us, not the socket: TLS may hold decrypted bytes that epoll
        // cannot see, so come back soon rather than wait for the next readiness.
        let id = c.id
        loop.post { [weak self] in self?.ready(id, []) }
    }

    /// Not read while its POSTs, DELETEs or CARRY frames wait for the disk or its output is long
    /// (backpressure: a client that posts or deletes faster than the disk commits, or
    /// posts without reading, stops being read until the disk round returns).
    func readPaused(_ c: RelayConnection) -> Bool {
        let c2 = configuration
        return c.pendingPosts >= c2.maxPendingPostsPerConnection || c.output.count >= c2.writeQueueHighWater
            || c.pendingDeleteRefs >= c2.maxPendingDeleteRefsPerConnection
            || (c.pendingDeleteRefs > 0 && pendingDeleteRefs >= c2.maxPendingDeleteRefs)
            || c.parkedDeleteRefs.count >= Self.maxParkedDeleteRefs || c.deferredForVerifications
            || c.pendingCarry >= c2.maxPendingCarryPerConnection
    }

    /// Writes what the channel takes; closes a connection whose output is over the hard
    /// limit or whose write fails; finishes a closing one once drained.
    func flush(_ c: RelayConnection) {
        guard connections[c.id] != nil, let channel = c.channel, c.handshakeDone else { return }
        c.wantsWrite = false
        while !c.output.isEmpty {
            do {
                switch try channel.write(c.output.front) {
                case .wrote(let n):
                    guard n > 0 else { c.wantsWrite = true; break }
                    c.output.consume(n)
                    continue
                case .wantWrite:
                    c.wantsWrite = true
                case .wantRead:
                    break
                }
            } catch {
                finish(c, "write failed: \(error)")
                return
            }
            break
        }
        if c.output.count > configuration.writeQueueHardLimit {
            finish(c, "the client is not reading (\(c.output.count) bytes queued)")
            return
        }
        if c.isClosing {
            if c.output.isEmpty { finish(c, "session ended") }
            return
        }
        if c.output.count < configuration.writeQueueLowWater && !c.needsRead.isEmpty { pump(c) }
    }

    /// Watches readability unless reading is paused, writability while output waits.
    func updateInterest(_ c: RelayConnection) {
        guard connections[c.id] != nil else { return }
        var wanted: EventLoop.IOEvents = []
        if !c.isClosing && !stopped && !readPaused(c) { wanted.insert(.readable) }
        if c.wantsWrite || (!c.output.isEmpty && c.handshakeDone) { wanted.insert(.writable) }
        guard wanted != c.interest else { return }
        let wasPaused = !c.interest.contains(.readable)
        c.interest = wanted
        let id = c.id
        do {
            try loop.modify(fd: c.fd, for: wanted)
        } catch {
            finish(c, "cannot watch the connection: \(error)")
            return
        }
        // Reading resumes: bytes TLS already decrypted raise no readiness, so look now.
        if wasPaused && wanted.contains(.readable) {
            loop.post { [weak self] in self?.ready(id, []) }
        }
    }

    /// Queues ERROR on request 0 and closes once it is written (or after a grace period).
    func endSession(_ c: RelayConnection, _ error: RelayErrorFrame) {
        guard connections[c.id] != nil, !c.isClosing else { return }
        if let session = c.session, session.phase != .ended { _ = session.end(error.code, error.message) }
        c.endReason = "\(error.code) (\(error.message))"
        if c.handshakeDone { c.output.append(.error(error)) }
        c.closingDeadline = EventLoop.monotonicNanoseconds() + Self.nanoseconds(configuration.closeGraceSeconds)
        flush(c)
        updateInterest(c)
    }

    /// Closes the connection now and forgets it.
    func finish(_ c: RelayConnection, _ reason: String) {
        guard connections.removeValue(forKey: c.id) != nil else { return }
        if c.carryOpened { carry?.close(c.id) }
        uncountSlot(c)
        uncountPending(c)
        uncountSubscriptions(c)
        dropParkedDeletes(c)
        if let log = configuration.sessionLog, c.readyAt != nil, let pseudonym = c.session?.pseudonym {
            log("session \(Hex.encode(pseudonym)) from \(Self.dottedQuad(c.address)) ended: \(c.endReason ?? reason), posts \(c.posts)")
        }
        if c.handshakeDone { c.channel?.shutdown() }
        loop.unregister(fd: c.fd)
        Socket.close(c.fd)
        for key in c.cursors.keys { subscribers.remove(key, session: c.id) }
        if let pseudonym = c.session?.pseudonym {
            sessionsByPseudonym[pseudonym]?.remove(c.id)
            if sessionsByPseudonym[pseudonym]?.isEmpty == true { sessionsByPseudonym[pseudonym] = nil }
        }
        counters.withLock { $0.connected = Int64(connections.count) }
    }
}
