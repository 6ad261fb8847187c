import Glibc
import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKWire
import YaOKNode
import YaOKCrypto

/// L2CAP channels: accepting, connecting, slots, reading SDUs, writing SDUs, deadlines and
/// keepalives, closing. Every method named `…Locked` runs under the transport's lock; links
/// are called only outside it.
extension BLETransport: ConnectionTransport {
    /// A channel closed under the lock: its link, to be told why outside it.
    typealias ClosedChannel = ClosedLink

    // MARK: - Accepting

    func acceptReady() {
        acceptChannels { s in s.listener >= 0 ? L2CAPSocket.accept(s.listener) : .none }
    }

    /// Accepts a bounded batch of channels from `next` (the listener; tests hand in
    /// socketpair ends), each only where `makeRoomLocked` finds it a slot, and opens their
    /// links.
    func acceptChannels(_ next: (inout BLEState) -> L2CAPSocket.AcceptResult) {
        // Eviction must spare every channel whose handshake has finished: ask the links now.
        refreshAuthentication()
        var evicted: [ClosedChannel] = []
        let accepted = state.withLock { s -> [UInt64] in
            guard s.running else { return [] }
            var accepted: [UInt64] = []
            for _ in 0..<8 {
                switch next(&s) {
                case .none, .failed:
                    return accepted
                case .accepted(let fd, let remote):
                    guard makeRoomLocked(&s, for: remote, direction: .inbound, evicting: &evicted) else {
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

    /// Finds a slot for a new channel with `remote`:
    /// - at most `maxChannelsPerAddress` channels with one address, both directions
    ///   together (one device opening channel after channel over its LE connection);
    /// - at most `maxConnections` in all, of which inbound ones at most
    ///   `maxConnections - reservedOutboundSlots` (an inbound flood cannot stop us
    ///   connecting to the peers we discover).
    ///
    /// Where a rule is met only by making room, a channel is evicted: first an inbound one
    /// whose handshake has not finished, oldest first (it had the longest to finish); then
    /// one whose authenticated peer is a stranger (not a contact: anyone can complete the
    /// handshake with a self-made identity), either direction, oldest first. Channels with
    /// contacts are never evicted, nor those whose peer the node cannot place (locked), nor
    /// unauthenticated ones we opened (to a peer we chose). Returns false, evicting
    /// nothing, when no room can be made; else the evicted channels are in `evicted`, for
    /// the caller to tell their links outside the lock. The flags are as last asked of the
    /// links: callers refresh them first (`refreshAuthentication`, outside the lock). The
    /// rules are `SlotPolicy`'s, which the LAN transport applies too.
    func makeRoomLocked(_ s: inout BLEState, for remote: BLEAddress, direction: BLEConnection.Direction,
                        evicting evicted: inout [ClosedChannel]) -> Bool {
        let policy = SlotPolicy(maxConnections: options.maxConnections, maxPerAddress: options.maxChannelsPerAddress,
                                reservedOutboundSlots: options.reservedOutboundSlots)
        return makeRoomLocked(&s, policy, for: remote.bytes, inbound: direction == .inbound, noun: "channel",
                              addressOf: { $0.remote.bytes }, evicting: &evicted)
    }

    /// The channels as the slot policy sees them, oldest first.
    func occupantsLocked(_ s: BLEState) -> [SlotPolicy.Occupant<[UInt8]>] {
        occupantsLocked(s) { $0.remote.bytes }
    }

    // MARK: - Connecting

    /// Starts a non-blocking connect to a discovered peer's PSM. The kernel scans for the
    /// peer's connectable advertising, connects (we are the central) and opens the channel;
    /// writability says it is done, SO_ERROR whether it worked. Runs under the lock, so it
    /// cannot ask the links whether they have authenticated: every path here (the tick,
    /// mgmt events) refreshes the flags just before taking the lock, or an inbound channel
    /// that authenticated a moment ago could be evicted as unfinished.
    func connectLocked(_ s: inout BLEState, to remote: BLEAddress) {
        guard let adapter = s.adapter else { return }
        var evicted: [ClosedChannel] = []
        guard makeRoomLocked(&s, for: remote, direction: .outbound, evicting: &evicted) else { return }
        // Under the lock, maybe inside the discovery tick: the links are told from the loop.
        // (A loop that has stopped is the node closing, which closes every link itself.)
        if !evicted.isEmpty, let loop = s.loop {
            let links = evicted
            loop.post { for (link, reason) in links { link?.close(reason: reason) } }
        }
        let fd: Int32
        do {
            fd = try L2CAPSocket.open(adapter: adapter.address, psm: 0, receiveMTU: options.receiveMTU, sendBuffer: options.sendBuffer)
        } catch {
            recordCloseLocked(&s, address: remote.text, direction: .outbound, reason: "\(error)")
            return
        }
        let code = L2CAPSocket.startConnect(fd, to: remote, psm: connectPSMLocked(s, remote))
        guard code == 0 else {
            Socket.close(fd)
            recordCloseLocked(&s, address: remote.text, direction: .outbound, reason: "connect failed: \(Socket.reason(code))")
            return
        }
        if addConnectionLocked(&s, fd: fd, remote: remote, direction: .outbound, phase: .connecting) != nil {
            pauseDiscoveryLocked(&s)
        }
    }

    private func addConnectionLocked(_ s: inout BLEState, fd: Int32, remote: BLEAddress,
                                     direction: BLEConnection.Direction, phase: BLEConnection.Phase) -> UInt64? {
        let id = nextConnectionIDLocked(&s)
        let c = BLEConnection(id: id, fd: fd, remote: remote, direction: direction, phase: phase,
                              now: EventLoop.monotonicNanoseconds(), nowMs: Clock.milliseconds())
        if phase == .open { readMTUs(c, s) }
        return addConnectionLocked(&s, c) ? id : nil
    }

    private func readMTUs(_ c: BLEConnection, _ s: BLEState) {
        c.sendMTU = L2CAPSocket.mtu(c.fd, send: true) ?? s.nonBluetoothMTU ?? 0
        c.receiveMTU = L2CAPSocket.mtu(c.fd, send: false) ?? s.nonBluetoothMTU ?? options.receiveMTU
    }

    /// Opens a link over each channel, with the MTU the peer granted; one below the
    /// fragmenter's minimum is closed instead.
    func openLinks(_ ids: [UInt64], as role: LinkRole) {
        openLinks(ids, as: role, stream: false) { c in
            c.sendMTU >= Fragmenter.minimumMTU ? .success(c.sendMTU)
                : .failure(ConnectionRefusal(reason: "the peer's MTU (\(c.sendMTU)) is below \(Fragmenter.minimumMTU)"))
        }
    }

    // MARK: - Readiness

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
                guard events.contains(.writable) else { return (nil, nil) }
                c.phase = .open
                // Handshake and idle deadlines count from the open, not from the connect.
                let now = EventLoop.monotonicNanoseconds()
                c.startedAt = now
                c.lastReceived = now
                readMTUs(c, s)
                requestDiscoveryLocked(&s)
                if let failure = watchWritesLocked(&s, c, false) { return (closeLocked(&s, id, failure), nil) }
                connected = true
                return (nil, nil)
            }
            if events.contains(.writable), let failure = flushLocked(&s, c) { return failure }
            guard events.contains(.readable) || events.contains(.hangup) || events.contains(.error) else { return (c.link, nil) }
            // A bounded number of SDUs per wake-up (level-triggered: the rest comes next time).
            for _ in 0..<32 {
                switch Socket.receive(c.fd, into: &s.readBuffer) {
                case .bytes(let n):
                    c.bytesIn += n
                    c.unitsReceived += 1
                    c.lastReceived = EventLoop.monotonicNanoseconds()
                    units.append(Array(s.readBuffer[0..<n]))
                case .endOfStream:
                    // The channel ended: its socket is closed in this very wake-up (see
                    // closeLocked); the units read before go to the link first, below.
                    return (closeLocked(&s, id, "the peer closed the channel"), "the peer closed the channel")
                case .wouldBlock:
                    return (c.link, nil)
                case .failed(let failure):
                    let reason = "receive failed: \(failure)"
                    return (closeLocked(&s, id, reason), reason)
                }
            }
            return (c.link, nil)
        }
        if connected {
            openLinks([id], as: .initiator)
            return
        }
        if !units.isEmpty, let link {
            guard deliver(units, from: id, to: link) else { return }
        }
        if let closing {
            let link = state.withLock { s in closeLocked(&s, id, closing) } ?? link
            link?.close(reason: closing)
        }
    }

    // MARK: - Writing

    /// BLE's sends stay on the event thread (one SDU per unit, straight to the kernel when
    /// it has room: a batch would save little).
    func linkSender(_ id: UInt64) -> LinkSender {
        .eventThread { [weak self] unit in self?.linkSend(id, unit) }
    }

    /// The link's `send`: one unit, one SDU. Straight to the kernel when nothing is queued;
    /// queued (and writability watched) when it has no room or credits.
    ///
    /// The queue's cap (`maxWriteQueueBytes`) holds for every SDU: one that would take the
    /// queue past it is refused, not queued, and the channel is closed as a peer that is not
    /// reading — the one way a transport tells the node a link cannot take more: its packets
    /// in flight count as failed attempts and are retried later (PROTOCOL.md §6).
    func linkSend(_ id: UInt64, _ unit: [UInt8]) {
        var handshaking: (any TransportLink)?
        let dropped = state.withLock { s -> ClosedChannel? in
            guard let c = s.connections[id], c.phase == .open else { return nil }
            if !c.authenticated { handshaking = c.link }
            guard unit.count <= max(c.sendMTU, 1) else {
                let reason = "unit of \(unit.count) bytes exceeds the channel's MTU \(c.sendMTU)"
                return (closeLocked(&s, id, reason), reason)
            }
            guard c.queuedBytes + unit.count <= options.maxWriteQueueBytes else {
                let reason = "the peer is not reading (\(c.queuedBytes) bytes queued; \(unit.count) more would pass "
                    + "the cap of \(options.maxWriteQueueBytes))"
                return (closeLocked(&s, id, reason), reason)
            }
            let now = EventLoop.monotonicNanoseconds()
            if c.queue.isEmpty { c.lastWriteProgress = now }
            c.queue.append(unit)
            c.queuedBytes += unit.count
            c.peakQueuedBytes = max(c.peakQueuedBytes, c.queuedBytes)
            return flushLocked(&s, c)
        }
        guard let (link, reason) = dropped else {
            // A link sends its first units as its handshake completes (the initiator m3, the
            // responder its keepalive): the moment to learn it, rather than at the next tick.
            if let handshaking { noteAuthenticated([(id, handshaking)]) }
            return
        }
        guard let link else { return }
        // Called from inside the link: tell it afterwards, not re-entrantly.
        closeLater(link, reason: reason)
    }

    /// Sends queued SDUs until the kernel says EAGAIN (up to `L2CAPSocket.maxBatch` per
    /// sendmmsg(2): a backlog leaves in a few system calls, not one per SDU), then watches
    /// writability while any are left. Closes the channel when a send
    /// fails or its socket cannot be watched.
    func flushLocked(_ s: inout BLEState, _ c: BLEConnection) -> ClosedChannel? {
        var sent = 0
        defer {
            if sent > 0 {
                c.queue.removeFirst(sent)
                c.lastWriteProgress = EventLoop.monotonicNanoseconds()
            }
        }
        while sent < c.queue.count {
            switch L2CAPSocket.send(c.fd, sdus: c.queue[sent...]) {
            case .sent(let count):
                c.writeCalls += 1
                for unit in c.queue[sent..<sent + count] {
                    c.queuedBytes -= unit.count
                    c.bytesOut += unit.count
                }
                sent += count
            case .wouldBlock:
                if let failure = watchWritesLocked(&s, c, true) {
                    return (closeLocked(&s, c.id, failure), failure)
                }
                return nil
            case .failed(let code):
                let reason = "send failed: \(Socket.reason(code))"
                return (closeLocked(&s, c.id, reason), reason)
            }
        }
        if let failure = watchWritesLocked(&s, c, false) {
            return (closeLocked(&s, c.id, failure), failure)
        }
        return nil
    }

    // MARK: - Deadlines and keepalives

    /// Once a second, on its own timer beside the discovery tick: `sweepConnections`.
    func connectionTick(run: UInt64) {
        let due = state.withLock { s -> Bool in
            guard s.running, s.run == run, let loop = s.loop else { return false }
            s.connectionTimer = loop.schedule(after: 1) { [weak self] in self?.connectionTick(run: run) }
            return true
        }
        if due { sweepConnections(now: EventLoop.monotonicNanoseconds()) }
    }

    /// Closes channels
    /// - whose connect has not completed `connectTimeout` after it started
    ///   (`newcomerConnectTimeout` for an address not linked with lately);
    /// - whose write queue has not moved for `writeStallTimeout` (the peer is not reading);
    /// - whose link has not authenticated the peer `handshakeTimeout` after the open (the
    ///   node gives up on the handshake too; this also frees a channel whose link could not
    ///   be opened or was never told anything);
    /// - whose authenticated peer is not a contact, `strangerGracePeriod` after it
    ///   authenticated (not while the node cannot tell: locked), and the newest beyond
    ///   `maxStrangerChannels` of those;
    /// - on which no SDU has arrived for `idleTimeout` (the peer's node sends a keepalive
    ///   on every link idle for 20 s, PROTOCOL.md §5.4: an SDU cannot be empty, so there is
    ///   no frame of the transport's own for that).
    ///
    /// `now`: monotonic ns (tests pass a later one).
    func sweepConnections(now: UInt64) {
        refreshAuthentication()
        var closed: [ClosedChannel] = []
        state.withLock { s in
            guard s.running else { return }
            for c in s.connections.values.sorted(by: { $0.id < $1.id }) {
                if c.phase == .connecting {
                    let timeout = connectTimeoutLocked(s, c.remote)
                    if BLETransport.elapsed(since: c.startedAt, now) >= BLETransport.nanoseconds(timeout) {
                        let reason = "no connection within \(BLETransport.seconds(timeout)) s"
                        closed.append((closeLocked(&s, c.id, reason), reason))
                    }
                } else if !c.queue.isEmpty,
                          BLETransport.elapsed(since: c.lastWriteProgress, now) >= BLETransport.nanoseconds(options.writeStallTimeout) {
                    let reason = "the peer is not reading (\(c.queuedBytes) bytes queued, none taken for "
                        + "\(BLETransport.seconds(options.writeStallTimeout)) s)"
                    closed.append((closeLocked(&s, c.id, reason), reason))
                } else if !c.authenticated, BLETransport.elapsed(since: c.startedAt, now) >= BLETransport.nanoseconds(options.handshakeTimeout) {
                    let reason = "the peer was not authenticated within \(BLETransport.seconds(options.handshakeTimeout)) s"
                    closed.append((closeLocked(&s, c.id, reason), reason))
                } else if c.authenticated, c.contact == false,
                          BLETransport.elapsed(since: c.authenticatedAt, now) >= BLETransport.nanoseconds(options.strangerGracePeriod) {
                    let reason = "its peer is not a contact (closed \(BLETransport.seconds(options.strangerGracePeriod)) s "
                        + "after the handshake)"
                    closed.append((closeLocked(&s, c.id, reason), reason))
                    s.strangersClosed += 1
                } else if BLETransport.elapsed(since: c.lastReceived, now) >= BLETransport.nanoseconds(options.idleTimeout) {
                    let reason = "nothing received for \(BLETransport.seconds(options.idleTimeout)) s"
                    closed.append((closeLocked(&s, c.id, reason), reason))
                }
            }
            closed += capStrangersLocked(&s)
        }
        for (link, reason) in closed { link?.close(reason: reason) }
    }

    /// Closes the newest channels with strangers beyond `maxStrangerChannels` (the older ones
    /// are nearer the end of their grace period; the latecomer waits its turn).
    func capStrangersLocked(_ s: inout BLEState) -> [ClosedChannel] {
        let reason = "its peer is not a contact and \(options.maxStrangerChannels) channels with strangers are open"
        return SlotPolicy.strangersBeyond(options.maxStrangerChannels, among: occupantsLocked(s)).map { id in
            s.strangersClosed += 1
            return (closeLocked(&s, id, reason), reason)
        }
    }

    /// How long an outbound connect to `remote` may take: the full `connectTimeout` for an
    /// address we have linked with lately, `newcomerConnectTimeout` for any other.
    func connectTimeoutLocked(_ s: BLEState, _ remote: BLEAddress) -> Double {
        s.recentlyLinked.contains(remote) ? options.connectTimeout : min(options.newcomerConnectTimeout, options.connectTimeout)
    }

    /// Asks the links of channels not yet known to be authenticated, or whose peer is not
    /// known to be a contact, what they are now — outside the lock (a link takes the node's
    /// lock) — and notes it.
    func refreshAuthentication() {
        noteAuthenticated(state.withLock { linksToAskLocked($0) })
    }

    private func noteAuthenticated(_ candidates: [(UInt64, any TransportLink)]) {
        let answers = SlotPolicy.authenticated(candidates)
        guard !answers.isEmpty else { return }
        let now = EventLoop.monotonicNanoseconds()
        state.withLock { s in
            for c in noteAnswersLocked(&s, answers, now: now) {
                switch c.contact {
                case false?:
                    s.recentlyLinked.remove(c.remote)
                    s.recentStrangers.set(c.remote, now &+ BLETransport.nanoseconds(options.maxConnectBackoff))
                    s.discovered[c.remote]?.linked = false
                case true?:
                    // Linked, for the fair order, across closes.
                    s.recentlyLinked.set(c.remote, true)
                    s.recentStrangers.remove(c.remote)
                    s.discovered[c.remote]?.linked = true
                case nil:
                    break  // the node cannot tell (locked): asked again at the next sweep
                }
            }
        }
    }

    /// `now - since`, or 0 for a `since` taken after `now`.
    static func elapsed(since: UInt64, _ now: UInt64) -> UInt64 { now > since ? now - since : 0 }

    /// "10", "0.5": seconds for a reason people read.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    // MARK: - Closing

    /// Removes the channel, unregisters and closes its socket at once. Returns its link,
    /// which the caller closes outside the lock.
    ///
    /// At once matters on Linux 6.1 (Debian's 6.1.0, 6.1.192): there, an L2CAP socket that is
    /// still open when its LE link goes down (the peer or our adapter powered off, out of
    /// range) frees the link's HCI channel a second time when it is closed later —
    /// `l2cap_conn_free` calls `hci_chan_del` on the channel `hci_conn_cleanup` already freed
    /// (a use-after-free fixed upstream in 6.13, "Bluetooth: L2CAP: Fix corrupted list in
    /// hci_chan_del"); the kernel panics with "list_del corruption" when it notices. A close
    /// that lands before the kernel has finished the disconnection (it wakes the socket
    /// first) is safe, so a channel the kernel ended is closed in the same wake-up; keeping
    /// it open longer was seen to make the panic more likely, not less.
    func closeLocked(_ s: inout BLEState, _ id: UInt64, _ reason: String) -> (any TransportLink)? {
        guard let c = removeConnectionLocked(&s, id, reason) else { return nil }
        // The peer is connected to again only once it is heard again: an LE connect to a
        // device that is not advertising (gone out of range, powered off) waits for the
        // whole timeout, and one started while it comes back was seen to hang until it.
        //
        // And not on the token it advertised while the channel was open, for a while: a
        // controller whose host powered it off can go on advertising (Linux 6.1 leaves
        // advertising instances on at power-off and BlueZ's virtual controllers are not
        // reset on close), and a connection made to that ghost is an LE link the peer's
        // host never learns of — after it powers on, its own connections meet that stale
        // link and no channel opens ("connects time out; the accepted channel never
        // reports connected"). A peer that really comes back advertises a fresh token
        // (PROTOCOL.md §9.1: drawn again whenever its adapter comes back on).
        if c.phase == .open, c.unitsReceived > 0, let peer = s.discovered.removeValue(forKey: c.remote) {
            let now = EventLoop.monotonicNanoseconds()
            if s.staleTokens.count >= options.maxDiscoveredPeers { s.staleTokens.removeAll() }
            s.staleTokens[c.remote] = (peer.token, now + BLETransport.nanoseconds(options.staleTokenHold))
            if s.lostPeers.count >= options.maxDiscoveredPeers { s.lostPeers.removeAll() }
            s.lostPeers[c.remote] = (peer, now)
        }
        if c.phase == .connecting {
            handOverLocked(&s, c.remote)
            requestDiscoveryLocked(&s)
        }
        return c.link
    }
}
