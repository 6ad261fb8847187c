import Glibc
import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKWire
import YaOKNode
import YaOKCrypto

/// TCP: accepting, connecting, reading, writing, timeouts. Every method named `…Locked`
/// runs under the transport's lock; links are called only outside it.
extension LANTransport: ConnectionTransport {
    // MARK: - Accepting

    /// The listener is readable: accept what is waiting (a bounded batch per wake-up, so
    /// a flood of connections cannot starve the other descriptors), each only where
    /// `makeRoomLocked` finds it a slot.
    func acceptReady() {
        // Eviction must spare every connection whose handshake has finished: ask the links now.
        refreshAuthentication()
        var evicted: [ClosedLink] = []
        let accepted = state.withLock { s -> [UInt64] in
            guard s.running, s.listener >= 0, !s.listenerPaused else { return [] }
            var accepted: [UInt64] = []
            for _ in 0..<64 {
                switch Socket.acceptTCP(s.listener) {
                case .none:
                    return accepted
                case .failed(let failure):
                    let code = failure.code
                    if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                        // Out of descriptors: the pending connection stays queued and the
                        // level-triggered listener would wake us at once, forever. Rest.
                        pauseListenerLocked(&s)
                        return accepted
                    }
                    continue  // ECONNABORTED and the like: that one connection is gone
                case .accepted(let fd, let raw):
                    let remote = IPv4Endpoint(raw)
                    guard makeRoomLocked(&s, for: remote.address, inbound: true, evicting: &evicted) else {
                        Socket.close(fd)
                        s.refused += 1
                        continue
                    }
                    if let id = addConnectionLocked(&s, fd: fd, remote: remote, direction: .inbound, phase: .open) {
                        accepted.append(id)
                    }
                }
            }
            return accepted
        }
        for (link, reason) in evicted { link?.close(reason: reason) }
        openLinks(accepted, as: .responder)
    }

    // MARK: - Slots

    /// Finds a slot for a new connection with `address` (`SlotPolicy`: at most
    /// `maxConnectionsPerAddress` with it, `maxConnections` in all, inbound ones never in the
    /// last `reservedOutboundSlots`), evicting an unfinished inbound connection or one with a
    /// stranger where needed; their links go to `evicted`, for the caller to tell outside the
    /// lock. False, evicting nothing, when no room can be made.
    func makeRoomLocked(_ s: inout LANState, for address: UInt32, inbound: Bool,
                        evicting evicted: inout [ClosedLink]) -> Bool {
        let policy = SlotPolicy(maxConnections: options.maxConnections, maxPerAddress: options.maxConnectionsPerAddress,
                                reservedOutboundSlots: options.reservedOutboundSlots)
        return makeRoomLocked(&s, policy, for: address, inbound: inbound, noun: "connection", addressOf: { $0.remote.address },
                              evicting: &evicted)
    }

    /// The connections as the slot policy sees them, oldest first.
    func occupantsLocked(_ s: LANState) -> [SlotPolicy.Occupant<UInt32>] {
        occupantsLocked(s) { $0.remote.address }
    }

    /// Asks the links not yet known to be authenticated, or whose peer is not known to be a
    /// contact, what they are now — outside the lock — and
    /// notes it. A stranger we connected to is not connected to again from its beacons for
    /// `strangerBackoff`; a contact we connected to is dialed again outside the dial budgets.
    func refreshAuthentication() {
        let answers = SlotPolicy.authenticated(state.withLock { linksToAskLocked($0) })
        guard !answers.isEmpty else { return }
        let now = EventLoop.monotonicNanoseconds()
        state.withLock { s in
            for c in noteAnswersLocked(&s, answers, now: now) {
                let contact = c.contact
                if contact == true, c.direction == .outbound {
                    if s.contactEndpoints[c.remote] == nil, s.contactEndpoints.count >= options.maxDiscoveredPeers,
                       let oldest = s.contactEndpoints.min(by: { $0.value < $1.value })?.key {
                        s.contactEndpoints.removeValue(forKey: oldest)
                    }
                    s.contactEndpoints[c.remote] = now
                    s.recentStrangers.removeValue(forKey: c.remote)
                }
                if contact == false, c.direction == .outbound {
                    s.contactEndpoints.removeValue(forKey: c.remote)
                    if s.recentStrangers.count >= options.maxDiscoveredPeers,
                       let soonest = s.recentStrangers.min(by: { $0.value < $1.value })?.key {
                        s.recentStrangers.removeValue(forKey: soonest)
                    }
                    s.recentStrangers[c.remote] = now &+ LANTransport.nanoseconds(options.strangerBackoff)
                }
            }
        }
    }

    private func pauseListenerLocked(_ s: inout LANState) {
        guard let loop = s.loop else { return }
        loop.unregister(fd: s.listener)
        s.listenerPaused = true
        loop.schedule(after: 1) { [weak self] in
            guard let self else { return }
            self.state.withLock { s in
                guard s.running, s.listenerPaused, s.listener >= 0, let loop = s.loop else { return }
                s.listenerPaused = false
                try? loop.register(fd: s.listener, for: .readable) { [weak self] _ in self?.acceptReady() }
            }
        }
    }

    // MARK: - Connecting

    /// Starts a non-blocking connect; the link opens when it completes. nil (and nothing
    /// open) when no slot can be made or the connect fails at once. Runs under the lock, so
    /// the links of connections evicted for it are told from the loop.
    @discardableResult
    func connectLocked(_ s: inout LANState, to endpoint: IPv4Endpoint) -> UInt64? {
        var evicted: [ClosedLink] = []
        guard makeRoomLocked(&s, for: endpoint.address, inbound: false, evicting: &evicted) else { return nil }
        if !evicted.isEmpty, let loop = s.loop {
            let links = evicted
            loop.post { for (link, reason) in links { link?.close(reason: reason) } }
        }
        let fd: Int32
        do {
            fd = try Socket.startConnect(to: endpoint)
        } catch {
            recordCloseLocked(&s, address: endpoint.description, direction: .outbound, reason: "\(error)")
            return nil
        }
        return addConnectionLocked(&s, fd: fd, remote: endpoint, direction: .outbound, phase: .connecting)
    }

    /// Adds a new connection to the table (`addConnectionLocked`: registered on the loop).
    /// Closes `fd` and returns nil if that fails.
    private func addConnectionLocked(_ s: inout LANState, fd: Int32, remote: IPv4Endpoint,
                                     direction: LANConnection.Direction, phase: LANConnection.Phase) -> UInt64? {
        let id = nextConnectionIDLocked(&s)
        guard let connection = try? LANConnection(id: id, fd: fd, remote: remote, direction: direction, phase: phase,
                                                  mtu: LANTransport.linkMTU, now: EventLoop.monotonicNanoseconds(),
                                                  nowMs: Clock.milliseconds()) else {
            Socket.close(fd)
            return nil
        }
        return addConnectionLocked(&s, connection) ? id : nil
    }

    /// Opens a link over each connection: a stream that carries packets whole (§4.6).
    func openLinks(_ ids: [UInt64], as role: LinkRole) {
        openLinks(ids, as: role, stream: true) { _ in .success(LANTransport.linkMTU) }
    }

    // MARK: - Readiness

    /// A connection's descriptor is ready.
    func connectionReady(_ id: UInt64, _ events: EventLoop.IOEvents) {
        var units: [[UInt8]] = []
        var connected = false
        let (link, closing) = state.withLock { s -> ((any TransportLink)?, String?) in
            guard let c = s.connections[id] else { return (nil, nil) }
            if c.phase == .connecting {
                let code = Socket.pendingError(c.fd)
                guard code == 0 else {
                    return (closeLocked(&s, id, "connect failed: \(Socket.reason(code))"), nil)
                }
                c.phase = .open
                c.lastReceived = EventLoop.monotonicNanoseconds()
                if let failure = watchWritesLocked(&s, c, false) { return (closeLocked(&s, id, failure), nil) }
                connected = true
                return (nil, nil)
            }
            if events.contains(.writable), let (link, reason) = flushLocked(&s, c) {
                return (link, reason)
            }
            guard events.contains(.readable) || events.contains(.hangup) || events.contains(.error) else {
                return (c.link, nil)
            }
            // A bounded amount per wake-up (level-triggered: the rest comes next time).
            for _ in 0..<4 {
                switch Socket.receive(c.fd, into: &s.readBuffer) {
                case .wouldBlock:
                    return (c.link, nil)
                case .endOfStream:
                    return (c.link, "the peer closed the connection")
                case .failed(let failure):
                    return (c.link, "receive failed: \(failure)")
                case .bytes(let n):
                    c.lastReceived = EventLoop.monotonicNanoseconds()
                    c.bytesIn += n
                    do {
                        let frames = try c.decoder.feed(s.readBuffer[0..<n])
                        c.unitsReceived += frames.count
                        units += frames
                    } catch {
                        return (c.link, "\(error)")
                    }
                }
            }
            return (c.link, nil)
        }
        if connected {
            openLinks([id], as: .initiator)
            return
        }
        // Units first, then the close: what arrived before the end still counts.
        if !units.isEmpty {
            if let link {
                guard deliver(units, from: id, to: link) else { return }
            } else if closing == nil {
                // Units with no link (it could not be opened): nothing can take them.
                let dropped = state.withLock { s in closeLocked(&s, id, "no link for the connection") }
                dropped?.close(reason: "no link for the connection")
                return
            }
        }
        if let closing {
            let link = state.withLock { s in closeLocked(&s, id, closing) } ?? link
            link?.close(reason: closing)
        }
    }

    // MARK: - Writing

    /// The link takes its units on whichever thread flushes the node (an app thread's
    /// `send`, or the event thread): its send only queues and writes under this
    /// transport's lock, as the event thread's writable handler does.
    func linkSender(_ id: UInt64) -> LinkSender {
        .anyThread { [weak self] units in self?.linkSend(id, units) }
    }

    /// The link's `send`: frames a flush's units and writes them at once, in one gathering
    /// write (one sendmsg when the kernel takes them all), not one send(2) each; what the
    /// kernel has no room for waits for writability.
    func linkSend(_ id: UInt64, _ units: [[UInt8]]) {
        let dropped = state.withLock { s -> ClosedLink? in
            guard let c = s.connections[id], c.phase == .open else { return nil }
            for unit in units {
                do {
                    try c.writer.enqueue(unit)
                } catch {
                    let reason = "unit of \(unit.count) bytes refused: \(error)"
                    return (closeLocked(&s, id, reason), reason)
                }
            }
            c.lastSent = EventLoop.monotonicNanoseconds()
            return flushLocked(&s, c)
        }
        // Called from inside the link: tell it afterwards, not re-entrantly.
        guard let (link, reason) = dropped, let link else { return }
        closeLater(link, reason: reason)
    }

    /// Writes what is queued (one sendmsg for all of it when the kernel takes it). Watches
    /// writability only while something is left. Closes the connection (returning its link
    /// and why) when the write fails or the queue is over its cap because the peer does not read.
    func flushLocked(_ s: inout LANState, _ c: LANConnection) -> ClosedLink? {
        let fd = c.fd
        var written = 0
        var calls = 0
        let result = c.writer.flush { buffers in
            calls += 1
            switch Socket.send(fd, buffers: buffers) {
            case .bytes(let n):
                written += n
                return .wrote(n)
            case .wouldBlock, .endOfStream:
                return .wouldBlock
            case .failed(let failure):
                return .failed(errno: failure.code)
            }
        }
        c.bytesOut += written
        c.writeCalls += calls
        switch result {
        case .drained:
            if let failure = watchWritesLocked(&s, c, false) { return (closeLocked(&s, c.id, failure), failure) }
            return nil
        case .wouldBlock:
            if c.writer.pendingByteCount > options.maxWriteQueueBytes {
                let reason = "the peer is not reading (\(c.writer.pendingByteCount) bytes queued)"
                return (closeLocked(&s, c.id, reason), reason)
            }
            if let failure = watchWritesLocked(&s, c, true) { return (closeLocked(&s, c.id, failure), failure) }
            return nil
        case .failed(let code):
            let reason = code == 0 ? "send failed" : "send failed: \(Socket.reason(code))"
            return (closeLocked(&s, c.id, reason), reason)
        }
    }

    // MARK: - Closing

    /// Removes the connection, unregisters and closes its descriptor, schedules a static
    /// peer's reconnection. Returns its link, which the caller closes outside the lock.
    func closeLocked(_ s: inout LANState, _ id: UInt64, _ reason: String) -> (any TransportLink)? {
        guard let c = removeConnectionLocked(&s, id, reason) else { return nil }
        if let i = s.statics.firstIndex(where: { $0.connection == id }) {
            s.statics[i].connection = nil
            // A connection that carried units worked: start the backoff again (unless its peer
            // turned out a stranger, who would only be closed again after its grace period).
            let worked = c.unitsReceived >= LANTransport.handshakeUnits && c.contact != false
            s.statics[i].failures = worked ? 0 : s.statics[i].failures + 1
            s.statics[i].lastError = reason
            let delay = min(options.reconnectDelay * Double(1 << min(s.statics[i].failures, 16)), options.maxReconnectDelay)
            s.statics[i].nextAttempt = EventLoop.monotonicNanoseconds() + LANTransport.nanoseconds(delay)
        }
        return c.link
    }

    // MARK: - The tick

    /// Periodic work on the loop: timeouts, keepalives, static peers, beacons.
    /// `run` is the run (start) that scheduled it: a tick of an earlier run, already due
    /// when the transport was stopped and started again, does nothing.
    func tick(run: UInt64) {
        refreshAuthentication()
        let (closed, networkChanged) = state.withLock { s -> ([((any TransportLink)?, String)], Bool) in
            guard s.running, s.run == run, let loop = s.loop else { return ([], false) }
            let now = EventLoop.monotonicNanoseconds()
            var closed: [((any TransportLink)?, String)] = []
            let networkChanged = refreshNetworkLocked(&s)
            for c in s.connections.values.sorted(by: { $0.id < $1.id }) {
                if let reason = expiryLocked(c, now: now) {
                    if reason.hasPrefix("its peer is not a contact") { s.strangersClosed += 1 }
                    closed.append((closeLocked(&s, c.id, reason), reason))
                } else if c.phase == .open, now &- c.lastSent >= LANTransport.nanoseconds(options.keepaliveInterval) {
                    c.writer.enqueueKeepalive()
                    c.lastSent = now
                    if let result = flushLocked(&s, c) { closed.append(result) }
                }
            }
            for i in s.statics.indices where s.statics[i].connection == nil && now >= s.statics[i].nextAttempt {
                if let id = connectLocked(&s, to: s.statics[i].endpoint) {
                    s.statics[i].connection = id
                } else {
                    s.statics[i].failures += 1
                    let delay = min(options.reconnectDelay * Double(1 << min(s.statics[i].failures, 16)), options.maxReconnectDelay)
                    s.statics[i].nextAttempt = now + LANTransport.nanoseconds(delay)
                }
            }
            let strangers = SlotPolicy.strangersBeyond(options.maxStrangerConnections, among: occupantsLocked(s))
            for id in strangers {
                let reason = "its peer is not a contact and \(options.maxStrangerConnections) connections with strangers are open"
                s.strangersClosed += 1
                closed.append((closeLocked(&s, id, reason), reason))
            }
            discoveryTickLocked(&s, now: now)
            s.timer = loop.schedule(after: tickInterval) { [weak self] in self?.tick(run: run) }
            return (closed, networkChanged)
        }
        for (link, reason) in closed { link?.close(reason: reason) }
        if networkChanged { publishConnection() }
    }

    /// Why the connection has expired, if it has.
    private func expiryLocked(_ c: LANConnection, now: UInt64) -> String? {
        let age = now &- c.startedAt
        switch c.phase {
        case .connecting:
            return age >= LANTransport.nanoseconds(options.connectTimeout) ? "connect timed out" : nil
        case .open:
            if now &- c.lastReceived >= LANTransport.nanoseconds(options.idleTimeout) {
                return "nothing received for \(options.idleTimeout) s"
            }
            if c.unitsReceived < LANTransport.handshakeUnits, age >= LANTransport.nanoseconds(options.handshakeTimeout) {
                return "no handshake within \(options.handshakeTimeout) s"
            }
            if c.authenticated, c.contact == false,
               now &- c.authenticatedAt >= LANTransport.nanoseconds(options.strangerGracePeriod) {
                return "its peer is not a contact (closed \(options.strangerGracePeriod) s after the handshake)"
            }
            return nil
        }
    }
}
