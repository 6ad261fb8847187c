import Glibc
import YaOKSupport
import YaOKLoop
import YaOKCrypto
import YaOKWire

/// Advertising, discovery, the adapter coming and going, whom to connect to (PROTOCOL.md §9).
///
/// Anyone can advertise anything from any address, so whom to connect to is chosen so that
/// fake advertisers cannot keep a real peer from being tried: candidates in a fair order
/// (fewest failed connects first, ties drawn at random — never by address), a backoff per
/// address that doubles with each failed connect, hand-overs (a token drawn to give the
/// peer the connecting role) at most once per `Options.handOverInterval`, and a full peer
/// table making room by dropping peers never linked and least recently heard, never one we
/// have a channel with.
extension BLETransport {
    // MARK: - mgmt events

    /// The mgmt socket is readable: a bounded batch of events.
    func mgmtReady() {
        // An advert may lead to a connect, which may evict: with fresh flags (`connectLocked`).
        refreshAuthentication()
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
        publishConnection()  // the adapter may have gone off or on
    }

    /// One mgmt event. Returns the links of channels it closed.
    func handleLocked(_ s: inout BLEState, _ event: Mgmt.Event) -> [((any TransportLink)?, String)] {
        guard let adapter = s.adapter else { return [] }
        switch event {
        case .deviceFound(let index, let address, let rssi, let flags, let eir) where index == adapter.index:
            guard let advert = BLEAdvert(parsing: eir) else { break }
            // A Ya OK node advertises connectably (§9.1); an advert that is not cannot lead
            // to a channel, and is the cheapest kind to fake.
            if (flags & Mgmt.DeviceFoundFlag.notConnectable) != 0 {
                s.notConnectableIgnored += 1
                break
            }
            heardLocked(&s, advert, from: address, rssi: rssi)

        case .discovering(let index, _, let on) where index == adapter.index:
            s.discovering = on
            s.discoveryStopRequestedAt = 0
            if !on { s.discoveryOurs = false }
            s.discoveryStartedAt = on ? EventLoop.monotonicNanoseconds() : 0
            if on {
                s.scanStarted = true
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
            if let info = Mgmt.parseInfo(data) {
                s.adapter?.privacy = info.privacy
                return poweredLocked(&s, (info.current & Mgmt.Setting.powered) != 0)
            }
        case .commandComplete(let index, let opcode, let status, _) where index == adapter.index:
            commandDoneLocked(&s, opcode: opcode, status: status)
        case .commandStatus(let index, let opcode, let status) where index == adapter.index:
            commandDoneLocked(&s, opcode: opcode, status: status)

        case .newSettings(let index, let settings) where index == adapter.index:
            // Privacy changes only while the adapter is off; the advisory follows it.
            s.adapter?.privacy = (settings & Mgmt.Setting.privacy) != 0
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
        case .stopDiscovery where status != 0:
            // Refused (no run of ours is on, or the adapter went off): no "Discovering off"
            // will come, so do not wait for it.
            if s.discoveryStopRequestedAt != 0 {
                s.discoveryStopRequestedAt = 0
                s.discovering = false
                s.discoveryStartedAt = 0
                requestDiscoveryLocked(&s)
            }
        case .startDiscovery:
            s.discoveryRequestedAt = 0
            if status == 0 {
                s.discoveryError = nil
                s.discoveryOurs = true
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
        s.scanStarted = false  // connecting again after a power-on until a scan starts
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
            s.discoveryStopRequestedAt = 0
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
                    s.discovered[address]?.heardSinceAttempt = true
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
            s.advertisingSince = EventLoop.monotonicNanoseconds()
            s.reannouncedSinceAdvertising = false
            s.discoveryRetryAt = 0
            requestDiscoveryLocked(&s)
            connectNextLocked(&s, now: EventLoop.monotonicNanoseconds())
        }
        return closed
    }

    /// Draws the next token while the adapter is off and gives it to the kernel (Add
    /// Advertising is stored while unpowered; its reply sets `advertisingStoredWhileOff`).
    private func storeTokenWhileOffLocked(_ s: inout BLEState) {
        drawTokenLocked(&s, Sodium.randomBytes(BLEAdvert.tokenLength))
        advertiseLocked(&s)
    }

    // MARK: - Advertising and discovery

    /// Draws a new token (or takes `token`) and advertises it.
    func rotateTokenLocked(_ s: inout BLEState, to token: [UInt8]? = nil) {
        drawTokenLocked(&s, token ?? Sodium.randomBytes(BLEAdvert.tokenLength))
        guard let adapter = s.adapter, adapter.powered, !s.adapterGone else { return }
        advertiseLocked(&s)
    }

    /// Hands the current token and our PSM to the kernel (Add Advertising replaces the
    /// instance's data). With LE privacy the instance is removed and added again instead, so
    /// that the address changes together with the token and neither links the old and the
    /// new of the other: advertising stops, and the kernel sets the new instance up from
    /// scratch — with a new private address (extended advertising: every new instance;
    /// legacy: once the adapter's has expired, which Linux 6.1 does not renew by itself for
    /// an instance-only advertiser) — before it starts again. Updated in place, the new data
    /// goes on the air under the old address first. PROTOCOL.md §9.3.
    func advertiseLocked(_ s: inout BLEState) {
        guard let adapter = s.adapter, let mgmt = s.mgmt else { return }
        if adapter.privacy, let failure = mgmt.send(Mgmt.removeAdvertising(index: adapter.index, instance: adapter.instance)) {
            s.advertisingError = "Remove Advertising: \(failure)"
        }
        let advert = BLEAdvert(token: s.token, psm: advertisedPSM(s))
        if let failure = mgmt.send(Mgmt.addAdvertising(index: adapter.index, instance: adapter.instance, data: advert.encoded)) {
            s.advertisingError = "Add Advertising: \(failure)"
        }
    }

    /// The PSM our listener is bound to (what the kernel reported), else the configured one.
    func advertisedPSM(_ s: BLEState) -> UInt16 {
        (1...0xff).contains(s.listenPSM) ? s.listenPSM : options.psm
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
        if let failure = mgmt.send(Mgmt.command(.startDiscovery, index: adapter.index, [Mgmt.discoveryTypeLE])) {
            s.discoveryError = "Start Discovery: \(failure)"
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
        if s.discovering, s.discoveryStopRequestedAt == 0 { s.discoveryStopRequestedAt = EventLoop.monotonicNanoseconds() }
        mgmt.send(Mgmt.command(.stopDiscovery, index: adapter.index, [Mgmt.discoveryTypeLE]))
    }

    // MARK: - Peers

    /// A Ya OK advertisement from `address`: remember the peer (making room if the table is
    /// full), maybe connect to someone.
    func heardLocked(_ s: inout BLEState, _ advert: BLEAdvert, from address: BLEAddress, rssi: Int8,
                     now: UInt64 = EventLoop.monotonicNanoseconds()) {
        guard advert.token != s.token, advert.token != s.previousToken else { return }
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
            if s.discovered.count >= options.maxDiscoveredPeers {
                guard let victim = evictionVictimLocked(s) else {
                    s.peersRefused += 1
                    return
                }
                if let dropped = s.discovered.removeValue(forKey: victim) {
                    s.droppedPeers.set(victim, (dropped.unconnectedSince, dropped.sightings, dropped.lastSeen))
                }
            }
            var peer = BLEPeer(token: advert.token, rssi: rssi, firstSeenMs: nowMs, lastSeenMs: nowMs, lastSeen: now)
            peer.linked = s.recentlyLinked.contains(address)
            if let dropped = s.droppedPeers[address] {
                s.droppedPeers.remove(address)
                if BLETransport.elapsed(now, dropped.lastSeen) < BLETransport.nanoseconds(options.forgetAfter) {
                    peer.unconnectedSince = dropped.unconnectedSince
                    peer.sightings = dropped.sightings
                }
            }
            s.discovered[address] = peer
        }
        s.discovered[address]?.sightings += 1
        s.discovered[address]?.heardSinceAttempt = true
        s.discovered[address]?.token = advert.token
        s.discovered[address]?.psm = advert.psm
        s.discovered[address]?.rssi = rssi
        s.discovered[address]?.lastSeen = now
        s.discovered[address]?.lastSeenMs = nowMs
        connectNextLocked(&s, now: now)
    }

    /// The peer a full table drops for a new one: never one we have a channel with (either
    /// direction, any phase); of the others, one never linked before one that was, then the
    /// least heard (a flood of fresh addresses, each heard once, churns among itself, not a
    /// real peer heard run after run: dropped and heard again, its fallback clock would
    /// start over, and the 30 s fallback never come), then the least recently heard. nil:
    /// every peer has a channel (the new one is not kept).
    func evictionVictimLocked(_ s: BLEState) -> BLEAddress? {
        let withChannels = Set(s.connections.values.map { $0.remote.bytes })
        return s.discovered.filter { !withChannels.contains($0.key.bytes) }
            .min { a, b in
                if a.value.linked != b.value.linked { return !a.value.linked }
                if a.value.sightings != b.value.sightings { return a.value.sightings < b.value.sightings }
                return a.value.lastSeen < b.value.lastSeen
            }?.key
    }

    /// Brings the peer's connection bookkeeping up to date and says whether this side should
    /// connect to it now (the rules of PROTOCOL.md §9.2): not when a channel with that address
    /// exists (either direction); the smaller token connects, the larger only after
    /// `fallbackAfter`; at most once per `connectAttemptInterval`, and not before its backoff
    /// (after failed connects) has passed.
    func refreshPeerLocked(_ s: inout BLEState, _ address: BLEAddress, now: UInt64) -> Bool {
        guard var peer = s.discovered[address] else { return false }
        defer { s.discovered[address] = peer }
        let channels = s.connections.values.filter { $0.remote.bytes == address.bytes }
        if !channels.isEmpty {
            if channels.contains(where: { $0.phase == .open }) {
                // The connect worked; "linked" waits for the peer to prove a contact.
                peer.failures = 0
                peer.retryAt = 0
            }
            peer.unconnectedSince = nil
            return false
        }
        peer.linked = s.recentlyLinked.contains(address)
        // A stranger's channel is closed after its grace period: not connected to again soon.
        if let until = s.recentStrangers[address], now < until { return false }
        // A never-linked address: one attempt per sighting.
        if !peer.linked, !peer.heardSinceAttempt { return false }
        let since = peer.unconnectedSince ?? now
        peer.unconnectedSince = since
        let ours = BLEAdvert.connects(own: s.token, peer: peer.token)
        guard ours || BLETransport.elapsed(now, since) >= BLETransport.nanoseconds(options.fallbackAfter) else { return false }
        if let last = peer.lastAttempt, BLETransport.elapsed(now, last) < BLETransport.nanoseconds(options.connectAttemptInterval) {
            return false
        }
        return now >= peer.retryAt
    }

    /// Connects to `address` if this side should (`refreshPeerLocked`) and no outbound
    /// connect is in progress (the kernel makes one LE connection at a time).
    func considerLocked(_ s: inout BLEState, _ address: BLEAddress, now: UInt64) {
        guard refreshPeerLocked(&s, address, now: now), !s.isConnecting else { return }
        attemptLocked(&s, address, now: now)
    }

    /// Connects to the first peer of `attemptOrderLocked` — unless an outbound connect is in
    /// progress (the kernel makes one LE connection at a time). An attempt that fails at once
    /// (no socket) leaves the turn to the next, `maxAttemptsPerCall` at most.
    func connectNextLocked(_ s: inout BLEState, now: UInt64) {
        for address in attemptOrderLocked(&s, now: now).prefix(BLETransport.maxAttemptsPerCall) {
            guard !s.isConnecting else { return }
            attemptLocked(&s, address, now: now)
        }
    }

    /// Connection attempts started by one `connectNextLocked` when each fails at once.
    static let maxAttemptsPerCall = 4

    /// Every peer this side should connect to now, in the order to try them. Fair, never by
    /// address: fewest failed connects in a row first (a peer never tried, or whose channel
    /// opened, before one whose connects keep failing), then a peer we have had a channel
    /// with before a stranger, then at random. So a crowd of fake advertisers that never
    /// accept holds a real peer up for one attempt each at most, and then only once their
    /// backoff has passed.
    func attemptOrderLocked(_ s: inout BLEState, now: UInt64) -> [BLEAddress] {
        var candidates: [(address: BLEAddress, key: (Int, Int, UInt64))] = []
        var rng = SystemRandomNumberGenerator()
        for address in Array(s.discovered.keys) where refreshPeerLocked(&s, address, now: now) {
            guard let peer = s.discovered[address] else { continue }
            candidates.append((address, (peer.failures, peer.linked ? 0 : 1, rng.next())))
        }
        return candidates.sorted { $0.key < $1.key }.map(\.address)
    }

    private func attemptLocked(_ s: inout BLEState, _ address: BLEAddress, now: UInt64) {
        s.discovered[address]?.lastAttempt = now
        s.discovered[address]?.heardSinceAttempt = false
        connectLocked(&s, to: address)
    }

    /// The PSM to connect to `remote` on: the one its advertisement names (version 2: a
    /// phone's listener has a dynamic one), 0x0081 for version 1.
    func connectPSMLocked(_ s: BLEState, _ remote: BLEAddress) -> UInt16 {
        s.discovered[remote]?.psm ?? options.psm
    }

    /// Our outbound connect to `remote` failed or timed out (`closeLocked`). The address
    /// backs off: `connectAttemptInterval` doubled for each failure in a row, at most
    /// `maxConnectBackoff`. And the connecting role may be handed to the peer: a new token
    /// larger than the peer's makes it the connector by the usual rule as soon as it hears it
    /// (PROTOCOL.md §9.2). This matters on Linux 6.1: an LE connection attempt that the
    /// controller fails at once ("Connection Failed to be Established", e.g. the peer stopped
    /// advertising for an instant) is never cleaned up by the kernel, and every later
    /// connect(2) to that address joins the dead attempt and times out, while connections
    /// from the peer still work. A hand-over is made only after an address's first failure
    /// and at most once per `handOverInterval`: otherwise every fake advertiser that does not
    /// accept would redraw our token (a peer refused one connects by itself after
    /// `fallbackAfter`). Failures that say nothing about the peer — our adapter going off,
    /// `stop` — are not counted.
    func handOverLocked(_ s: inout BLEState, _ remote: BLEAddress, now: UInt64 = EventLoop.monotonicNanoseconds()) {
        guard s.running, let adapter = s.adapter, adapter.powered, !s.adapterGone, var peer = s.discovered[remote] else { return }
        peer.failures += 1
        let backoff = min(options.connectAttemptInterval * Double(1 << min(peer.failures - 1, 30)), options.maxConnectBackoff)
        peer.retryAt = now &+ BLETransport.nanoseconds(backoff)
        s.discovered[remote] = peer
        s.connectFailures += 1
        guard BLEAdvert.connects(own: s.token, peer: peer.token) else { return }
        if let last = s.lastHandOverAt, BLETransport.elapsed(now, last) < BLETransport.nanoseconds(options.handOverInterval) {
            s.handOversRefused += 1
            return
        }
        guard peer.failures == 1 else {
            s.handOversRefused += 1
            return
        }
        var token = Sodium.randomBytes(BLEAdvert.tokenLength)
        for _ in 0..<64 where BLEAdvert.connects(own: token, peer: peer.token) {
            token = Sodium.randomBytes(BLEAdvert.tokenLength)
        }
        guard !BLEAdvert.connects(own: token, peer: peer.token) else { return }
        rotateTokenLocked(&s, to: token)
        s.handOvers += 1
        s.lastHandOverAt = now
        // The peer's fallback clock starts again: it is now theirs to connect.
        s.discovered[remote]?.unconnectedSince = nil
    }

    /// How long a Stop Discovery may go without its "Discovering off" before that event is
    /// taken as lost (the kernel answers within milliseconds; its own timeouts are 2 s).
    static let discoveryStopDeadline: Double = 4

    /// The tick's part in discovery: ends a run that has lasted `discoveryRunLength` (the
    /// "Discovering off" that follows starts the next), asks for a run when none is on, and
    /// sets our advertising up again for a peer that may have missed it (`reannounceLocked`).
    /// A Stop Discovery whose "Discovering off" has not come within `discoveryStopDeadline`
    /// is taken as answered: discovery is assumed off and asked for again. Without that, one
    /// lost event left `discovering` true, and discovery stopped for good. (If the kernel was
    /// in fact still discovering, Start Discovery fails "Busy" and is retried every 2 s
    /// until its run ends.)
    func keepDiscoveringLocked(_ s: inout BLEState, now: UInt64) {
        guard let adapter = s.adapter, let mgmt = s.mgmt else { return }
        if s.discovering, s.discoveryStopRequestedAt != 0,
           BLETransport.elapsed(now, s.discoveryStopRequestedAt) >= BLETransport.nanoseconds(BLETransport.discoveryStopDeadline) {
            s.discovering = false
            s.discoveryOurs = false
            s.discoveryStartedAt = 0
            s.discoveryStopRequestedAt = 0
            s.discoveryStopsAssumed += 1
        }
        if s.discovering, !s.isConnecting, s.discoveryStartedAt != 0,
           BLETransport.elapsed(now, s.discoveryStartedAt) >= BLETransport.nanoseconds(options.discoveryRunLength) {
            // Ended early; the Discovering event that follows starts the next run.
            s.discoveryStartedAt = 0
            s.discoveryRestarts += 1
            s.discoveryStopRequestedAt = now
            mgmt.send(Mgmt.command(.stopDiscovery, index: adapter.index, [Mgmt.discoveryTypeLE]))
        }
        requestDiscoveryLocked(&s)
        reannounceLocked(&s, now: now)
    }

    /// `now - then`, 0 if `then` is later (times from different clocks in tests).
    static func elapsed(_ now: UInt64, _ then: UInt64) -> UInt64 { now > then ? now - then : 0 }

    // MARK: - The tick

    /// Once a second: token rotation, discovery kept going, peers forgotten, one peer
    /// (fairly chosen) connected to. (Channel deadlines: `sweepConnections`.)
    func tick(run: UInt64) {
        refreshAuthentication()  // before a connect may evict (`connectLocked`)
        state.withLock { s in
            guard s.running, s.run == run, let loop = s.loop else { return }
            let now = EventLoop.monotonicNanoseconds()
            if let adapter = s.adapter, adapter.powered, !s.adapterGone {
                if now &- s.tokenDrawnAt >= BLETransport.nanoseconds(options.tokenLifetime) { rotateTokenLocked(&s) }
                keepDiscoveringLocked(&s, now: now)
                let forget = BLETransport.nanoseconds(options.forgetAfter)
                s.discovered = s.discovered.filter { now &- $0.value.lastSeen < forget }
                s.staleTokens = s.staleTokens.filter { now < $0.value.until }
                s.recentStrangers.filter { now < $0 }
                s.lostPeers = s.lostPeers.filter { now &- $0.value.at < BLETransport.nanoseconds(5) }
                connectNextLocked(&s, now: now)
            }
            s.timer = loop.schedule(after: 1) { [weak self] in self?.tick(run: run) }
        }
    }
}
