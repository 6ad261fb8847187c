import Glibc
import YaOKSupport
import YaOKLoop
import YaOKCrypto

/// Advertising, discovery, the adapter coming and going, whom to connect to (PROTOCOL.md §9).
extension BLETransport {
    /// Connection attempts a second, all addresses together.
    static let maxAttemptsPerSecond = 4

    // MARK: - mgmt events

    /// The mgmt socket is readable: a bounded batch of events.
    func mgmtReady() {
        let links = state.withLock { s -> [((any TransportLink)?, String)] in
            guard s.running, let mgmt = s.mgmt else { return [] }
            var closed: [((any TransportLink)?, String)] = []
            for _ in 0..<64 {
                guard let packet = mgmt.read(into: &s.mgmtBuffer) else { break }
                guard let event = Mgmt.parse(packet) else { continue }
                closed += handleLocked(&s, event)
            }
            return closed
        }
        for (link, reason) in links { link?.close(reason: reason) }
    }

    /// One mgmt event. Returns the links of channels it closed.
    func handleLocked(_ s: inout BLEState, _ event: Mgmt.Event) -> [((any TransportLink)?, String)] {
        guard let adapter = s.adapter else { return [] }
        switch event {
        case .deviceFound(let index, let address, let rssi, _, let eir) where index == adapter.index:
            if let advert = BLEAdvert(parsing: eir) { heardLocked(&s, advert, from: address, rssi: rssi) }

        case .discovering(let index, _, let on) where index == adapter.index:
            s.discovering = on
            s.discoveryStartedAt = on ? EventLoop.monotonicNanoseconds() : 0
            if on {
                s.discoveryRuns += 1
                s.discoveryRequestedAt = 0
                if s.isConnecting { pauseDiscoveryLocked(&s) }
            } else {
                // A discovery run lasts about 10 s; the next one starts at once (the
                // controller's duplicate filter starts afresh, so tokens are heard again).
                requestDiscoveryLocked(&s)
            }

        case .commandComplete(let index, Mgmt.Op.readInfo.rawValue, 0, let data) where index == adapter.index:
            // The answer to the Read Controller Information sent when the adapter came back.
            if let info = Mgmt.parseInfo(data) { return poweredLocked(&s, (info.current & Mgmt.Setting.powered) != 0) }
        case .commandComplete(let index, let opcode, let status, _) where index == adapter.index:
            commandDoneLocked(&s, opcode: opcode, status: status)
        case .commandStatus(let index, let opcode, let status) where index == adapter.index:
            commandDoneLocked(&s, opcode: opcode, status: status)

        case .newSettings(let index, let settings) where index == adapter.index:
            return poweredLocked(&s, (settings & Mgmt.Setting.powered) != 0)

        case .indexRemoved(let index) where index == adapter.index:
            s.adapterGone = true
            return poweredLocked(&s, false)

        case .indexAdded(let index) where index == adapter.index:
            // The adapter is back (plugged in again): it says whether it is powered.
            s.adapterGone = false
            s.mgmt?.send(Mgmt.command(.readInfo, index: index))

        default:
            break
        }
        return []
    }

    private func commandDoneLocked(_ s: inout BLEState, opcode: UInt16, status: UInt8) {
        switch Mgmt.Op(rawValue: opcode) {
        case .startDiscovery:
            s.discoveryRequestedAt = 0
            if status == 0 {
                s.discoveryError = nil
            } else {
                // Busy: someone else (bluetoothd) is discovering; their results reach us
                // too. Not powered: the adapter went off. Either way, try again later.
                s.discoveryError = "Start Discovery: \(Mgmt.Status.text(status))"
                s.discoveryRetryAt = EventLoop.monotonicNanoseconds() + BLETransport.nanoseconds(2)
            }
        case .addAdvertising:
            if status == 0 {
                let powered = s.adapter?.powered ?? false
                s.advertising = powered
                if !powered { s.advertisingStoredWhileOff = true }
                s.advertisingError = nil
            } else {
                s.advertising = false
                s.advertisingError = "Add Advertising: \(Mgmt.Status.text(status))"
            }
        default:
            break
        }
    }

