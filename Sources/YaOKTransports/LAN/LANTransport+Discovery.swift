import YaOKSupport
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
                heardLocked(&s, beacon, from: from.address)
            }
        }
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
    /// - at most once per `connectAttemptInterval` per address and port, at most
    ///   `maxDialsPerSourcePerWindow` times per `connectAttemptInterval` per source address
    ///   (whatever ports its beacons name), and at most `maxDiscoveryAttemptsPerSecond`
    ///   attempts a second in all. Beacons are unauthenticated UDP: these bound what a
    ///   spoofed one can make us dial.
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
        if s.discovered[endpoint] == nil {
            if s.discovered.count >= options.maxDiscoveredPeers,
               let oldest = s.discovered.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
                s.discovered.removeValue(forKey: oldest)
            }
            s.discovered[endpoint] = DiscoveredPeer(token: beacon.token, firstSeenMs: nowMs, lastSeenMs: nowMs, lastSeen: now)
        }
        guard var peer = s.discovered[endpoint] else { return }
        defer { s.discovered[endpoint] = peer }
        peer.token = beacon.token
        peer.lastSeen = now
        peer.lastSeenMs = nowMs

        let connected = s.connections.values.contains { c in
            c.direction == .outbound ? c.remote == endpoint : c.remote.address == endpoint.address
        }
        if connected {
            peer.unconnectedSince = nil
            return
        }
        let since = peer.unconnectedSince ?? now
        peer.unconnectedSince = since
        let ours = Beacon.connects(own: s.token, peer: beacon.token)
        let waitedLongEnough = now &- since >= LANTransport.nanoseconds(3 * discovery.beaconInterval)
        guard ours || waitedLongEnough else { return }
        if let until = s.recentStrangers[endpoint] {
            guard now >= until else { return }
            s.recentStrangers.removeValue(forKey: endpoint)
        }
        if let last = peer.lastAttempt, now &- last < LANTransport.nanoseconds(options.connectAttemptInterval) { return }
        if now &- s.attemptSecondStart >= LANTransport.nanoseconds(1) {
            s.attemptSecondStart = now
            s.attemptsThisSecond = 0
        }
        if now &- s.dialWindowStart >= LANTransport.nanoseconds(options.connectAttemptInterval) {
            s.dialWindowStart = now
            s.dialsBySource.removeAll()
        }
        guard s.attemptsThisSecond < LANTransport.maxDiscoveryAttemptsPerSecond,
              s.dialsBySource[address, default: 0] < LANTransport.maxDialsPerSourcePerWindow else {
            s.dialsLimited += 1
            return
        }
        s.attemptsThisSecond += 1
        s.dialsBySource[address, default: 0] += 1
        peer.lastAttempt = now
        connectLocked(&s, to: endpoint)
    }

    /// From the tick: rotate the token when due, send a beacon when due, forget peers not
    /// heard for a long time.
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
    }

    /// One beacon to the group (or the unicast target). A failure (no route, the network
    /// went down) is kept for diagnostics; the next beacon tries again.
    func sendBeaconLocked(_ s: inout LANState) {
        guard s.udp >= 0, let target = s.beaconTarget, let port = s.listening?.port else { return }
        if let code = Socket.sendDatagram(s.udp, Beacon(token: s.token, tcpPort: port).encoded, to: target) {
            s.beaconError = "Cannot send a beacon to \(target): \(Socket.reason(code))"
        } else {
            s.beaconError = nil
            s.beaconsSent += 1
        }
    }
}
