import YaOKSupport
import YaOKSystem
import YaOKLoop
import YaOKCrypto

/// Beacons: sending ours, hearing others', deciding whom to connect to (PROTOCOL.md §7).
extension LANTransport {
    /// Connection attempts to discovered peers, all addresses together, per second.
    static let maxDiscoveryAttemptsPerSecond = 4
    /// Connection attempts to one beacon source address (any ports) per window of
    /// `connectAttemptInterval`: two nodes behind one address are reached at once; a spoofed
    /// source naming port after port gets two dials per window out of this node.
    static let maxDialsPerSourcePerWindow = 2

    /// The discovery socket is readable: read a bounded batch of datagrams.
    func datagramsReady() {
        state.withLock { s in
            guard s.running, s.udp >= 0 else { return }
            for _ in 0..<64 {
                guard let (count, from) = Socket.receiveDatagram(s.udp, into: &s.datagram) else { return }
                // MSG_TRUNC: `count` is the datagram's real length, so an oversized one fails here.
                guard count <= s.datagram.count, let beacon = Beacon(decoding: s.datagram[0..<count]) else { continue }
                guard beaconSourceAcceptedLocked(&s, from.address) else {
                    s.beaconsIgnored += 1
                    continue
                }
                heardLocked(&s, beacon, from: from.address)
            }
        }
    }

    /// Whether a beacon from `address` is believed (`BeaconSource.accepts`): loopback only
    /// when we listen on loopback; otherwise a host of a subnet of our interfaces (the
    /// discovery interface's, when one is named), read again at most once a second when
    /// `address` is not on them (addresses change: a new DHCP lease, another network).
    func beaconSourceAcceptedLocked(_ s: inout LANState, _ address: UInt32) -> Bool {
        let loopback = listenEndpoint.address >> 24 == 127
        if BeaconSource.accepts(address, subnets: s.subnets, loopback: loopback) { return true }
        let now = EventLoop.monotonicNanoseconds()
        guard s.subnetsReadAt == 0 || now &- s.subnetsReadAt >= LANTransport.nanoseconds(1) else { return false }
        s.subnetsReadAt = now
        s.subnets = interfaces(options.discovery?.interface)
        return BeaconSource.accepts(address, subnets: s.subnets, loopback: loopback)
    }

    /// A beacon from `address`. Remembers the peer and connects when this side should:
    /// - never to itself (its current or previous token);
    /// - never twice: not when a connection to that address and port exists (outbound),
    ///   nor when any inbound connection comes from that address (it is most likely that
    ///   peer; the rare second node behind one address is reached by the fallback below);
    /// - the side with the lower token connects; the other waits, and connects itself only
    ///   if nothing has connected after three beacon intervals (the peer cannot reach us,
    ///   or chose not to);
    /// - not to an address and port whose peer turned out a stranger, for `strangerBackoff`;
    /// - at most once per `connectAttemptInterval` per address and port;
    /// - to an address and port where we found a contact before: at once;
    /// - otherwise within the budgets: at most `maxDialsPerSourcePerWindow` times per
    ///   `connectAttemptInterval` per source address (whatever ports its beacons name), and at
    ///   most `maxDiscoveryAttemptsPerSecond` attempts a second in all, shared out by
    ///   `dialPendingLocked`. Beacons are unauthenticated UDP: these bound what a spoofed one
    ///   can make us dial, and a flood of them cannot take every dial.
    func heardLocked(_ s: inout LANState, _ beacon: Beacon, from address: UInt32) {
        guard beacon.token != s.token, beacon.token != s.previousToken, let discovery = options.discovery else { return }
        let endpoint = IPv4Endpoint(address: address, port: beacon.tcpPort)
        let now = EventLoop.monotonicNanoseconds()
        let nowMs = Clock.milliseconds()
        if s.discovered[endpoint]?.token != beacon.token {
            // Someone new (or a new token): answer with a beacon of our own at once, so a
            // node that has just joined finds us now rather than at our next beacon. At
            // most one answer per second, however many new tokens arrive.
            if now &- s.lastAnswer >= LANTransport.nanoseconds(1) || s.lastAnswer == 0 {
                s.lastAnswer = now
                sendBeaconLocked(&s)
            }
        }
        let steadyGap = LANTransport.nanoseconds(2 * discovery.beaconInterval)
        if s.discovered[endpoint] == nil {
            if s.discovered.count >= options.maxDiscoveredPeers,
               let victim = peerToForgetLocked(s, now: now, steadyGap: steadyGap) {
                s.discovered.removeValue(forKey: victim)
            }
            s.discovered[endpoint] = DiscoveredPeer(token: beacon.token, firstSeenMs: nowMs, lastSeenMs: nowMs,
                                                    lastSeen: now, runStart: now)
        } else if var peer = s.discovered[endpoint] {
            if now &- peer.lastSeen > steadyGap {
                peer.beaconsInRun = 1
                peer.runStart = now
            } else {
                peer.beaconsInRun += 1
            }
            s.discovered[endpoint] = peer
        }
        guard var peer = s.discovered[endpoint] else { return }
        peer.token = beacon.token
        peer.lastSeen = now
        peer.lastSeenMs = nowMs
        peer.pending = false
        let dial = shouldDialLocked(s, endpoint, &peer, ours: Beacon.connects(own: s.token, peer: beacon.token),
                                    now: now, discovery: discovery)
        s.discovered[endpoint] = peer
        guard dial else { return }
        if s.contactEndpoints[endpoint] != nil {
            // A contact was here: its dial is not one a flood of beacons may take.
            s.discovered[endpoint]?.lastAttempt = now
            connectLocked(&s, to: endpoint)
            return
        }
        s.discovered[endpoint]?.pending = true
        dialPendingLocked(&s, now: now)
        if s.discovered[endpoint]?.pending == true { s.dialsLimited += 1 }
    }