    /// The adapter was powered on or off (or removed). Off: every channel is gone (the
    /// kernel tears them down; closing them here says why at once). On: advertise with a
    /// fresh token and discover again.
    ///
    /// The fresh token is handed to the kernel while the adapter is off: it keeps the
    /// advertising instance and starts advertising it by itself at power-on. Replacing the
    /// instance after power-on instead meant the old token on the air for a moment, then
    /// advertising stopped and restarted for the new data — and a peer that heard the old
    /// token and connected in that instant had its LE connection fail at once, an attempt
    /// Linux 6.1 never cleans up (see `handOverLocked`): reconnection after a power cycle
    /// took the 30 s fallback, or never came.
    func poweredLocked(_ s: inout BLEState, _ powered: Bool) -> [((any TransportLink)?, String)] {
        guard var adapter = s.adapter, adapter.powered != powered || (!powered && s.adapterGone) else { return [] }
        adapter.powered = powered
        s.adapter = adapter
        var closed: [((any TransportLink)?, String)] = []
        if !powered {
            let reason = s.adapterGone ? "\(adapter.name) was removed" : "\(adapter.name) was powered off"
            let heard = s.discovered
            for id in Array(s.connections.keys) { closed.append((closeLocked(&s, id, reason), reason)) }
            // Our adapter went off, not theirs: their adverts are no ghosts (see closeLocked),
            // including those of peers whose channels the kernel ended just before it told
            // us (a socket's hang-up often comes before New Settings).
            s.discovered = heard
            let now = EventLoop.monotonicNanoseconds()
            for (address, lost) in s.lostPeers where now &- lost.at < BLETransport.nanoseconds(5) {
                s.discovered[address] = lost.peer
            }
            s.lostPeers.removeAll()
            for address in s.discovered.keys { s.staleTokens.removeValue(forKey: address) }
            s.discovering = false
            s.advertising = false
            s.discoveryRequestedAt = 0
            // Peers heard lately are kept through a power cycle (not a removal): at power-on
            // the side that connects does so at once (the kernel's own scan finds the peer),
            // rather than waiting to hear it again — a discovery run may miss an advertiser
            // it hears only as scanning starts (see `Options.discoveryRunLength`).
            if s.adapterGone {
                s.discovered.removeAll()
            } else {
                for address in Array(s.discovered.keys) {
                    s.discovered[address]?.unconnectedSince = nil
                    s.discovered[address]?.lastAttempt = nil
                }
            }
            s.advertisingStoredWhileOff = false
            if !s.adapterGone { storeTokenWhileOffLocked(&s) }
        } else {
            if s.advertisingStoredWhileOff {
                s.advertising = true
            } else {
                rotateTokenLocked(&s)
            }
            s.advertisingStoredWhileOff = false
            s.discoveryRetryAt = 0
            requestDiscoveryLocked(&s)
            let now = EventLoop.monotonicNanoseconds()
            for address in s.discovered.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
                considerLocked(&s, address, now: now)
            }
        }
        return closed
    }

    /// Draws the next token while the adapter is off and gives it to the kernel (Add
    /// Advertising is stored while unpowered; its reply sets `advertisingStoredWhileOff`).
    private func storeTokenWhileOffLocked(_ s: inout BLEState) {
        drawTokenLocked(&s, Sodium.randomBytes(BLEAdvert.tokenLength))
        guard let adapter = s.adapter, let mgmt = s.mgmt else { return }
        if let code = mgmt.send(Mgmt.addAdvertising(index: adapter.index, instance: adapter.instance,
                                                    data: BLEAdvert(token: s.token).encoded)) {
            s.advertisingError = "Add Advertising: \(String(cString: strerror(code)))"
        }
    }

    // MARK: - Advertising and discovery

    /// Draws a new token (or takes `token`) and advertises it (Add Advertising replaces the
    /// instance's data).
    func rotateTokenLocked(_ s: inout BLEState, to token: [UInt8]? = nil) {
        drawTokenLocked(&s, token ?? Sodium.randomBytes(BLEAdvert.tokenLength))
        guard let adapter = s.adapter, let mgmt = s.mgmt, adapter.powered, !s.adapterGone else { return }
        if let code = mgmt.send(Mgmt.addAdvertising(index: adapter.index, instance: adapter.instance,
                                                    data: BLEAdvert(token: s.token).encoded)) {
            s.advertisingError = "Add Advertising: \(String(cString: strerror(code)))"
        }
    }

    private func drawTokenLocked(_ s: inout BLEState, _ token: [UInt8]) {
        if !s.token.isEmpty { s.previousToken = s.token }
        s.token = token
        s.tokenDrawnAt = EventLoop.monotonicNanoseconds()
        s.tokensDrawn += 1
    }

    /// Asks the kernel for an LE discovery run unless one is running or asked for, or an
    /// outbound connection is being made.
    func requestDiscoveryLocked(_ s: inout BLEState) {
        guard s.running, let adapter = s.adapter, let mgmt = s.mgmt, adapter.powered, !s.adapterGone, !s.discovering,
              !s.isConnecting else { return }
        let now = EventLoop.monotonicNanoseconds()
        guard s.discoveryRequestedAt == 0 || now &- s.discoveryRequestedAt > BLETransport.nanoseconds(5),
              now >= s.discoveryRetryAt else { return }
        s.discoveryRequestedAt = now
        if let code = mgmt.send(Mgmt.command(.startDiscovery, index: adapter.index, [Mgmt.discoveryTypeLE])) {
            s.discoveryError = "Start Discovery: \(String(cString: strerror(code)))"
            s.discoveryRequestedAt = 0
            s.discoveryRetryAt = now + BLETransport.nanoseconds(2)
        }
    }

    /// Stops discovery while an outbound connection is made. The kernel connects when it
    /// sees the peer's advertising; during a discovery run the controller's duplicate filter
    /// has already reported the peer once and stays silent about it, so the connection
    /// would wait for the next run. Without discovery the kernel scans for the peer itself.
    /// Discovery starts again when the connection is made or fails.
    func pauseDiscoveryLocked(_ s: inout BLEState) {
        guard let adapter = s.adapter, let mgmt = s.mgmt, s.discovering || s.discoveryRequestedAt != 0 else { return }
        mgmt.send(Mgmt.command(.stopDiscovery, index: adapter.index, [Mgmt.discoveryTypeLE]))
    }

    // MARK: - Peers

    /// A Ya OK advertisement from `address`: remember the peer, maybe connect.
    func heardLocked(_ s: inout BLEState, _ advert: BLEAdvert, from address: BLEAddress, rssi: Int8) {
        guard advert.token != s.token, advert.token != s.previousToken else { return }
        let now = EventLoop.monotonicNanoseconds()
        if let stale = s.staleTokens[address] {
            if now < stale.until, stale.token == advert.token {
                s.staleAdvertsIgnored += 1
                return
            }
            s.staleTokens.removeValue(forKey: address)
        }
        let nowMs = Clock.milliseconds()
        s.advertsHeard += 1
        if s.firstPeerAfterMs == nil { s.firstPeerAfterMs = nowMs - s.startedAtMs }
        if s.discovered[address] == nil {
            if s.discovered.count >= options.maxDiscoveredPeers,
               let oldest = s.discovered.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
                s.discovered.removeValue(forKey: oldest)
            }
            s.discovered[address] = BLEPeer(token: advert.token, rssi: rssi, firstSeenMs: nowMs, lastSeenMs: nowMs, lastSeen: now)
        }
        s.discovered[address]?.token = advert.token
        s.discovered[address]?.rssi = rssi
        s.discovered[address]?.lastSeen = now
        s.discovered[address]?.lastSeenMs = nowMs
        considerLocked(&s, address, now: now)
    }

    /// Connects to a discovered peer when this side should (the rules of PROTOCOL.md §9):
    /// not when a channel with that address exists (either direction); the smaller token
    /// connects, the larger only after `fallbackAfter`; one outbound attempt at a time (the
    /// kernel makes one LE connection at a time); at most once per `connectAttemptInterval`
    /// per address and `maxAttemptsPerSecond` in all.
    func considerLocked(_ s: inout BLEState, _ address: BLEAddress, now: UInt64) {
        guard var peer = s.discovered[address] else { return }
        defer { s.discovered[address] = peer }
        if s.connections.values.contains(where: { $0.remote.bytes == address.bytes }) {
            peer.unconnectedSince = nil
            return
        }
        let since = peer.unconnectedSince ?? now
        peer.unconnectedSince = since
        let ours = BLEAdvert.connects(own: s.token, peer: peer.token)
        guard ours || now &- since >= BLETransport.nanoseconds(options.fallbackAfter) else { return }
        guard !s.connections.values.contains(where: { $0.phase == .connecting }) else { return }
        if let last = peer.lastAttempt, now &- last < BLETransport.nanoseconds(options.connectAttemptInterval) { return }
        peer.lastAttempt = now
        connectLocked(&s, to: address)
    }

    // MARK: - The tick

    /// Once a second: token rotation, timeouts, discovery kept going, peers retried or
    /// forgotten.
    func tick(run: UInt64) {
        let closed = state.withLock { s -> [((any TransportLink)?, String)] in
            guard s.running, s.run == run, let loop = s.loop else { return [] }
            let now = EventLoop.monotonicNanoseconds()
            var closed: [((any TransportLink)?, String)] = []
            for c in s.connections.values.sorted(by: { $0.id < $1.id }) {
                let age = now &- c.startedAt
                if c.phase == .connecting, age >= BLETransport.nanoseconds(options.connectTimeout) {
                    let reason = "no connection within \(Int(options.connectTimeout)) s"
                    closed.append((closeLocked(&s, c.id, reason), reason))
                } else if c.phase == .open, c.unitsReceived < BLETransport.handshakeUnits,
                          age >= BLETransport.nanoseconds(options.handshakeTimeout) {
                    let reason = "no handshake within \(Int(options.handshakeTimeout)) s"
                    closed.append((closeLocked(&s, c.id, reason), reason))
                } else if c.phase == .open, !c.queue.isEmpty,
                          now &- c.lastWriteProgress >= BLETransport.nanoseconds(options.writeStallTimeout) {
                    let reason = "the peer is not reading (\(c.queuedBytes) bytes queued, none taken for "
                        + "\(Int(options.writeStallTimeout)) s)"
                    closed.append((closeLocked(&s, c.id, reason), reason))
                }
            }
            if let adapter = s.adapter, adapter.powered, !s.adapterGone {
                if now &- s.tokenDrawnAt >= BLETransport.nanoseconds(options.tokenLifetime) { rotateTokenLocked(&s) }
                if s.discovering, !s.isConnecting, s.discoveryStartedAt != 0,
                   now &- s.discoveryStartedAt >= BLETransport.nanoseconds(options.discoveryRunLength),
                   let mgmt = s.mgmt {
                    // Ended early; the Discovering event that follows starts the next run.
                    s.discoveryStartedAt = 0
                    s.discoveryRestarts += 1
                    mgmt.send(Mgmt.command(.stopDiscovery, index: adapter.index, [Mgmt.discoveryTypeLE]))
                }
                requestDiscoveryLocked(&s)
                let forget = BLETransport.nanoseconds(options.forgetAfter)
                s.discovered = s.discovered.filter { now &- $0.value.lastSeen < forget }
                s.staleTokens = s.staleTokens.filter { now < $0.value.until }
                s.lostPeers = s.lostPeers.filter { now &- $0.value.at < BLETransport.nanoseconds(5) }
                var attempts = 0
                for address in s.discovered.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) })
                where attempts < BLETransport.maxAttemptsPerSecond {
                    let before = s.connections.count
                    considerLocked(&s, address, now: now)
                    if s.connections.count > before { attempts += 1 }
                }
            }
            s.timer = loop.schedule(after: 1) { [weak self] in self?.tick(run: run) }
            return closed
        }
        for (link, reason) in closed { link?.close(reason: reason) }
    }
}