    /// Whether this beacon asks us to connect to `endpoint` (all but the budgets: see
    /// `heardLocked`). Notes on `peer` since when it has been heard without a connection.
    private func shouldDialLocked(_ s: LANState, _ endpoint: IPv4Endpoint, _ peer: inout DiscoveredPeer, ours: Bool,
                                  now: UInt64, discovery: Options.Discovery) -> Bool {
        let connected = s.connections.values.contains { c in
            c.direction == .outbound ? c.remote == endpoint : c.remote.address == endpoint.address
        }
        if connected {
            peer.unconnectedSince = nil
            return false
        }
        let since = peer.unconnectedSince ?? now
        peer.unconnectedSince = since
        let waitedLongEnough = now &- since >= LANTransport.nanoseconds(3 * discovery.beaconInterval)
        guard ours || waitedLongEnough else { return false }
        if let until = s.recentStrangers[endpoint], now < until { return false }
        if let last = peer.lastAttempt, now &- last < LANTransport.nanoseconds(options.connectAttemptInterval) { return false }
        return true
    }

    /// Dials peers waiting for the budget while it has room: each dial goes to one chosen at
    /// random among those heard in the last two beacon intervals whose source has dials left,
    /// preferring those whose beacons have come steadily for two intervals or more. A flood of
    /// one-off (spoofed) beacons then gets its share of the dials, not all of them, and a
    /// peer that beacons as it should is dialed first.
    func dialPendingLocked(_ s: inout LANState, now: UInt64) {
        guard let discovery = options.discovery else { return }
        if now &- s.attemptSecondStart >= LANTransport.nanoseconds(1) {
            s.attemptSecondStart = now
            s.attemptsThisSecond = 0
        }
        if now &- s.dialWindowStart >= LANTransport.nanoseconds(options.connectAttemptInterval) {
            s.dialWindowStart = now
            s.dialsBySource.removeAll()
        }
        let fresh = LANTransport.nanoseconds(2 * discovery.beaconInterval)
        while s.attemptsThisSecond < LANTransport.maxDiscoveryAttemptsPerSecond {
            var candidates: [IPv4Endpoint] = []
            var steady: [IPv4Endpoint] = []
            for (endpoint, peer) in s.discovered where peer.pending {
                guard now &- peer.lastSeen <= fresh,
                      s.dialsBySource[endpoint.address, default: 0] < LANTransport.maxDialsPerSourcePerWindow else { continue }
                candidates.append(endpoint)
                if peer.beaconsInRun >= 3, peer.lastSeen &- peer.runStart >= fresh { steady.append(endpoint) }
            }
            guard let endpoint = (steady.isEmpty ? candidates : steady).randomElement() else { return }
            s.discovered[endpoint]?.pending = false
            // Connected meanwhile (either way), or found a stranger: no dial, no budget spent.
            if let until = s.recentStrangers[endpoint], now < until { continue }
            if s.connections.values.contains(where: { c in
                c.direction == .outbound ? c.remote == endpoint : c.remote.address == endpoint.address
            }) { continue }
            s.discovered[endpoint]?.lastAttempt = now
            s.attemptsThisSecond += 1
            s.dialsBySource[endpoint.address, default: 0] += 1
            connectLocked(&s, to: endpoint)
        }
    }

    /// The peer to forget when the table is full and a new one is heard: one at random of
    /// those with the fewest beacons in a current run (a peer no longer heard counts none),
    /// never one where we found a contact while another will do. A flood of one-off beacons
    /// then mostly replaces its own, and a peer that beacons steadily keeps its place.
    private func peerToForgetLocked(_ s: LANState, now: UInt64, steadyGap: UInt64) -> IPv4Endpoint? {
        func score(_ peer: DiscoveredPeer) -> Int { now &- peer.lastSeen > steadyGap ? 0 : peer.beaconsInRun }
        let ordinary = s.discovered.filter { s.contactEndpoints[$0.key] == nil }
        let pool = ordinary.isEmpty ? s.discovered : ordinary
        guard let least = pool.values.map(score).min() else { return nil }
        return pool.filter { score($0.value) == least }.keys.randomElement()
    }

    /// From the tick: rotate the token when due, send a beacon when due, forget peers not
    /// heard for a long time, dial peers waiting for the budget.
    func discoveryTickLocked(_ s: inout LANState, now: UInt64) {
        guard s.udp >= 0, let discovery = options.discovery else { return }
        if now &- s.tokenDrawnAt >= LANTransport.nanoseconds(discovery.tokenLifetime) {
            s.previousToken = s.token
            s.token = Sodium.randomBytes(Beacon.tokenLength)
            s.tokenDrawnAt = now
        }
        if now >= s.nextBeaconAt {
            s.nextBeaconAt = now + LANTransport.nanoseconds(discovery.beaconInterval)
            sendBeaconLocked(&s)
        }
        let forgetAfter = LANTransport.nanoseconds(max(60, 10 * discovery.beaconInterval))
        s.discovered = s.discovered.filter { now &- $0.value.lastSeen < forgetAfter }
        dialPendingLocked(&s, now: now)
    }

    /// One beacon to the group (or the unicast target). A failure (no route, the network
    /// went down) is kept for diagnostics; the next beacon tries again.
    func sendBeaconLocked(_ s: inout LANState) {
        guard s.udp >= 0, let target = s.beaconTarget, let port = s.listening?.port else { return }
        if let failure = Socket.sendDatagram(s.udp, Beacon(token: s.token, tcpPort: port).encoded, to: target) {
            s.beaconError = "Cannot send a beacon to \(target): \(failure)"
        } else {
            s.beaconError = nil
            s.beaconsSent += 1
        }
    }
}
